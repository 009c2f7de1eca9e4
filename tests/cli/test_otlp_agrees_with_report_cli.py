"""``replay export --otlp`` of a journal not healed yet makes the tool spans ``replay report`` counts the calls of: its
types read through heal's built-in aliases (``report.model.CANONICAL_TYPES``), and a call or result written again (the
same call id: a resumed session's log repeats records) one call, an id used again for another call two
(``toolcalls.OpenCalls.written_again``). Real processes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import run_replay


def _event(seq: int, kind: str, second: int, **payload: object) -> dict:
    return {"type": kind, "seq": seq, "runId": "r1", "timestamp": f"2026-01-01T00:00:{second:02d}Z", "payload": payload}


def _tool_spans(path: Path) -> list[tuple[str, str, int]]:
    """(name, status ok/error, duration ms) of each ``execute_tool`` span ``replay export --otlp`` writes."""
    done = run_replay("export", "--otlp", str(path), process=True)
    assert done.returncode == 0 and not done.stderr, done.stderr
    spans = [s for line in done.stdout.splitlines() for rs in orjson.loads(line)["resourceSpans"]
             for ss in rs["scopeSpans"] for s in ss["spans"] if s["name"].startswith("execute_tool")]
    return [(s["name"].removeprefix("execute_tool "), "error" if s["status"].get("code") == 2 else "ok",
             (int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])) // 1_000_000) for s in spans]


def _report_calls(path: Path) -> list[tuple[str, str, int]]:
    done = run_replay("report", "--format", "json", str(path), process=True)
    assert done.returncode == 0, done.stderr
    calls = orjson.loads(done.stdout)["runs"][0]["toolCalls"]["calls"]
    return [(c["toolName"], c["status"], int(c["durationMs"])) for c in calls]


JOURNALS = {
    "alias": [_event(1, "run_started", 0), _event(2, "tool_start", 0, toolName="t", callId="c1"),
              _event(3, "tool_end", 1, callId="c1"), _event(4, "tool_called", 1, toolName="u", callId="c2"),
              _event(5, "tool_error", 3, callId="c2"), _event(6, "run_end", 4)],
    "repeated after its result": [
        _event(1, "run_started", 0), _event(2, "tool_called", 0, toolName="t", callId="c1"),
        _event(3, "tool_completed", 1, callId="c1"),
        _event(4, "tool_called", 2, toolName="t", callId="c1"), _event(5, "tool_completed", 3, callId="c1"),
        _event(6, "run_completed", 4)],
    # the id used again for a new call (another tool) once its call was answered: two calls, as heal pairs them
    "id used again": [
        _event(1, "run_started", 0), _event(2, "tool_called", 0, toolName="a", callId="c1"),
        _event(3, "tool_completed", 1, callId="c1"),
        _event(4, "tool_called", 2, toolName="b", callId="c1"), _event(5, "tool_failed", 4, callId="c1"),
        _event(6, "run_completed", 5)],
    # the same tool, other arguments: a new call too (its whole payload tells it, not its tool's name), failed
    "id used again, other arguments": [
        _event(1, "run_started", 0), _event(2, "tool_called", 0, toolName="bash", callId="c1", args={"cmd": "ls"}),
        _event(3, "tool_completed", 1, callId="c1", output="a"),
        _event(4, "tool_called", 2, toolName="bash", callId="c1", args={"cmd": "pwd"}),
        _event(5, "tool_failed", 4, callId="c1", error="boom"), _event(6, "run_completed", 5)],
    # ... or never answered: open until the run's end
    "id used again, other arguments, unanswered": [
        _event(1, "run_started", 0), _event(2, "tool_called", 0, toolName="bash", callId="c1", args={"cmd": "ls"}),
        _event(3, "tool_completed", 1, callId="c1", output="a"),
        _event(4, "tool_called", 2, toolName="bash", callId="c1", args={"cmd": "pwd"}),
        _event(5, "run_completed", 5)],
    # the same payload (keys in another order) after its result: that call written again, one call
    "repeated after its result, same arguments": [
        _event(1, "run_started", 0), _event(2, "tool_called", 0, toolName="bash", callId="c1", args={"a": 1, "b": 2}),
        _event(3, "tool_completed", 1, callId="c1"),
        _event(4, "tool_called", 2, args={"b": 2, "a": 1}, callId="c1", toolName="bash"),
        _event(5, "tool_completed", 3, callId="c1"), _event(6, "run_completed", 4)],
    "repeated while open": [
        _event(1, "run_started", 0), _event(2, "tool_called", 0, toolName="t", callId="c1"),
        _event(3, "tool_called", 0, toolName="t", callId="c1"), _event(4, "tool_completed", 2, callId="c1"),
        _event(5, "run_completed", 3)],
    # a repeated result naming its tool must not answer another (id-less) open call of that tool
    "repeated result naming its tool": [
        _event(1, "run_started", 0), _event(2, "tool_called", 0, toolName="t", callId="c1"),
        _event(3, "tool_completed", 1, toolName="t", callId="c1"), _event(4, "tool_called", 1, toolName="t"),
        _event(5, "tool_completed", 2, toolName="t", callId="c1"), _event(6, "tool_completed", 4, toolName="t"),
        _event(7, "run_completed", 5)],
    # a failed result written again (a resumed session): one failed call, one error, one failed span
    "failed result written again": [
        _event(1, "run_started", 0), _event(2, "tool_called", 0, toolName="t", callId="c1"),
        _event(3, "tool_failed", 1, callId="c1", error="boom"), _event(4, "tool_failed", 2, callId="c1", error="boom"),
        _event(5, "run_completed", 3)],
    # ... after a result that went well: the call keeps its first
    "failed result after its call's result": [
        _event(1, "run_started", 0), _event(2, "tool_called", 0, toolName="t", callId="c1"),
        _event(3, "tool_completed", 1, callId="c1"), _event(4, "tool_failed", 2, callId="c1", error="boom"),
        _event(5, "run_completed", 3)],
    # a result written before its call: that call's
    "result before its call": [
        _event(1, "run_started", 0), _event(2, "tool_failed", 2, callId="c1", error="boom"),
        _event(3, "tool_called", 1, toolName="t", callId="c1"), _event(4, "tool_completed", 3, toolName="u", callId="c2"),
        _event(5, "tool_called", 2, toolName="u", callId="c2"), _event(6, "run_completed", 4)],
}
EXPECTED = {
    "alias": [("t", "ok", 1000), ("u", "error", 2000)],
    "repeated after its result": [("t", "ok", 1000)],
    "id used again": [("a", "ok", 1000), ("b", "error", 2000)],
    "id used again, other arguments": [("bash", "ok", 1000), ("bash", "error", 2000)],
    "id used again, other arguments, unanswered": [("bash", "ok", 1000), ("bash", "error", 3000)],
    "repeated after its result, same arguments": [("bash", "ok", 1000)],
    "repeated while open": [("t", "ok", 2000)],
    "repeated result naming its tool": [("t", "ok", 1000), ("t", "ok", 3000)],
    "failed result written again": [("t", "error", 1000)],
    "failed result after its call's result": [("t", "ok", 1000)],
    "result before its call": [("t", "error", 1000), ("u", "ok", 1000)],
}


@pytest.mark.parametrize("name", list(JOURNALS))
def test_the_otlp_exports_tool_spans_are_the_reports_tool_calls(tmp_path: Path, name: str):
    path = tmp_path / "unhealed.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in JOURNALS[name]))
    assert _report_calls(path) == EXPECTED[name]
    assert _tool_spans(path) == EXPECTED[name]


@pytest.mark.parametrize("name", ["id used again, other arguments", "id used again, other arguments, unanswered"])
def test_report_pairs_an_id_used_again_alike_from_stdin_one_worker_and_healed(tmp_path: Path, name: str):
    """The report of a journal read from stdin, by one worker, or healed first counts the calls the export makes."""
    path = tmp_path / "unhealed.jsonl"
    data = b"".join(orjson.dumps(e) + b"\n" for e in JOURNALS[name])
    path.write_bytes(data)
    healed = run_replay("heal", str(path), process=True)
    assert healed.returncode == 0, healed.stderr
    (tmp_path / "healed.jsonl").write_bytes(healed.stdout)
    for args, stdin in ((["--workers", "1", str(path)], None), (["-"], data), ([str(tmp_path / "healed.jsonl")], None)):
        done = run_replay("report", "--format", "json", *args, input=stdin, process=True)
        assert done.returncode == 0, done.stderr
        calls = orjson.loads(done.stdout)["runs"][0]["toolCalls"]["calls"]
        assert [(c["toolName"], c["status"]) for c in calls] == [(n, s) for n, s, _ in EXPECTED[name]], args


@pytest.mark.parametrize("name", list(JOURNALS))
def test_the_reports_errors_are_its_failed_calls_and_the_exports_failed_spans(tmp_path: Path, name: str):
    """The errors count every failed call once (README, Report): a failed result written again is no second error (it
    was listed twice, and counted twice in the totals, while the call was one failed call and one failed span)."""
    path = tmp_path / "unhealed.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in JOURNALS[name]))
    run = orjson.loads(run_replay("report", "--format", "json", str(path)).stdout)["runs"][0]
    tool_errors = [e for e in run["errors"] if e["kind"] in ("tool_failed", "tool_completed", "tool_unanswered")]
    failed_spans = [span for span in _tool_spans(path) if span[1] == "error"]
    assert len(tool_errors) == run["toolCalls"]["error"] == len(failed_spans), run["errors"]
    assert [e["toolName"] for e in tool_errors] == [span[0] for span in failed_spans]


def test_a_resumed_claude_code_session_lists_its_failed_call_once(tmp_path: Path):
    """A session whose records are written again (``cat s.jsonl s.jsonl``, as a resumed session writes them): one
    failed call, one error in the report (text, JSON and its totals), one failed span, as its healed copy says."""
    session = [
        {"type": "user", "sessionId": "s1", "uuid": "u1", "parentUuid": None, "timestamp": "2025-07-01T10:00:00Z",
         "message": {"role": "user", "content": "read /x"}},
        {"type": "assistant", "sessionId": "s1", "uuid": "a1", "parentUuid": "u1", "timestamp": "2025-07-01T10:00:01Z",
         "message": {"id": "msg_1", "role": "assistant", "model": "m", "content": [
             {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/x"}}],
                     "usage": {"input_tokens": 10, "output_tokens": 5}}},
        {"type": "user", "sessionId": "s1", "uuid": "r1", "parentUuid": "a1", "timestamp": "2025-07-01T10:00:02Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_1", "content": "File does not exist.", "is_error": True}]}}]
    path = tmp_path / "resumed.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in session) * 2)
    document = orjson.loads(run_replay("report", "--format", "json", str(path)).stdout)
    run = document["runs"][0]
    assert run["toolCalls"]["error"] == 1 and [e["kind"] for e in run["errors"]] == ["tool_failed"]
    assert document["aggregate"]["errors"] == {"total": 1, "byCode": {"tool_failed": 1}}
    text = run_replay("report", str(path)).stdout.decode()
    assert "errors (1)" in text and text.count("File does not exist.") == 1
    assert [span[1] for span in _tool_spans(path)] == ["error"]
    healed = run_replay("heal", str(path)).stdout
    again = orjson.loads(run_replay("report", "--format", "json", input=healed).stdout)["runs"][0]
    assert len(again["errors"]) == len(run["errors"]) and again["toolCalls"]["error"] == 1
