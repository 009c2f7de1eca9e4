"""Graph specs: the built-in commands' graphs, shipped as TOML in the format users write, and flag bindings.

A command is its spec plus bindings: it parses its flags, binds them into the spec (``bind``) and
runs the graph. ``replay stages --graph NAME`` prints a spec, ``replay run FILE`` runs a copy of it,
and the two behave alike because the command adds nothing but the bound values.

Bindings are edits of the config document, in its own terms:

- ``set``: ``{"<stage>.<option>": value}`` (None leaves the spec's value);
- ``add``: ``{"<id>": {stage table}}``, e.g. a ``write`` for ``--log FILE``;
- ``bypass``: stage ids taken out, their consumers wired to their inputs (``--no-heal``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from replay.pipeline.engine.config import parse_config
from replay.pipeline.engine.errors import ReplayError

# The specs ship as files in the package ``replay.pipeline.specs`` (read from its folder, not with importlib.resources,
# whose import costs every command ~3 ms of start-up).
SPEC_FOLDER = Path(__file__).resolve().parent.parent / "specs"
SUFFIX = ".toml"


def spec_names() -> list[str]:
    return sorted(p.name[: -len(SUFFIX)] for p in SPEC_FOLDER.iterdir() if p.name.endswith(SUFFIX))


def spec_text(name: str) -> str:
    """The shipped spec as written (comments and all), to print or copy."""
    if name not in spec_names():
        raise ReplayError("E_SPEC_UNKNOWN", f"no built-in graph named {name!r}", received=name,
                          expected="one of: " + ", ".join(spec_names()), howToFix="Pick one of the names listed (`replay stages --help` lists them too).")
    return (SPEC_FOLDER / (name + SUFFIX)).read_text("utf-8")


def load_spec(name: str) -> dict[str, Any]:
    return parse_config(spec_text(name).encode("utf-8"), f"{name}{SUFFIX}", json=False)


def bind(doc: dict[str, Any], *, set: dict[str, Any] | None = None, add: dict[str, dict[str, Any]] | None = None,
         bypass: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """A copy of the spec ``doc`` with the command's flags bound into it."""
    out = copy.deepcopy(doc)
    stages: dict[str, dict[str, Any]] = out["stages"]
    for key, value in (set or {}).items():
        if value is None:
            continue
        stage, _, option = key.partition(".")
        if stage not in stages or not option:
            raise KeyError(f"binding {key!r} names no stage option of the spec")
        stages[stage][option] = value
    for node_id, table in (add or {}).items():
        if node_id in stages:
            raise KeyError(f"binding adds stage {node_id!r}, which the spec already has")
        stages[node_id] = dict(table)
    for node_id in bypass:
        table = stages.pop(node_id)
        ins = [r for r in table.get("inputs", []) if not r.partition(".")[2]]
        for other in stages.values():
            refs = other.get("inputs", [])
            new: list[str] = []
            for ref in refs:
                producer, _, port = ref.partition(".")
                if producer != node_id:
                    new.append(ref)
                elif not port:
                    new += [r for r in ins if r not in new]
            if refs:
                other["inputs"] = new
    return out
