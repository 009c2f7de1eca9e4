"""AliasEventTypes: renames event types frameworks spell differently to the canonical names."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Transform
from replay.pipeline.model.healing import BUILTIN_ALIASES, alias_cycle, refuse_renamed_canonical, resolve_alias
from replay.pipeline.model.repairs import log_repair
from replay.pipeline.model.runs import prelogged


@register("alias")
class AliasEventTypes(Transform):
    summary = "Map type aliases (tool_end -> tool_completed, ...) to canonical types; built-in table plus rules."
    options = {
        "aliases": Option(dict, {}, "extra aliases {old: new}, applied over the built-in table", items=str),
        "builtin": Option(bool, True, "use the built-in alias table"),
    }
    ports = ("errors", "repairs")
    screened_lane = "passes"
    keeps_run_state = False  # (each batch taken on its own)

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.table = resolved_aliases(self.config["builtin"], tuple(self.config["aliases"].items()))

    def __call__(self, batch: Batch) -> Batch:
        if batch.clean is not None:  # the screen's lane: the alias lines of a run it repaired, if any
            prelogged(self, batch)
            return batch
        table = self.table
        for i, event in enumerate(batch.events or ()):
            etype = event.get("type")
            if type(etype) is str and etype in table and "$record" not in event:
                new = table[etype]
                batch.replace(i, {**event, "type": new})
                log_repair(self, self.name, "changed", f"type {etype!r} is an alias of {new!r}", batch, i,
                           run_id=event.get("runId"), field="type", original=etype, value=new, seqBefore=event.get("seq"))
        return batch


@functools.cache
def resolved_aliases(builtin: bool, aliases: tuple[tuple[str, str], ...]) -> Mapping[str, str]:
    """The alias table (read only: shared by every stage made with these options, one per input of a run over many):
    the built-in aliases (``builtin``) with ``aliases`` over them; an alias to itself, or a chain a -> b -> c,
    resolved to its end so one pass is enough. An alias of a canonical type to another name (``run_completed`` ->
    ``done``: ``refuse_renamed_canonical``) is refused, and so are aliases in a circle (a -> b -> a): heal would rename
    those types back at every heal (a rules file's are refused as it is read, ``load_rules``)."""
    table = dict(BUILTIN_ALIASES) if builtin else {}
    table.update(aliases)
    cycle = alias_cycle(table)
    if cycle:
        raise ReplayError("E_CONFIG_OPTION_INVALID", f"aliases rename types in a circle ({' -> '.join(cycle)}): heal "
                          "would rename them back at every heal", path="aliases", received=cycle,
                          expected="aliases that end at a type no alias renames",
                          howToFix="Map each name to the type it stands for, not a canonical type to another name.")
    refuse_renamed_canonical(dict(aliases), "E_CONFIG_OPTION_INVALID", "aliases")
    ends = {old: resolve_alias(table, old)[0] for old in table}
    return MappingProxyType({old: new for old, new in ends.items() if new != old})
