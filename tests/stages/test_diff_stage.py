"""The diff stage: which records are the two runs, its verdict on the errors port, refusals, both formats."""

from __future__ import annotations

import orjson
import pytest

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError, diagnostic
from replay.pipeline.engine.inline import run_inline
from replay.stages.diff import DiffRuns


def ev(seq: int, type_: str, run_id: str, **payload) -> dict:
    return {"seq": seq, "timestamp": f"2026-03-01T12:00:0{seq}.000Z", "type": type_, "runId": run_id, "payload": payload}


def run_of(run_id: str, tool: str = "lookup") -> list[dict]:
    return [
        {"$record": "run", "runId": run_id, "prompt": "p", "status": "ok"},
        ev(1, "run_started", run_id),
        ev(2, "tool_called", run_id, toolName=tool, callId=f"{run_id}-c1"),
        ev(3, "tool_completed", run_id, toolName=tool, callId=f"{run_id}-c1"),
        ev(4, "run_completed", run_id),
        {"$record": "heal", "runId": run_id, "repairs": 0},
    ]


def from_files(a: list[dict], b: list[dict], fmt: str = "json") -> tuple[bytes, dict]:
    """As `read a b` sends them: a source record before each file's records."""
    batches = [Batch.of([{"$record": "source", "source": "a.jsonl"}], "a.jsonl"), Batch.of(a, "a.jsonl"),
               Batch.of([{"$record": "source", "source": "b.jsonl"}], "b.jsonl"), Batch.of(b, "b.jsonl")]
    result = run_inline([DiffRuns(format=fmt)], batches)
    return result.to_jsonl(), result.side


def test_two_files_that_hold_the_same_run_are_the_same():
    out, side = from_files(run_of("run_1"), run_of("run_2"))
    document = orjson.loads(out)
    assert document["same"] is True and side == {}
    assert document["a"] == {"source": "a.jsonl", "records": 5} and document["b"]["source"] == "b.jsonl"
    assert document["firstDivergence"] is None and document["differences"] == []


def test_runs_that_differ_are_reported_on_the_errors_port_too():
    out, side = from_files(run_of("run_1"), run_of("run_2", tool="search"))
    document = orjson.loads(out)
    assert document["same"] is False
    assert document["summary"]["categories"]["tool_name"] == 2
    (error,) = side["errors"]
    assert error["code"] == "E_RUNS_DIFFER" and error["received"] == document["firstDivergence"]


def test_text_format():
    out, _ = from_files(run_of("run_1"), run_of("run_2", tool="search"), fmt="text")
    lines = out.decode().splitlines()
    assert lines[0].startswith("a  a.jsonl  (5 records)") and lines[1].startswith("b  b.jsonl")
    assert lines[2].split()[:2] == ["changed", "tool_name"] and '"lookup" -> "search"' in lines[2]
    assert lines[-2].startswith("different: the runs part at a#3 b#3")
    assert lines[-1].startswith("summary: 3 alike, 2 changed (tool_name 2)")
    same, _ = from_files(run_of("run_1"), run_of("run_2"), fmt="text")
    assert same.decode().splitlines()[-1].startswith("same: 5 records alike (ignoring timestamp")


def test_one_stream_with_two_runs_is_split_at_the_second_run():
    result = run_inline([DiffRuns(format="json")], [Batch.of(run_of("run_1") + run_of("run_2"), "<stdin>")])
    assert orjson.loads(result.to_jsonl())["same"] is True
    plain = [r for r in run_of("run_1") + run_of("run_2", tool="x") if "$record" not in r]  # runIds tell them apart
    result = run_inline([DiffRuns(format="json")], [Batch.of(plain, "<stdin>")])
    assert orjson.loads(result.to_jsonl())["summary"]["records"] == {"a": 4, "b": 4}


@pytest.mark.parametrize("records", [run_of("run_1"), run_of("a") + run_of("b") + run_of("c"), []])
def test_anything_but_two_runs_is_refused(records):
    stage = DiffRuns()
    if records:
        stage(Batch.of(records, "<stdin>"))
    with pytest.raises(ReplayError) as caught:
        stage.flush()
    assert caught.value.code == "E_DIFF_INPUT_INVALID" and caught.value.exit_code == 2


def test_a_diagnostic_routed_in_makes_the_input_unusable():
    stage = DiffRuns()
    stage(Batch.of(run_of("run_1"), "a.jsonl"))
    stage(Batch.side([diagnostic("E_JSONL_LINE_INVALID", "line 4 is not valid JSON", source="b.jsonl", line=4, offset=300)],
                     "errors", "<parse.errors>"))
    stage(Batch.of(run_of("run_2"), "b.jsonl"))
    with pytest.raises(ReplayError) as caught:
        stage.flush()
    body = caught.value.body
    assert body["code"] == "E_JOURNAL_READ_FAILED" and caught.value.exit_code == 2
    assert (body["source"], body["line"], body["offset"], body["cause"]) == ("b.jsonl", 4, 300, "E_JSONL_LINE_INVALID")


def test_ignore_extends_the_default_and_a_bad_path_is_a_config_error():
    a, b = run_of("run_1"), run_of("run_2")
    b[0]["prompt"] = "other prompt"
    batches = [Batch.of([{"$record": "source", "source": "a"}]), Batch.of(a), Batch.of([{"$record": "source", "source": "b"}]), Batch.of(b)]
    assert orjson.loads(run_inline([DiffRuns(format="json", ignore=["prompt"])], batches).to_jsonl())["same"] is True
    assert orjson.loads(run_inline([DiffRuns(format="json")], batches).to_jsonl())["same"] is False
    with pytest.raises(ReplayError) as caught:
        DiffRuns(ignore=["a..b"])
    assert caught.value.code == "E_CONFIG_OPTION_INVALID"
