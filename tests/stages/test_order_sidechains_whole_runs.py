"""order_sidechains takes a whole run that ends with its batch (``closes_run``) and holds no sidechain as it came, in
one look; every other batch record by record. Both ways order the same, and the next run starts afresh."""

from __future__ import annotations

from heal_support import ev

from replay.pipeline.engine.batch import Batch
from replay.stages.order_sidechains import OrderSidechains

RUN2 = {"$record": "run", "runId": "r2"}


def _batch(records: list[dict], closes: bool) -> Batch:
    batch = Batch.of(records, "run.jsonl")
    batch.closes_run = closes
    return batch


def _seqs(out: Batch | list[Batch]) -> list[tuple[str, int]]:
    return [(e.get("runId"), e.get("seq")) for part in (out if isinstance(out, list) else [out]) for e in part.events
            if "$record" not in e]


def test_a_whole_run_without_sidechains_goes_as_it_came_and_the_next_run_starts_afresh() -> None:
    stage = OrderSidechains()
    first = _batch([{"$record": "run", "runId": "r1"}, ev(1, "run_started", id="p"), ev(2, "user_message", id="q")], True)
    assert stage(first) is first and stage.run is None and stage.seen == set()
    # r2's sidechain names "p", an id of r1 only: it waits for r2's own "p"
    side = ev(2, "user_message", run="r2", payload={"sidechain": True}, parentId="p", id="s")
    out = stage(_batch([RUN2, ev(1, "run_started", run="r2", id="a"), side, ev(3, "assistant_message", run="r2", id="p"),
                        ev(4, "assistant_message", run="r2", id="z")], True))
    assert _seqs(out) == [("r2", 1), ("r2", 3), ("r2", 2), ("r2", 4)]


def test_a_run_ending_that_brings_the_parent_of_what_is_held_puts_it_in_place() -> None:
    stage = OrderSidechains()
    side = ev(2, "user_message", payload={"sidechain": True}, parentId="p", id="s")
    assert _seqs(stage(_batch([{"$record": "run", "runId": "r1"}, ev(1, "run_started", id="a"), side], False))) == [("r1", 1)]
    out = stage(_batch([ev(3, "assistant_message", id="p"), ev(4, "assistant_message", id="z")], True))  # no sidechain
    assert _seqs(out) == [("r1", 3), ("r1", 2), ("r1", 4)] and stage.held == [] and stage.run is None


def test_a_whole_run_with_a_sidechain_before_its_parent_is_ordered() -> None:
    side = ev(2, "user_message", payload={"sidechain": True}, parentId="p", id="s")
    out = OrderSidechains()(_batch([{"$record": "run", "runId": "r1"}, ev(1, "run_started", id="a"), side,
                                    ev(3, "assistant_message", id="p")], True))
    assert _seqs(out) == [("r1", 1), ("r1", 3), ("r1", 2)]
