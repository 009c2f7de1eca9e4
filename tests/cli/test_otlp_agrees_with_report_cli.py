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
