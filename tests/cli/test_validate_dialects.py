"""`replay validate` over other agents' logs as real processes: each is mapped onto canonical events first (as
`replay read --dialect` maps it) and those are validated, each problem at the line and byte of its record in the log."""

from __future__ import annotations

import json
import re

import pytest
from conftest import run_replay
from dialect_support import CORPUS, CORPUS_FILES


def _problems(stderr: bytes) -> list[tuple[str, str]]:
    """Each error's code and message, without where it is (``event $[3] ...`` in a JSON document, ``(lines 22 to
    33)``, the input's name): in the log that is its record's place, in the stream read writes its line's."""
    where = re.compile(r"^event \$\[\d+\] | \(lines \d+ to \d+\)| in '[^']*'")
    return [(e["error"]["code"], where.sub(lambda m: "event " if m.group().startswith("event") else "", e["error"]["message"]))
            for e in map(json.loads, stderr.splitlines()) if "error" in e]


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_log_is_validated_as_the_stream_read_maps_it_onto(path):
    mapped = run_replay("read", "--dialect", "auto", str(path))
    direct = run_replay("validate", str(path))
    piped = run_replay("validate", input=mapped.stdout)
    reading = _problems(mapped.stderr)  # (lines that are no record: said by read, and by validate reading the log)
    # (the same problems; said once per record of the log, where the mapped stream has a line per event of it)
    shown = {p for p in _problems(direct.stderr) if p[0] != "E_ERRORS_SUPPRESSED"}
    assert shown == {p for p in reading + _problems(piped.stderr) if p[0] != "E_ERRORS_SUPPRESSED"}
    [summary], [again] = map(json.loads, direct.stdout.splitlines()), map(json.loads, piped.stdout.splitlines())
    assert (summary["valid"], summary["events"]) == (not reading and again["valid"], again["events"])
    assert (summary["kind"], summary["runs"]) == ("stream", again["runs"])  # (a .json of them too: no artifact)
    assert direct.returncode == (1 if reading or not again["valid"] else 0)


def test_a_problem_is_at_the_line_and_byte_of_its_record_in_the_log():
    path = CORPUS / "claude-code" / "representative_messages.jsonl"
    result = run_replay("validate", str(path))
    [error] = [json.loads(line)["error"] for line in result.stderr.splitlines()]
    data = path.read_bytes()
    record = json.loads(data[error["offset"]:].split(b"\n", 1)[0])
    assert error["code"] == "E_ARTIFACT_EVENT_TIMESTAMP_INVALID" and "timestamp" not in record
    assert error["line"] == data[:error["offset"]].count(b"\n") + 1 and error["source"] == str(path)


def test_another_agents_document_is_its_records_not_an_artifact():
    result = run_replay("validate", str(CORPUS / "openhands" / "basic.json"))
    assert result.returncode == 0 and result.stderr == b""
    assert json.loads(result.stdout)["events"] == 6  # (it was E_ARTIFACT_SHAPE_INVALID: "not array")


def test_pass_through_writes_the_log_as_mapped():
    path = str(CORPUS / "claude-code" / "session_b.jsonl")
    raw = run_replay("read", path)
    passed = run_replay("validate", "--pass-through", input=raw.stdout)
    assert passed.returncode == 0 and passed.stdout == run_replay("read", "--dialect", "auto", path).stdout


def test_a_log_in_parallel_is_validated_as_alone():
    files = [str(p) for p in CORPUS_FILES]
    together = run_replay("validate", "--workers", "2", *files)
    alone = [run_replay("validate", f) for f in files]
    assert together.stdout == b"".join(r.stdout for r in alone)
    assert together.returncode == max(r.returncode for r in alone)


def test_a_dialect_named_maps_replays_own_journal_too_as_read_and_report_do(tmp_path):
    journal = str(CORPUS.parent.parent.parent / "examples" / "journals" / "two-runs.jsonl")
    result = run_replay("validate", "--dialect", "claude-code", journal)
    mapped = run_replay("read", "--dialect", "claude-code", journal)
    assert result.returncode == 1 and b"E_DIALECT_MISMATCH" in result.stderr  # (it was valid: the fast lane took it)
    assert json.loads(result.stdout)["valid"] is False  # (the dialect's error counts in its input's line)
    assert _problems(result.stderr) == _problems(mapped.stderr) + _problems(run_replay("validate", input=mapped.stdout).stderr)


def test_a_fault_of_a_record_mapped_into_several_events_is_said_once(tmp_path):
    """An assistant message with text and a tool call is two events; its bad time is one problem, at its line."""
    log = tmp_path / "session.jsonl"
    log.write_bytes(
        b'{"type":"user","timestamp":"2025-06-14T12:00:00Z","sessionId":"s","uuid":"u1","message":{"role":"user",'
        b'"content":"list files"}}\n'
        b'{"type":"assistant","timestamp":"yesterday","sessionId":"s","uuid":"a1","message":{"id":"m1","role":'
        b'"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}\n')
    result = run_replay("validate", str(log))
    errors = [json.loads(line)["error"] for line in result.stderr.splitlines()]
    assert [(e["code"], e["line"]) for e in errors] == [("E_ARTIFACT_EVENT_TIMESTAMP_INVALID", 2)]
    assert json.loads(result.stdout)["errors"] == 1
    document = tmp_path / "events.json"  # (the same in a document: one problem at the record's path)
    data = json.loads((CORPUS / "openhands" / "basic.json").read_bytes())
    data[1]["timestamp"] = "yesterday"
    document.write_text(json.dumps(data))
    result = run_replay("validate", str(document))
    assert [json.loads(line)["error"]["path"] for line in result.stderr.splitlines()] == ["$[1].timestamp"]
