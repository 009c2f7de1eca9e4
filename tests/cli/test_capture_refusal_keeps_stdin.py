"""`replay capture` refused for its output (`--out` unwritable, under a file, a file) consumes nothing: a prompt on stdin
was read before the outputs were tried, so the refusal came after the prompt was gone (a pipe's producer had its data
taken, a file on stdin was read to its end). Now stdin is read only once every output was tried. Real processes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import REPLAY, errors_of

RUNNER = Path(__file__).resolve().parents[2] / "examples" / "runners" / "echo_runner.py"
PROMPT = b"What are my top holdings?\n"
BAD_OUTS = {"unwritable": ("/proc/replay-no-such/x", "E_OUTPUT_WRITE_FAILED"),
            "under-a-file": ("afile/x", "E_OUTPUT_UNWRITABLE"),
            "a-file": ("afile", "E_OUTPUT_UNWRITABLE")}


@pytest.mark.parametrize("out", list(BAD_OUTS))
@pytest.mark.parametrize("stdin", ["pipe", "file"])
def test_a_capture_refused_for_its_output_leaves_the_prompt_on_stdin_unread(tmp_path: Path, out: str, stdin: str) -> None:
    (tmp_path / "afile").write_bytes(b"not a folder\n")
    target, code = BAD_OUTS[out]
    command = [REPLAY, "capture", "--runner", str(RUNNER), "--out", target]
    if stdin == "pipe":  # `make-prompt | replay capture --out ...`
        read_end, write_end = os.pipe()
        os.write(write_end, PROMPT)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as source:
            done = subprocess.run(command, stdin=source, capture_output=True, cwd=tmp_path, timeout=120, check=False)
            left = source.read()
    else:  # `replay capture --out ... < prompt.txt` (a file on stdin shares its offset with the shell's)
        (tmp_path / "prompt.txt").write_bytes(PROMPT)
        with open(tmp_path / "prompt.txt", "rb") as source:
            done = subprocess.run(command, stdin=source, capture_output=True, cwd=tmp_path, timeout=120, check=False)
            left = source.read()
    assert done.returncode == 2, done.stderr
    assert [e["code"] for e in errors_of(done.stderr)] == [code]
    assert left == PROMPT  # nothing of stdin was consumed
    assert done.stdout == b"" and not (tmp_path / ".replay").exists()  # no runner ran, nothing was written


def test_a_capture_with_no_runner_leaves_the_prompt_on_stdin_unread(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, PROMPT)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as source:
        done = subprocess.run([REPLAY, "capture"], stdin=source, capture_output=True, cwd=tmp_path,
                              env={**os.environ, "REPLAY_RUNNER": ""}, timeout=120, check=False)
        left = source.read()
    assert done.returncode == 2 and [e["code"] for e in errors_of(done.stderr)] == ["E_RUNNER_NOT_FOUND"], done.stderr
    assert left == PROMPT


def test_a_capture_with_a_writable_output_still_reads_its_prompt_from_stdin(tmp_path: Path) -> None:
    done = subprocess.run([REPLAY, "capture", "--runner", str(RUNNER), "--out", "runs"], input=PROMPT, capture_output=True,
                          cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    [raw] = (tmp_path / "runs").glob("*.raw.json")
    assert b"What are my top holdings?" in raw.read_bytes()
