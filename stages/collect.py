"""CollectRuns: a sink that keeps each input source's records and repairs in memory, for per-file outputs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.model.records import RECORD_KEY, RUN_RECORD
from replay.pipeline.engine.stage import Sink
from replay.pipeline.engine.registry import register


@dataclass
class Collected:
    """Everything one input source turned into."""

    source: str
    run: dict[str, Any] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)  # the whole stream, run and heal records included
    heal: dict[str, Any] | None = None
    repairs: list[dict[str, Any]] = field(default_factory=list)
    notices: list[dict[str, Any]] = field(default_factory=list)


@register("collect")
class CollectRuns(Sink):
    summary = "Keep records and repairs per input source in memory (for writing one output per input file)."

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.by_source: dict[str, Collected] = {}
        self._last_source: str | None = None

    def _get(self, source: str) -> Collected:
        if source not in self.by_source:
            self.by_source[source] = Collected(source)
        return self.by_source[source]

    async def consume(self, batches: AsyncIterator[Batch]) -> None:
        async for batch in batches:
            if batch.port in ("repairs", "notices"):
                for entry in batch.events or ():
                    target = self._get(entry.get("source") or self._last_source or "<unknown>")
                    (target.repairs if batch.port == "repairs" else target.notices).append(entry)
                continue
            if batch.port is not None:
                continue
            if not batch.source.startswith("<") or batch.source == "<stdin>":
                self._last_source = batch.source
            target = self._get(self._last_source or batch.source)
            for record in batch.events or ():
                target.records.append(record)
                kind = record.get(RECORD_KEY)
                if kind == RUN_RECORD and target.run is None:
                    target.run = record
                elif kind == "heal":
                    target.heal = record
                elif kind is None:
                    target.events.append(record)
