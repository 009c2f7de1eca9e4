"""A stdout open for reading only (`1</dev/null`) is refused up front as a closed one is: E_OUTPUT_UNWRITABLE,
exit 2, nothing run (not E_OUTPUT_WRITE_FAILED EBADF mid-run)."""

from __future__ import annotations

import subprocess

import pytest
from conftest import EXAMPLES, REPLAY, errors_of

JOURNAL = str(EXAMPLES / "journals" / "two-runs.jsonl")


@pytest.mark.parametrize("args", [["read", JOURNAL], ["heal", JOURNAL], ["schema", "event"], ["--version"]])
def test_read_only_stdout_is_refused(args: list[str]) -> None:
    with open("/dev/null", "rb") as read_only:
        result = subprocess.run([REPLAY, *args], stdout=read_only, stderr=subprocess.PIPE, timeout=60, check=False)
    assert result.returncode == 2
    (error,) = errors_of(result.stderr)
    assert error["code"] == "E_OUTPUT_UNWRITABLE" and error["path"] == "<stdout>"
    assert "reading only" in error["message"]


def test_the_catalogue_says_a_read_only_stdout_is_refused() -> None:
    from replay.pipeline.engine.errors import CATALOGUE

    assert "open for reading only" in CATALOGUE["E_OUTPUT_UNWRITABLE"][0]
