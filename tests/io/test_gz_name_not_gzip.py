"""A file named .gz whose bytes are not gzip is E_GZIP_INVALID, not read as plain text (read and walk alike)."""

from __future__ import annotations

import gzip
from pathlib import Path

from conftest import errors_of, run_replay

from replay.pipeline.io.journals import is_gzip

LINE = b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r1","payload":{}}\n'


def test_read_refuses_a_gz_file_that_is_not_gzip_where_it_starts(tmp_path: Path) -> None:
    journal = tmp_path / "f.jsonl.gz"
    journal.write_bytes(b"garbage")
    result = run_replay("read", str(journal))
    assert result.returncode == 1 and result.stdout.count(b"E_GZIP_INVALID") == 1
    [error] = errors_of(result.stderr)
    assert error["code"] == "E_GZIP_INVALID" and (error["line"], error["offset"]) == (1, 0)
    assert "67 61" in error["message"] and "Rename" in error["howToFix"]


def test_walk_refuses_it_too(tmp_path: Path) -> None:
    journal = tmp_path / "f.jsonl.gz"
    journal.write_bytes(LINE)
    result = run_replay("walk", str(journal))
    assert result.returncode != 0
    assert [e.get("cause", e["code"]) for e in errors_of(result.stderr)] == ["E_GZIP_INVALID"]


def test_gzip_bytes_are_read_whatever_the_name_and_an_empty_gz_file_is_empty(tmp_path: Path) -> None:
    plain = tmp_path / "named-plain.jsonl"
    plain.write_bytes(gzip.compress(LINE))
    assert run_replay("read", str(plain)).stdout == LINE
    empty = tmp_path / "e.jsonl.gz"
    empty.write_bytes(b"")
    result = run_replay("read", str(empty))
    assert result.returncode == 0 and result.stdout == b""
    assert not is_gzip("https://example.com/f.jsonl.gz", b"{\"")  # (a server may have unzipped it on the way)
