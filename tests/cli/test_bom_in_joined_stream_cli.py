"""A byte order mark starting a line after a stream's first (files joined with cat) is refused with advice that says so."""

from __future__ import annotations

from pathlib import Path

from conftest import errors_of, run_replay

E = b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r1","payload":{}}'
E2 = b'{"seq":2,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_completed","runId":"r1","payload":{}}'
BOM = b"\xef\xbb\xbf"


def test_a_bom_on_a_later_line_names_joined_files_in_its_advice(tmp_path: Path) -> None:
    one = BOM + E + b"\n" + E2 + b"\n"
    result = run_replay("read", input=one + one)
    assert result.returncode == 1
    [error] = errors_of(result.stderr)
    assert (error["code"], error["line"], error["offset"]) == ("E_JSONL_LINE_INVALID", 3, len(one))
    assert "byte order mark" in error["howToFix"] and "cat a.jsonl b.jsonl" in error["howToFix"]
    (tmp_path / "a.jsonl").write_bytes(one)
    (tmp_path / "b.jsonl").write_bytes(one)
    named = run_replay("read", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"))
    assert named.returncode == 0 and named.stdout.count(b"run_started") == 2
