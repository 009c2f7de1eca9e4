"""drop_resume_duplicates on a Codex rollout (records with no id: judged by their dated original record): a record
written again is dropped, one written again at another time is kept."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

REPLAY = Path(sys.executable).parent / "replay"
LINES = [
    {"timestamp": "2026-01-02T03:04:05.000Z", "type": "session_meta", "payload": {"id": "s1", "cwd": "/w"}},
    {"timestamp": "2026-01-02T03:04:06.000Z", "type": "event_msg", "payload": {"type": "user_message", "message": "hi"}},
    {"timestamp": "2026-01-02T03:04:07.000Z", "type": "response_item",
     "payload": {"type": "function_call", "name": "ls", "arguments": "{}", "call_id": "c1"}},
    {"timestamp": "2026-01-02T03:04:08.000Z", "type": "response_item",
     "payload": {"type": "function_call_output", "call_id": "c1", "output": "a"}},
]


def test_a_codex_record_written_again_is_dropped_and_one_of_another_time_kept(tmp_path: Path) -> None:
    later = {**LINES[1], "timestamp": "2026-01-02T03:04:09.000Z"}
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in [*LINES, LINES[1], LINES[2], later]))
    log = tmp_path / "log.jsonl"
    done = subprocess.run([str(REPLAY), "heal", "--log", str(log), str(rollout)], capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    dropped = [e for e in map(orjson.loads, log.read_bytes().splitlines()) if e["rule"] == "drop_resume_duplicates"]
    assert [(d["action"], d["line"]) for d in dropped] == [("dropped", 5), ("dropped", 6)]
    origins = [e["$origin"]["record"] for e in map(orjson.loads, done.stdout.splitlines()) if "$origin" in e
               and "record" in e["$origin"]]
    assert origins.count(LINES[1]) == 1 and later in origins
