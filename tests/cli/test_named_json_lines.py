"""A named .json file holding JSON lines is told so from its head, whatever its size: every command refuses it with
E_ARTIFACT_JSON_INVALID (as one under --max-line-bytes), never "raise --max-line-bytes", and shows the failing line
from its start. Real processes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import errors_of, run_replay

LINES = b"".join(orjson.dumps({"type": "user_message", "seq": n, "pad": "a" * 100}) + b"\n" for n in range(1, 201))
COMMANDS = [["read"], ["validate"], ["heal"], ["report"], ["walk"]]


def _error(args: list[str]) -> dict:
    done = run_replay(*args, process=True)
    assert done.returncode in (1, 2), done.stderr
    (error,) = errors_of(done.stderr)
    return error


@pytest.mark.parametrize("command", COMMANDS)
def test_json_lines_in_a_json_file_longer_than_the_limit_get_the_same_error(tmp_path: Path, command: list[str]):
    path = tmp_path / "lines.json"
    path.write_bytes(LINES)
    over = _error([*command, "--max-line-bytes", "1000", str(path)])  # (the file is ~25 KB)
    under = _error([*command, str(path)])
    for error in (over, under):
        assert error.get("cause", error["code"]) == "E_ARTIFACT_JSON_INVALID", error
        assert "It holds JSON lines" in error["howToFix"] and "max-line-bytes" not in error["howToFix"]
        assert (error["line"], error["column"]) == (2, 1)
    assert over["message"] == under["message"]


def test_the_received_excerpt_starts_at_the_failing_line(tmp_path: Path):
    path = tmp_path / "lines.json"
    path.write_bytes(LINES[:LINES.index(b"\n", LINES.index(b"\n") + 1) + 1])  # two lines
    error = _error(["read", str(path)])
    assert error["received"].startswith('{"type":"user_message","seq":2,'), error["received"]
