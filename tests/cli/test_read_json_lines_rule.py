"""One rule for JSON lines in a named .json file longer than --max-line-bytes, whatever the chunks it is read in: its
first max_line_bytes + 1 bytes (what a read of it whole reads) hold JSON lines (``validation.json_lines_fault``: a
first line that is one JSON value, then a line that is not blank) -> E_ARTIFACT_JSON_INVALID, in every command; else
E_JSONL_LINE_TOO_LONG. ``read`` judged it a second time (its whole head, after ``_read_head``'s loop, which judged
only chunks holding a newline): a first line followed by blanks up to a chunk with no newline was JSON lines to read,
heal and report and a document too long to validate and walk; a second value past the limit + 1 was JSON lines to
read and heal alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import errors_of, run_replay

LIMIT = 350_000  # above read's 256 KiB chunk: the file's head comes in two chunks, the second with no newline
COMMANDS = ["read", "validate", "heal", "report", "walk"]


def _error(command: str, path: Path) -> dict:
    done = run_replay(command, "--max-line-bytes", str(LIMIT), str(path))
    assert done.returncode == (2 if command == "walk" else 1), done.stderr
    (error,) = errors_of(done.stderr)
    return error


def _same(errors: dict[str, dict]) -> dict:
    """What every command said, once (walk's refusal carries the code as its cause, with walk's words)."""
    said = {command: {"code": error.get("cause", error["code"]),
                      **{k: error.get(k) for k in ("line", "column", "offset")}} for command, error in errors.items()}
    assert len({str(v) for v in said.values()}) == 1, said
    return said["read"]


def test_a_second_value_in_a_chunk_with_no_newline_is_json_lines_everywhere(tmp_path: Path):
    path = tmp_path / "lines.json"
    path.write_bytes(b"[1]\n" + b" " * 300_000 + b"2" * 100_000)  # (400 KB, no newline after the first)
    errors = {command: _error(command, path) for command in COMMANDS}
    assert _same(errors) == {"code": "E_ARTIFACT_JSON_INVALID", "line": 2, "column": 300_001, "offset": 4}
    assert len({errors[c]["message"] for c in ("read", "validate", "heal", "report")}) == 1
    assert len({errors[c]["received"] for c in ("read", "validate", "heal", "report")}) == 1


@pytest.mark.parametrize("first", [b"[1]\n" + b" " * LIMIT, b"[" + b"1" * LIMIT + b"]\n"])
def test_json_lines_past_the_limit_are_a_document_too_long_everywhere(tmp_path: Path, first: bytes):
    """The second value (or the first newline) lies past the first max_line_bytes + 1 bytes: nothing read of it whole
    tells JSON lines, whatever more a chunk held."""
    path = tmp_path / "lines.json"
    path.write_bytes(first + b"2" * 100_000 + b"\n")
    errors = {command: _error(command, path) for command in COMMANDS}
    assert _same(errors) == {"code": "E_JSONL_LINE_TOO_LONG", "line": 1, "column": None, "offset": 0}
