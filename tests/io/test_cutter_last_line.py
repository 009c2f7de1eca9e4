"""LineCutter owns where an input's last line without a newline goes: fed read by read (``may_end`` on a read short of
its chunk), a whole last line comes in the batch it would have come in with a newline after it, a torn one alone,
after the rest; what it holds back for that comes with the next feed, or ``release``."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine.batch import Batch
from replay.pipeline.io.journals import LineCutter


def batches(data: bytes, chunk: int, batch_events: int) -> list[list[tuple[bytes, int]]]:
    """``data`` fed in reads of ``chunk`` bytes, as read feeds a file: each batch's lines (text, number)."""
    cutter = LineCutter("j.jsonl", batch_events=batch_events)
    items = []
    for at in range(0, len(data), chunk):
        part = data[at:at + chunk]
        items += cutter.feed(part, may_end=len(part) < chunk)
    items += cutter.finish()
    return [list(zip(b.raws, b.lines, strict=True)) for b in items if isinstance(b, Batch)]


ROWS = st.lists(st.builds(lambda n, pad: orjson.dumps({"seq": n, "pad": "x" * pad}), st.integers(0, 99),
                          st.integers(0, 30)), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(ROWS, st.integers(1, 120), st.integers(1, 5))
def test_a_whole_last_line_without_a_newline_is_batched_as_with_one(rows: list[bytes], chunk: int, batch_events: int):
    data = b"\n".join(rows)
    assert batches(data, chunk, batch_events) == batches(data + b"\n", chunk, batch_events)


@settings(max_examples=100, deadline=None)
@given(ROWS, st.integers(1, 120), st.integers(2, 5))
def test_a_torn_last_line_comes_alone_after_the_others(rows: list[bytes], chunk: int, batch_events: int):
    data = b"\n".join(rows) + b'\n{"seq": 1, "pa'
    got = batches(data, chunk, batch_events)
    assert got[-1] == [(b'{"seq": 1, "pa', len(rows) + 1)]
    assert got[:-1] == batches(data[:data.rfind(b"\n") + 1], chunk, batch_events)


def test_what_is_held_comes_with_the_next_feed_or_on_release():
    cutter = LineCutter("j.jsonl")
    assert cutter.feed(b'{"a":1}\n{"b"', may_end=True) == [] and cutter.holding
    first, second = cutter.feed(b':2}\n')  # (the input went on: the held batch first, then the new one)
    assert (first.raws, second.raws) == ([b'{"a":1}'], [b'{"b":2}']) and not cutter.holding
    assert cutter.feed(b'{"c":3}\n{', may_end=True) == []
    (held,) = cutter.release()
    assert not cutter.holding
    assert held.raws == [b'{"c":3}'] and [b.raws for b in cutter.finish()] == [[b"{"]]  # (released: not joined)
