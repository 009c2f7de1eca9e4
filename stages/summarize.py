"""SummarizeRuns: consumes a stream and emits one summary record per run, plus one record counting input problems."""

from __future__ import annotations

from collections import Counter
from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Transform
from replay.pipeline.model.records import (
    DIAGNOSTICS_RECORD,
    HEAL_RECORD,
    RECORD_KEY,
    RUN_RECORD,
    SOURCE_RECORD,
    has_records,
    is_record,
)
from replay.pipeline.model.runs import input_ends, of_no_run, runid_spans, starts_run
from replay.pipeline.model.validation import all_event_types, is_no_event, no_event_error
from replay.pipeline.report.model import (
    EventColumns,
    RunTally,
    as_run_id,
    count_repairs,
    first_problems,
    heal_log_path,
    read_heal_log,
    usage_notice,
    values_of,
)

_DICT = {dict}


@register("summarize")
class SummarizeRuns(Transform):
    """Run boundaries follow ``pipeline/runs.py``: a run record, the first record of each source (file),
    or an event naming another ``runId`` than the run it follows. A heal record (``$record: heal``)
    counts toward the run it follows when it names that run; one that names another run (heal writes the
    repairs of a run it dropped whole, every event of it, at the end of the stream) or follows no run is
    passed on, with its source, for the report to show as repairs of no run in it. Side batches wired in
    from ``<id>.errors`` ports are counted for the report and passed on unchanged through this stage's
    own errors port, so they are still printed and still make the command exit 1. A record that is no event
    (``{"a": 1}``, ``"type": ""``: ``validation.is_no_event``) is such a problem of its own, reported there as
    ``export --otlp`` reports it (E_ARTIFACT_EVENT_TYPE_INVALID at its line) and counted, and left out of every run.
    """

    emits_summaries = True
    summary = "Summarize each run (status, event counts, tool calls, errors, usage, repairs, duration) as one summary record."
    ports = ("errors", "notices")  # notices: a usage value that is no count, left out (E_USAGE_NOT_COUNTED, a warning)
    options = {
        "heal_logs": Option(bool, True, "for an artifact read from a file, count the repairs in the <id>.heal-log.json "
                                        "beside it when the stream carries no heal record for that run"),
        "timeline": Option(bool, True, "gather each run's timeline marks (the html report draws them); false: "
                                       "summaries without `timeline`, as every other format shows them"),
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.tally: RunTally | None = None
        self.diagnostics: Counter[str] = Counter()
        self.first_problems: list[dict[str, Any]] = []

    def __call__(self, batch: Batch) -> Batch | None:
        if batch.port is not None:
            self._side_records(batch)
            return None
        done: list[dict[str, Any]] = []
        events = batch.events or []
        if not self._by_runs(batch, events, batch.source, done):
            self._one_by_one(batch, events, batch.source, done)
        return Batch.of(done, batch.source) if done else None

    def _by_runs(self, batch: Batch, events: list[Any], source: str, done: list[dict[str, Any]]) -> bool:
        """The usual batch (plain events, each with a runId): cut where the runId changes, each piece added to its
        run at once. False (nothing done) for anything else: records, events without a runId."""
        n = len(events)
        if not n or set(map(type, events)) != _DICT or has_records(events):
            return False
        types = values_of(events, "type")
        if not all_event_types(types):  # (a record that is no event among them: reported, one by one)
            return False
        rids = values_of(events, "runId")
        spans = runid_spans(rids)
        if spans is None:
            return False
        columns = EventColumns(events, types) if not self.config["timeline"] else None  # (read once for the batch's runs)
        for a, b in spans:
            tally = self.tally
            if tally is None or starts_run(events[a], tally, source):  # type: ignore[arg-type]
                if tally is not None:
                    done.append(self._finish())
                tally = self.tally = RunTally(None, source, run_id=rids[a], timeline=self.config["timeline"])
            before = tally.count
            tally.add_events(events[a:b], columns, a)
            if tally.unheld:
                self._unheld(tally, batch, a - before)
        return True

    def _one_by_one(self, batch: Batch, events: list[Any], source: str, done: list[dict[str, Any]]) -> None:
        for i, record in enumerate(events):
            if type(record) is not dict:
                continue
            if is_no_event(record):  # ({"a": 1}) reported, and left out: no event of a run, nor a run of its own
                self._problem(no_event_error(record, "it is left out of the report", **batch.position(i), stage=self.id))
                continue
            kind = record.get(RECORD_KEY)
            event = not is_record(record)
            if not event and kind not in (RUN_RECORD, HEAL_RECORD):  # other reserved records say nothing about the run,
                if kind == SOURCE_RECORD and self.tally is not None and input_ends(record, self.tally, source):  # type: ignore[arg-type]
                    done.append(self._finish())  # but read's mark ends it (the same file read again is another input)
                    self.tally = None
                continue
            if kind == HEAL_RECORD and not self._names_run(record, source):
                counted = count_repairs(record)
                if counted:
                    done.append({RECORD_KEY: HEAL_RECORD, "runId": as_run_id(record.get("runId")), "source": source,
                                 "repairs": counted[0], "byRule": dict(sorted(counted[1].items()))})
                continue
            if self.tally is None or starts_run(record, self.tally, source):  # type: ignore[arg-type]
                if self.tally is not None:
                    done.append(self._finish())
                is_run = kind == RUN_RECORD
                self.tally = RunTally(record if is_run else None, source,
                                      run_id=record.get("runId") if event else None,
                                      timeline=self.config["timeline"])
            tally = self.tally
            assert tally is not None
            if event:
                tally.add_event(record)
            elif kind == HEAL_RECORD:
                tally.add_heal_record(record)
            if tally.unheld:
                self._unheld(tally, batch, i - (tally.count - 1), at_record=i)

    def _unheld(self, tally: RunTally, batch: Batch, shift: int, at_record: int | None = None) -> None:
        """A notice (``usage_notice``, the one ``export --otlp`` gives) for each usage object of ``tally``'s run that
        held a number no count holds (``usage_of``): it is left out of the run's usage; or a value that is no count (a
        string, a negative number, true): that field is left out, the rest of the object counted. The event of index k in the run is record ``k + shift`` of
        ``batch``; the run record, ``at_record``."""
        for index, fields, only_fields in tally.unheld:
            i = at_record if index is None else index + shift
            where = batch.where(i) if i is not None else {}
            self.emit("notices", usage_notice(fields, only_fields, where, tally.run_id, self.id))
        tally.unheld.clear()

    def _names_run(self, record: dict[str, Any], source: str) -> bool:
        """Is heal record ``record`` the run in progress's: after it, in its input, naming it (or neither naming a
        run)? Heal writes one after the run it counts, with that run's id; one of a run it dropped whole says so
        (``runDropped``), and is no other run's even when that run has its id."""
        tally = self.tally
        return (tally is not None and not of_no_run(record)
                and not starts_run(record, tally, source)  # type: ignore[arg-type]
                and as_run_id(record.get("runId")) == tally.run_id)

    def flush(self) -> Batch | None:
        done = [self._finish()] if self.tally is not None else []
        self.tally = None
        if self.diagnostics:
            done.append({RECORD_KEY: DIAGNOSTICS_RECORD, "total": sum(self.diagnostics.values()),
                         "byCode": dict(sorted(self.diagnostics.items())), "first": self.first_problems})
        return Batch.of(done, "<summarize>") if done else None

    # ------------------------------------------------------------------------------------------
    def _finish(self) -> dict[str, Any]:
        tally = self.tally
        assert tally is not None
        if self.config["heal_logs"] and not tally.healed_in_stream:
            self._add_heal_log(tally)
        return tally.summary()

    def _add_heal_log(self, tally: RunTally) -> None:
        artifact_id = (tally.record or {}).get("artifactId")
        path = heal_log_path(tally.source, artifact_id)
        if path is None:
            return
        try:
            document = read_heal_log(path)
        except (OSError, ValueError) as exc:
            self.error("E_ARTIFACT_JSON_INVALID", f"heal log {str(path)!r} could not be read: {exc}", source=str(path))
            return
        log_run = document.get("runId")
        if isinstance(log_run, str) and tally.run_id is not None and log_run != tally.run_id:
            return  # a heal log of another run that happens to sit here
        counted = count_repairs(document)
        if counted:
            tally.add_repairs(*counted)

    def _side_records(self, batch: Batch) -> None:
        if batch.port != "errors":
            return
        for record in batch.events or ():
            if isinstance(record, dict):
                self._problem(record)

    def _problem(self, record: dict[str, Any]) -> None:
        """An input problem (an error body): counted for the report, and passed on through the errors port."""
        first_problems(self.first_problems, (record,))
        self.diagnostics[str(record.get("code"))] += 1
        self.emit("errors", record)
