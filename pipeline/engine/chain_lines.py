"""Where a chain's lines become events: ``parse`` + ``dialect`` before its first stage that takes events; or, before a
stage a command runs (``walk``, ``diff``: ``Stage.chain_spec``), what that command's graph puts in front of it; or, when
its lines reach its end unparsed (``chain = ["write"]``, ``["read"]``), ``replay read``'s graph around them.

A chain's source gives lines (``read``); a stage that takes lines and gives lines (``join_split_records``, ``screen``,
``check_lines``) passes them on. The first stage after those that takes events gets ``parse`` (+ ``dialect``, unless the
chain maps logs itself) in front of it. A stage that names a command's graph for the chain's inputs (a walk over another
agent's log: pipeline/specs/walk-log.toml, as `replay walk LOG` walks it; a diff: diff.toml) gets that graph's stages
between its source and it instead, in its order, each taking the one before it and the side ports the graph gives it
(``diff``'s ``read.errors``, ``heal``'s ``parse.repairs``), the stages of the graph that take side ports off that way (a
``log`` of notices) after the chain; a stage of one of those types the chain has before it already stands for it. The
source and that stage take the options the graph gives them (the chain's own win). It is read from the spec, not written
twice, and a chain that maps logs itself (``dialect``, ``undialect``) gets none of it. When no stage takes events (the
lines reach ``write``), the chain is ``replay read``'s graph, as pipeline/specs/read.toml declares it: its ``parse``
stage (a ``check_lines``) goes before the sink unless the chain checks its lines itself, so a line that is no JSON
object, or a torn last line, is reported and left out as ``replay read`` reports it (exit 1), never written as data; the
source takes the options read.toml gives ``read`` (the chain's own win), and its notices go to read.toml's ``notices`` log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from replay.pipeline.engine.stage import Stage

Item = tuple[str | None, dict[str, Any], str]  # (the item's id, or an id to suggest for one added; its table; where)
Ref = tuple[int, str]  # an item's output: (its index among the chain's items, its port; "" for its main output)
ADDED = "chain"  # where a stage the chain added is declared: the chain itself (no item declares it)
MAPPING_STAGES = ("dialect", "undialect")  # a chain that has one of these maps (or unmaps) other agents' logs itself
READ_SPEC = "read"  # replay read's graph; its ids: the source, the stage checking the lines, the log of its notices
SOURCE, CHECK, NOTICES = "read", "parse", "notices"


@dataclass
class Wiring:
    """What a chain's stages take besides the output of the item before them, and the stages added off the chain."""

    side: dict[int, list[Ref]] = field(default_factory=dict)  # item index -> the side ports it takes too
    extra: list[tuple[str, dict[str, Any], list[Ref]]] = field(default_factory=list)  # (id to suggest, table, inputs)


def add_line_stages(items: list[Item], cls_of: Callable[[dict[str, Any], str], type[Stage]],
                    source: Callable[[], Stage | None]) -> Wiring:
    """Add to ``items`` (which begin with a source that gives lines) the stages its lines need, in place; ``source()``:
    that source built with the command's arguments (None when it cannot be), for a stage that asks what it reads.
    Returns what the stages take besides the item before them, and the stages to add off the chain."""
    k = 1
    while k < len(items) and _passes_lines(cls_of(items[k][1], items[k][2])):
        k += 1
    taker = cls_of(items[k][1], items[k][2]) if k < len(items) else None  # (none: the chain ends with lines)
    maps = any(spec.get("type") in MAPPING_STAGES for _, spec, _ in items)
    name = taker.chain_spec(source) if taker is not None and not maps else None
    if name is not None:
        from replay.pipeline.engine.spec import load_spec  # (here: spec reads its documents with the config module)

        return _command_front(items, k, load_spec(name)["stages"], cls_of)
    if taker is not None and not taker.accepts_raw:
        items.insert(k, (None, {"type": "parse"}, ADDED))
        if not maps:  # (another agent's log mapped, as the commands that read events map it)
            items.insert(k + 1, (None, {"type": "dialect"}, ADDED))
        return Wiring()
    if taker is not None and taker.kind != "sink":  # (parse, walk: it takes the lines, checked, and gives no lines)
        return Wiring()
    from replay.pipeline.engine.spec import load_spec

    spec = {node_id: _options(table) for node_id, table in load_spec(READ_SPEC)["stages"].items()}
    if not any(table.get("type") == spec[CHECK]["type"] for _, table, _ in items[1:k]):
        items.insert(k, (CHECK, spec[CHECK], ADDED))
    _given(items, 0, spec[SOURCE], cls_of)
    notices = "notices" in cls_of(items[0][1], items[0][2]).ports
    return Wiring(extra=[(NOTICES, spec[NOTICES], [(0, "notices")])] if notices else [])


