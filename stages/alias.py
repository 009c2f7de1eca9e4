"""AliasEventTypes: renames event types frameworks spell differently to the canonical names."""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Transform
from replay.pipeline.model.healing import BUILTIN_ALIASES
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

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        table = dict(BUILTIN_ALIASES) if self.config["builtin"] else {}
        table.update(self.config["aliases"])
        # An alias to itself, or a chain a -> b -> c, resolves to its end so one pass is enough.
        self.table = {old: self._resolve(table, old) for old in table}
        self.table = {old: new for old, new in self.table.items() if new != old}

    @staticmethod
    def _resolve(table: dict[str, str], name: str) -> str:
        seen = {name}
        while name in table and table[name] not in seen:
            name = table[name]
            seen.add(name)
        return name

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
