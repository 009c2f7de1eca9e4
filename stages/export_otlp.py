"""ExportOtlp: turns each run of the stream into one OTLP/JSON ExportTraceServiceRequest (GenAI semantic conventions).

The stream's records are consumed; what comes out is one record per run, the request of
``pipeline/report/otlp.py`` (spans for the run, each model call and each tool execution; a run of more than
``SPANS_PER_REQUEST`` spans in several of at most that many, its finished spans sent as it goes), which
``write`` puts on one line each: the format of the OpenTelemetry collector's file exporter, and the
body an OTLP/HTTP endpoint (``/v1/traces``, ``Content-Type: application/json``) takes per line. A run that tells no
time is exported with times 0 (OTLP's unset value) and said on the ``notices`` port (``E_OTLP_TIME_UNKNOWN``), and so
is a usage value left out of the token counts, as ``report`` leaves it out and says it (``E_USAGE_NOT_COUNTED``).
"""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import diagnostic
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Transform
from replay.pipeline.model.records import HEAL_RECORD, RECORD_KEY, RUN_RECORD, is_record
from replay.pipeline.model.runs import Run, of_no_run, starts_run
from replay.pipeline.model.validation import is_no_event, no_event_error
from replay.pipeline.report.model import usage_notice
from replay.pipeline.report.otlp import TraceBuilder, trace_source


@register("export_otlp")
class ExportOtlp(Transform):
    summary = "Turn each run into one OTLP/JSON trace request (GenAI conventions: invoke_agent, chat, execute_tool spans)."
    gives = "OTLP trace requests"
    # notices: a run that tells no time, its spans at 0 (E_OTLP_TIME_UNKNOWN, a warning); a usage value left out of the
    # counts, as report leaves it out (E_USAGE_NOT_COUNTED, a warning)
    ports = ("errors", "notices")

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.run: Run | None = None
        self.trace: TraceBuilder | None = None
        self.seen: dict[tuple[str, str], int] = {}  # runs so far of each (source, run id): one trace id each
        self.identities: dict[str, str] = {}  # each source's ``trace_source``: looked up once per source, not per run

    def __call__(self, batch: Batch) -> Batch | None:
        out: list[dict[str, Any]] = []
        for i, record in enumerate(batch.events or ()):
            if is_record(record) and of_no_run(record):
                continue  # the heal record of a run heal dropped whole: of no trace here (the one before is another run)
            if is_no_event(record):  # ({"a": 1}: nothing of it can be a span) reported, and left out; not a run of its own
                self.emit("errors", no_event_error(record, "it is not exported", **batch.position(i), stage=self.id))
                continue
            if starts_run(record, self.run, batch.source):
                self._finish(out)
                facts = record if record.get(RECORD_KEY) == RUN_RECORD else None
                rid = record.get("runId")
                self.run = Run(rid if isinstance(rid, str) else None, facts, batch.source)
                self.trace = TraceBuilder(facts, batch.source, rid, self.seen, self._identity(batch.source))
                self._left_out(batch, i)  # (its run record's usage)
                if is_record(record) and facts is None:
                    self.run = None  # a source record opens nothing by itself
                    self.trace = None
                    continue
            kind = record.get(RECORD_KEY)
            if self.trace is None:
                if is_record(record):
                    continue
                self.run = Run(None, None, batch.source)
                self.trace = TraceBuilder(None, batch.source, seen=self.seen, identity=self._identity(batch.source))
            if kind == HEAL_RECORD:
                self.trace.add_heal(record)
            elif not is_record(record):
                self.trace.add(record)
                if self.trace.left_out:
                    self._left_out(batch, i)
                self.run.events += 1  # type: ignore[union-attr]
                out += self.trace.finished()
        return Batch.of(out, batch.source) if out else None

    def _left_out(self, batch: Batch, i: int) -> None:
        """A notice (E_USAGE_NOT_COUNTED, a warning) of each usage value record ``i`` of ``batch`` left out of its run's
        counts, the one ``report`` gives of it (``usage_notice``)."""
        trace = self.trace
        assert trace is not None
        rid = trace.run_id if isinstance(trace.run_id, str) and trace.run_id else None
        for fields, only_fields in trace.left_out:
            self.emit("notices", usage_notice(fields, only_fields, batch.where(i), rid, self.id))
        trace.left_out.clear()

    def _identity(self, source: str) -> str:
        if source not in self.identities:
            self.identities[source] = trace_source(source)
        return self.identities[source]

    def flush(self) -> Batch | None:
        out: list[dict[str, Any]] = []
        self._finish(out)
        return Batch.of(out, "<end>") if out else None

    def _finish(self, out: list[dict[str, Any]]) -> None:
        trace, self.trace = self.trace, None
        if trace is not None and (trace.count or trace.record):
            out += trace.requests()
            if trace.time_unknown:
                self._no_time(trace)

    def _no_time(self, trace: TraceBuilder) -> None:
        """Say that a run's spans were written at time 0: no event of it tells a time (OTLP has no other "unknown")."""
        named = isinstance(trace.run_id, str)
        message = (f"{f'run {trace.run_id!r}' if named else 'a run with no id'} of {trace.source!r} tells no time OTLP "
                   f"can hold ({_why_no_time(trace)}): its spans are written with times 0, OTLP's unset value (most "
                   "backends show it as 1970-01-01), and replay.time_unknown = true on the run's span")
        note = {**diagnostic("E_OTLP_TIME_UNKNOWN", message, source=trace.source, runId=trace.run_id if named else None,
                             stage=self.id), "action": "reported"}
        self.emit("notices", note)


def _events(n: int) -> str:
    return f"{n} event{'' if n == 1 else 's'}"


def _why_no_time(trace: TraceBuilder) -> str:
    """Why none of a run's events gives it a time, as it is: timestamps out of OTLP's range, ones that name no time,
    none at all (or heal's stand-in for none); each kind counted."""
    if not trace.count:
        return "it has no events"
    kinds = []
    if trace.out_of_range:
        kinds.append(f"{_events(trace.out_of_range)} with a timestamp outside what OTLP holds: before 1970 or after "
                     "2554-07-21, replay.timestamps_out_of_range")
    if trace.unreadable:
        kinds.append(f"{_events(trace.unreadable)} with a timestamp that is no RFC 3339 time")
    rest = trace.count - trace.out_of_range - trace.unreadable
    if rest:
        kinds.append(f"{_events(rest)} with no timestamp, or only heal's stand-in 1970-01-01T00:00:00.000Z")
    return "of its events: " + "; ".join(kinds) if len(kinds) > 1 else kinds[0]
