"""`replay diff` of two Claude Code sessions that differ only in what differs between any two runs (session ids,
uuids, message ids, times): the same run, exit 0, as README says of the fields that always differ."""

from __future__ import annotations

import json

from conftest import run_replay


def _session(session: str, prefix: str, minute: int) -> str:
    stamp = f"2025-07-01T10:0{minute}:0%dZ"
    records = [
        {"type": "user", "timestamp": stamp % 0, "parentUuid": None, "isSidechain": False, "sessionId": session,
         "uuid": f"{prefix}u1", "message": {"role": "user", "content": "Please fix the bug"}},
        {"type": "assistant", "timestamp": stamp % 1, "parentUuid": f"{prefix}u1", "isSidechain": False,
         "sessionId": session, "uuid": f"{prefix}a1", "requestId": f"req_{prefix}",
         "message": {"id": f"msg_{prefix}", "type": "message", "role": "assistant", "model": "claude-sonnet-4",
                     "content": [{"type": "text", "text": "Fixed."}], "stop_reason": "end_turn",
                     "usage": {"input_tokens": 10, "output_tokens": 5}}},
    ]
    return "".join(json.dumps(r) + "\n" for r in records)


def test_two_sessions_that_differ_only_in_ids_and_times_are_the_same_run(tmp_path):
    (tmp_path / "a.jsonl").write_text(_session("sess-1", "A", 1))
    (tmp_path / "b.jsonl").write_text(_session("sess-2", "B", 2))
    same = run_replay("diff", "--json", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"))
    assert same.returncode == 0, same.stdout
    assert json.loads(same.stdout)["same"] is True
    (tmp_path / "c.jsonl").write_text(_session("sess-3", "C", 3).replace("Fixed.", "Broke it."))
    different = run_replay("diff", str(tmp_path / "a.jsonl"), str(tmp_path / "c.jsonl"))
    assert different.returncode == 1
