"""E_INPUTS_NOT_FOUND has one shape in validate, heal and report, and in every command whose read stage walks the
folders itself (read, heal and write as filters, export; ``journals.warn_inputs_not_found``): the inputs given as
``inputs``, one message, and a hint naming every suffix a folder walk reads; exit 0 (a warning). Real processes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import EXAMPLES, run_replay

from replay.pipeline.io.journals import JOURNAL_SUFFIXES


@pytest.mark.parametrize(("command", "done"), [(["validate", "{d}"], "validated"),
                                               (["heal", "--in", "{d}", "--out", "{o}"], "healed"),
                                               (["report", "{d}"], "reported"),
                                               (["read", "{d}"], "read"),
                                               (["heal", "{d}"], "read"),
                                               (["write", "{d}"], "read"),
                                               (["export", "--otlp", "{d}"], "read")])
def test_a_folder_with_nothing_to_read_is_told_alike(tmp_path: Path, command: list[str], done: str):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_replay(*[a.format(d=empty, o=tmp_path / "out") for a in command], process=True)
    assert result.returncode == 0, result.stderr
    [warning] = [r for r in map(orjson.loads, result.stderr.splitlines()) if r.get("code") == "E_INPUTS_NOT_FOUND"]
    assert warning["inputs"] == [str(empty)] and "path" not in warning and "paths" not in warning
    assert warning["message"] == f"no journal or artifact found in {str(empty)!r}: nothing was {done}"
    assert all(f"*{suffix}" in warning["hint"] for suffix in JOURNAL_SUFFIXES)


def test_a_config_reading_a_folder_with_nothing_to_read_is_told_so(tmp_path: Path):
    """`replay run` of a graph with a read stage: its walk of the folder found nothing, and the read stage says so."""
    empty = tmp_path / "empty"
    empty.mkdir()
    config = tmp_path / "read.toml"
    config.write_text('[stages.read]\ntype = "read"\n[stages.out]\ntype = "write"\ninputs = ["read"]\n')
    result = run_replay("run", str(config), str(empty), process=True)
    assert (result.returncode, result.stdout) == (0, b""), result.stderr
    [warning] = [r for r in map(orjson.loads, result.stderr.splitlines()) if r.get("code") == "E_INPUTS_NOT_FOUND"]
    assert warning["inputs"] == [str(empty)] and warning["message"].endswith("nothing was read")


def test_a_folder_with_nothing_beside_a_file_that_is_read_is_no_warning(tmp_path: Path):
    """As validate: the warning is for inputs that all held nothing; an empty folder beside a journal is not told."""
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_replay("read", str(empty), str(EXAMPLES / "journals" / "two-runs.jsonl"), process=True)
    assert result.returncode == 0 and result.stdout and b"E_INPUTS_NOT_FOUND" not in result.stderr, result.stderr
