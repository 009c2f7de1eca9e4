"""Hostile variants of other agents' logs, as real processes: what `replay read --dialect`, `heal` and
`write --dialect` got wrong on them (attribution of the corpus logs: tests/fixtures/corpus/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import jsonl, run_replay
from dialect_support import CORPUS

MINI = CORPUS / "mini-swe-agent" / "github_issue.traj.json"


def test_a_trajectory_with_no_messages_is_a_run_not_nothing(tmp_path: Path):
    """A mini-swe-agent trajectory whose `messages` is empty (the agent failed before its first message) came out
    of `read --dialect`, `heal` and `write --dialect` as nothing at all, exit 0: its info (how it ended) was lost
    in silence. It is a run: its run record says how it ended, and it is written back as it was."""
    document = {"info": {"exit_status": "RuntimeError"}, "messages": [], "trajectory_format": "mini-swe-agent-1"}
    path = tmp_path / "failed.traj.json"
    path.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    read = run_replay("read", "--dialect", "auto", str(path))
    assert read.returncode == 0, read.stderr
    (record,) = jsonl(read.stdout)
    assert (record["$record"], record["runId"], record["status"], record["error"]["code"]) == (
        "run", "failed", "error", "RuntimeError")
    healed = run_replay("heal", str(path))
    assert healed.returncode == 0, healed.stderr
    assert [r.get("type") for r in jsonl(healed.stdout) if "$record" not in r] == ["run_started", "run_failed"]
    for back in (run_replay("write", "--dialect", "mini-swe-agent", input=read.stdout),
                 run_replay("heal", "--dialect-out", "mini-swe-agent", str(path))):
        assert back.returncode == 0, back.stderr
        assert jsonl(back.stdout) == [document]


def test_a_null_message_of_a_trajectory_is_written_back(tmp_path: Path):
    """A trajectory's message that is JSON null was read (an `unknown` event keeping it under $origin) but left out
    when written back, in silence: undialect took the null record for a record nothing was left of."""
    messages = orjson.loads(MINI.read_bytes())
    document = {"info": {"exit_status": "Submitted"}, "messages": [*messages[:3], None, 7, *messages[3:]]}
    path = tmp_path / "nulls.traj.json"
    path.write_bytes(orjson.dumps(document))
    read = run_replay("read", "--dialect", "mini-swe-agent", str(path))
    assert read.returncode == 0, read.stderr
    for back in (run_replay("write", "--dialect", "mini-swe-agent", input=read.stdout),
                 run_replay("heal", "--dialect-out", "auto", str(path))):
        assert back.returncode == 0, back.stderr
        assert jsonl(back.stdout) == [document]
