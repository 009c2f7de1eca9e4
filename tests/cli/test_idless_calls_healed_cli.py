"""heal pairs tool calls as `report` does: a call without a call id that gets no result is marked ``tool_unanswered``
(by its tool name), alike from a file, through a pipe and in a file long enough for the screen's lane; healing that
again adds nothing; and a result of an unknown call id naming a tool answers that tool's open call without an id
(no orphan to drop)."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import jsonl, run_replay


def _event(seq: int, kind: str, second: int, run: str = "r1", **payload: object) -> dict:
    return {"seq": seq, "timestamp": f"2026-01-01T00:00:{second:02d}Z", "type": kind, "runId": run, "payload": payload}


def _run(run: str) -> list[dict]:
    """A run whose one call (of `bash`, no call id) never gets a result; it has its assistant message and its end."""
    return [_event(1, "run_started", 0, run), _event(2, "assistant_message", 1, run, role="assistant", content=[]),
            _event(3, "tool_called", 2, run, toolName="bash", args={"cmd": "ls"}), _event(4, "run_completed", 3, run)]


def _lines(events: list[dict]) -> bytes:
    return b"".join(orjson.dumps(e) + b"\n" for e in events)


def _marks(out: bytes) -> list[dict]:
    return [e for e in jsonl(out) if e.get("type") == "tool_unanswered"]


def test_a_call_without_an_id_that_gets_no_result_is_marked_by_its_tool_name(tmp_path: Path):
    path = tmp_path / "idless.jsonl"
    path.write_bytes(_lines(_run("r1")))
    done = run_replay("heal", str(path), "--log", str(tmp_path / "log.jsonl"))
    assert done.returncode == 0, done.stderr
    events = [e for e in jsonl(done.stdout) if "$record" not in e]  # (not the heal record)
    assert [e["type"] for e in events] == ["run_started", "assistant_message", "tool_called", "tool_unanswered",
                                           "run_completed"]
    [mark] = _marks(done.stdout)
    assert mark["payload"]["toolName"] == "bash" and "callId" not in mark["payload"] and mark["synthetic"] is True
    [logged] = [e for e in jsonl((tmp_path / "log.jsonl").read_bytes()) if e["rule"] == "pair_tool_calls"]
    assert logged["action"] == "inserted" and logged["seqBefore"] == 3 and "without a call id (bash" in logged["message"]
    again = run_replay("heal", "--no-summary", input=_lines(events))
    assert again.returncode == 0 and _marks(again.stdout) == [mark]  # (healed again: nothing more)
    healed, unhealed = (orjson.loads(run_replay("report", "--format", "json", input=lines).stdout)["runs"][0]
                        for lines in (_lines(events), path.read_bytes()))
    [call] = healed["toolCalls"]["calls"]  # (the report reads the mark as heal wrote it: one call, still unanswered)
    assert call["toolName"] == "bash" and call["unfinished"] is True
    assert healed["errors"] == unhealed["errors"] and [e["kind"] for e in healed["errors"]] == ["tool_unanswered"]


def test_file_pipe_and_the_screens_lane_mark_it_alike(tmp_path: Path):
    """300 such runs: enough for the screen to judge runs in its lane, which must send these the slow way."""
    path = tmp_path / "many.jsonl"
    path.write_bytes(b"".join(_lines(_run(f"run-{k}")) for k in range(300)))
    from_file = run_replay("heal", str(path), process=True)
    through_pipe = run_replay("heal", input=path.read_bytes(), process=True)
    assert from_file.returncode == through_pipe.returncode == 0
    assert len(_marks(from_file.stdout)) == 300
    assert from_file.stdout == through_pipe.stdout


def test_a_result_of_an_unknown_id_naming_the_tool_answers_its_call_without_an_id(tmp_path: Path):
    events = [*_run("r1")[:3], _event(4, "tool_completed", 3, callId="x9", toolName="bash", output="a"),
              _event(5, "run_completed", 4)]
    done = run_replay("heal", "--no-summary", input=_lines(events))
    assert done.returncode == 0, done.stderr
    assert jsonl(done.stdout) == events  # (neither dropped as an orphan nor a call marked)
