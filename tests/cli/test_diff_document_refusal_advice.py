"""diff refuses a .json file read refuses (no artifact: its type, its version, its events) with read's howToFix, which
fits a document, not the advice for a line of a journal (cut it at its byte offset)."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, errors_of, run_replay

INVALID = FIXTURES / "artifacts" / "invalid"


@pytest.mark.parametrize("name", ["E_ARTIFACT_TYPE_INVALID.json", "E_SCHEMA_VERSION_UNSUPPORTED.json",
                                  "E_ARTIFACT_EVENTS_INVALID.json"])
def test_diff_refuses_a_document_with_reads_advice(name: str) -> None:
    path = str(INVALID / name)
    [said] = errors_of(run_replay("read", path).stderr)
    done = run_replay("diff", path, path)
    [error] = errors_of(done.stderr)
    assert done.returncode == 2 and done.stdout == b""
    assert (error["code"], error["cause"], error["path"]) == ("E_JOURNAL_READ_FAILED", said["code"], said["path"])
    assert error["howToFix"] == said["howToFix"] and "byte offset" not in error["howToFix"], error
