"""A heal --in/--out plan refused (two inputs healed into one file, a healed copy over an input) names what gave
it: `--in` or `--out` for the command; in a pipeline config, the stage's key as the config wrote it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay

JOURNAL = (EXAMPLES / "journals" / "two-runs.jsonl").read_bytes()
STAGES = ('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
          '[stages.heal]\ntype = "heal"\ninputs = ["parse"]\n')


def refused_at(done) -> str:
    assert (done.returncode, done.stdout) == (2, b""), done.stderr
    (error,) = errors_of(done.stderr)
    assert error["code"] == "E_USAGE_INVALID" and error["howToFix"], error
    return error["path"]


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    (tmp_path / "in").mkdir()
    for name in ("x.jsonl", "x.ndjson"):  # both heal into x.healed.jsonl
        (tmp_path / "in" / name).write_bytes(JOURNAL)
    return tmp_path


def test_heal_in_names_the_in_flag(inputs: Path) -> None:
    assert refused_at(run_replay("heal", "--in", "in", "--out", "out", cwd=inputs)) == "--in"


@pytest.mark.parametrize(("config", "path"), [
    (STAGES + '[stages.write]\ntype = "write_healed"\ninputs = ["heal"]\nout_dir = "in"\n', "stages.write.out_dir"),
    ('chain = [{type = "heal"}, {type = "write_healed", out_dir = "in"}]\n', "chain[1].out_dir"),
])
def test_a_config_names_the_out_dir_key(inputs: Path, config: str, path: str) -> None:
    (inputs / "in" / "x.ndjson").rename(inputs / "in" / "x.healed.jsonl")  # an input where a healed copy would go
    (inputs / "p.toml").write_text(config)
    assert refused_at(run_replay("run", "p.toml", "in/x.jsonl", "in/x.healed.jsonl", cwd=inputs)) == path


def test_a_config_names_its_stage_for_two_inputs_healed_into_one(inputs: Path) -> None:
    (inputs / "p.toml").write_text(STAGES + '[stages.write]\ntype = "write_healed"\ninputs = ["heal"]\nout_dir = "out"\n')
    assert refused_at(run_replay("run", "p.toml", "in/x.jsonl", "in/x.ndjson", cwd=inputs)) == "stages.write"
