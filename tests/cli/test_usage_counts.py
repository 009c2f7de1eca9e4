"""A usage count that is no count ("45", -3, true) gets one code, E_USAGE_NOT_COUNTED, from validate, heal and report.

A null one is a count not given, as if left out, wherever replay meets it (the schemas allow it): capture and report
leave it out saying nothing, and validate and heal find the journal or artifact valid.

Where the schemas hold a run's usage to counts (an artifact's or run record's inputTokens, outputTokens, costUsd)
validate reports it as an error and heal's check says once that it is still there (heal leaves it: a count it cannot
know). Where they do not (a usage object in an event's payload: a payload may hold anything) the journal is valid and
validate and heal say nothing; report, which adds such counts up, warns when it leaves one out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_replay

CODE = "E_USAGE_NOT_COUNTED"
STAMP = "2026-03-01T12:00:0{}.000Z"


def event(seq: int, kind: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"seq": seq, "timestamp": STAMP.format(min(seq, 9)), "type": kind, "runId": "r1", "payload": payload or {}}


def journal(run_usage: dict[str, Any] | None = None, payload_usage: dict[str, Any] | None = None) -> bytes:
    """A whole run: a run record (with ``run_usage``), and an assistant_message (with ``payload_usage``)."""
    record = {"$record": "run", "runId": "r1", "status": "ok", **({"usage": run_usage} if run_usage else {})}
    message = {"text": "hi", **({"usage": payload_usage} if payload_usage else {})}
    lines = [record, event(1, "run_started"), event(2, "assistant_message", message), event(3, "run_completed")]
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def artifact(usage: dict[str, Any]) -> dict[str, Any]:
    return {"schemaVersion": "1.0.0", "artifactType": "replay", "id": "r1", "timestamp": STAMP.format(0),
            "prompt": "p", "query": "p", "status": "ok", "response": "hi", "usage": usage,
            "events": [event(1, "run_started"), event(2, "assistant_message", {"usage": usage}),
                       event(3, "run_completed")]}


def said(stderr: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The errors and the warnings (notices) on stderr."""
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith(b"{")]
    return [line["error"] for line in lines if "error" in line], [line for line in lines if line.get("level") == "warning"]


def replay(tmp_path: Path, *args: str) -> tuple[int, bytes, list[dict[str, Any]], list[dict[str, Any]]]:
    done = run_replay(*args, cwd=tmp_path, process=True)
    return done.returncode, done.stdout, *said(done.stderr)


NO_COUNTS = [pytest.param("45", id="string"), pytest.param(-3, id="negative"), pytest.param(True, id="bool")]


@pytest.mark.parametrize("value", NO_COUNTS)
def test_validate_reports_a_run_records_usage_that_is_no_count_as_E_USAGE_NOT_COUNTED(tmp_path: Path, value: Any) -> None:
    """It was E_ARTIFACT_SHAPE_INVALID, while capture and report said E_USAGE_NOT_COUNTED of the same value."""
    (tmp_path / "run.jsonl").write_bytes(journal({"inputTokens": value, "outputTokens": 3}))
    code, out, errors, _ = replay(tmp_path, "validate", "run.jsonl")
    assert code == 1 and json.loads(out)["valid"] is False
    assert [(e["code"], e["path"], e["line"]) for e in errors] == [(CODE, "$.usage.inputTokens", 1)]
    assert "howToFix" in errors[0]


@pytest.mark.parametrize("value", NO_COUNTS)
def test_validate_reports_an_artifacts_usage_that_is_no_count_as_E_USAGE_NOT_COUNTED(tmp_path: Path, value: Any) -> None:
    (tmp_path / "run.json").write_text(json.dumps(artifact({"costUsd": value})))
    code, _, errors, notices = replay(tmp_path, "validate", "run.json")
    assert code == 1
    assert [(e["code"], e["path"]) for e in errors] == [(CODE, "$.usage.costUsd")]
    assert [n for n in notices if n["code"] == CODE] == []  # (its events' payloads may hold anything)


