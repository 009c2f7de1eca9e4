"""heal --in/--out given as URLs is checked for overlap too: a file:// URL is a local path, and two URLs of one
filesystem (s3://b/runs, s3://b/runs/healed) overlap as two paths do; places of different filesystems never do."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.preflight import refuse_overlap
from replay.pipeline.io.journals import place_of

pytest.importorskip("fsspec")


@pytest.mark.parametrize(("given_in", "out"), [("in", "{url}/in/healed"), ("{url}/in", "in/healed"),
                                               ("{url}/in", "{url}/in/healed"), ("{url}/in", "{url}/in")])
def test_heal_refuses_an_out_url_inside_its_input(tmp_path: Path, given_in: str, out: str) -> None:
    (tmp_path / "in").mkdir()
    shutil.copy(EXAMPLES / "journals" / "two-runs.jsonl", tmp_path / "in" / "a.jsonl")
    url = f"file://{tmp_path}"
    done = run_replay("heal", "--in", given_in.format(url=url), "--out", out.format(url=url), cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, b""), done.stderr
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"]) == ("E_OUTPUT_UNWRITABLE", "--out"), error
    assert [p.name for p in (tmp_path / "in").iterdir()] == ["a.jsonl"]


def overlaps(out: str, given: str) -> bool:
    try:
        refuse_overlap(out, [given], "--out", what="--in", how_to_fix="x", place=place_of)
    except ReplayError:
        return True
    return False


def test_urls_of_one_filesystem_overlap_as_paths_do() -> None:
    assert overlaps("s3://b/runs/healed", "s3://b/runs") and overlaps("s3://b/runs/", "s3://b/runs/./")
    assert overlaps("s3://b", "s3://b/runs/x")  # holding the inputs
    assert not overlaps("s3://b/healed", "s3://b/runs") and not overlaps("s3://other/runs/h", "s3://b/runs")
    assert not overlaps("memory://b/runs/h", "s3://b/runs") and not overlaps("/tmp/runs/h", "s3://tmp/runs")
