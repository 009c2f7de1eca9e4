"""FillRunId: gives events without a runId the id of the run they belong to."""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.model.events import with_field
from replay.pipeline.model.runs import Run, RunScoped, run_id_from_source
from replay.pipeline.model.validation import MISSING, named


@register("fill_run_id")
class FillRunId(RunScoped):
    summary = "Fill a missing runId from the run record, the run's other events, or the journal's file name."

    def begin_run(self, run: Run) -> None:
        run.state["fallback"] = None

    def on_events(self, batch: Batch, start: int, end: int) -> None:
        events = batch.events
        assert events is not None and self.run is not None
        run_id = self.run.run_id
        if run_id is not None and all(events[i].get("runId") == run_id for i in range(start, end)):
            return
        super().on_events(batch, start, end)

    def on_event(self, batch: Batch, i: int, event: dict[str, Any]) -> None:
        rid = event.get("runId")
        if isinstance(rid, str) and rid:
            return
        run = self.run
        assert run is not None
        if run.run_id is None:
            run.run_id = run_id_from_source(batch.source)
            origin = f"the journal's file name ({batch.source})"
        else:
            origin = "the run record" if run.declared else "the run's other events"
        batch.replace(i, with_field(event, "runId", run.run_id))
        fields: dict[str, Any] = {"field": "runId", "value": run.run_id, "seqBefore": event.get("seq")}
        if "runId" in event:
            fields["original"] = rid
        self.repair("changed", f"runId was {named(event.get('runId', MISSING))}; took {run.run_id!r} from {origin}",
                    batch, i, **fields)