@pytest.mark.parametrize("member", ["inputTokens", "outputTokens", "costUsd"])
def test_a_null_usage_count_is_one_not_given_and_the_journal_and_artifact_are_valid(tmp_path: Path, member: str) -> None:
    """validate held a null count to the schemas' number >= 0 (E_USAGE_NOT_COUNTED, exit 1) while capture and report
    took it for absent; now the schemas allow null, and validate, heal and report all read it as not given."""
    data = journal({member: None, "outputTokens" if member != "outputTokens" else "inputTokens": 3})
    (tmp_path / "run.jsonl").write_bytes(data)
    (tmp_path / "run.json").write_text(json.dumps(artifact({member: None})))
    for name in ("run.jsonl", "run.json"):
        code, out, errors, notices = replay(tmp_path, "validate", name)
        assert (code, errors, json.loads(out)["valid"]) == (0, [], True), name
        assert [n for n in notices if n["code"] == CODE] == [], name
    code, out, errors, _ = replay(tmp_path, "heal", "run.jsonl")
    assert (code, errors, out) == (0, [], data)
    code, _, errors, notices = replay(tmp_path, "report", "run.jsonl")
    assert (code, errors, [n for n in notices if n["code"] == CODE]) == (0, [], [])


def test_a_usage_count_that_is_a_fraction_is_a_count(tmp_path: Path) -> None:
    (tmp_path / "run.jsonl").write_bytes(journal({"inputTokens": 12.5}, {"inputTokens": 1.5}))
    code, _, errors, notices = replay(tmp_path, "validate", "run.jsonl")
    assert (code, errors, [n for n in notices if n["code"] == CODE]) == (0, [], [])


def test_an_event_payloads_usage_that_is_no_count_is_valid_and_only_report_says_it_left_it_out(tmp_path: Path) -> None:
    """The event schema lets a payload hold anything: `"inputTokens": "45"` in an assistant_message's usage fails no check
    (validate and heal say nothing; heal changes nothing); report, which leaves it out of the run's usage, says so once,
    at its line, with the same code validate gives a run record's usage that is no count."""
    data = journal(payload_usage={"inputTokens": "45", "outputTokens": 110})
    (tmp_path / "run.jsonl").write_bytes(data)
    seen = {}
    for command in ("validate", "heal", "report"):
        code, out, errors, notices = replay(tmp_path, command, "run.jsonl")
        assert (code, errors) == (0, []), command
        seen[command] = [(n["code"], n["line"], n["received"]) for n in notices if n["code"] == CODE]
        if command == "validate":
            assert json.loads(out)["valid"] is True
        if command == "heal":
            assert out == data  # left as written
    assert seen == {"validate": [], "heal": [], "report": [(CODE, 3, 'inputTokens "45"')]}


def test_heal_leaves_a_run_records_usage_that_is_no_count_and_says_so_once(tmp_path: Path) -> None:
    """heal repairs no count it cannot know: the journal is written as it was, no repair logged, and its check says
    once that the value is still there, E_HEALED_ARTIFACT_INVALID with the cause validate gives it."""
    data = journal({"inputTokens": "45", "outputTokens": 3})
    (tmp_path / "run.jsonl").write_bytes(data)
    code, out, errors, _ = replay(tmp_path, "heal", "run.jsonl", "--log", "repairs.jsonl")
    assert code == 1 and out == data
    assert [(e["code"], e["cause"], e["path"]) for e in errors] == [
        ("E_HEALED_ARTIFACT_INVALID", CODE, "$.usage.inputTokens")]
    assert (tmp_path / "repairs.jsonl").read_bytes() == b""
    code, _, errors, notices = replay(tmp_path, "report", "run.jsonl")
    assert code == 0 and [(n["code"], n["line"]) for n in notices if n["code"] == CODE] == [(CODE, 1)]
