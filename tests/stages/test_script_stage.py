"""The script stage: a parsed session stream in, the replay-script document out, streaming; problems on its error port."""

from __future__ import annotations

import functools
import itertools
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.config import graph_from_config
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.executor import ErrorPort, run_graph
from replay.pipeline.engine.graph import Graph
from replay.pipeline.engine.registry import Registry as StageRegistry
from replay.stages.script import BuildReplayScript

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"


@functools.cache
def validator() -> Draft202012Validator:
    docs = [orjson.loads(p.read_bytes()) for p in SCHEMAS.glob("*.schema.json")]
    registry = Registry().with_resources([(d["$id"], Resource.from_contents(d)) for d in docs])
    return Draft202012Validator(orjson.loads((SCHEMAS / "replay-script.schema.json").read_bytes()), registry=registry)


def chunk(turn: int, step: int, kind: str = "text-delta", **fields: Any) -> dict[str, Any]:
    return {"type": "assistant/chunk", "turn": turn, "step": step, "chunk": {"type": kind, **fields}}


def finish(turn: int, step: int) -> dict[str, Any]:
    return chunk(turn, step, "finish", finishReason="stop")


SESSION = [
    {"type": "session/start", "sessionId": "s1"},
    {"type": "turn/start", "turn": 1},
    chunk(1, 0, "tool-call", toolCallId="c1", toolName="echo", input={"text": "hi"}),
    finish(1, 0),
    {"type": "tool/result", "turn": 1, "step": 0, "toolCallId": "c1", "output": "hi"},
    chunk(1, 1, text="hi"),
    finish(1, 1),
    {"type": "turn/end", "turn": 1},
    chunk(2, 0, text="half"),
    {"type": "turn/error", "turn": 2, "step": 0},
]


def batches(records: list[Any], cuts: list[int], source: str = "session.jsonl") -> list[Batch]:
    """The records in batches cut at the given indexes, with their line numbers."""
    out = []
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(records)}), len(records)]
    for a, b in itertools.pairwise(bounds):
        batch = Batch.of(records[a:b], source)
        batch.lines = list(range(a + 1, b + 1))
        out.append(batch)
    return out


def run(stage: BuildReplayScript, parts: list[Batch]) -> tuple[bytes, list[dict[str, Any]]]:
    """Call the stage like the executor does; the document bytes and the diagnostics."""
    data = b""
    errors: list[dict[str, Any]] = []
    for out in [*(stage(b) for b in parts), stage.flush()]:
        if out is not None:
            assert out.events is None  # raw lines: only `write` (or parse) may take them
            data += out.to_jsonl()
        errors += stage.take("errors")
    return data, errors


def test_the_output_is_one_json_document_with_one_group_per_line():
    data, errors = run(BuildReplayScript(), batches(SESSION[:8], []))
    assert errors == []
    assert data == (
        b'{"version":1,"session":"session.jsonl","groups":[\n'
        b'{"turn":1,"step":0,"chunks":[{"type":"tool-call","toolCallId":"c1","toolName":"echo","input":{"text":"hi"}},'
        b'{"type":"finish","finishReason":"stop"}]},\n'
        b'{"turn":1,"step":1,"chunks":[{"type":"text-delta","text":"hi"},{"type":"finish","finishReason":"stop"}]}\n'
        b']}\n'
    )
    assert list(validator().iter_errors(orjson.loads(data))) == []


def test_an_unfinished_group_is_left_out_and_reported_naming_its_turn_and_step():
    data, errors = run(BuildReplayScript(), batches(SESSION, [3, 9]))
    document = orjson.loads(data)  # still a whole document, though its last group was refused
    assert [(g["turn"], g["step"]) for g in document["groups"]] == [(1, 0), (1, 1)]
    assert [e["code"] for e in errors] == ["E_SESSION_GROUP_UNFINISHED"]
    assert (errors[0]["turn"], errors[0]["step"], errors[0]["line"], errors[0]["stage"]) == (2, 0, 9, "script")


