"""Healing healed output adds nothing when calls go unanswered, with call ids or without, of named tools or of none:
each ``tool_unanswered`` mark heal writes answers its own call when the run is read again (``pair_tool_calls``'s
order of marks and ``OpenCalls.close``), and a call gets a mark when, and only when, report leaves it unanswered."""

from __future__ import annotations

from typing import Any

from heal_support import events_of, heal_records
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.pipeline.model.toolcalls import CallPairing

NAMES = st.sampled_from([None, "", "bash", "read_file", "grep"])
CALL_IDS = st.sampled_from([None, None, "c1", "c2", "c3"])


@st.composite
def runs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A run of tool calls (some with an id, some of no tool) and results (some naming a call or a tool), ended."""
    events: list[dict[str, Any]] = [{"type": "run_started", "payload": {}},
                                    {"type": "assistant_message", "payload": {"role": "assistant", "content": []}}]
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["tool_called", "tool_called", "tool_completed"]))
        payload: dict[str, Any] = {}
        if (cid := draw(CALL_IDS)) is not None:
            payload["callId"] = cid
        if (name := draw(NAMES)) is not None:
            payload["toolName"] = name
        events.append({"type": kind, "payload": payload})
    events.append({"type": "run_completed", "payload": {}})
    return [{"seq": k, "timestamp": f"2026-03-01T12:00:{k:02d}.000Z", "runId": "r1", **e}
            for k, e in enumerate(events, 1)]


def _unanswered(events: list[dict[str, Any]]) -> list[int]:
    """The seq of each call report leaves unanswered (paired as report pairs them: ``CallPairing``)."""
    pairing = CallPairing()
    for event in events:
        if event["type"] == "tool_called":
            pairing.called(event["payload"], event["timestamp"], event["seq"])
        elif event["type"] == "tool_completed":
            pairing.result(True, event["payload"], event["timestamp"], event["seq"])
    return [call["seq"] for call in pairing.finish(None) if call.get("unfinished")]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_heal_of_healed_output_adds_nothing_and_every_open_call_gets_its_own_mark(run):
    once = events_of(heal_records(run, summary=False))
    twice = events_of(heal_records(once, summary=False))
    assert twice == once
    marks = [e for e in once if e["type"] == "tool_unanswered"]
    left_open = _unanswered([e for e in once if e["type"] != "tool_unanswered"])
    assert len(marks) == len(left_open)  # (a mark for each call with no result, and only for those)
