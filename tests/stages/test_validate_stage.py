"""The `validate` stage: checks records where they sit in the stream and passes the stream on unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import errors_of, run_replay

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.executor import ErrorPort, run_graph
from replay.pipeline.engine.graph import Graph
from replay.pipeline.engine.registry import Registry
from replay.pipeline.model.artifacts import document_items
from replay.stages.parse import ParseLines
from replay.stages.read import ReadJournal
from replay.stages.validate import ValidateEvents
from replay.stages.write import WriteJsonl


def ev(seq: Any, run: str = "run_1", **more: Any) -> dict[str, Any]:
    return {"seq": seq, "timestamp": "2026-03-01T12:00:00.000Z", "type": "tool_called", "runId": run, "payload": {}, **more}


def parsed(records: list[dict[str, Any]], source: str = "run.jsonl") -> Batch:
    batch = Batch.from_lines([orjson.dumps(r) for r in records], source)
    return ParseLines()(batch)


def test_the_registry_knows_the_stage() -> None:
    assert Registry(plugins=False).get("validate") is ValidateEvents


def test_a_valid_stream_passes_unchanged_and_reports_nothing() -> None:
    stage = ValidateEvents()
    batch = parsed([{"$record": "run", "runId": "run_1", "status": "ok"}, ev(1), ev(2)])
    before = batch.to_jsonl()
    out = stage(batch)
    assert out is batch and out.to_jsonl() == before
    assert stage.take("errors") == []
    assert (stage.events, stage.runs) == (2, 1)


def test_problems_carry_the_line_offset_and_path_of_the_record() -> None:
    stage = ValidateEvents()
    batch = parsed([ev(1), ev(3), ev(4, timestamp="later")])
    out = stage(batch)
    assert len(out) == 3, "invalid events are reported, not dropped"
    errors = stage.take("errors")
    assert [(e["code"], e["line"], e["offset"], e["path"], e["source"], e["stage"]) for e in errors] == [
        ("E_ARTIFACT_EVENT_SEQ_INVALID", 2, batch.offsets[1], "$.seq", "run.jsonl", "validate"),
        ("E_ARTIFACT_EVENT_TIMESTAMP_INVALID", 3, batch.offsets[2], "$.timestamp", "run.jsonl", "validate"),
    ]


def test_runs_are_followed_across_batches() -> None:
    stage = ValidateEvents()
    stage(parsed([ev(1), ev(2)]))
    stage(parsed([ev(3), ev(5)]))
    (error,) = stage.take("errors")
    assert (error["expected"], error["received"]) == (4, 5)


def test_each_source_is_a_stream_of_its_own() -> None:
    stage = ValidateEvents()
    stage(parsed([ev(1), ev(2)], "a.jsonl"))
    stage(parsed([ev(1), ev(2)], "b.jsonl"))  # same runId, new file: seq starts again
    assert stage.take("errors") == []
    assert sorted(stage.checkers) == ["a.jsonl", "b.jsonl"]
    assert stage.events == 4


def test_records_from_a_document_are_named_by_their_json_path() -> None:
    doc = {"schemaVersion": "1.0.0", "artifactType": "replay", "id": "a", "status": "ok", "events": [ev(1), ev(2), ev(2)]}
    stage = ValidateEvents()
    for batch in document_items(doc, "a.json"):
        stage(batch)
    (error,) = stage.take("errors")
    assert (error["path"], error["source"]) == ("$.events[2].seq", "a.json")
    assert "line" not in error


def test_side_records_are_not_checked() -> None:
    stage = ValidateEvents()
    side = Batch.side([{"rule": "renumber", "action": "renumbered", "message": "m"}], "repairs", "<x>")
    assert stage(side) is side
    assert stage.take("errors") == []


def test_seq_order_option() -> None:
    lenient = ValidateEvents(seq_order="increasing")
    lenient(parsed([ev(1), ev(5), ev(9)]))
    assert lenient.take("errors") == []
    with pytest.raises(TypeError):
        ValidateEvents(order="increasing")


@pytest.mark.anyio
async def test_in_a_graph_every_problem_reaches_the_error_port(tmp_path: Path) -> None:
    journal = tmp_path / "run.jsonl"
    journal.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in [ev(1), ev(2, type=""), ev(2), ev(4)]))
    out = tmp_path / "out.jsonl"
    seen: list[bytes] = []
    stage = ValidateEvents()
    graph = Graph.chain(ReadJournal(paths=[str(journal)]), ParseLines(), stage, WriteJsonl(path=str(out)))
    result = await run_graph(graph, error_port=ErrorPort(write=seen.append))
    assert result.errors == 2
    assert [orjson.loads(line)["error"]["code"] for line in seen] == ["E_ARTIFACT_EVENT_TYPE_INVALID", "E_ARTIFACT_EVENT_SEQ_INVALID"]
    assert out.read_bytes() == journal.read_bytes(), "the stream passes through byte for byte"


def test_a_pipeline_config_can_route_validation_errors_to_a_dead_letter_file(tmp_path: Path) -> None:
    journal = tmp_path / "run.jsonl"
    journal.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in [ev(1, type="user_message"), ev(2), ev(3, type="x"), ev(4, timestamp="?")]))
    config = tmp_path / "check.toml"
    config.write_text(
        '[stages.read]\ntype = "read"\n'
        '[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
        '[stages.tools]\ntype = "select"\ninputs = ["parse"]\ntypes = ["tool_*"]\n'
        '[stages.check]\ntype = "validate"\ninputs = ["tools"]\nseq_order = "increasing"\n'
        '[stages.out]\ntype = "write"\ninputs = ["check"]\n'
        '[stages.dead]\ntype = "write"\npath = "' + str(tmp_path / "problems.jsonl") + '"\ninputs = ["check.errors"]\n'
    )
    done = run_replay("run", str(config), str(journal))
    assert done.returncode == 0, done.stderr
    assert errors_of(done.stderr) == []
    assert [orjson.loads(line)["seq"] for line in done.stdout.splitlines()] == [2, 4]
    problems = [orjson.loads(line) for line in (tmp_path / "problems.jsonl").read_bytes().splitlines()]
    assert [(p["code"], p["line"]) for p in problems] == [("E_ARTIFACT_EVENT_TIMESTAMP_INVALID", 4)]


def test_a_pipeline_config_rejects_an_unknown_seq_order(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('chain = [{type = "validate", seq_order = "sorted"}]\n')
    done = run_replay("run", str(config), input=b"")
    assert done.returncode == 2
    (error,) = errors_of(done.stderr)
    assert error["code"] == "E_CONFIG_OPTION_INVALID"