def test_overrides_apply_and_show_in_the_document(tmp_path: Path):
    sidecar = tmp_path / "replay.override.json"
    sidecar.write_bytes(orjson.dumps({"overrides": [
        {"turn": 2, "step": 0, "action": "throw", "error": {"name": "APIError", "message": "overloaded"}},
        {"turn": 1, "step": 1, "action": "hang"},
    ]}))
    data, errors = run(BuildReplayScript(override=str(sidecar)), batches(SESSION, [5]))
    assert errors == []
    document = orjson.loads(data)
    assert document["override"] == str(sidecar)
    assert document["groups"][1] == {"turn": 1, "step": 1, "chunks": [{"type": "text-delta", "text": "hi"}], "action": "hang"}
    assert document["groups"][2] == {"turn": 2, "step": 0, "chunks": [{"type": "text-delta", "text": "half"}],
                                     "action": "throw", "error": {"name": "APIError", "message": "overloaded"}}
    assert list(validator().iter_errors(document)) == []


def test_an_override_for_an_unknown_step_is_reported_at_the_end(tmp_path: Path):
    sidecar = tmp_path / "o.json"
    sidecar.write_bytes(orjson.dumps({"overrides": [{"turn": 9, "step": 9, "action": "hang"}]}))
    _, errors = run(BuildReplayScript(override=str(sidecar)), batches(SESSION[:8], []))
    assert [(e["code"], e["turn"], e["step"], e["source"]) for e in errors] == [("E_OVERRIDE_STEP_UNKNOWN", 9, 9, str(sidecar))]


def test_a_broken_sidecar_is_refused_when_the_stage_is_built(tmp_path: Path):
    sidecar = tmp_path / "o.json"
    sidecar.write_bytes(b'{"overrides": [{"turn": 1, "step": 0, "action": "throw"}]}')
    with pytest.raises(ReplayError) as info:
        BuildReplayScript(override=str(sidecar))
    assert info.value.code == "E_OVERRIDE_INVALID" and info.value.exit_code == 2


def test_an_empty_session_is_an_empty_script_and_said_to_be_no_session():
    data, errors = run(BuildReplayScript(), [])
    assert orjson.loads(data) == {"version": 1, "groups": []}
    assert [(e["code"], e["received"]) for e in errors] == [("E_SESSION_LINE_INVALID", "no line")]


def test_split_groups_and_broken_lines_are_reported_and_the_rest_goes_on():
    records = [chunk(1, 0, text="a"), {"type": "assistant/chunk", "turn": 1}, finish(1, 0), chunk(1, 1), finish(1, 1),
               chunk(1, 0, text="late")]
    data, errors = run(BuildReplayScript(), batches(records, [2]))
    assert [e["code"] for e in errors] == ["E_SESSION_LINE_INVALID", "E_SESSION_GROUP_SPLIT"]
    assert [e["line"] for e in errors] == [2, 6]
    assert len(orjson.loads(data)["groups"]) == 2


@given(st.lists(st.integers(0, len(SESSION)), max_size=6))
@settings(max_examples=60, deadline=None)
def test_how_the_stream_is_cut_into_batches_changes_nothing(cuts):
    expected = run(BuildReplayScript(), batches(SESSION, []))
    assert run(BuildReplayScript(), batches(SESSION, cuts)) == expected


# in a graph ----------------------------------------------------------------------------------
def test_a_user_config_chain_reads_parses_scripts_and_writes(tmp_path: Path):
    session = tmp_path / "session.jsonl"
    session.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in SESSION[:8]))
    out = tmp_path / "script.json"
    graph = graph_from_config({"chain": [{"type": "script"}, {"type": "write", "path": str(out)}]},
                              registry=StageRegistry(plugins=False), paths=[str(session)])
    assert [n.stage.name for n in graph.nodes.values()] == ["read", "parse", "dialect", "script", "write"]
    result = anyio.run(lambda: run_graph(graph, error_port=ErrorPort(write=lambda _: None)))
    assert result.errors == 0
    document = orjson.loads(out.read_bytes())
    assert document["session"] == str(session) and len(document["groups"]) == 2


def test_a_stage_that_needs_events_cannot_take_the_script_lines():
    graph = Graph()
    graph.add(BuildReplayScript(), id="script", inputs=["parse"])
    registry = StageRegistry(plugins=False)
    graph.add(registry.get("read")(), id="read")
    graph.add(registry.get("parse")(), id="parse", inputs=["read"])
    graph.add(registry.get("select")(), id="select", inputs=["script"])
    graph.add(registry.get("write")(), id="out", inputs=["select"])
    with pytest.raises(ReplayError) as info:
        graph.validate()
    assert info.value.code == "E_CONFIG_INPUTS_INVALID"
