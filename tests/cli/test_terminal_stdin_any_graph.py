"""A terminal on stdin is refused wherever a graph's read stage reads stdin with no path given, not only in the
shipped commands' specs: ``replay run PIPELINE.toml`` on a terminal waited for input. The advice keeps the command
line as typed (``replay export --otlp run.jsonl``, not ``replay export run.jsonl``, which is refused for its missing
--otlp). A real pty on stdin, real processes."""

from __future__ import annotations

import os
import subprocess

import pytest
from conftest import EXAMPLES, REPLAY, errors_of

PIPELINE = str(EXAMPLES / "pipelines" / "tools-only.toml")


@pytest.mark.parametrize(("args", "example"), [
    (["run", PIPELINE], f"replay run {PIPELINE} run.jsonl"),
    (["export", "--otlp"], "replay export --otlp run.jsonl"),
])
def test_a_terminal_on_stdin_is_refused_with_the_command_as_typed(args: list[str], example: str) -> None:
    main, terminal = os.openpty()
    try:
        result = subprocess.run([REPLAY, *args], stdin=terminal, capture_output=True, timeout=30, check=False)
    finally:
        os.close(terminal)
        os.close(main)
    assert result.returncode == 2, result.stderr
    (error,) = errors_of(result.stderr)
    assert error["code"] == "E_USAGE_INVALID" and "stdin is a terminal" in error["message"]
    assert error["example"] == example and f"`{example}`" in error["howToFix"]
    assert result.stdout == b""
