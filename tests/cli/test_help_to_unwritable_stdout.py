"""Help and version are data on stdout: a stdout that cannot take them is E_OUTPUT_WRITE_FAILED naming <stdout>
(exit 1), as for `replay schema`, not E_UNHANDLED."""

from __future__ import annotations

import subprocess

import pytest
from conftest import REPLAY, errors_of


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["help", "heal"], ["golden", "--help"],
                                  ["incident", "--help"], ["incident", "import", "--help"], ["write", "-h"]])
def test_help_to_a_full_stdout(args: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        result = subprocess.run([REPLAY, *args], stdout=full, stderr=subprocess.PIPE, timeout=60, check=False)
    assert result.returncode == 1
    (error,) = errors_of(result.stderr)
    assert error["code"] == "E_OUTPUT_WRITE_FAILED" and error["path"] == "<stdout>"
