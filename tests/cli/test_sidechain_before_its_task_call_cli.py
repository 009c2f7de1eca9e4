"""A Claude Code sub-agent's records written before the ``Task`` call that launched it (concurrent writers: the
sidechain's lines flushed first) are the Task call's: ``replay heal`` moves them after the call (``order_sidechains``:
the sub-agent's opening prompt, which names no ``parentUuid``, is linked to the call whose ``prompt`` it is) and numbers
them with the call's step and turn, as the ``dialect`` stage numbers a sub-agent written after its call. They kept
the step before the call, nothing linking them to it."""

from __future__ import annotations

import json
from pathlib import Path

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


USER = _record("user", "u1", None, 0, {"role": "user", "content": "Please fix the bug"})
LOOK = _record("assistant", "a0", "u1", 1, _assistant("msg_0", _use("toolu_ls", "LS", path=".")))
LOOKED = _record("user", "u0", "a0", 1, _result("toolu_ls", "a.py"))
TASK = _record("assistant", "a1", "u0", 2, _assistant("msg_1", _use("toolu_task", "Task", prompt="find bug")))
SIDECHAIN = [  # (the real shape: the sub-agent's prompt names no parentUuid)
    _record("user", "s1", None, 2, {"role": "user", "content": "find bug"}, side=True),
    _record("assistant", "s2", "s1", 3, _assistant("msg_2", _use("toolu_grep", "Grep", pattern="bug")), side=True),
    _record("user", "s3", "s2", 4, _result("toolu_grep", "a.py:3"), side=True),
    _record("assistant", "s4", "s3", 5, _assistant("msg_3", {"type": "text", "text": "found in a.py"}), side=True),
]
REST = [_record("user", "u2", "a1", 6, _result("toolu_task", "found in a.py")),
        _record("assistant", "a2", "u2", 7, _assistant("msg_4", {"type": "text", "text": "Fixed."}))]


def _healed(tmp_path: Path, records: list[dict]) -> list[tuple]:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    done = run_replay("heal", str(path))
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    return [(e["type"], e.get("step"), e.get("turn"), e["payload"].get("sidechain", False)) for e in events
            if "$record" not in e and e["type"] not in ("run_started", "run_failed")]


def test_a_sub_agent_written_before_its_task_call_is_moved_after_it_and_numbered_with_it(tmp_path: Path):
    before = _healed(tmp_path, [USER, LOOK, LOOKED, *SIDECHAIN, TASK, *REST])
    after = _healed(tmp_path, [USER, LOOK, LOOKED, TASK, *SIDECHAIN, *REST])
    assert before == after == [
        ("user_message", None, 1, False),
        ("assistant_message", 1, 1, False), ("tool_called", 1, 1, False), ("tool_completed", 1, 1, False),
        ("assistant_message", 2, 1, False), ("tool_called", 2, 1, False),  # the Task call
        ("user_message", 2, 1, True), ("assistant_message", 2, 1, True), ("tool_called", 2, 1, True),
        ("tool_completed", 2, 1, True), ("assistant_message", 2, 1, True),  # the sub-agent's, in the call's step
        ("tool_completed", 2, 1, False), ("assistant_message", 3, 1, False)]


def test_a_sub_agent_whose_prompt_no_call_launched_stays_where_it_was(tmp_path: Path):
    other = [dict(r, message={**r["message"], "content": "another prompt"}) if r["uuid"] == "s1" else r for r in SIDECHAIN]
    got = _healed(tmp_path, [USER, LOOK, LOOKED, *other, TASK, *REST])
    assert [row[:2] for row in got[4:9]] == [("user_message", 1), ("assistant_message", 1), ("tool_called", 1),
                                             ("tool_completed", 1), ("assistant_message", 1)]
