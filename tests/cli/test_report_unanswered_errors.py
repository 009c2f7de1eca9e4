"""A tool call never answered is a failed call and one of the run's errors, in every format, raw or healed alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_replay

JOURNAL = b"".join(json.dumps(e).encode() + b"\n" for e in [
    {"seq": 1, "timestamp": "2026-03-01T12:00:00Z", "type": "run_started", "runId": "u", "payload": {}},
    {"seq": 2, "timestamp": "2026-03-01T12:00:01Z", "type": "tool_called", "runId": "u",
     "payload": {"callId": "a", "toolName": "fetch"}},
    {"seq": 3, "timestamp": "2026-03-01T12:00:02Z", "type": "tool_called", "runId": "u",
     "payload": {"callId": "b", "toolName": "fetch"}},
    {"seq": 4, "timestamp": "2026-03-01T12:00:03Z", "type": "tool_failed", "runId": "u",
     "payload": {"callId": "b", "error": {"code": "T", "message": "timeout"}}},
    {"seq": 5, "timestamp": "2026-03-01T12:00:04Z", "type": "run_completed", "runId": "u", "payload": {}}])


@pytest.fixture(params=["raw", "healed"])
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = tmp_path / "j.jsonl"
    path.write_bytes(JOURNAL if request.param == "raw" else run_replay("heal", "-", input=JOURNAL).stdout)
    return path


def test_the_errors_count_each_failed_call_the_unanswered_one_too(journal: Path):
    doc = json.loads(run_replay("report", "--format", "json", str(journal)).stdout)
    run = doc["runs"][0]
    assert run["toolCalls"]["error"] == 2 == len(run["errors"])
    assert [(e["kind"], e["seq"], e["toolName"]) for e in run["errors"]] == [
        ("tool_failed", 4, "fetch"), ("tool_unanswered", 2, "fetch")]
    assert doc["aggregate"]["errors"] == {"total": 2, "byCode": {"T": 1, "tool_unanswered": 1}}


@pytest.mark.parametrize("fmt", ["text", "markdown", "html"])
def test_every_format_lists_the_unanswered_call_among_the_errors(journal: Path, fmt: str):
    out = run_replay("report", "--format", fmt, str(journal)).stdout.decode()
    kind = "tool\\_unanswered" if fmt == "markdown" else "tool_unanswered"
    assert kind in out and "no result was read before the run ended" in out


def test_junit_lists_it_in_a_failed_runs_failure(journal: Path):
    """(JUnit lists a run's errors in the failure of a run that failed: a run that ended well passes.)"""
    journal.write_bytes(journal.read_bytes().replace(b'"run_completed"', b'"run_failed"'))
    out = run_replay("report", "--format", "junit", str(journal)).stdout.decode()
    assert "tool_unanswered (fetch) at seq 2: no result was read before the run ended" in out


def _unanswered_span_message(path: Path) -> str:
    done = run_replay("export", "--otlp", str(path))
    assert done.returncode == 0, done.stderr
    (span,) = [s for line in done.stdout.splitlines() for rs in json.loads(line)["resourceSpans"]
               for ss in rs["scopeSpans"] for s in ss["spans"]
               if s["status"].get("code") == 2 and s["name"] == "execute_tool fetch"
               and not any(a["key"] == "error.type" and a["value"]["stringValue"] == "T" for a in s["attributes"])]
    return span["status"]["message"]


def test_report_heal_and_export_tell_an_unanswered_call_by_one_text(tmp_path: Path):
    """Three texts told of one call never answered: report's error ("no result was read before the run ended"), heal's
    log line and mark ("got no result before the run ended", "no result for this tool call was read ...") and the
    OTLP span of a call still open at the run's end ("the run ended before this tool call got a result"). Now each
    says ``toolcalls.UNANSWERED_MESSAGE``; heal's mark and log line add why none was read, and the export of a healed
    journal gives the mark's reason."""
    text = "no result was read before the run ended"
    raw = tmp_path / "raw.jsonl"
    raw.write_bytes(JOURNAL)
    log = tmp_path / "log.jsonl"
    healed = run_replay("heal", str(raw), "--log", str(log)).stdout
    (mark,) = [e["payload"] for e in map(json.loads, healed.splitlines()) if e.get("type") == "tool_unanswered"]
    assert mark["reason"].startswith(text + " ")
    (logged,) = [e["message"] for e in map(json.loads, log.read_bytes().splitlines()) if e["rule"] == "pair_tool_calls"]
    assert logged == f"tool call 'a' (fetch): {text}; marked it tool_unanswered"
    report = json.loads(run_replay("report", "--format", "json", str(raw)).stdout)
    assert [e["message"] for e in report["runs"][0]["errors"] if e["kind"] == "tool_unanswered"] == [text]
    assert _unanswered_span_message(raw) == text
    (tmp_path / "healed.jsonl").write_bytes(healed)
    assert _unanswered_span_message(tmp_path / "healed.jsonl") == mark["reason"]
