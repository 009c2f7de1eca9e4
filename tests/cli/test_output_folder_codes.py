"""An output flag naming a folder where a file is written, a file (or device) where a folder is, or a path under a
file: one code for all, E_OUTPUT_UNWRITABLE (exit 2, nothing run), naming the flag in "path"."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay

TWO_RUNS = str(EXAMPLES / "journals" / "two-runs.jsonl")
ECHO = str(EXAMPLES / "runners" / "echo_runner.py")


@pytest.mark.parametrize("args", [
    ["report", "--format", "junit", "--out", "dir", TWO_RUNS],  # a folder for a file (it was E_USAGE_INVALID)
    ["write", "--out", "dir", TWO_RUNS],  # (as it was)
    ["heal", "--in", "runs", "--out", "exists.txt"],  # a file for a folder (it was E_USAGE_INVALID)
    ["capture", "--runner", ECHO, "--out", "exists.txt", "hi"],
    ["heal", "--in", "runs", "--out", "/dev/full"],  # a device for a folder (it was E_USAGE_INVALID)
    ["capture", "--runner", ECHO, "--out", "/dev/full", "hi"],
    ["heal", "--in", "runs", "--out", "exists.txt/sub"],  # under a file (as it was)
    ["capture", "--runner", ECHO, "--out", "exists.txt/sub", "hi"],
])
def test_an_output_flag_that_cannot_name_its_output_is_one_code(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "a.jsonl").write_bytes(Path(TWO_RUNS).read_bytes())
    (tmp_path / "exists.txt").write_bytes(b"keep\n")
    proc = run_replay(*args, cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, b""), proc.stderr
    (error,) = errors_of(proc.stderr)
    assert (error["code"], error["path"]) == ("E_OUTPUT_UNWRITABLE", "--out"), error
    assert error["howToFix"] and error["received"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "exists.txt", "runs"]
    assert (tmp_path / "exists.txt").read_bytes() == b"keep\n" and not any((tmp_path / "dir").iterdir())
