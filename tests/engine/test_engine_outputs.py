"""engine.outputs' probes: each output's folder is tried (a temp file made and removed) before the run; a folder once."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.outputs import probe_folder, probe_output


@pytest.fixture
def tries(monkeypatch) -> list[str]:
    """The folders a temp file was made in."""
    made: list[str] = []
    real = tempfile.mkstemp

    def counting(*args, **kwargs):
        made.append(str(kwargs.get("dir")))
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", counting)
    return made


def test_each_folder_is_tried_once_for_all_the_outputs_in_it(tmp_path: Path, tries: list[str]):
    """heal --in DIR --out OUT writes two files an input into a handful of folders: 1,500 inputs made 4,500 temp
    files before their runs (~0.8 ms an input), where a few do."""
    probed: set[Path] = set()
    for k in range(3):
        probe_output(tmp_path / f"run{k}.healed.jsonl", probed)
        probe_output(tmp_path / f"run{k}.heal-log.json", probed)
        probe_folder(tmp_path / "new" / "deeper", probed)  # (missing: tried where it would be staged, tmp_path)
    assert tries == [str(tmp_path)]
    assert list(tmp_path.iterdir()) == []  # nothing left


def test_without_a_record_of_what_was_tried_each_output_is_tried(tmp_path: Path, tries: list[str]):
    probe_output(tmp_path / "a.jsonl")
    probe_output(tmp_path / "b.jsonl")
    assert tries == [str(tmp_path)] * 2


def test_an_output_that_cannot_be_written_is_refused_with_exit_2():
    with pytest.raises(ReplayError) as refused:
        probe_output("/proc/no-such-output.jsonl", set())
    assert (refused.value.code, refused.value.exit_code) == ("E_OUTPUT_WRITE_FAILED", 2)
