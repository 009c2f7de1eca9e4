"""A stage that says it keeps no run state (``keeps_run_state = False``) may take several streams of events, whose
batches come interleaved: what it gives for each stream, and reports on its side ports, is what it gives for that
stream alone, in whatever order the batches of the streams come. A stage that says nothing keeps run state, and a
graph giving it two streams is refused."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.graph import Graph
from replay.pipeline.engine.registry import Registry
from replay.pipeline.engine.stage import Sink, Source, Stage, Transform

REGISTRY = Registry(plugins=False)
ALONE = [name for name in REGISTRY.names() if not REGISTRY.get(name).keeps_run_state]
TRANSFORMS = [name for name in ALONE if issubclass(REGISTRY.get(name), Transform)]

events = st.fixed_dictionaries(
    {"type": st.sampled_from(["run_started", "tool_called", "tool_end", "run_completed", "custom"]),
     "runId": st.sampled_from(["a", "b"])},
    optional={"payload": st.one_of(st.none(), st.integers(-9, 9), st.just({})), "$record": st.just("run"),
              "seq": st.integers(1, 9)},
)
streams = st.lists(st.lists(events, min_size=1, max_size=4), max_size=5)  # a stream: its batches


def run(stage: Stage, batches: list[tuple[str, list[dict[str, Any]]]]) -> tuple[dict[str, list[Any]], list[bytes]]:
    """What ``stage`` gives for each source, and its side records (in no order)."""
    out: dict[str, list[Any]] = {}
    side: list[bytes] = []
    for source, records in batches:
        given_back = stage(Batch.of([dict(r) for r in records], source))  # type: ignore[operator]
        for batch in given_back if isinstance(given_back, list) else [given_back] if given_back else []:
            out.setdefault(batch.source, []).extend(batch.events or ())
        side += [orjson.dumps(r, option=orjson.OPT_SORT_KEYS) for rs in stage.drain().values() for r in rs]
    return out, sorted(side)


def test_the_stages_said_to_take_batches_alone_are_those_checked() -> None:
    assert set(ALONE) == {"alias", "evaluate", "log", "normalize_payload", "select", "summaries", "write"}
    assert all(REGISTRY.get(n).keeps_run_state for n in ("parse", "cut_runs", "summarize", "validate", "dedupe", "emit"))


@pytest.mark.parametrize("name", TRANSFORMS)
@settings(max_examples=60, deadline=None)
@given(a=streams, b=streams, order=st.randoms(use_true_random=False))
def test_a_stage_taking_batches_alone_gives_each_stream_what_it_gives_it_alone(name: str, a, b, order) -> None:
    mixed = [("a.jsonl", batch) for batch in a] + [("b.jsonl", batch) for batch in b]
    heads = {"a.jsonl": 0, "b.jsonl": 0}
    interleaved = []
    while mixed:  # the batches of the two streams in any interleaving, each stream's in its order
        source = order.choice([s for s in heads if any(m[0] == s for m in mixed)])
        k = next(i for i, m in enumerate(mixed) if m[0] == source)
        interleaved.append(mixed.pop(k))
    together, side = run(REGISTRY.get(name)(), interleaved)
    alone_a, side_a = run(REGISTRY.get(name)(), [("a.jsonl", batch) for batch in a])
    alone_b, side_b = run(REGISTRY.get(name)(), [("b.jsonl", batch) for batch in b])
    assert together == {**alone_a, **alone_b}
    assert side == sorted(side_a + side_b)


class _Numbers(Source):
    name = "numbers"


class _Plugin(Transform):  # a third-party stage that says nothing of its state
    name = "plugin"


class _Out(Sink):
    name = "out"


class _Writer(Sink):  # one that writes each batch as it comes
    name = "writer"
    keeps_run_state = False


def test_a_stage_that_says_nothing_keeps_run_state_and_takes_one_stream() -> None:
    graph = Graph()
    graph.add(_Numbers(), "n1")
    graph.add(_Numbers(), "n2")
    graph.add(_Plugin(), "p", ["n1", "n2"])
    graph.add(_Out(), "out", ["p"])
    with pytest.raises(ReplayError) as refused:
        graph.validate()
    assert refused.value.code == "E_CONFIG_INPUTS_INVALID" and refused.value.body["path"] == "stages.p.inputs[1]"
    graph.nodes["p"].inputs = ["n1"]
    graph.nodes["out"].inputs = ["p", "n2"]
    with pytest.raises(ReplayError):
        graph.validate()
    del graph.nodes["out"]
    graph.add(_Writer(), "out", ["p", "n2"])  # a stage that says it takes each batch alone takes both
    assert len(graph.validate()) == 3
