"""A healed artifact's repairs are its own `heal` block's, however the report gets it: its path (a heal log beside it,
or none, as in a copy elsewhere), stdin, or `replay read` piped on; counted once when a heal log is beside it too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import run_replay

RUNNER = Path(__file__).resolve().parents[2] / "examples" / "runners" / "broken_trace_runner.py"


def _repairs(done) -> tuple[int, dict]:
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["runs"][0]
    return run["repairs"]["total"], run["repairs"]["byRule"]


def test_a_healed_artifacts_repairs_are_counted_from_its_heal_block_wherever_it_is_read_from(tmp_path: Path):
    done = run_replay("--runner", str(RUNNER), "--out", str(tmp_path / "cap"), "top holdings?", process=True)
    assert done.returncode == 0, done.stderr
    (healed,) = (tmp_path / "cap").glob("*.healed.json")
    block = json.loads(healed.read_bytes())["heal"]
    expected = (block["repairs"], block["byRule"])
    assert expected[0] > 0
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(healed, alone / healed.name)
    read = run_replay("read", str(healed))
    assert read.returncode == 0 and json.loads(read.stdout.splitlines()[-1]) == {
        "$record": "heal", "runId": json.loads(healed.read_bytes())["runId"], "repairs": expected[0], "byRule": expected[1]}
    counts = [_repairs(run_replay("report", "--format", "json", str(healed))),  # (its heal log beside it)
              _repairs(run_replay("report", "--format", "json", input=healed.read_bytes())),
              _repairs(run_replay("report", "--format", "json", input=read.stdout)),
              _repairs(run_replay("report", "--format", "json", str(alone / healed.name)))]
    assert counts == [expected] * 4
    folder = json.loads(run_replay("report", "--format", "json", "--in", str(tmp_path / "cap")).stdout)
    assert folder["aggregate"]["repairs"]["total"] == expected[0]  # (the run once, healed, its repairs once)
