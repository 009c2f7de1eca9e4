"""A .json file that holds JSON lines (a record on each) is no JSON document: every command says E_ARTIFACT_JSON_INVALID.

A .json file is one JSON document (seed 000: `--in` names a `.json` artifact; "invalid JSON artifact file"), which
validate always said; read, report, heal and walk read such a file as a journal's lines instead.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import errors_of, jsonl, run_replay
from heal_support import ev

LINES = [ev(1, "run_started", run="r1"), ev(2, "run_completed", run="r1")]


def _lines_json(tmp_path: Path) -> Path:
    src = tmp_path / "in"
    src.mkdir()
    target = src / "run.json"
    target.write_bytes(b"".join(json.dumps(e).encode() + b"\n" for e in LINES))
    return target


def test_json_lines_in_a_json_file_are_refused_by_every_command_as_validate_refuses_them(tmp_path: Path) -> None:
    target = _lines_json(tmp_path)
    first = len(json.dumps(LINES[0]).encode()) + 1  # where the second line (what no document has) starts
    for args in (["validate", str(target)], ["read", str(target)], ["report", str(target)], ["heal", str(target)]):
        done = run_replay(*args)
        errors = errors_of(done.stderr)
        assert done.returncode == 1, (args, done.stderr)
        assert [(e["code"], e["line"], e["offset"]) for e in errors] == [("E_ARTIFACT_JSON_INVALID", 2, first)], args
        assert ".jsonl" in errors[0]["howToFix"], errors[0]
        assert b"run_started" not in done.stdout, args  # no record of it was read
    out = tmp_path / "out"
    heal = run_replay("heal", "--in", str(target.parent), "--out", str(out))
    assert heal.returncode == 1 and [e["code"] for e in errors_of(heal.stderr)] == ["E_ARTIFACT_JSON_INVALID"]
    assert not out.exists()
    walk = run_replay("walk", str(target))
    [error] = errors_of(walk.stderr)
    assert walk.returncode == 2 and walk.stdout == b"", walk.stderr  # refused before any output
    assert (error["code"], error["cause"], error["offset"]) == ("E_JOURNAL_READ_FAILED", "E_ARTIFACT_JSON_INVALID", first)


def test_the_same_lines_named_jsonl_are_a_journal_everywhere(tmp_path: Path) -> None:
    target = _lines_json(tmp_path).rename(tmp_path / "in" / "run.jsonl")
    for args in (["validate", str(target)], ["read", str(target)], ["heal", str(target)], ["walk", str(target)]):
        done = run_replay(*args)
        assert done.returncode == 0 and not errors_of(done.stderr), (args, done.stderr)
    assert [r["type"] for r in jsonl(run_replay("read", str(target)).stdout)] == ["run_started", "run_completed"]


def test_a_pretty_printed_artifact_over_many_lines_is_still_read_whole(tmp_path: Path) -> None:
    """One document written over many lines stays one document (what is whole is read whole)."""
    target = tmp_path / "a.json"
    target.write_text(json.dumps({"schemaVersion": "1.0.0", "artifactType": "replay", "id": "r1",
                                  "timestamp": "2026-03-01T12:00:00Z", "prompt": "p", "query": "p", "status": "ok",
                                  "events": LINES}, indent=2))
    for args in (["validate", str(target)], ["read", str(target)], ["walk", str(target)]):
        done = run_replay(*args)
        assert done.returncode == 0 and not errors_of(done.stderr), (args, done.stderr)
