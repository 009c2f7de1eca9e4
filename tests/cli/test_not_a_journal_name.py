"""A file --in names whose name says no journal nor artifact: one refusal (``journals.not_a_journal_name``) in
validate, heal and report, one wording and one "expected" naming .ndjson too (validate's said ".json (artifact) or
.jsonl (journal)" though it reads .ndjson)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import errors_of, run_replay

EXPECTED = "a journal (.jsonl, .ndjson) or an artifact (.json), optionally .gz"


@pytest.mark.parametrize("args", [["validate", "--in", "notes.txt"], ["heal", "--in", "notes.txt", "--out", "healed"],
                                  ["report", "--in", "notes.txt"]], ids=lambda args: args[0])
def test_a_file_not_named_as_a_journal_is_refused_in_one_wording(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "notes.txt").write_text("hi\n")
    proc = run_replay(*args, cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, b""), proc.stderr
    (error,) = errors_of(proc.stderr)
    assert {k: error[k] for k in ("code", "message", "path", "expected", "received")} == {
        "code": "E_INPUT_FILE_NOT_JSON", "message": "--in file 'notes.txt' is not a journal or an artifact by its name",
        "path": "notes.txt", "expected": EXPECTED, "received": "notes.txt"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_side_file_is_said_to_be_one(tmp_path: Path) -> None:
    (tmp_path / "x.raw.json").write_text("{}\n")
    (error,) = errors_of(run_replay("heal", "--in", "x.raw.json", "--out", "healed", cwd=tmp_path).stderr)
    assert error["code"] == "E_INPUT_FILE_NOT_JSON" and error["expected"] == EXPECTED
    assert "capture's side files (.raw.json, .heal-log.json)" in error["message"]
