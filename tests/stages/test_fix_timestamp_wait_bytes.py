"""fix_timestamp's wait for a run's first time is bounded by bytes as well as by events."""

from __future__ import annotations

import pytest
from heal_support import ev

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.inline import run_inline
from replay.pipeline.model.events import EPOCH
from replay.stages import fix_timestamp
from replay.stages.fix_timestamp import FixTimestamps


def test_events_waiting_for_a_time_are_bounded_by_their_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's first events with no time wait for its first one, up to 10,000 of them: 150 events of 1 MB each waited
    whole (heal peaked at 486 MiB for a 150 MB run, and a bigger run would not fit in memory). Past 8 MiB of them the
    wait is over, as past 10,000: they get the Unix epoch, and the log says why."""
    monkeypatch.setattr(fix_timestamp, "MAX_WAITING_BYTES", 3000)
    text = "x" * 1000
    records = [ev(n, "assistant_message", ts=None, payload={"text": text}) for n in range(1, 6)]
    records.append(ev(6, "user_message", ts="2026-03-01T12:00:07Z"))
    result = run_inline([FixTimestamps()], [Batch.of(records[i:i + 2], "run.jsonl") for i in range(0, 6, 2)])
    assert [e["timestamp"] for e in result.records] == [EPOCH] * 5 + ["2026-03-01T12:00:07Z"]
    repairs = result.side["repairs"]
    assert "no time in the run's first 3 events (over " in repairs[0]["message"]
    assert repairs[0]["message"].endswith("MiB) to borrow; used the Unix epoch")
    assert "previous event's" in repairs[3]["message"]


def test_a_wait_under_the_bytes_bound_borrows_the_first_later_time() -> None:
    records = [ev(n, "assistant_message", ts=None, payload={"text": "x" * 1000}) for n in range(1, 6)]
    records.append(ev(6, "user_message", ts="2026-03-01T12:00:07Z"))
    result = run_inline([FixTimestamps()], [Batch.of(records, "run.jsonl")])
    assert [e["timestamp"] for e in result.records] == ["2026-03-01T12:00:07Z"] * 6
