"""`replay </dev/null`: no prompt anywhere is said first (E_PROMPT_REQUIRED), before a runner is looked for.

Bare `replay` with stdin that is no terminal is capture (`echo prompt | replay`). With no prompt argument and a stdin
known to be empty without reading it (/dev/null, an empty file), there is no prompt, as on a terminal or a closed
stdin, which were refused with E_PROMPT_REQUIRED first; /dev/null said E_RUNNER_NOT_FOUND first. A pipe is read only
once the runner was found (a refused capture leaves it unread), so an empty one still hears of the runner first.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import REPLAY


def first_error(tmp_path: Path, args: list[str], stdin: Any = None, piped: bytes | None = None) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "REPLAY_RUNNER"}
    done = subprocess.run([REPLAY, *args], stdin=stdin, input=piped, capture_output=True, cwd=tmp_path, env=env,
                          timeout=60, check=False)
    errors = [json.loads(line)["error"] for line in done.stderr.splitlines() if line.startswith(b'{"error"')]
    assert done.stdout == b"" and errors, done.stderr
    return done.returncode, errors[0]["code"]


@pytest.mark.parametrize("args", [[], ["capture"]], ids=["bare", "capture"])
def test_no_prompt_and_dev_null_on_stdin_is_E_PROMPT_REQUIRED_first(tmp_path: Path, args: list[str]) -> None:
    assert first_error(tmp_path, args, subprocess.DEVNULL) == (2, "E_PROMPT_REQUIRED")


def test_no_prompt_and_an_empty_file_on_stdin_is_E_PROMPT_REQUIRED_first(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_bytes(b"")
    with (tmp_path / "empty.txt").open("rb") as empty:
        assert first_error(tmp_path, [], empty) == (2, "E_PROMPT_REQUIRED")


def test_a_file_holding_a_prompt_still_needs_a_runner_first(tmp_path: Path) -> None:
    (tmp_path / "prompt.txt").write_bytes(b"What are my top holdings?\n")
    with (tmp_path / "prompt.txt").open("rb") as prompt:
        assert first_error(tmp_path, [], prompt) == (2, "E_RUNNER_NOT_FOUND")


def test_an_empty_pipe_is_read_only_once_the_runner_was_found(tmp_path: Path) -> None:
    """Only reading a pipe tells it is empty, and a refused capture leaves a pipe unread (README)."""
    assert first_error(tmp_path, [], piped=b"") == (2, "E_RUNNER_NOT_FOUND")
