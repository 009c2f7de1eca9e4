"""Spools: what goes in comes back, in order and exactly, from memory and from the file past IN_MEMORY."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.report import spool
from replay.pipeline.report.spool import ByteSpool, SpooledSummaries


def summary(k: int) -> dict[str, Any]:
    return {"$record": "summary", "runId": f"run_{k}", "prompt": "é\n\u2028" * (k % 3), "big": 2**70 + k,
            "toolCalls": {"calls": [{"toolName": "bash", "durationMs": 1.5}] * (k % 5)}}


@pytest.fixture
def small_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spool, "IN_MEMORY", 600)  # a few summaries in memory, the rest in the file
    monkeypatch.setattr(spool, "READ_BYTES", 97)  # a pass reads the file in pieces that cut lines


@pytest.mark.usefixtures("small_memory")
def test_summaries_come_back_in_order_from_memory_and_file() -> None:
    spooled = SpooledSummaries()
    wanted = [summary(k) for k in range(40)]
    for s in wanted:
        spooled.append(s)
    assert spooled._bytes._memory and spooled._bytes._file is not None  # both places are used
    assert len(spooled) == 40
    assert list(spooled) == wanted
    assert [spooled[k] for k in range(40)] == wanted
    assert spooled[-1] == wanted[-1] and spooled[3:30:7] == wanted[3:30:7]
    with pytest.raises(IndexError):
        spooled[40]
    spooled.close()


@pytest.mark.usefixtures("small_memory")
def test_passes_may_interleave() -> None:
    spooled = SpooledSummaries()
    for k in range(30):
        spooled.append(summary(k))
    first, second = iter(spooled), iter(spooled)
    pairs = [(next(first), next(second)) for _ in range(30)]
    assert all(a == b for a, b in pairs)
    assert [a["runId"] for a, _ in pairs] == [f"run_{k}" for k in range(30)]
    spooled.close()


def test_an_empty_spool_yields_nothing() -> None:
    spooled = SpooledSummaries()
    assert len(spooled) == 0 and list(spooled) == []
    spooled.close()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(), st.floats(allow_nan=False,
       allow_infinity=False), st.booleans(), st.none()), max_size=4), max_size=30), st.integers(0, 400))
def test_any_summaries_round_trip(summaries: list[dict[str, Any]], memory: int) -> None:
    old = spool.IN_MEMORY
    spool.IN_MEMORY = memory
    try:
        spooled = SpooledSummaries()
        for s in summaries:
            spooled.append(s)
        assert list(spooled) == summaries
        assert [spooled[k] for k in range(len(summaries))] == summaries
        spooled.close()
    finally:
        spool.IN_MEMORY = old


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=20), st.integers(0, 700), st.integers(1, 120), st.data())
def test_a_byte_spool_gives_back_what_was_appended(pieces: list[bytes], memory: int, read: int, data: st.DataObject) -> None:
    old = spool.IN_MEMORY, spool.READ_BYTES
    spool.IN_MEMORY, spool.READ_BYTES = memory, read
    try:
        spooled = ByteSpool()
        starts = [spooled.append(p) for p in pieces]
        whole = b"".join(pieces)
        assert spooled.size == len(whole) and b"".join(spooled.chunks()) == whole
        assert all(len(c) <= read for c in spooled.chunks())
        for start, piece in zip(starts, pieces, strict=True):
            assert spooled.read(start, start + len(piece)) == piece
        a = data.draw(st.integers(0, len(whole)))
        b = data.draw(st.integers(a, len(whole)))
        assert spooled.read(a, b) == whole[a:b]  # across the memory and the file
        spooled.close()
    finally:
        spool.IN_MEMORY, spool.READ_BYTES = old


def long_run(k: int, calls: int) -> dict[str, Any]:
    return {"$record": "summary", "runId": f"long_{k}", "big": 2**70,
            "toolCalls": {"total": calls, "calls": [{"toolName": f"t{c % 7}", "seq": c, "durationMs": c / 3,
                                                     "callId": f"c{c}\ud83d" if c == 5 else f"c{c}"}
                                                    for c in range(calls)]},
            "timeline": {"events": 2 * calls, "calls": [{"index": 2 * c, "startMs": None if c == 9 else c}
                                                        for c in range(calls)]}}


@pytest.mark.usefixtures("small_memory")
@pytest.mark.parametrize("many", [spool.CALLS_A_PIECE + 1, 3 * spool.CALLS_A_PIECE])
def test_a_long_runs_calls_come_back_a_piece_at_a_time(many: int) -> None:
    spooled = SpooledSummaries()
    wanted = [summary(0), long_run(1, many), summary(2), long_run(3, 2 * many), summary(4)]
    for s in wanted:
        spooled.append(s)
    assert len(spooled) == 5 and list(spooled) == wanted and [spooled[k] for k in range(5)] == wanted
    assert spooled[-1] == wanted[-1] and spooled[1:4:2] == wanted[1:4:2]
    back = spooled[3]["toolCalls"]["calls"]
    assert isinstance(back, spool.SpooledCalls)  # (decoded as used, not all at once)
    assert isinstance(spooled[3]["timeline"]["calls"], spool.SpooledCalls)  # (as is where the timeline has each)
    listed = wanted[3]["toolCalls"]["calls"]
    assert len(back) == len(listed) and bool(back)
    for cut in [slice(None, 20), slice(spool.CALLS_A_PIECE - 3, spool.CALLS_A_PIECE + 4), slice(-5, None),
                slice(3, 3), slice(10, 5000, 97), slice(None, None, -1)]:
        assert back[cut] == listed[cut], cut
    for at in [0, 5, spool.CALLS_A_PIECE, -1, len(listed) - 1]:
        assert back[at] == listed[at]
    with pytest.raises(IndexError):
        back[len(listed)]
    first, second = iter(back), iter(spooled[1]["toolCalls"]["calls"])
    assert [next(first) for _ in range(3)] == listed[:3] and next(second) == wanted[1]["toolCalls"]["calls"][0]
    spooled.close()
