"""The executor on asyncio and trio: fusion, ordering, flush, side ports, error port, strict, backpressure."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import anyio.lowlevel
import orjson
import pytest
from engine_stages import (
    AddField,
    AuditTrail,
    Collect,
    CountAtEnd,
    DoubleAsync,
    EndlessSource,
    Explode,
    ListSource,
    RejectOdd,
    numbers,
)

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError, StrictAbort
from replay.pipeline.engine.executor import DEFAULT_BUFFER, ErrorPort, StageFailed, plan, run_graph
from replay.pipeline.engine.graph import Graph
from replay.pipeline.engine.stage import Sink
from replay.stages.parse import ParseLines
from replay.stages.read import ReadJournal

pytestmark = pytest.mark.anyio


def quiet_port(strict: bool = False) -> tuple[ErrorPort, list[bytes]]:
    lines: list[bytes] = []
    return ErrorPort(strict=strict, write=lines.append), lines


# planning ----------------------------------------------------------------------------------
async def test_a_chain_of_transforms_is_fused_into_one_task():
    graph = Graph.chain(ListSource(), AddField(), RejectOdd(), CountAtEnd(), Collect())
    tasks, edges = plan(graph)
    assert [[n.id for n in t.nodes] for t in tasks] == [
        ["list_source"], ["add_field", "reject_odd", "count_at_end"], ["collect"],
    ]
    assert [(e.producer, e.consumer) for e in edges] == [("list_source", "add_field"), ("count_at_end", "collect")]


async def test_fusion_stops_where_a_stage_has_several_consumers_or_inputs():
    graph = Graph()
    graph.add(ListSource(), id="src")
    graph.add(AddField(), id="a", inputs=["src"])
    graph.add(AddField(), id="b", inputs=["a"])
    graph.add(AddField(), id="c", inputs=["a"])
    graph.add(AddField(), id="d", inputs=["b", "c"])
    graph.add(Collect(), id="out", inputs=["d"])
    tasks, _ = plan(graph)
    assert sorted(tuple(n.id for n in t.nodes) for t in tasks) == [("a",), ("b",), ("c",), ("d",), ("out",), ("src",)]


async def test_an_async_transform_gets_its_own_task():
    graph = Graph.chain(ListSource(), AddField(), DoubleAsync(), AddField(field="t2"), Collect())
    tasks, _ = plan(graph)
    assert [len(t.nodes) for t in tasks] == [1, 1, 1, 1, 1]


# running -----------------------------------------------------------------------------------
async def test_records_arrive_in_order_through_a_fused_chain():
    sink = Collect()
    result = await run_graph(Graph.chain(ListSource(numbers(101), size=7), AddField(value=1), sink))
    assert sink.records == [{"n": k, "tag": 1} for k in range(101)]
    assert result.errors == 0


async def test_order_holds_with_a_one_batch_buffer_and_many_batches():
    sink = Collect()
    await run_graph(Graph.chain(ListSource(numbers(2000), size=3), AddField(), DoubleAsync(), sink), buffer=1)
    assert [r["n"] for r in sink.records] == [k for k in range(2000) for _ in (0, 1)]


async def test_flush_output_goes_through_the_rest_of_the_segment():
    sink = Collect()
    await run_graph(Graph.chain(ListSource(numbers(5)), CountAtEnd(), AddField(value="after"), sink))
    assert sink.records[-1] == {"count": 5, "tag": "after"}
    assert len(sink.records) == 6


async def test_an_empty_source_still_flushes():
    sink = Collect()
    await run_graph(Graph.chain(ListSource([]), CountAtEnd(), sink))
    assert sink.records == [{"count": 0}]


async def test_fan_out_gives_each_consumer_its_own_copy():
    graph = Graph()
    graph.add(ListSource(numbers(10)), id="src")
    tagged, plain = Collect(), Collect()
    graph.add(AddField(value="changed"), id="change", inputs=["src"])
    graph.add(tagged, id="tagged", inputs=["change"])
    graph.add(plain, id="plain", inputs=["src"])
    await run_graph(graph)
    assert plain.records == numbers(10)
    assert tagged.records == [{"n": k, "tag": "changed"} for k in range(10)]


async def test_fan_in_keeps_each_producers_order():
    graph = Graph()
    graph.add(ListSource([{"s": "a", "k": k} for k in range(50)], size=3), id="a")
    graph.add(ListSource([{"s": "b", "k": k} for k in range(50)], size=4), id="b")
    sink = Collect()
    graph.add(sink, id="out", inputs=["a", "b"])
    await run_graph(graph)
    assert len(sink.records) == 100
    for s in "ab":
        assert [r["k"] for r in sink.records if r["s"] == s] == list(range(50))


# errors --------------------------------------------------------------------------------------
async def test_unrouted_errors_go_to_the_error_port_and_are_counted():
    port, lines = quiet_port()
    sink = Collect()
    result = await run_graph(Graph.chain(ListSource(numbers(6)), RejectOdd(), sink), error_port=port)
    assert [r["n"] for r in sink.records] == [0, 2, 4]
    assert result.errors == 3
    bodies = [orjson.loads(line)["error"] for line in lines]
    assert [b["received"] for b in bodies] == [1, 3, 5]
    assert all(b["code"] == "E_EVENT_INVALID" and b["stage"] == "reject_odd" for b in bodies)
    assert result.first_error == bodies[0]


async def test_routed_errors_reach_their_consumer_and_not_the_error_port():
    port, lines = quiet_port()
    graph = Graph()
    graph.add(ListSource(numbers(6)), id="src")
    graph.add(RejectOdd(), id="even", inputs=["src"], route_errors=True)
    good, dead = Collect(), Collect()
    graph.add(good, id="good", inputs=["even"])
    graph.add(dead, id="dead", inputs=["even.errors"])
    result = await run_graph(graph, error_port=port)
    assert lines == [] and result.errors == 0
    assert [d["received"] for d in dead.records] == [1, 3, 5]
    assert set(dead.ports) == {"errors"}
    assert [r["n"] for r in good.records] == [0, 2, 4]


async def test_strict_stops_at_the_first_error():
    port, lines = quiet_port(strict=True)
    sink = Collect()
    with pytest.raises(StrictAbort) as info:
        await run_graph(Graph.chain(ListSource(numbers(1000), size=1), RejectOdd(), sink), error_port=port)
    assert info.value.body["received"] == 1
    assert len(lines) == 1
    assert len(sink.records) < 1000


async def test_strict_flag_builds_a_strict_error_port(capfd):
    with pytest.raises(StrictAbort):
        await run_graph(Graph.chain(ListSource(numbers(4)), RejectOdd(), Collect()), strict=True)
    err = capfd.readouterr().err
    assert err.count('"E_EVENT_INVALID"') == 1


async def test_side_records_nobody_takes_are_counted_as_dropped():
    result = await run_graph(Graph.chain(ListSource(numbers(4)), AuditTrail(), Collect()))
    assert result.dropped == {"audit": 4}


async def test_a_side_port_can_be_consumed():
    graph = Graph()
    graph.add(ListSource(numbers(3)), id="src")
    graph.add(AuditTrail(), id="audit", inputs=["src"])
    main, audits = Collect(), Collect()
    graph.add(main, id="out", inputs=["audit"])
    graph.add(audits, id="audits", inputs=["audit.audit"])
    result = await run_graph(graph)
    assert audits.records == [{"saw": 0}, {"saw": 1}, {"saw": 2}]
    assert result.dropped == {}


async def test_a_failing_stage_is_named():
    with pytest.raises(StageFailed) as info:
        await run_graph(Graph.chain(ListSource(numbers(10)), AddField(), Explode(at=5), Collect()))
    assert info.value.stage_id == "explode"
    assert isinstance(info.value.exc, ValueError)


async def test_a_replay_error_from_a_source_propagates_as_itself(tmp_path: Path):
    graph = Graph.chain(ReadJournal(paths=[str(tmp_path / "missing.jsonl")]), ParseLines(), Collect())
    with pytest.raises(ReplayError) as info:
        await run_graph(graph)
    assert info.value.code == "E_INPUT_PATH_NOT_FOUND"


# backpressure --------------------------------------------------------------------------------
async def test_a_stalled_sink_holds_the_source_back():
    gate = anyio.Event()
    source = EndlessSource()
    sink = Collect(gate=gate)
    graph = Graph.chain(source, AddField(), sink)
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_graph, graph)
        await anyio.wait_all_tasks_blocked()
        # two channels of DEFAULT_BUFFER batches, plus one batch held in each task at most
        assert 0 < source.sent <= 2 * DEFAULT_BUFFER + 3
        stalled_at = source.sent
        await anyio.wait_all_tasks_blocked()
        assert source.sent == stalled_at  # still held back, not creeping on
        gate.set()  # the sink drains, the source moves again
        while source.sent <= stalled_at + 2 * DEFAULT_BUFFER + 3:
            await anyio.lowlevel.checkpoint()
        assert len(sink.records) > 0
        tg.cancel_scope.cancel()


async def test_a_slow_sink_bounds_what_is_in_flight():
    """The sink checks, at every batch, how far ahead the source has run."""
    source = EndlessSource()
    ahead: list[int] = []

    class Slow(Sink):
        name = "slow"

        async def consume(self, batches: AsyncIterator[Batch]) -> None:
            seen = 0
            async for batch in batches:
                seen += len(batch)
                ahead.append(source.sent - seen)
                await anyio.lowlevel.checkpoint()
                if seen >= 300:
                    raise RuntimeError("seen enough")

    with pytest.raises(StageFailed, match="seen enough"):  # the way to end an endless run
        await run_graph(Graph.chain(source, AddField(), Slow()))
    assert max(ahead) <= 2 * DEFAULT_BUFFER + 3


# positions ----------------------------------------------------------------------------------
async def test_positions_travel_with_events_without_adding_keys(tmp_path: Path):
    journal = tmp_path / "run.jsonl"
    journal.write_bytes(b'{"seq":1}\n\n{"seq":2}\n')
    seen: list[tuple] = []

    class Positions(Sink):
        name = "positions"

        async def consume(self, batches: AsyncIterator[Batch]) -> None:
            async for batch in batches:
                seen.extend(zip(batch.events or [], batch.lines, batch.offsets, strict=True))
                assert batch.source == str(journal)

    await run_graph(Graph.chain(ReadJournal(paths=[str(journal)]), ParseLines(), Positions()))
    assert seen == [({"seq": 1}, 1, 0), ({"seq": 2}, 3, 11)]


async def test_a_graph_is_checked_and_laid_out_once_and_again_when_its_wiring_changes():
    from replay.pipeline.engine.executor import layout

    graph = Graph.chain(ListSource(), AddField(), Collect())
    groups, _ = layout(graph)
    assert groups == [["list_source"], ["add_field"], ["collect"]] and layout(graph)[0] is groups
    graph.add(AddField(), id="more", inputs=["add_field"])
    with pytest.raises(ReplayError) as caught:  # checked again: nothing takes the new stage's output
        plan(graph)
    assert caught.value.code == "E_CONFIG_OUTPUT_UNCONSUMED"
    graph.nodes["collect"].inputs.append("more")  # (wiring changed in place)
    assert layout(graph)[0] == [["list_source"], ["add_field"], ["more"], ["collect"]]
