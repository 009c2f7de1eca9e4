"""A batch's pause goes on to every stage after it. Through a fused segment, whatever its stages make of the batch (a
stage that holds or drops all of it: None, an empty list; one that splits it, one that gives batches back lazily), the
last batch out for a batch marked ``pause`` is marked so (an empty one when nothing else can carry it), and the marks
add no record nor lose one; from a source, an empty batch marked so is sent; to each consumer of a stage's output."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from engine_stages import Probe
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.executor import ErrorPort, run_graph
from replay.pipeline.engine.graph import Graph
from replay.pipeline.engine.segment import Segment
from replay.pipeline.engine.stage import Output, Sink, Source, Transform

# What a stage makes of a batch: gives nothing (None, an empty list or batch: it holds the records, which go on with
# its next call that passes anything on, or at the end), passes them on, splits them, gives them back lazily
MOVES = ("pass", "none", "empty_list", "empty_batch", "split", "lazy", "lazy_only")


class Scripted(Transform):
    """Does to the n-th batch it is given what ``moves[n % len(moves)]`` says."""

    name = "scripted"

    def __init__(self, moves: list[str], raw: bool) -> None:
        super().__init__()
        self.moves = moves
        self.emits_raw = raw  # type: ignore[misc]  # (the form of the mark it gets: it takes and gives parsed batches)
        self.calls = 0
        self.held: list[dict[str, Any]] = []

    def __call__(self, batch: Batch) -> Any:
        move = self.moves[self.calls % len(self.moves)]
        self.calls += 1
        records = [*self.held, *batch.events] if batch.events is not None else list(self.held)
        self.held = []
        if move in ("none", "empty_list", "empty_batch"):
            self.held = records
            return {"none": None, "empty_list": [], "empty_batch": Batch.of([])}[move]
        out = Batch.of(records)
        if move == "pass":
            return out
        if move == "split":
            return [Batch.of(records[:1]), Batch.of(records[1:])]
        lazy: Iterator[Batch] = iter([Batch.of(records)])
        return [Batch.of([]), lazy] if move == "lazy" else [lazy]

    def flush(self) -> Batch | None:
        held, self.held = self.held, []
        return Batch.of(held) if held else None


def outputs(stages: list[tuple[list[str], bool]], pushed: list[tuple[int, bool]]) -> list[tuple[list[Batch], bool]]:
    """What the segment gives out for each batch pushed (``n`` records, marked ``pause`` or not), then at the end."""
    segment = Segment([Scripted(moves, raw) for moves, raw in stages])
    out = []
    n = 0
    for count, pause in pushed:
        batch = Batch.of([{"n": n + k} for k in range(count)])
        n += count
        batch.pause = pause
        out.append(([item for item in segment.push(batch) if type(item) is Batch], pause))
    out.append(([item for item in segment.finish() if type(item) is Batch], False))
    return out


@settings(max_examples=300, deadline=None)
@given(stages=st.lists(st.tuples(st.lists(st.sampled_from(MOVES), min_size=1, max_size=4), st.booleans()),
                       min_size=1, max_size=4),
       pushed=st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=8))
def test_a_batch_marked_pause_ends_in_a_batch_marked_pause_and_the_records_are_as_given(stages, pushed):
    with_pauses = outputs(stages, pushed)
    for batches, pause in with_pauses:
        if pause:
            assert batches and batches[-1].pause, "the pause went no further"
    records = [r for batches, _ in with_pauses for b in batches for r in b.events or ()]
    assert records == [{"n": n} for n in range(sum(count for count, _ in pushed))]


def test_a_stage_that_holds_a_paused_batch_whole_passes_an_empty_batch_marked_pause_on():
    """join_split_records holding a line that may go on in the next (None): the stages after still learn of the pause."""
    [(batches, _), _] = outputs([(["none"], True), (["pass"], False)], [(2, True)])
    assert [(len(b), b.pause) for b in batches] == [(0, True)]
    [(batches, _), _] = outputs([(["pass"], False), (["none"], True)], [(2, True)])
    assert [(len(b), b.pause, b.events) for b in batches] == [(0, True, None)]  # (raw lines where the stage gives them)


class PausedSource(Probe, Source):
    """A record, where the input then waits, and a pause with no record (read's, when a line it read was too long)."""

    name = "paused_source"

    async def produce(self, out: Output) -> None:
        batch = Batch.of([{"n": 0}])
        batch.pause = True
        await out.send(batch)
        await out.send(Batch.pause_mark("<memory>", raw=False))


class Marks(Probe, Sink):
    """Each batch it takes, as (records, pause)."""

    name = "marks"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.taken: list[tuple[int, bool]] = []

    async def consume(self, batches: AsyncIterator[Batch]) -> None:
        async for batch in batches:
            self.taken.append((len(batch), batch.pause))


@pytest.mark.anyio
async def test_a_pause_reaches_every_consumer_of_a_source_with_or_without_records():
    """A source's empty batch marked pause was not sent, and a batch handed to several consumers went to all but the
    last as a copy without its pause."""
    graph = Graph()
    graph.add(PausedSource(), id="src")
    sinks = [Marks(), Marks()]
    for k, sink in enumerate(sinks):
        graph.add(sink, id=f"out{k}", inputs=["src"])
    await run_graph(graph, error_port=ErrorPort(write=lambda line: None))
    assert [sink.taken for sink in sinks] == [[(1, True), (0, True)]] * 2
