"""`replay incident import --format runledger|replay` (as a process) refuses a log's line that writes a key twice in
one object, as a canonical export writing one is refused: E_INCIDENT_JSON_INVALID at the second writing, nothing
written, its path masked (found by a read-only tester: a journal's `"arguments"` written twice was imported, exit 0,
without a word, with the last value)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import errors_of, run_replay
from incident_support import value_forms, write_json

RULES = [{"id": "r", "type": "required_output", "fields": ["status"]}]
CALL = b'"arguments":{"amount":1},"arguments":{"amount":2}'


def _journal(call: bytes) -> bytes:
    return b"".join(line + b"\n" for line in (
        b'{"$record":"run","runId":"run_1","prompt":"p","status":"ok"}',
        b'{"seq":1,"type":"run_started","runId":"run_1","payload":{}}',
        b'{"seq":2,"type":"tool_called","runId":"run_1","payload":{"callId":"c1","toolName":"lookup",' + call + b"}}",
        b'{"seq":3,"type":"tool_completed","runId":"run_1","payload":{"callId":"c1","result":{"ok":1}}}',
        b'{"seq":4,"type":"run_completed","runId":"run_1","payload":{"output":{"status":"ok"}}}'))


def _runledger(call: bytes) -> bytes:
    return b"".join(line + b"\n" for line in (
        b'{"type":"task_start","case_id":"run_1","input":{"q":1}}',
        b'{"type":"log","case_id":"run_1","message":"hi"}',
        b'{"type":"tool_call","case_id":"run_1","call_id":"c1","name":"lookup",' + call.replace(b"arguments", b"args") + b"}",
        b'{"type":"tool_result","case_id":"run_1","call_id":"c1","ok":true}',
        b'{"type":"final_output","case_id":"run_1","output":{"status":"ok"}}'))


LOGS = {"replay": (_journal, "$.payload.arguments", b'"arguments"'), "runledger": (_runledger, "$.args", b'"args"')}


def _import(tmp_path: Path, format: str, call: bytes) -> tuple[Any, bytes]:
    data = LOGS[format][0](call)
    (tmp_path / "log.jsonl").write_bytes(data)
    write_json(tmp_path / "rules.json", RULES)
    done = run_replay("incident", "import", str(tmp_path / "log.jsonl"), "--format", format, "--case", "run_1",
                      "--rules", str(tmp_path / "rules.json"), "--out", str(tmp_path / "out"), process=True)
    return done, data


@pytest.mark.parametrize("format", sorted(LOGS))
def test_a_log_line_that_writes_a_key_twice_is_refused_at_the_second_writing(tmp_path: Path, format: str) -> None:
    done, data = _import(tmp_path, format, CALL)
    assert (done.returncode, done.stdout) == (2, b"") and not (tmp_path / "out").exists(), done.stderr
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"], error["line"]) == ("E_INCIDENT_JSON_INVALID", LOGS[format][1], 3), error
    assert error["offset"] == len(b"".join(data.splitlines(keepends=True)[:2])), error
    key = LOGS[format][2]
    assert error["offset"] + error["column"] - 1 == data.index(key, data.index(key) + 1), error  # (the second)
    assert "line 3: key " in error["message"] and "written twice" in error["message"] and error["howToFix"], error
    assert b'"amount"' not in done.stderr  # (what was written is not quoted)


@pytest.mark.parametrize("format", sorted(LOGS))
@pytest.mark.parametrize(("secret", "shown"), [("jane@victim.com", "<email>"), ("sk_live_ABCDEFGHIJKLMNOPQRST", "<api key>")])
def test_a_private_key_written_twice_in_a_log_line_is_not_quoted(tmp_path: Path, format: str, secret: str,
                                                                 shown: str) -> None:
    key = orjson.dumps(secret)
    done, _ = _import(tmp_path, format, b'"arguments":{' + key + b":1," + key + b":2}")
    assert done.returncode == 2 and not (tmp_path / "out").exists(), done.stderr
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"]) == ("E_INCIDENT_JSON_INVALID", f"{LOGS[format][1]}.{shown}"), error
    assert shown in error["message"], error
    for form in value_forms(secret):
        assert form not in done.stderr, secret
