"""One tool, one story: a tool_completed whose exit code is not 0 failed, in `replay walk` and every report and export.

The rule is ``outcome.went_wrong`` (read by ``toolcalls.result_failed``); the seeds' walk spec reads an exit code as a
verification (``exit_code=0 verification=ok [succeeded]``), so a non-zero one is a failure wherever the call is told.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from conftest import jsonl, run_replay


def _journal(result: dict) -> bytes:
    events = [
        {"seq": 1, "timestamp": "2026-03-01T12:00:00Z", "type": "run_started", "runId": "r1", "payload": {}},
        {"seq": 2, "timestamp": "2026-03-01T12:00:00Z", "type": "user_message", "runId": "r1", "payload": {"text": "hi"}},
        {"seq": 3, "timestamp": "2026-03-01T12:00:01Z", "type": "tool_called", "runId": "r1",
         "payload": {"callId": "c1", "toolName": "bash", "arguments": {"cmd": "false"}}},
        {"seq": 4, "timestamp": "2026-03-01T12:00:02Z", "type": "tool_completed", "runId": "r1",
         "payload": {"callId": "c1", "output": "boom", **result}},
        {"seq": 5, "timestamp": "2026-03-01T12:00:03Z", "type": "run_completed", "runId": "r1", "payload": {"output": {"done": True}}},
    ]
    return b"".join(orjson.dumps(e) + b"\n" for e in events)


def _walk_state(data: bytes, tmp_path: Path) -> str:
    journal = tmp_path / "run.jsonl"
    journal.write_bytes(data)
    proc = run_replay("walk", str(journal))
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.decode().splitlines() if ln.startswith("tool_completed"))
    return line.rsplit("[", 1)[1].rstrip("] ")


def _report_json(data: bytes) -> dict:
    proc = run_replay("report", "--format", "json", "-", input=data)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["runs"][0]


@pytest.mark.parametrize(("result", "failed"), [
    ({"exitCode": 2}, True),
    ({"exit_code": 1}, True),
    ({"exitCode": 0}, False),
    ({}, False),
])
def test_walk_and_report_tell_the_same_story(result: dict, failed: bool, tmp_path: Path) -> None:
    data = _journal(result)
    assert _walk_state(data, tmp_path) == ("failed" if failed else "succeeded")
    run = _report_json(data)
    assert run["toolCalls"]["calls"][0]["status"] == ("error" if failed else "ok")
    assert run["toolCalls"]["error"] == int(failed)
    assert run["toolCalls"]["byTool"]["bash"]["error"] == int(failed)
    errors = [(e["kind"], e["toolName"], e["message"], e["seq"]) for e in run["errors"]]
    assert errors == ([("tool_completed", "bash", f"exit code {next(iter(result.values()))}", 4)] if failed else [])


def test_text_junit_and_html_reports_count_the_failed_call() -> None:
    data = _journal({"exitCode": 2})
    text = run_replay("report", "-", input=data).stdout.decode()
    assert "tool calls (1, 1 failed)" in text
    assert "exit code 2" in text
    junit = run_replay("report", "--format", "junit", "-", input=data).stdout.decode()
    assert '<property name="failedToolCalls" value="1" />' in junit
    assert "tool calls: 1 (1 failed)" in junit
    html = run_replay("report", "--format", "html", "-", input=data).stdout.decode()
    assert "exit code 2" in html


def test_otlp_tool_span_fails_on_a_non_zero_exit_code() -> None:
    proc = run_replay("export", "--otlp", "-", input=_journal({"exitCode": 2}))
    assert proc.returncode == 0, proc.stderr
    spans = [s for r in jsonl(proc.stdout) for rs in r["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    tool = next(s for s in spans if s["name"].startswith("execute_tool"))
    assert tool["status"]["code"] == 2  # ERROR
    assert tool["status"]["message"] == "exit code 2"


def test_incident_import_records_a_failed_tool_result(tmp_path: Path) -> None:
    journal = tmp_path / "run.jsonl"
    journal.write_bytes(_journal({"exitCode": 2}))
    rules = tmp_path / "rules.json"
    rules.write_text('[{"id": "no-tool-errors", "type": "max_tool_errors", "max": 0}]')
    proc = run_replay("incident", "import", str(journal), "--format", "replay", "--rules", str(rules),
                      "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    incident = json.loads((tmp_path / "out" / "incident.json").read_text())
    results = [e for e in incident["events"] if e["type"] == "tool_result"]
    assert [r["ok"] for r in results] == [False]
    assert json.loads(proc.stdout)["rules"] == "fail"
