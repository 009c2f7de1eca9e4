"""Where a chain's lines become events: ``parse`` + ``dialect`` before its first stage that takes events, or, when its
lines reach its end unparsed (``chain = ["write"]``, ``["read"]``), ``replay read``'s graph around them.

A chain's source gives lines (``read``); a stage that takes lines and gives lines (``join_split_records``, ``screen``,
``check_lines``) passes them on. The first stage after those that takes events gets ``parse`` (+ ``dialect``, unless the
chain maps logs itself) in front of it. When no stage does (the lines reach ``write``), the chain is ``replay read``'s
graph, as pipeline/specs/read.toml declares it (read from there, not written twice): its ``parse`` stage (a
``check_lines``) goes before the sink unless the chain checks its lines itself, so a line that is no JSON object, or a
torn last line, is reported and left out as ``replay read`` reports it (exit 1), never written as data; the source takes
the options read.toml gives ``read`` (the chain's own win), and its notices go to read.toml's ``notices`` log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from replay.pipeline.engine.stage import Stage

Item = tuple[str | None, dict[str, Any], str]  # (the item's id, or an id to suggest for one added; its table; where)
ADDED = "chain"  # where a stage the chain added is declared: the chain itself (no item declares it)
MAPPING_STAGES = ("dialect", "undialect")  # a chain that has one of these maps (or unmaps) other agents' logs itself
READ_SPEC = "read"  # replay read's graph; its ids: the source, the stage checking the lines, the log of its notices
SOURCE, CHECK, NOTICES = "read", "parse", "notices"


def add_line_stages(items: list[Item], cls_of: Callable[[dict[str, Any], str], type[Stage]]) -> dict[str, Any] | None:
    """Add to ``items`` (which begin with a source that gives lines) the stages its lines need, in place. Returns the
    table (without inputs) of a stage to take the source's notices port, if the chain is to have one."""
    k = 1
    while k < len(items) and _passes_lines(cls_of(items[k][1], items[k][2])):
        k += 1
    taker = cls_of(items[k][1], items[k][2]) if k < len(items) else None  # (none: the chain ends with lines)
    if taker is not None and not taker.accepts_raw:
        items.insert(k, (None, {"type": "parse"}, ADDED))
        if not any(spec.get("type") in MAPPING_STAGES for _, spec, _ in items):  # (another agent's log mapped, as the
            items.insert(k + 1, (None, {"type": "dialect"}, ADDED))              # commands that read events map it)
        return None
    if taker is not None and taker.kind != "sink":  # (parse, walk: it takes the lines, checked, and gives no lines)
        return None
    from replay.pipeline.engine.spec import load_spec  # (here: spec reads its documents with the config module)

    spec = {node_id: {key: v for key, v in table.items() if key != "inputs"}
            for node_id, table in load_spec(READ_SPEC)["stages"].items()}
    if not any(table.get("type") == spec[CHECK]["type"] for _, table, _ in items[1:k]):
        items.insert(k, (CHECK, spec[CHECK], ADDED))
    node_id, table, where = items[0]
    source = cls_of(table, where)
    given = {key: v for key, v in spec[SOURCE].items() if key in source.options}
    items[0] = (node_id, {**given, **table}, where)
    return spec[NOTICES] if "notices" in source.ports else None


def _passes_lines(cls: type[Stage]) -> bool:
    return cls.accepts_raw and cls.emits_raw
