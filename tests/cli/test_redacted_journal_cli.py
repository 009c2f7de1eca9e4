"""A journal the `redact` stage redacted ends with its audit, a {"$record": "redaction"} record the stream format
knows: replay's own validate and heal take it (they refused it: unknown reserved record kind)."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import errors_of, jsonl, run_replay

JOURNAL = (b'{"$record":"run","runId":"r1","prompt":"email bob@corp.example","status":"ok"}\n'
           b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r1","payload":{}}\n'
           b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_completed","runId":"r1","payload":{}}\n')


def redacted(tmp_path: Path) -> bytes:
    (tmp_path / "red.toml").write_text('chain = [ { type = "redact" } ]\n')
    (tmp_path / "j.jsonl").write_bytes(JOURNAL)
    done = run_replay("run", "red.toml", "j.jsonl", cwd=tmp_path, process=True)
    assert done.returncode == 0, done.stderr
    assert b"bob@corp.example" not in done.stdout
    assert jsonl(done.stdout)[-1]["$record"] == "redaction"
    return done.stdout


def test_validate_and_heal_take_a_redacted_journal(tmp_path: Path) -> None:
    stream = redacted(tmp_path)
    checked = run_replay("validate", input=stream, process=True)
    assert checked.returncode == 0 and errors_of(checked.stderr) == [], checked.stderr
    assert jsonl(checked.stdout)[0]["valid"] is True
    healed = run_replay("heal", input=stream, process=True)
    assert healed.returncode == 0 and errors_of(healed.stderr) == [], healed.stderr
    assert jsonl(healed.stdout)[-1] == jsonl(stream)[-1]  # the audit goes on as it was


def test_a_redaction_record_edited_to_hold_a_value_is_invalid_and_not_shown(tmp_path: Path) -> None:
    *events, audit = jsonl(redacted(tmp_path))
    audit["warnings"].append("bob@corp.example called twice")
    stream = b"".join(orjson.dumps(r) + b"\n" for r in [*events, audit])
    checked = run_replay("validate", input=stream, process=True)
    assert checked.returncode == 1
    (error,) = errors_of(checked.stderr)
    assert error["code"] == "E_EVENT_INVALID" and error["path"] == "$.warnings[2]" and error["line"] == 4
    assert b"bob@corp.example" not in checked.stderr
