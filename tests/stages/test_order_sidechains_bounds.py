"""order_sidechains holds what follows a sidechain record written before its parent, within bounds."""

from __future__ import annotations

import pytest
from heal_support import ev

from replay.pipeline.engine.batch import Batch
from replay.stages import order_sidechains
from replay.stages.order_sidechains import OrderSidechains

HEAL = {"$record": "heal", "runId": "r1", "repairs": 1, "byRule": {"x": 1}}


def _held_after(stage: OrderSidechains, records: list[dict]) -> int:
    stage(Batch.of(records, "run.jsonl"))
    return len(stage.held)


def test_records_held_behind_a_sidechain_count_toward_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Records after a sidechain that waits for its parent wait with it; they were never counted, so one such event
    and a million records after it were all kept in memory until the run ended."""
    monkeypatch.setattr(order_sidechains, "MAX_HELD", 3)
    side = ev(2, "user_message", payload={"sidechain": True}, parentId="p", id="s1")
    assert _held_after(OrderSidechains(), [ev(1, "run_started", id="a"), side, HEAL, HEAL]) == 3
    assert _held_after(OrderSidechains(), [ev(1, "run_started", id="a"), side, HEAL, HEAL, HEAL]) == 0


def test_what_is_held_is_bounded_by_its_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """10,000 events of 1 MB held for a parent would be 10 GB: past 8 MiB what is held goes out as it came."""
    monkeypatch.setattr(order_sidechains, "MAX_HELD_BYTES", 5000)
    side = ev(2, "user_message", payload={"sidechain": True, "text": "x" * 1000}, parentId="p", id="s1")
    more = [ev(seq, "assistant_message", payload={"text": "y" * 1000}, id=f"m{seq}") for seq in range(3, 6)]
    stage = OrderSidechains()
    assert _held_after(stage, [ev(1, "run_started", id="a"), side, *more]) == 4
    out = stage(Batch.of([ev(6, "assistant_message", payload={"text": "z" * 1000}, id="m6")], "run.jsonl"))
    assert stage.held == [] and [e["seq"] for e in (out if isinstance(out, Batch) else out[-1]).events] == [2, 3, 4, 5, 6]
