"""The steps and turns of mapped events: a tool result is in its call's step and turn, whatever comes between, and a
sidechain's records (a sub-agent's) begin neither a step nor a turn of the run's own."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.model.dialects.numbering import Numbering

# an event: (kind, message id or call id, sidechain?)
_EVENTS = st.lists(st.tuples(st.sampled_from(["user_message", "assistant_message", "tool_called", "tool_completed",
                                               "tool_failed", "system"]),
                             st.sampled_from(["m1", "m2", "m3", "c1", "c2", "c3", None]), st.booleans()), max_size=40)


def _payload(kind: str, key: str | None, side: bool) -> dict:
    payload: dict = {"sidechain": True} if side else {}
    if key is not None:
        payload["messageId" if kind == "assistant_message" else "callId"] = key
    return payload


@settings(max_examples=300, deadline=None)
@given(events=_EVENTS)
def test_a_result_is_numbered_with_its_call_and_a_sidechain_begins_nothing(events):
    numbering, calls = Numbering(), {}
    for kind, key, side in events:
        before = numbering.step, numbering.turn
        got = numbering.of(kind, _payload(kind, key, side))
        now = numbering.step, numbering.turn
        if side or kind not in ("user_message", "assistant_message", "tool_called"):
            assert now == before  # nothing of the run's own begins (a step begins at model output: ``modelcalls``)
        if kind in ("tool_completed", "tool_failed") and key in calls:
            assert got == calls[key]  # the step and turn of the call it answers
        else:
            assert got == now
        if kind == "tool_called" and key is not None:
            calls[key] = got


def test_a_task_calls_result_after_its_sub_agents_model_calls_is_in_the_task_calls_step():
    numbering = Numbering()
    said = [numbering.of(kind, payload) for kind, payload in [
        ("user_message", {}), ("assistant_message", {"messageId": "m1"}), ("tool_called", {"callId": "task"}),
        ("user_message", {"sidechain": True}), ("assistant_message", {"messageId": "m2", "sidechain": True}),
        ("tool_called", {"callId": "grep", "sidechain": True}), ("tool_completed", {"callId": "grep", "sidechain": True}),
        ("assistant_message", {"messageId": "m3", "sidechain": True}), ("tool_completed", {"callId": "task"}),
        ("assistant_message", {"messageId": "m4"})]]
    assert said == [(0, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1), (2, 1)]
