"""The `validate_summary` stage: one summary per input, in the order the inputs came in the stream, however the errors
ports' batches (which are not in step with the stream) are interleaved with it."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine.batch import Batch
from replay.stages.validate_summary import ValidateSummary

EVENT = {"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started", "runId": "r", "payload": {}}


def stream_batch(source: str) -> Batch:
    """An input's records as they come out of validate: read's mark, then an event."""
    return Batch.of([{"$record": "source", "source": source}, EVENT], source)


def error_batch(source: str) -> Batch:
    """An error a stage before validate found in ``source`` (parse's, read's), on an errors port."""
    return Batch.side([{"code": "E_JSONL_LINE_INVALID", "source": source, "line": 2}], "errors", "<parse.errors>")


def summaries(batches: list[Batch]) -> list[dict[str, Any]]:
    stage = ValidateSummary()
    for batch in batches:
        stage(batch)
    done = stage.flush()
    assert done is not None
    return list(done.events or ())


def test_an_error_that_comes_ahead_of_the_stream_does_not_put_its_input_first() -> None:
    """parse's error for b.jsonl reached the summary before validate sent a.jsonl's records: b's summary came first."""
    got = summaries([error_batch("b.jsonl"), stream_batch("a.jsonl"), stream_batch("b.jsonl"), stream_batch("c.jsonl")])
    assert [s["source"] for s in got] == ["a.jsonl", "b.jsonl", "c.jsonl"]
    assert [s["errors"] for s in got] == [0, 1, 0]


@st.composite
def interleavings(draw: st.DrawFn) -> tuple[list[str], list[Batch]]:
    """Some inputs (in their order), and the batches the summary gets: the stream's, in input order, with each input's
    errors put anywhere among them (a port's own batches in order)."""
    count = draw(st.integers(1, 8))
    inputs = [f"in{k}.jsonl" for k in range(count)]
    with_errors = draw(st.lists(st.sampled_from(inputs), max_size=12))
    batches: list[Batch] = [stream_batch(source) for source in inputs]
    for source in with_errors:
        batches.insert(draw(st.integers(0, len(batches))), error_batch(source))
    return inputs, batches


@settings(max_examples=200, deadline=None)
@given(interleavings())
def test_the_summaries_come_in_input_order_however_the_errors_come(case: tuple[list[str], list[Batch]]) -> None:
    inputs, batches = case
    got = summaries(batches)
    assert [s["source"] for s in got] == inputs
    errors = [b.events[0]["source"] for b in batches if b.port == "errors" and b.events]
    assert [s["errors"] for s in got] == [errors.count(source) for source in inputs]


def test_an_input_only_errors_named_comes_after_those_the_stream_brought() -> None:
    """(An input of which no record came, an unreadable one read alone: its summary is still given, last.)"""
    got = summaries([error_batch("x.jsonl"), stream_batch("a.jsonl"), stream_batch("b.jsonl")])
    assert [s["source"] for s in got] == ["a.jsonl", "b.jsonl", "x.jsonl"]
