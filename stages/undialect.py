"""WriteDialect: writes canonical events back as the records of the dialect they were read from (the inverse of ``dialect``).

Each event read by ``dialect`` keeps its original record under ``$origin``; the events of one record
are grouped again and the record is written once, as the dialect's mapper rebuilds it from the parts
that survived healing (a dropped duplicate or orphaned tool result is left out, a moved record is
written where it now stands). A JSONL dialect (Claude Code, Codex) comes out one record per line; a
document dialect (OpenHands, mini-swe-agent) as one JSON document per run, on one line. Events that
have no original record (synthetic ones a heal rule invented, replay's own events) have nothing to
write back and are left out, as are reserved records (run, heal, source); an input none of whose
events has an original (replay's own journal) is reported (E_DIALECT_NO_ORIGIN) rather than
written as nothing in silence; so is each event whose origin cannot be written back (a dialect this replay
does not know, no integer index: E_EVENT_INVALID at its position).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from replay.pipeline.engine.batch import Batch, Column
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Transform
from replay.pipeline.model.dialects import AUTO, MAPPERS, NAMES, ORIGIN_KEY, Mapper
from replay.pipeline.model.records import RECORD_KEY, RUN_RECORD, is_record


@dataclass
class _Run:
    source: str
    dialect: str | None = None
    form: str = "jsonl"
    container: dict[str, Any] | None = None
    key: str | None = None
    mapper: Mapper | None = None
    records: list[Any] = field(default_factory=list)  # a document's records, written at the run's end
    written: set[int] = field(default_factory=set)  # record indexes already written
    group: list[dict[str, Any]] = field(default_factory=list)  # origins of the record being gathered
    where: Column | None = None  # the first event of that record (for its input position)


@register("undialect")
class WriteDialect(Transform):
    summary = "Write canonical events back as their dialect's records (from $origin): JSONL, or one JSON document per run."
    options = {
        "dialect": Option(str, AUTO, "the dialect to write: 'auto' writes each run in the dialect it was read from; "
                          "a name writes only the runs read from that dialect", choices=(AUTO, *NAMES)),
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.run: _Run | None = None
        self.skipped_runs: set[tuple[str, str]] = set()
        self.unmapped: dict[str, int] = {}  # per input: events read from no dialect (nothing to write back)
        self.mapped: set[str] = set()  # inputs with events read from a dialect

    def __call__(self, batch: Batch) -> Batch | None:
        out: list[Column] = []
        events = batch.events
        assert events is not None, "undialect takes parsed records"
        for i, record in enumerate(events):
            kind = record.get(RECORD_KEY)
            if is_record(record):
                if kind == RUN_RECORD or self.run is None or self.run.source != batch.source:
                    self._close(out)
                if kind == RUN_RECORD:
                    self.run = self._open(record, batch.source)
                continue
            origin = record.get(ORIGIN_KEY)
            if not isinstance(origin, dict) or "record" not in origin:
                if record.get("synthetic") is not True:  # replay's own event: counted, to say why nothing came out
                    self.unmapped[batch.source] = self.unmapped.get(batch.source, 0) + 1
                continue  # invented by a heal rule, or replay's own: no original to write
            self.mapped.add(batch.source)
            dialect, index = origin.get("dialect"), origin.get("index")
            if dialect not in MAPPERS or not isinstance(index, int) or isinstance(index, bool):
                # (a dialect this replay does not know, a newer one's say, or an origin edited by hand): said, not
                # left out in silence
                bad = ("dialect", dialect, "one of: " + ", ".join(NAMES)) if dialect not in MAPPERS else (
                    "index", index, "the record's place in its input, an integer")
                self.error("E_EVENT_INVALID", f"the event's $origin.{bad[0]} is {orjson.dumps(bad[1]).decode()}, so its "
                           "original record cannot be written back; it is left out", batch, i,
                           path=f"$['$origin'].{bad[0]}", expected=bad[2], received=bad[1],
                           howToFix="Write back events as `replay read --dialect NAME` mapped them (their $origin unchanged).")
                continue
            run = self.run
            if run is None or run.source != batch.source:
                self._close(out)
                run = self.run = _Run(batch.source)
            if run.dialect is None and origin.get("dialect") in MAPPERS:
                run.dialect = origin["dialect"]
                run.mapper = MAPPERS[run.dialect](batch.source)
            if run.mapper is None or origin.get("dialect") != run.dialect or not self._wanted(run, batch):
                continue
            if run.group and run.group[0].get("index") != origin.get("index"):
                self._settle(run, out)
            if not run.group:
                run.where = batch.column(i)
            run.group.append(origin)
        if not out:
            return None
        return Batch.from_columns(out, batch.source)

    def flush(self) -> Batch | None:
        out: list[Column] = []
        self._close(out)
        for source, count in self.unmapped.items():
            if source not in self.mapped:
                self.error("E_DIALECT_NO_ORIGIN", f"none of the {count} events of {source!r} was mapped from a dialect (no $origin): "
                           "there is nothing to write back, so nothing of it is written",
                           source=source, expected="events read by `replay read --dialect NAME` (they keep $origin)",
                           received=f"{count} events without $origin")
        return Batch.from_columns(out, "<end>") if out else None

    # runs ---------------------------------------------------------------------------------------------
    def _open(self, record: dict[str, Any], source: str) -> _Run:
        run = _Run(source)
        origin = record.get(ORIGIN_KEY)
        if isinstance(origin, dict) and origin.get("dialect") in MAPPERS:
            run.dialect = origin["dialect"]
            run.mapper = MAPPERS[run.dialect](source)
            form = origin.get("form")
            run.form = form if isinstance(form, str) and form in ("jsonl", "array", "object") else "jsonl"
            if run.form == "object" and isinstance(origin.get("container"), dict) and isinstance(origin.get("key"), str):
                run.container, run.key = origin["container"], origin["key"]
            elif run.form == "object":
                run.form = "array"
        return run

    def _wanted(self, run: _Run, batch: Batch) -> bool:
        wanted = self.config["dialect"]
        if wanted == AUTO or wanted == run.dialect:
            return True
        key = (batch.source, str(run.dialect))
        if key not in self.skipped_runs:
            self.skipped_runs.add(key)
            flag = self.flags.get("dialect")  # (--dialect of `replay write`, --dialect-out of `replay heal`)
            fix = (f"Write it with {flag} {run.dialect}, or {flag} auto." if flag
                   else f'Write it with dialect = "{run.dialect}", or "auto".')
            self.error("E_DIALECT_MISMATCH", f"a run of {batch.source!r} was read as {run.dialect}, not {wanted}; "
                       "it is left out", source=batch.source, expected=wanted, received=run.dialect,
                       howToFix=fix)
        return False

    def _settle(self, run: _Run, out: list[Column]) -> None:
        """The events of one record are all here: write the record (once) as its dialect rebuilds it."""
        group, run.group = run.group, []
        index = group[0].get("index")
        if not isinstance(index, int) or index in run.written or run.mapper is None:
            return
        run.written.add(index)
        record = group[0]["record"]
        rebuilt = run.mapper.rebuild(record, group)
        if rebuilt is None and record is not None:  # nothing of it is left (a trajectory's null message is kept: null)
            return
        if run.form == "jsonl":
            _event, _raw, line, offset, pointer = run.where or (None, None, None, None, None)
            out.append((rebuilt, None, line, offset, pointer))
        else:
            run.records.append(rebuilt)

    def _close(self, out: list[Column]) -> None:
        run = self.run
        self.run = None
        if run is None:
            return
        if run.group:
            self._settle(run, out)
        if run.form == "jsonl" or run.dialect is None:
            return
        if run.form == "object" and run.container is not None and run.key is not None:
            document: Any = {**run.container, run.key: run.records}
        else:
            document = run.records
        out.append((document, None, None, None, None))
