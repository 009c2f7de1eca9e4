"""The run's own errors in the OTLP export are the ones ``replay report`` lists: its run record's error and each
``run_failed`` that does not say it again (``model.own_error``, ``said_again``) are each an ``exception`` event of the
run's span; the span's one status is the run's last word (its last ``run_failed``, else its record's), ERROR only for a
run the report says failed. A record's
error and a ``run_failed`` of another message were two errors in the report but one failed span, the other lost."""

from __future__ import annotations

from typing import Any

import orjson
from conftest import run_replay
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.report.model import RunTally
from replay.pipeline.report.otlp import STATUS_ERROR, TraceBuilder


def _attrs(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in items}


def _export(record: dict[str, Any] | None, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    trace = TraceBuilder(record, "r.jsonl")
    for event in events:
        trace.add(event)
    return [span for request in trace.requests() for rs in request["resourceSpans"] for ss in rs["scopeSpans"]
            for span in ss["spans"]]


def _report(record: dict[str, Any] | None, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    tally = RunTally(record, "r.jsonl")
    for event in events:
        tally.add_event(event)
    return tally.summary()["errors"]  # type: ignore[no-any-return]


def _status(record: dict[str, Any] | None, events: list[dict[str, Any]]) -> str:
    tally = RunTally(record, "r.jsonl")
    for event in events:
        tally.add_event(event)
    return tally.status()


def _run_failed(seq: int, **payload: Any) -> dict[str, Any]:
    return {"seq": seq, "timestamp": f"2026-01-01T00:00:{seq:02d}Z", "type": "run_failed", "runId": "r", "payload": payload}


def test_a_record_error_and_a_run_failed_of_another_message_are_two_exception_events():
    record = {"$record": "run", "runId": "r", "status": "error", "error": {"code": "quota", "message": "quota exceeded"}}
    events = [{"seq": 1, "timestamp": "2026-01-01T00:00:01Z", "type": "run_started", "runId": "r", "payload": {}},
              _run_failed(2, code=503, message="gave up")]
    listed = [(e["code"], e["message"]) for e in _report(record, events)]
    assert listed == [("quota", "quota exceeded"), ("503", "gave up")]
    root = next(s for s in _export(record, events) if "parentSpanId" not in s)
    assert [(e["name"], _attrs(e["attributes"])) for e in root["events"]] == [
        ("exception", {"exception.type": "quota", "exception.message": "quota exceeded"}),
        ("exception", {"exception.type": "503", "exception.message": "gave up"})]
    assert root["status"] == {"code": STATUS_ERROR, "message": "gave up"}  # the run's last word
    assert _attrs(root["attributes"])["error.type"] == "503"


def test_the_same_error_twice_is_one_event_as_one_report_entry(tmp_path):
    journal = tmp_path / "r.jsonl"
    journal.write_text('{"$record":"run","runId":"r","status":"error","error":"gave up"}\n'
                       '{"seq":1,"timestamp":"2026-01-01T00:00:01Z","type":"run_failed","runId":"r","payload":'
                       '{"error":"gave up"}}\n')
    report = run_replay("report", "--format", "json", str(journal))
    assert report.returncode == 0, report.stderr
    assert len(orjson.loads(report.stdout)["runs"][0]["errors"]) == 1
    exported = run_replay("export", "--otlp", str(journal))
    assert exported.returncode == 0, exported.stderr
    root = orjson.loads(exported.stdout.splitlines()[-1])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(root["events"]) == 1 and root["status"]["code"] == STATUS_ERROR


_MESSAGES = st.sampled_from([None, "gave up", "quota exceeded", ""])
_CODES = st.sampled_from([None, "quota", 503])
_RECORDS = st.one_of(st.none(), st.builds(lambda status, code, message: {
    "$record": "run", "runId": "r", "status": status,
    **({"error": {"code": code, "message": message}} if code is not None else {"error": message} if message else {})},
    st.sampled_from(["error", "ok", "unknown"]), _CODES, _MESSAGES))


@settings(max_examples=200, deadline=None)
@given(record=_RECORDS, failures=st.lists(st.tuples(_CODES, _MESSAGES, st.booleans()), max_size=4))
def test_the_trace_holds_each_error_the_report_lists(record, failures):
    events: list[dict[str, Any]] = [{"seq": 1, "timestamp": "2026-01-01T00:00:01Z", "type": "run_started", "runId": "r",
                                     "payload": {}}]
    for seq, (code, message, tool) in enumerate(failures, 2):
        if tool:  # a tool that failed: a span of its own in error
            events += [{"seq": seq, "timestamp": f"2026-01-01T00:00:{seq:02d}Z", "type": "tool_called", "runId": "r",
                        "payload": {"callId": f"c{seq}", "toolName": "t"}},
                       {"seq": seq, "timestamp": f"2026-01-01T00:00:{seq:02d}Z", "type": "tool_failed", "runId": "r",
                        "payload": {"callId": f"c{seq}", "error": message}}]
        else:
            events.append(_run_failed(seq, **({"code": code} if code is not None else {}),
                                      **({"message": message} if message is not None else {})))
    listed = _report(record, events)
    spans = _export(record, events)
    root = next(s for s in spans if "parentSpanId" not in s)
    failed = [s for s in spans if "parentSpanId" in s and s["status"]["code"] == STATUS_ERROR]
    run_level = [e for e in listed if e["kind"] in ("run", "run_failed")]
    assert len(listed) == len(failed) + len(root.get("events", []))
    assert [_attrs(e["attributes"])["exception.message"] for e in root.get("events", [])] == [e["message"] for e in run_level]
    assert (root.get("status", {}).get("code") == STATUS_ERROR) == (_status(record, events) == "error")  # (the report's)


def test_a_run_report_calls_ok_keeps_an_unset_span_status_its_error_an_event():
    """A run record that holds an error but says the run ended well (``"status": "ok"``: a run cancelled cleanly, a
    warning it kept) is an ok run in ``report``, its error listed; the export failed the run's span (ERROR) for it. The
    error is an ``exception`` event, the span's status stays unset, as the report's status stays ok."""
    record = {"$record": "run", "runId": "r", "status": "ok", "error": "cancelled by the user"}
    events = [{"seq": 1, "timestamp": "2026-01-01T00:00:01Z", "type": "run_started", "runId": "r", "payload": {}},
              {"seq": 2, "timestamp": "2026-01-01T00:00:02Z", "type": "run_completed", "runId": "r", "payload": {}}]
    assert _status(record, events) == "ok" and [e["message"] for e in _report(record, events)] == ["cancelled by the user"]
    root = next(s for s in _export(record, events) if "parentSpanId" not in s)
    assert [_attrs(e["attributes"])["exception.message"] for e in root["events"]] == ["cancelled by the user"]
    assert root.get("status", {}).get("code") != STATUS_ERROR, root.get("status")
