"""A text nested deeper than replay reads is reported at the bracket that opens the level too many (ERROR_CODES.md:
the bad byte is at ``offset + column - 1``), not one byte past it as orjson says it, by every command: a journal line
(read, golden check) and a .json document (validate)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import errors_of, run_replay

# {"a": then 1100 [: level 1 is the {, the [ opening level 1025 is the 1024th, at column 5 + 1024
LINE = b'{"a":' + b"[" * 1100 + b"\n"
LINE_COLUMN = 5 + 1024
# an artifact whose events' payload nests: the 1025th level's bracket, found by counting
DOC = b'{"id": "a", "events": [{"payload": ' + b"[" * 1100 + b"]" * 1100 + b"}]}"


def _bracket_column(data: bytes) -> int:
    depth = 0
    for i, byte in enumerate(data):
        depth += byte in b"[{"
        depth -= byte in b"]}"
        if depth == 1025:
            return i + 1
    raise AssertionError("not that deep")


@pytest.mark.parametrize("command", [["read", "deep.jsonl"], ["golden", "check", "deep.jsonl", "deep.jsonl"]])
def test_a_line_nested_too_deep_is_reported_at_its_bracket(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "deep.jsonl").write_bytes(LINE)
    proc = run_replay(*command, cwd=tmp_path)
    found = [e for e in errors_of(proc.stderr) if e["code"] == "E_JSONL_LINE_INVALID"]
    assert found, proc.stderr
    for error in found:
        assert "nested deeper" in error["message"]
        assert (error["line"], error["offset"], error["column"]) == (1, 0, LINE_COLUMN), error
        assert LINE[error["offset"] + error["column"] - 1:][:1] == b"["


def test_a_document_nested_too_deep_is_reported_at_its_bracket(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_bytes(DOC)
    proc = run_replay("validate", "deep.json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    (error,) = [e for e in errors_of(proc.stderr) if e["code"] == "E_ARTIFACT_JSON_INVALID"]
    column = _bracket_column(DOC)
    assert (error["line"], error["column"]) == (1, column), error
    assert f"column {column}" in error["message"]
