"""A FIFO named like a journal in an input folder is not read by the walk (it could block forever) but is no longer
left out in silence: a `read.not_a_file` warning names it, while the folder's files are read as before."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import EXAMPLES, run_replay

TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"
pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")


@pytest.mark.parametrize("command", [["heal", "--in", "{in}", "--out", "{tmp}/o"], ["read", "{in}"],
                                     ["validate", "{in}"], ["report", "{in}"]])
def test_a_fifo_in_a_folder_is_reported_not_read_nor_passed_over_in_silence(tmp_path: Path, command: list[str]):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(TWO_RUNS.read_bytes())
    os.mkfifo(folder / "c.jsonl")
    args = [a.format(tmp=tmp_path, **{"in": folder}) for a in command]
    done = run_replay(*args, process=True, timeout=60)  # (it never waits on the FIFO)
    assert done.returncode == 0 and done.stdout, done.stderr
    warnings = [json.loads(line) for line in done.stderr.splitlines() if b"read.not_a_file" in line]
    assert len(warnings) == 1, done.stderr
    [warning] = warnings
    assert (warning["level"], warning["path"], warning["received"]) == ("warning", str(folder / "c.jsonl"),
                                                                        "a FIFO (named pipe)"), warning
    assert "PATH" in warning["howToFix"], warning
    quiet = run_replay("--log-level", "error", *args[:1], *(["--in", str(folder)] if args[0] == "heal" else [str(folder)]),
                       *(["--out", str(tmp_path / "o2")] if args[0] == "heal" else []), process=True, timeout=60)
    assert quiet.returncode == 0 and b"not_a_file" not in quiet.stderr, quiet.stderr  # (the user's --log-level holds)
