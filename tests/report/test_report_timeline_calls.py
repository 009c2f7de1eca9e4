"""A run's summary holds each tool call once: the timeline places a call by the index of its first event (an int a
call, not a dict beside the call's own), and the calls are made from ``CallPairing``'s columns (``PackedColumn``
iterates as its ``tolist``)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.model.toolcalls import PackedColumn
from replay.pipeline.report.model import summarize_run


def _event(seq: int, kind: str, ts: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"seq": seq, "runId": "r", "type": kind, "timestamp": ts, "payload": payload}


def test_the_timeline_places_each_call_by_the_index_of_its_first_event() -> None:
    events = [
        _event(1, "user_message", "2026-01-01T00:00:00Z", {"role": "user"}),
        _event(2, "tool_called", "2026-01-01T00:00:01Z", {"callId": "a", "toolName": "bash"}),
        _event(3, "tool_called", "2026-01-01T00:00:02Z", {"callId": "b", "toolName": "grep"}),
        _event(4, "tool_completed", "2026-01-01T00:00:03Z", {"callId": "a"}),
        _event(5, "assistant_message", "2026-01-01T00:00:04Z", {"role": "assistant"}),
        _event(6, "tool_called", "2026-01-01T00:00:05Z", {"callId": "c", "toolName": "bash"}),
    ]
    summary = summarize_run(None, events)
    assert summary["timeline"]["calls"] == [1, 2, 5]
    calls = summary["toolCalls"]["calls"]
    assert [c["startMs"] for c in calls] == [1000, 2000, 5000]  # (where a call starts in time: its own startMs)
    assert [c.get("unfinished") for c in calls] == [None, True, True]
    assert [c["durationMs"] for c in calls] == [2000, 3000, 0]


_VALUES = st.one_of(st.integers(min_value=-(2 ** 70), max_value=2 ** 70), st.none(), st.text(max_size=3),
                    st.floats(allow_nan=False))


@settings(max_examples=200, deadline=None)
@given(st.lists(_VALUES))
def test_a_packed_column_iterates_as_its_list(values: list[Any]) -> None:
    column = PackedColumn()
    for value in values:
        column.append(value)
    assert list(column) == column.tolist() == values
