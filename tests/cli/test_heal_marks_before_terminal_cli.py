"""`replay heal` puts the unanswered mark of a call still open at the run's terminal event right before that event,
whatever follows it in the run: what heal writes validates without E_RUN_NOT_WHOLE. The mark went at the run's end,
after the events the run went on with past its terminal event; when those did not stay there (a run_started that
ensure_run_started moves to the run's start, an orphaned result pair_tool_calls drops), the mark was left after the
end. A result after the end still answers its call: no mark. Real `replay heal` and `replay validate` processes, and
the file read in batches of 1 to 3 lines."""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson
import pytest
from conftest import jsonl, piped_line_by_line, run_replay

from replay.stages import read


def _event(seq: int, kind: str, second: int, **payload: object) -> bytes:
    return orjson.dumps({"seq": seq, "timestamp": f"2026-03-01T12:00:{second:02d}.000Z", "type": kind, "runId": "r1",
                         "payload": payload}) + b"\n"


CALL = {"callId": "c1", "toolName": "bash"}
# the known case: a call, the run's end, then its run_started (moved to the run's start by ensure_run_started); once at
# one time, once each later (the run_started moved first is then earlier than none: check_order's warning, not this)
STARTED_AFTER_END = _event(1, "tool_called", 0, **CALL) + _event(2, "run_completed", 0) + _event(3, "run_started", 0)
STARTED_AFTER_END_LATER = _event(1, "tool_called", 0, **CALL) + _event(2, "run_completed", 1) + _event(3, "run_started", 2)
# the same fault of pair_tool_calls' own making: an orphaned result after the end, which it drops
ORPHAN_AFTER_END = (_event(1, "run_started", 0) + _event(2, "tool_called", 0, **CALL) + _event(3, "run_completed", 1)
                    + _event(4, "tool_completed", 2, callId="c9"))
HEALED_TYPES = ["run_started", "tool_called", "tool_unanswered", "run_completed"]
# a result after the end, then a run_started: the result answers its call (no mark; it stays after the end, where heal
# leaves what a run goes on with), and a call none answers is marked before the end
LATE_RESULT = (_event(1, "tool_called", 0, **CALL) + _event(2, "tool_called", 0, callId="c2", toolName="ls")
               + _event(3, "run_failed", 1) + _event(4, "tool_completed", 2, callId="c1") + _event(5, "run_started", 2))


def _types(out: bytes) -> list[str]:
    return [e["type"] for e in jsonl(out) if "$record" not in e]


def _heal_then_validate(tmp_path: Path, data: bytes) -> tuple[bytes, list[dict], subprocess.CompletedProcess[bytes]]:
    """Heal ``data`` (a file) and validate what heal wrote, each a `replay` process: heal's output, its log, and
    validate's run."""
    path, log, healed = tmp_path / "j.jsonl", tmp_path / "log.jsonl", tmp_path / "healed.jsonl"
    path.write_bytes(data)
    done = run_replay("heal", "--log", str(log), str(path), process=True)
    assert done.returncode == 0, done.stderr
    healed.write_bytes(done.stdout)
    return done.stdout, jsonl(log.read_bytes()), run_replay("validate", str(healed), process=True)


def _not_whole(stderr: bytes) -> list[dict]:
    """validate's E_RUN_NOT_WHOLE warnings (log lines on stderr)."""
    return [e for e in jsonl(stderr) if e.get("code") == "E_RUN_NOT_WHOLE"]


@pytest.mark.parametrize("data", [STARTED_AFTER_END, STARTED_AFTER_END_LATER], ids=["one-time", "later-times"])
def test_a_run_started_after_the_end_leaves_the_mark_before_the_end(tmp_path: Path, data: bytes):
    out, log, validated = _heal_then_validate(tmp_path, data)
    assert _types(out) == HEALED_TYPES
    [mark] = [e for e in jsonl(out) if e.get("type") == "tool_unanswered"]
    assert mark["payload"]["callId"] == "c1" and mark["synthetic"] is True
    assert validated.returncode == 0 and jsonl(validated.stdout)[0]["valid"] is True, validated.stderr
    assert _not_whole(validated.stderr) == [], validated.stderr
    if data == STARTED_AFTER_END:  # (all at one time: nothing to say at all)
        assert validated.stderr == b"", validated.stderr
    # the log: the mark (at the call's line), the run_started moved, seq numbers; nothing dropped
    assert [(e["rule"], e["action"]) for e in log if e["rule"] != "renumber"] == [
        ("pair_tool_calls", "inserted"), ("ensure_run_started", "moved")]
    inserted, moved = log[0], log[1]
    assert (inserted["value"], inserted["line"], inserted["seqBefore"]) == ("tool_unanswered", 1, 1)
    assert "tool call 'c1' (bash): no result was read before the run ended" in inserted["message"]
    assert (moved["value"], moved["line"]) == ("run_started", 3)
    assert {e["action"] for e in log if e["rule"] == "renumber"} == {"renumbered"}
    [record] = [r for r in jsonl(out) if r.get("$record") == "heal"]
    assert record["byRule"]["pair_tool_calls"] == 1 and record["byRule"]["ensure_run_started"] == 1
    again = run_replay("heal", "--log", str(tmp_path / "again.jsonl"), str(tmp_path / "healed.jsonl"), process=True)
    assert again.stdout == out and (tmp_path / "again.jsonl").read_bytes() == b""


