"""Graph specs: the built-in commands' graphs, shipped as TOML in the format users write, and flag bindings.

A command is its spec plus bindings: it parses its flags, binds them into the spec (``bind``) and
runs the graph. ``replay stages --graph NAME`` prints a spec, ``replay run FILE`` runs a copy of it,
and the two behave alike because the command adds nothing but the bound values.

Bindings are edits of the config document, in its own terms:

- ``set``: ``{"<stage>.<option>": value}`` (None leaves the spec's value);
- ``add``: ``{"<id>": {stage table}}``, e.g. a ``write`` for ``--log FILE``;
- ``bypass``: stage ids taken out, their consumers wired to their inputs (``--no-heal``).

A value a flag gave is bound as ``Flag("--log", value)``: the document then keeps which flag set which option
(``FLAGS_KEY``, only when a flag set one), and what a stage refuses about that option names the flag the user typed,
not the stage.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replay.pipeline.engine.config import FLAGS_KEY, parse_config
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


@dataclass(frozen=True)
class Flag:
    """A value the command-line flag ``name`` gave (``Flag("--log", "repairs.jsonl")``), to ``bind``: bound as the value,
    and named as the flag in what a stage refuses about it. None binds nothing, as a bare None does."""

    name: str
    value: Any


def bind(doc: dict[str, Any], *, set: dict[str, Any] | None = None, add: dict[str, dict[str, Any]] | None = None,
         bypass: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """A copy of the spec ``doc`` with the command's flags bound into it."""
    out = copy.deepcopy(doc)
    stages: dict[str, dict[str, Any]] = out["stages"]
    flags: dict[str, str] = out.pop(FLAGS_KEY, {})
    for key, value in (set or {}).items():
        value = _unflagged(key, value, flags)
        if value is None:
            continue
        stage, _, option = key.partition(".")
        if stage not in stages or not option:
            raise KeyError(f"binding {key!r} names no stage option of the spec")
        stages[stage][option] = value
    for node_id, table in (add or {}).items():
        if node_id in stages:
            raise KeyError(f"binding adds stage {node_id!r}, which the spec already has")
        stages[node_id] = {option: _unflagged(f"{node_id}.{option}", value, flags) for option, value in table.items()
                           if not (isinstance(value, Flag) and value.value is None)}  # (a flag not given: no option)
    for node_id in bypass:
        for key in [key for key in flags if key.partition(".")[0] == node_id]:
            del flags[key]
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
    if flags:  # (only then: a document bound from no flag is the config a user could write)
        out[FLAGS_KEY] = flags
    return out


def _unflagged(key: str, value: Any, flags: dict[str, str]) -> Any:
    """The value to bind at ``key`` (``"<stage>.<option>"``): a ``Flag``'s own, its flag kept in ``flags`` when it gave
    one (and any earlier flag's for that option dropped); any other value as it is."""
    if not isinstance(value, Flag):
        return value
    flags.pop(key, None)
    if value.value is not None:
        flags[key] = value.name
    return value.value
