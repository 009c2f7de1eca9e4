"""DropAdjacentDuplicates: drops an event identical to the one just before it."""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Transform
from replay.pipeline.model.records import RECORD_KEY, RUN_RECORD
from replay.pipeline.model.repairs import log_repair
from replay.pipeline.model.runs import Input, Inputs


@register("dedupe")
class DropAdjacentDuplicates(Transform):
    summary = "Drop exact adjacent duplicate events (same keys and values, seq included; 1, 1.0 and true are three values)."
    ports = ("errors", "repairs")
    screened_lane = "passes"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # The event before the next one; a clean batch leaves its last line (or itself and where its last line is: the
        # line is cut out of the block it is in, and decoded, only if events follow, ``_previous``)
        self.previous: dict[str, Any] | bytes | tuple[Batch, int] | None = None
        self.inputs = Inputs()
        self.input: Input | None = None  # the input of ``previous``: an event of another input is no duplicate of it

    def __call__(self, batch: Batch) -> Batch:
        if batch.clean is not None:  # whole runs, each event numbered on: none equals the one before it
            self.previous = batch.lane["dedupe"] if batch.lane else (batch, len(batch) - 1)  # (lines are only appended)
            self.input = self.inputs.at(batch.source)
            return batch
        drop = []
        source = batch.source
        previous = self._previous() if self.inputs.at(source) == self.input else None
        for i, event in enumerate(batch.events or ()):
            if RECORD_KEY in event:  # a run record, or read's mark before the next input (of the same name, too)
                previous = None if event.get(RECORD_KEY) == RUN_RECORD or self.inputs.begins(event, source) else previous
                continue
            if previous is not None and event == previous and exactjson.typed_equal(event, previous):  # (== takes 1 for true)
                drop.append(i)
                log_repair(self, self.name, "dropped", "exact duplicate of the event before it", batch, i,
                           run_id=event.get("runId"), seqBefore=event.get("seq"), original=event)
            previous = event
        self.previous, self.input = previous, self.inputs.at(source)
        if not drop:
            return batch
        dropped = set(drop)
        return batch.select(i for i in range(len(batch)) if i not in dropped)

    def _previous(self) -> dict[str, Any] | None:
        """The event before this batch's first: ``previous``, decoded now where a clean batch left its line."""
        if type(self.previous) is tuple:
            batch, last = self.previous
            self.previous = batch.at("raws", last)
        if type(self.previous) is bytes:
            self.previous = exactjson.loads(self.previous)
        return self.previous  # type: ignore[return-value]
