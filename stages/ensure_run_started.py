"""InsertRunStarted: begins every run with a run_started event, inventing one when it is missing."""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.model.events import EPOCH, RUN_STARTED, is_timestamp
from replay.pipeline.model.runs import Run, RunScoped, run_id_of
from replay.pipeline.model.validation import MISSING, state_of
from replay.stages.fix_timestamp import convert


def synthetic_event(event_type: str, run: Run, timestamp: Any, seq: Any, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    """An event invented for ``run``, in canonical key order; ``renumber`` gives it its final seq."""
    return {
        "seq": seq if isinstance(seq, int) and not isinstance(seq, bool) and seq >= 1 else 1,
        "timestamp": timestamp if is_timestamp(timestamp) else convert(timestamp) or EPOCH,  # (a run record's epoch number)
        "type": event_type,
        "runId": run_id_of(run),
        "payload": payload or {},
        "synthetic": True,
    }


@register("ensure_run_started")
class InsertRunStarted(RunScoped):
    summary = "Insert a synthetic run_started before a run's first event when the run does not begin with one."

    def on_events(self, batch: Batch, start: int, end: int) -> None:
        assert self.run is not None and batch.events is not None
        if self.run.events == 0:  # only a run's first event matters
            self.on_event(batch, start, batch.events[start])

    def on_event(self, batch: Batch, i: int, event: dict[str, Any]) -> None:
        run = self.run
        assert run is not None
        if run.events or event.get("type") == RUN_STARTED:
            return
        ts = event.get("timestamp") or (run.facts or {}).get("timestamp")
        self.insert_before(i, synthetic_event(RUN_STARTED, run, ts, event.get("seq")))
        self.repair("inserted", f"run began with {_began_with(event)}; inserted run_started before it", batch, i,
                    field="type", value=RUN_STARTED)

    def end_run(self, run: Run) -> list[dict[str, Any]]:
        if run.events:
            return []
        ts = (run.facts or {}).get("timestamp")
        self.repair("inserted", "run has no events; inserted run_started", value=RUN_STARTED)
        return [synthetic_event(RUN_STARTED, run, ts, 1)]


def _began_with(event: dict[str, Any]) -> str:
    etype = event.get("type", MISSING)
    if isinstance(etype, str):
        return repr(etype)
    return "an event with no type" if etype is MISSING else f"an event whose type {state_of(etype)}"
