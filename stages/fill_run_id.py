"""FillRunId: gives events without a runId (and a run record without one) the id of the run they belong to."""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.batch import Batch, Column, changed, column_position
from replay.pipeline.engine.registry import register
from replay.pipeline.model.events import RUN_ID_FILLED, with_field
from replay.pipeline.model.records import RECORD_KEY
from replay.pipeline.model.runs import Run, RunScoped, names_run, run_id_from_source
from replay.pipeline.model.validation import MISSING, named


@register("fill_run_id")
class FillRunId(RunScoped):
    summary = ("Fill a missing runId from the run record, the run's other events, or the journal's file name (a run "
               "record's from its run's first event, else the file name).")

    def begin_run(self, run: Run) -> None:
        # where the run's id comes from, for the events that name none: its run record, or its events before them (or,
        # once it comes to that, the file name)
        run.state["origin"] = "the run record" if names_run((run.facts or {}).get("runId")) else "the run's other events"
        run.state["record"] = None  # the run record, while it waits for its run's first event to name it

    def on_run_record(self, batch: Batch, i: int, record: dict[str, Any]) -> None:
        filled = record.get(RUN_ID_FILLED)
        if filled is not None:  # (the mark goes: the healed run record's runId is its own)
            batch.replace(i, record := {key: value for key, value in record.items() if key != RUN_ID_FILLED})
        if not names_run(record.get("runId")):  # it goes back named, before the run's first event (or at its end)
            self.run.state["record"] = self.take_out(batch, i)  # type: ignore[union-attr]
            return
        if isinstance(filled, dict) and isinstance(filled.get("from"), str):
            # an artifact that names no run: reading it named its run record (``events.run_record_from_artifact``
            # marked it so, in this graph or up a pipe)
            given = filled.get("original", MISSING)
            fields: dict[str, Any] = {"source": batch.source, "path": "$.runId", "field": "runId", "value": record["runId"]}
            if given is not MISSING:
                fields["original"] = given
            self.repair("changed", f"run record runId was {named(given)}; took {record['runId']!r} from the artifact's "
                        f"{filled['from'].removeprefix('its ')}", **fields)

    def on_events(self, batch: Batch, start: int, end: int) -> None:
        events = batch.events
        assert events is not None and self.run is not None
        run = self.run
        if run.state["record"] is not None and start < end:
            # (RunScoped named the run by its first event already, when that event names one)
            origin = "the run's first event" if run.run_id is not None else self._by_file_name(batch.source)
            self._name_record(start, origin)
        run_id = run.run_id
        if run_id is not None and all(events[i].get("runId") == run_id for i in range(start, end)):
            return
        super().on_events(batch, start, end)

    def on_event(self, batch: Batch, i: int, event: dict[str, Any]) -> None:
        rid = event.get("runId")
        if names_run(rid):
            return
        run = self.run
        assert run is not None
        origin = run.state["origin"] if run.run_id is not None else self._by_file_name(batch.source)
        batch.replace(i, with_field(event, "runId", run.run_id))
        fields: dict[str, Any] = {"field": "runId", "value": run.run_id, "seqBefore": event.get("seq")}
        if "runId" in event:
            fields["original"] = rid
        self.repair("changed", f"runId was {named(event.get('runId', MISSING))}; took {run.run_id!r} from {origin}",
                    batch, i, **fields)

    def end_run(self, run: Run) -> list[dict[str, Any]]:
        if run.state["record"] is not None:  # a run record with no events: the file name names it
            self._name_record(None, self._by_file_name(run.source))
        return []

    def _by_file_name(self, source: str) -> str:
        """The run in progress is named by its journal's file name (it names itself nowhere): where its id came from."""
        run = self.run
        assert run is not None
        run.run_id = run_id_from_source(source)
        run.state["origin"] = origin = f"the journal's file name ({source})"
        return origin

    def _name_record(self, i: int | None, origin: str) -> None:
        """The run record taken out goes back named as its run is (its runId right after ``$record``), before column
        ``i`` (None: at the run's end), logged."""
        run = self.run
        assert run is not None
        column: Column = run.state["record"]
        run.state["record"] = None
        record = column[0]
        named_record = {RECORD_KEY: record[RECORD_KEY], "runId": run.run_id}
        named_record.update((key, value) for key, value in record.items() if key not in named_record)
        self.put_back([changed(column, named_record)], i)
        fields: dict[str, Any] = {**column_position(column), "field": "runId", "value": run.run_id}
        if "runId" in record:
            fields["original"] = record["runId"]
        self.repair("changed", f"run record runId was {named(record.get('runId', MISSING))}; took {run.run_id!r} from "
                    f"{origin}", **fields)
