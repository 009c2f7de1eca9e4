"""walk --json's `spend` is what the step journaled so far in its own run (seed 001: "populated only if the run
journaled a spend record for this step"): a step id of a later run in the same journal, or of the next input of
`replay run`, starts with none, whatever --workers says; and it is exact, however many steps recorded spend since."""

from __future__ import annotations

import json
from pathlib import Path

RUN1 = [{"kind": "run.spawned", "run_id": "hello-1"}, {"kind": "step.scheduled", "run_id": "hello-1", "step_id": "step-2"},
        {"kind": "spend", "run_id": "hello-1", "step_id": "step-2", "usd": 0.0031},
        {"kind": "step.completed", "run_id": "hello-1", "step_id": "step-2"}, {"kind": "run.completed", "run_id": "hello-1"}]
RUN2 = [{"kind": "run.spawned", "run_id": "hello-2"}, {"kind": "step.scheduled", "run_id": "hello-2", "step_id": "step-2"},
        {"kind": "step.completed", "run_id": "hello-2", "step_id": "step-2"}, {"kind": "run.completed", "run_id": "hello-2"}]
SPENDS = [None, None, {"usd": 0.0031}, {"usd": 0.0031}, None, None, None, None, None]
CONFIG = ('[stages.read]\ntype = "read"\n[stages.walk]\ntype = "walk"\ninputs = ["read", "read.errors"]\n'
          'format = "json"\n[stages.out]\ntype = "write"\ninputs = ["walk"]\n')


def _jsonl(path: Path, records: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def _spends(out: bytes) -> list:
    return [json.loads(line)["spend"] for line in out.splitlines() if json.loads(line)["kind"] != "$source"]


def test_a_later_run_in_the_same_journal_starts_with_no_spend(tmp_path: Path, cli) -> None:
    code, out, errors = cli("walk", _jsonl(tmp_path / "two.jsonl", RUN1 + RUN2), "--json")
    assert (code, errors) == (0, [])
    assert _spends(out) == SPENDS


def test_the_next_input_starts_with_no_spend_whatever_the_workers(tmp_path: Path, cli) -> None:
    config = tmp_path / "walk.toml"
    config.write_text(CONFIG)
    files = [_jsonl(tmp_path / "run1.jsonl", RUN1), _jsonl(tmp_path / "run2.jsonl", RUN2)]
    outs = []
    for workers in ([], ["--workers", "1"], ["--workers", "2"]):
        code, out, errors = cli("run", *workers, str(config), *files)
        assert (code, errors) == (0, [])
        assert _spends(out) == SPENDS
        outs.append(out)
    assert outs[0] == outs[1] == outs[2]


def test_a_steps_spend_so_far_counts_all_it_journaled(tmp_path: Path, cli) -> None:
    records = [{"kind": "run.spawned", "run_id": "ev"}, {"kind": "spend", "run_id": "ev", "step_id": "o", "usd": 1},
               *({"kind": "spend", "run_id": "ev", "step_id": f"sub-{i}", "usd": 1} for i in range(10_001)),
               {"kind": "spend", "run_id": "ev", "step_id": "o", "usd": 1}, {"kind": "step.completed", "step_id": "o"}]
    code, out, errors = cli("walk", _jsonl(tmp_path / "long.jsonl", records), "--at", "o", "--json")
    assert (code, errors) == (0, [])
    assert json.loads(out.splitlines()[-1])["spend"] == {"usd": 2}
