"""Every command that reads stdin when no path is given refuses a terminal there (E_USAGE_INVALID, exit 2) rather
than wait on it forever: one rule (``app.refuse_terminal_stdin``). A real pty on stdin, real processes."""

from __future__ import annotations

import os
import subprocess

import pytest
from conftest import EXAMPLES, REPLAY, errors_of


def _on_a_terminal(args: list[str]) -> tuple[subprocess.CompletedProcess[bytes], dict]:
    """``replay ARGS`` with a real pty on stdin: its result, refused (exit 2, nothing on stdout), and its one error."""
    main, terminal = os.openpty()
    try:
        result = subprocess.run([REPLAY, *args], stdin=terminal, capture_output=True, timeout=60, check=False)
    finally:
        os.close(terminal)
        os.close(main)
    assert result.returncode == 2, result.stderr
    assert result.stdout == b""
    (error,) = errors_of(result.stderr)
    assert error["code"] == "E_USAGE_INVALID" and "stdin is a terminal" in error["message"]
    return result, error


@pytest.mark.parametrize("args", [["read"], ["heal"], ["write"], ["export", "--otlp"], ["script"], ["validate"],
                                  ["report"]])
def test_a_terminal_on_stdin_is_refused(args: list[str]) -> None:
    _, error = _on_a_terminal(args)
    assert f"replay {args[0]}" in error["howToFix"]


PIPELINE = str(EXAMPLES / "pipelines" / "tools-only.toml")


@pytest.mark.parametrize(("args", "example"), [
    (["run", PIPELINE], f"replay run {PIPELINE} run.jsonl"),
    (["export", "--otlp"], "replay export --otlp run.jsonl"),
])
def test_a_terminal_on_stdin_is_refused_with_the_command_as_typed(args: list[str], example: str) -> None:
    """Wherever a graph's read stage reads stdin with no path given, not only in the shipped commands' specs:
    ``replay run PIPELINE.toml`` on a terminal waited for input. The advice keeps the command line as typed
    (``replay export --otlp run.jsonl``, not ``replay export run.jsonl``, refused for its missing --otlp)."""
    _, error = _on_a_terminal(args)
    assert error["example"] == example and f"`{example}`" in error["howToFix"]


def test_pass_through_on_a_terminal_is_advised_only_what_it_takes() -> None:
    """`replay validate --pass-through` reads only stdin: its advice on a terminal was a PATH (`replay validate
    --pass-through run.jsonl`), which --pass-through refuses. It is the pipe, or `-`."""
    _, error = _on_a_terminal(["validate", "--pass-through"])
    assert error["example"] == "replay read run.jsonl | replay validate --pass-through"
    assert "Pass a path" not in error["howToFix"] and "`replay validate --pass-through -`" in error["howToFix"]
