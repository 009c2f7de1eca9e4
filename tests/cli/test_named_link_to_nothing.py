"""A link to nothing named as an input is a missing input: refused (E_INPUT_PATH_NOT_FOUND, exit 2) before any output,
in every command, its received saying what it is; met in a folder's walk, it is reported and the others read."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import errors_of, jsonl, run_replay

RUN = b'{"type":"run_started","runId":"a","seq":1,"timestamp":"2024-01-01T00:00:00Z","payload":{}}\n'
COMMANDS = [["read"], ["validate"], ["report"], ["heal"], ["write"], ["export", "--otlp"], ["heal", "--in"]]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("link, received", [("nowhere.jsonl", "a link to nothing ('nowhere.jsonl')"),
                                            ("d.jsonl", "a link in a loop ('d.jsonl')")])
def test_a_named_link_to_nothing_is_refused_before_any_output(tmp_path: Path, command: list[str], link: str,
                                                              received: str) -> None:
    (tmp_path / "d.jsonl").symlink_to(link)
    out = ["--out", "out"] if command[-1] == "--in" else []
    proc = run_replay(*command, "d.jsonl", *out, cwd=tmp_path, process=True)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == b""
    (error,) = errors_of(proc.stderr)
    assert error["code"] == "E_INPUT_PATH_NOT_FOUND" and error["path"] == "d.jsonl"
    assert error["received"] == received and error["howToFix"]
    assert not (tmp_path / "out").exists()


def test_a_link_to_nothing_in_a_folder_is_reported_and_the_others_read(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_bytes(RUN)
    (tmp_path / "in" / "b.jsonl").symlink_to("nowhere.jsonl")
    proc = run_replay("read", "in", cwd=tmp_path, process=True)
    assert proc.returncode == 1, proc.stderr
    assert [e["code"] for e in errors_of(proc.stderr)] == ["E_INPUT_UNREADABLE"]
    assert any(r.get("runId") == "a" for r in jsonl(proc.stdout))
