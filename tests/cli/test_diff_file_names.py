"""`replay diff` and `replay walk` read a file named on the command line whatever its name; diff reads a pipe too."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import FIXTURES, REPLAY, errors_of, run_replay

HELLO = FIXTURES / "walk" / "hello.jsonl"


@pytest.mark.parametrize("name", ["my run.log", "MY RUN.JSONL", "RUN.JSONL", "run (2).NDJSON"])
def test_an_existing_file_is_read_whatever_its_name(tmp_path: Path, name: str):
    shutil.copy(HELLO, tmp_path / name)
    done = run_replay("diff", name, str(HELLO), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines()[-1].startswith("same:")
    walked = run_replay("walk", name, cwd=tmp_path)
    assert walked.returncode == 0, walked.stderr
    assert walked.stdout == run_replay("walk", str(HELLO)).stdout


def test_a_name_that_is_no_run_id_and_no_file_is_still_refused_as_no_run_id(tmp_path: Path):
    done = run_replay("diff", "my run", str(HELLO), cwd=tmp_path)
    assert done.returncode == 2 and [e["code"] for e in errors_of(done.stderr)] == ["E_INVALID_RUN_ID"]
    done = run_replay("diff", "MISSING.JSONL", str(HELLO), cwd=tmp_path)  # (a journal's suffix in upper case: a path)
    assert done.returncode == 2 and [e["code"] for e in errors_of(done.stderr)] == ["E_RUN_NOT_FOUND"]


def test_diff_reads_a_pipe(tmp_path: Path):
    # bash's <(...): /dev/fd/63, a pipe, read once as read, validate and golden read it
    script = f"{shlex.quote(REPLAY)} diff {shlex.quote(str(HELLO))} <(cat {shlex.quote(str(HELLO))})"
    done = subprocess.run(["bash", "-c", script], capture_output=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines()[-1].startswith("same:")


def test_walk_which_reads_its_journal_twice_still_refuses_a_pipe(tmp_path: Path):
    script = f"{shlex.quote(REPLAY)} walk <(cat {shlex.quote(str(HELLO))})"
    done = subprocess.run(["bash", "-c", script], capture_output=True, cwd=tmp_path, timeout=60)
    [error] = errors_of(done.stderr)
    assert (done.returncode, error["code"], error["received"]) == (2, "E_INPUT_NOT_FILE_OR_DIR", "named pipe")
    assert "walk reads its journal twice" in error["howToFix"] and "save it to a file first" in error["howToFix"]