def _command_front(items: list[Item], k: int, stages: dict[str, dict[str, Any]],
                   cls_of: Callable[[dict[str, Any], str], type[Stage]]) -> Wiring:
    """Put in front of item ``k`` the stages a command's graph (``stages``) has between its source and the stage of
    item ``k``'s type, as the module's docstring says; returns how they take that graph's side ports."""
    kind = items[k][1]["type"]
    target = next(node_id for node_id, table in stages.items() if table["type"] == kind)
    path = [target]  # the graph's source ... target, each the main input of the next
    while stages[path[0]].get("inputs"):
        path.insert(0, _main(stages[path[0]]["inputs"]))
    has: dict[str, int] = {}  # a type the chain has before item k -> its first item of that type
    for i, (_, table, _) in enumerate(items[1:k], 1):
        has.setdefault(table["type"], i)
    added = [(node_id, _options(stages[node_id]), ADDED) for node_id in path[1:-1] if stages[node_id]["type"] not in has]
    items[k:k] = added
    at = {path[0]: 0, target: k + len(added)}  # the graph's stage id -> the index of the item that is it
    at.update({node_id: has[stages[node_id]["type"]] for node_id in path[1:-1] if stages[node_id]["type"] in has})
    at.update({node_id: i for i, (node_id, _, _) in enumerate(added, k) if node_id is not None})
    _given(items, 0, stages[path[0]], cls_of)
    _given(items, at[target], stages[target], cls_of)

    def ref(name: str) -> Ref | None:
        """The chain's output that the graph's input ``name`` names (None: one the chain's stage does not give)."""
        node_id, _, port = name.partition(".")
        if node_id not in at or (port and port not in cls_of(items[at[node_id]][1], items[at[node_id]][2]).ports):
            return None
        return at[node_id], port

    wiring = Wiring()
    for node_id in [*(node_id for node_id, _, _ in added if node_id is not None), target]:
        named = [ref(name) for name in stages[node_id].get("inputs", []) if "." in name]  # (the main one: the item before)
        wiring.side[at[node_id]] = [r for r in named if r is not None]
    after = {target}  # the graph's stages that take what the target gives, directly or not: the chain's own after it
    while grown := {node_id for node_id, table in stages.items() if node_id not in after
                    and any(name.partition(".")[0] in after for name in table.get("inputs", []))}:
        after |= grown
    for node_id, table in stages.items():
        if node_id in path or node_id in after:
            continue
        refs = [r for r in map(ref, table.get("inputs", [])) if r is not None]
        if refs:
            wiring.extra.append((node_id, _options(table), refs))
    return wiring


def _given(items: list[Item], i: int, table: dict[str, Any], cls_of: Callable[[dict[str, Any], str], type[Stage]]) -> None:
    """Item ``i`` with the options of a command's graph's ``table`` it takes, under its own."""
    node_id, own, where = items[i]
    options = cls_of(own, where).options
    items[i] = (node_id, {**{key: v for key, v in table.items() if key in options}, **own}, where)


def _main(inputs: list[str]) -> str:
    """Of a stage's inputs in a command's graph, the one it takes as its stream: the first that names no port."""
    return next(name for name in inputs if "." not in name)


def _options(table: dict[str, Any]) -> dict[str, Any]:
    return {key: v for key, v in table.items() if key != "inputs"}


def _passes_lines(cls: type[Stage]) -> bool:
    return cls.accepts_raw and cls.emits_raw
