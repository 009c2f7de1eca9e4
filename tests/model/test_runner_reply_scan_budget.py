"""Reading a runner's reply stays linear in stdout's size: every ``_document_at`` scan (a line that does not parse and
opens ``{`` or ``[``: is it the start of an event printed over several lines?) reads from a shared byte budget. Lines
that each open one more nested value and never close (``[1,1,...,`` on each of many lines) had each scan read on to
stdout's end: 150 such lines of 10 KB took 1.3 s, 300 lines 6.7 s. The work is counted as the bytes given to the
decoder, not timed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine import exactjson
from replay.pipeline.model import runner_protocol
from replay.pipeline.model.runner_protocol import read_reply

EVENT = b'{"type": "run_started", "payload": {}}\n'
OUTPUT = b'{"status": "ok", "response": "r", "events": []}\n'
# "a few times stdout's size": the scans' budget (8 times, and 16 KiB), then stdout read whole, line by line, once
# as the output object from one line on, and the first of the lines it spans (``_spans_lines``)
TIMES, FLOOR = 16, 32 << 10


@contextmanager
def decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The byte counts of every text given to the decoder (the real one) while in the block."""
    sizes: list[int] = []
    real = exactjson.loads

    def counting(data: Any) -> Any:
        sizes.append(len(data))
        return real(data)

    with monkeypatch.context() as patched:
        patched.setattr(exactjson, "loads", counting)
        yield sizes


def opening_lines(n: int, width: int = 1000) -> bytes:
    """``n`` lines that each open an array and never close it, after an event line: no line is JSON on its own."""
    return EVENT + b"".join(b"[" + b"1," * (width // 2) + b"\n" for _ in range(n))


def work(stdout: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[int, runner_protocol.Reply]:
    with decoded(monkeypatch) as sizes:
        reply = read_reply(stdout)
    return sum(sizes), reply


def bound(stdout: bytes) -> int:
    return TIMES * len(stdout) + FLOOR


def test_lines_that_keep_opening_nested_values_are_read_in_linear_work(monkeypatch: pytest.MonkeyPatch):
    small, large = opening_lines(100), opening_lines(400)
    small_work, small_reply = work(small, monkeypatch)
    large_work, large_reply = work(large, monkeypatch)
    for reply in (small_reply, large_reply):  # (read as the output object cut off, from the first such line: as ever)
        assert reply.problem is not None and reply.problem["code"] == "E_RUNNER_INVALID_JSON", reply.problem
        assert "begins on line 2" in reply.problem["message"] and len(reply.events) == 1, reply.problem
    assert small_work <= bound(small), (small_work, len(small))
    assert large_work <= bound(large), (large_work, len(large))
    # four times the lines, about four times the work (without the budget: sixteen times)
    assert large_work * len(small) <= 1.5 * small_work * len(large), (small_work, large_work)


def test_events_printed_over_several_lines_are_still_each_left_out_within_the_budget(monkeypatch: pytest.MonkeyPatch):
    pretty = b"".join(json.dumps({"type": "tool_called", "seq": k, "payload": {"args": [k, k]}}, indent=2).encode()
                      + b"\n" for k in range(300))
    stdout = EVENT + pretty + OUTPUT
    spent, reply = work(stdout, monkeypatch)
    assert spent <= bound(stdout), (spent, len(stdout))
    assert reply.output is not None and len(reply.events) == 1
    assert len(reply.left_out) == 300 and all("printed over several lines" in p["message"] for p in reply.left_out)


opening = st.one_of(st.integers(1, 400).map(lambda n: b"[" + b"1," * n + b"\n"),
                   st.integers(1, 400).map(lambda n: b'{"a": [' + b"1," * n + b"\n"))
lines = st.one_of(
    st.just(EVENT), opening, st.tuples(opening, st.integers(2, 80)).map(lambda run: run[0] * run[1]),
    st.integers(0, 20).map(lambda n: json.dumps({"type": "x", "payload": list(range(n))}, indent=2).encode() + b"\n"),
    st.just(b"[\n"), st.just(b"{\n"), st.just(b"]\n"), st.just(b"}\n"),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(lines, max_size=60), st.booleans())
def test_reading_any_reply_is_linear_in_its_size(body, ends):
    """Whatever the lines (events, lines that open values and never close, closings, events over several lines),
    the decoder is given at most a few times stdout's bytes."""
    stdout = EVENT + b"".join(body) + (OUTPUT if ends else b"")
    with pytest.MonkeyPatch.context() as monkeypatch:
        spent, _ = work(stdout, monkeypatch)
    assert spent <= bound(stdout), (spent, len(stdout))
