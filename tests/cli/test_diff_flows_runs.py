"""diff tells the runs of a flows journal apart by its `run_id`, as walk does (and a canonical one by its `runId`): a
side holding two flows runs is refused, E_DIFF_INPUT_INVALID "holds 2 runs" (exit 2), not compared as one run; one
stream holding two flows runs is two runs to compare."""

from __future__ import annotations

from pathlib import Path

import orjson

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.inline import run_inline
from replay.stages.diff import DiffRuns

HELLO = Path(__file__).resolve().parents[1] / "fixtures" / "walk" / "hello.jsonl"


def test_a_flows_journal_of_two_runs_is_refused_as_a_side(tmp_path: Path, cli) -> None:
    one = HELLO.read_bytes()
    two = tmp_path / "two-runs.jsonl"
    two.write_bytes(one + one.replace(b"hello-1", b"hello-2"))
    code, out, errors = cli("diff", str(HELLO), str(two))
    assert (code, out) == (2, b"")
    assert [e["code"] for e in errors] == ["E_DIFF_INPUT_INVALID"]
    assert "holds 2 runs" in errors[0]["message"] and errors[0]["received"] == 2


def test_one_flows_stream_of_two_runs_is_two_runs_to_compare() -> None:
    records = [orjson.loads(line) for line in HELLO.read_bytes().splitlines()]
    second = [{**r, "run_id": "hello-2"} if "run_id" in r else r for r in records]
    result = run_inline([DiffRuns(format="json")], [Batch.of(records + second, "two.jsonl")])
    assert orjson.loads(result.to_jsonl())["same"] is True and result.side == {}