def test_an_orphan_dropped_after_the_end_leaves_the_mark_before_the_end(tmp_path: Path):
    out, log, validated = _heal_then_validate(tmp_path, ORPHAN_AFTER_END)
    assert _types(out) == HEALED_TYPES
    assert validated.returncode == 0 and _not_whole(validated.stderr) == [], validated.stderr
    assert sorted((e["rule"], e["action"], e["value"]) for e in log if e["rule"] == "pair_tool_calls") == [
        ("pair_tool_calls", "dropped", "c9"), ("pair_tool_calls", "inserted", "tool_unanswered")]


@pytest.mark.parametrize("data", [STARTED_AFTER_END, ORPHAN_AFTER_END, LATE_RESULT],
                         ids=["started-after-end", "orphan-after-end", "late-result"])
@pytest.mark.parametrize("batch", [1, 2, 3])
def test_the_mark_goes_before_the_end_however_the_file_is_cut(monkeypatch, tmp_path: Path, data: bytes, batch: int):
    """Read in batches of ``batch`` lines (a batch boundary between the call, the end and what follows it), heal
    writes and logs what it does for the whole file."""
    path, log = tmp_path / "j.jsonl", tmp_path / "log.jsonl"
    path.write_bytes(data)
    whole = run_replay("heal", "--log", str(log), str(path))
    whole_log = log.read_bytes()
    monkeypatch.setattr(read, "BATCH_EVENTS", batch)
    monkeypatch.setattr(read, "CHUNK_BYTES", 50)
    cut = run_replay("heal", "--log", str(log), str(path))
    assert (cut.returncode, cut.stdout, log.read_bytes()) == (whole.returncode, whole.stdout, whole_log)
    assert _types(cut.stdout) == (HEALED_TYPES if data != LATE_RESULT else [
        "run_started", "tool_called", "tool_called", "tool_unanswered", "run_failed", "tool_completed"])


def test_a_result_after_the_end_answers_its_call_and_is_left_after_the_end(tmp_path: Path):
    """An answered call is never marked unanswered: c1's result after the run's end answers it; c2, which none
    answers, is marked right before the end. The result stays after the end (validate says so: heal moves no event
    the run goes on with past its end), the run_started goes to the run's start."""
    out, log, validated = _heal_then_validate(tmp_path, LATE_RESULT)
    assert [(e["type"], e["payload"].get("callId")) for e in jsonl(out) if "$record" not in e] == [
        ("run_started", None), ("tool_called", "c1"), ("tool_called", "c2"), ("tool_unanswered", "c2"),
        ("run_failed", None), ("tool_completed", "c1")]
    assert [(e["rule"], e["action"], e.get("value")) for e in log if e["rule"] == "pair_tool_calls"] == [
        ("pair_tool_calls", "inserted", "tool_unanswered")]
    assert "tool call 'c2' (ls)" in log[0]["message"]
    assert [e["message"] for e in _not_whole(validated.stderr)] and "after" in _not_whole(validated.stderr)[0]["message"]


@pytest.mark.parametrize("data", [STARTED_AFTER_END, ORPHAN_AFTER_END], ids=["started-after-end", "orphan-after-end"])
def test_a_pipe_that_waits_after_each_line_writes_what_the_file_does(tmp_path: Path, data: bytes):
    """Down a pipe whose writer waits after each line, what waits after the run's terminal event is decided when the
    input waits (``at_pause``), as if the run ended there: the mark before the end, as in the file."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    from_file = run_replay("heal", str(path), process=True)
    returncode, out, err = piped_line_by_line(["heal"], data)
    assert (returncode, out) == (from_file.returncode, from_file.stdout), err
    assert _types(out) == HEALED_TYPES
