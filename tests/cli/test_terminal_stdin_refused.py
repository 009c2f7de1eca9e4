"""Every command that reads stdin when no path is given refuses a terminal there (E_USAGE_INVALID, exit 2) rather
than wait on it forever: one rule (``app.refuse_terminal_stdin``). A real pty on stdin, real processes."""

from __future__ import annotations

import os
import subprocess

import pytest
from conftest import REPLAY, errors_of


@pytest.mark.parametrize("args", [["read"], ["heal"], ["write"], ["export", "--otlp"], ["script"], ["validate"],
                                  ["report"]])
def test_a_terminal_on_stdin_is_refused(args: list[str]) -> None:
    main, terminal = os.openpty()
    try:
        result = subprocess.run([REPLAY, *args], stdin=terminal, capture_output=True, timeout=60, check=False)
    finally:
        os.close(terminal)
        os.close(main)
    assert result.returncode == 2, result.stderr
    (error,) = errors_of(result.stderr)
    assert error["code"] == "E_USAGE_INVALID" and "stdin is a terminal" in error["message"]
    assert f"replay {args[0]}" in error["howToFix"]
    assert result.stdout == b""
