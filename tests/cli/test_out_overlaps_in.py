"""An output folder equal to, inside or holding an input folder (or file) is refused: E_OUTPUT_UNWRITABLE, exit 2,
naming --out, nothing written; one definition (``preflight.refuse_overlap``) for `heal --in` and `incident import`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay

TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def refused_as_overlap(proc) -> dict:
    assert (proc.returncode, proc.stdout) == (2, b""), proc.stderr
    (error,) = errors_of(proc.stderr)
    assert (error["code"], error["path"]) == ("E_OUTPUT_UNWRITABLE", "--out"), error
    assert "overlap" in error["message"] and error["howToFix"]
    return error


@pytest.mark.parametrize("out", ["rep", "rep/sub", "rep/./", "."])
def test_heal_into_its_input_folder_or_beside_it_is_refused(tmp_path: Path, out: str) -> None:
    (tmp_path / "rep").mkdir()
    shutil.copy(TWO_RUNS, tmp_path / "rep" / "a.jsonl")
    before = snapshot(tmp_path)
    refused_as_overlap(run_replay("heal", "--in", "rep", "--out", out, cwd=tmp_path))
    assert snapshot(tmp_path) == before and [p.name for p in (tmp_path / "rep").iterdir()] == ["a.jsonl"]


def test_heal_of_a_captured_folder_into_itself_keeps_captures_heal_log(tmp_path: Path) -> None:
    captured = run_replay("capture", "--runner", str(EXAMPLES / "runners" / "broken_trace_runner.py"), "--out", "cap",
                          "hello", cwd=tmp_path)
    assert captured.returncode == 0, captured.stderr
    before = snapshot(tmp_path / "cap")
    refused_as_overlap(run_replay("heal", "--in", "cap", "--out", "cap", cwd=tmp_path))
    assert snapshot(tmp_path / "cap") == before


def test_heal_of_one_file_into_its_own_folder_names_out(tmp_path: Path) -> None:
    """It was E_USAGE_INVALID with no path ("would overwrite the input")."""
    (tmp_path / "d5").mkdir()
    shutil.copy(TWO_RUNS, tmp_path / "d5" / "X.healed.jsonl")
    before = snapshot(tmp_path)
    refused_as_overlap(run_replay("heal", "--in", "d5/X.healed.jsonl", "--out", "d5", cwd=tmp_path))
    assert snapshot(tmp_path) == before


def test_heal_beside_its_input_still_heals(tmp_path: Path) -> None:
    (tmp_path / "rep").mkdir()
    shutil.copy(TWO_RUNS, tmp_path / "rep" / "a.jsonl")
    for args in (["--in", "rep", "--out", "healed"], ["--in", "rep/a.jsonl", "--out", "healed1"]):
        proc = run_replay("heal", *args, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr


def test_incident_import_into_its_export_folder_is_the_same_refusal(tmp_path: Path) -> None:
    (tmp_path / "ind").mkdir()
    shutil.copy(EXAMPLES / "incidents" / "refund-export.json", tmp_path / "ind" / "refund.json")
    error = refused_as_overlap(run_replay("incident", "import", "ind", "--out", "ind/out1", cwd=tmp_path))
    assert error["message"].startswith("--out 'ind/out1' and the export folder 'ind' overlap")
    assert [p.name for p in (tmp_path / "ind").iterdir()] == ["refund.json"]
