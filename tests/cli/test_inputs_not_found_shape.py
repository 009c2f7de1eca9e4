"""E_INPUTS_NOT_FOUND has one shape in validate, heal and report (``app.warn_nothing_found``): the inputs given as
``inputs``, one message, and a hint naming every suffix a folder walk reads. Real processes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import run_replay

from replay.pipeline.io.journals import JOURNAL_SUFFIXES


@pytest.mark.parametrize(("command", "done"), [(["validate", "{d}"], "validated"),
                                               (["heal", "--in", "{d}", "--out", "{o}"], "healed"),
                                               (["report", "{d}"], "reported")])
def test_a_folder_with_nothing_to_read_is_told_alike(tmp_path: Path, command: list[str], done: str):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_replay(*[a.format(d=empty, o=tmp_path / "out") for a in command], process=True)
    assert result.returncode == 0, result.stderr
    [warning] = [r for r in map(orjson.loads, result.stderr.splitlines()) if r.get("code") == "E_INPUTS_NOT_FOUND"]
    assert warning["inputs"] == [str(empty)] and "path" not in warning and "paths" not in warning
    assert warning["message"] == f"no journal or artifact found in {str(empty)!r}: nothing was {done}"
    assert all(f"*{suffix}" in warning["hint"] for suffix in JOURNAL_SUFFIXES)
