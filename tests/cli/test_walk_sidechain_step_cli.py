"""`replay walk --at STEP` of a Claude Code session with a sub-agent (a Task call whose sidechain records are written
inline): the Task call's result is in the Task call's step, and the sub-agent's records inside it, so the step ends
with the call answered (it ended at the sub-agent's prompt, the Task call still running)."""

from __future__ import annotations

import json

from conftest import run_replay


def _record(kind: str, uuid: str, parent: str | None, second: int, message: dict, side: bool = False) -> dict:
    return {"type": kind, "timestamp": f"2025-07-01T10:00:{second:02d}Z", "parentUuid": parent, "isSidechain": side,
            "sessionId": "s1", "uuid": uuid, "message": message}


def _assistant(mid: str, *blocks: dict) -> dict:
    return {"id": mid, "role": "assistant", "model": "claude-sonnet-4", "content": list(blocks),
            "usage": {"input_tokens": 10, "output_tokens": 5}}


def _use(cid: str, name: str, **args) -> dict:
    return {"type": "tool_use", "id": cid, "name": name, "input": args}


def _result(cid: str, text: str) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "content": text}]}


SESSION = [
    _record("user", "u1", None, 0, {"role": "user", "content": "Please fix the bug"}),
    _record("assistant", "a1", "u1", 1, _assistant("msg_1", _use("toolu_task", "Task", prompt="find bug"))),
    _record("user", "s1", None, 2, {"role": "user", "content": "find bug"}, side=True),
    _record("assistant", "s2", "s1", 3, _assistant("msg_2", _use("toolu_grep", "Grep", pattern="bug")), side=True),
    _record("user", "s3", "s2", 4, _result("toolu_grep", "a.py:3"), side=True),
    _record("assistant", "s4", "s3", 5, _assistant("msg_3", {"type": "text", "text": "found in a.py"}), side=True),
    _record("user", "u2", "a1", 6, _result("toolu_task", "found in a.py")),
    _record("assistant", "a2", "u2", 7, _assistant("msg_4", {"type": "text", "text": "Fixed."})),
]


def test_the_task_calls_result_and_the_sub_agents_records_are_in_the_task_calls_step(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in SESSION))
    walked = run_replay("walk", str(path), "--at", "1")
    assert walked.returncode == 0, walked.stderr
    last = walked.stdout.decode().splitlines()[-1].split()
    assert (last[0], last[1], last[-1]) == ("tool_completed", "1", "[succeeded]")  # the Task call, answered
    read = run_replay("read", "--dialect", "claude-code", str(path))
    events = [json.loads(line) for line in read.stdout.splitlines()][1:]
    numbered = [(e["type"], e.get("step"), e.get("turn"), e["payload"].get("sidechain", False)) for e in events]
    assert numbered == [
        ("user_message", None, 1, False),
        ("assistant_message", 1, 1, False), ("tool_called", 1, 1, False),
        ("user_message", 1, 1, True),  # the sub-agent's prompt: no turn of the user's
        ("assistant_message", 1, 1, True), ("tool_called", 1, 1, True), ("tool_completed", 1, 1, True),
        ("assistant_message", 1, 1, True),
        ("tool_completed", 1, 1, False),  # the Task call's result
        ("assistant_message", 2, 1, False),  # the run's next model call
    ]
