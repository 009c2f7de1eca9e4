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
    numbering, calls, made, still_open = Numbering(), {}, {}, set()  # (made: each call id's payload)
    for kind, key, side in events:
        payload = _payload(kind, key, side)
        before = numbering.step, numbering.turn
        got = numbering.of(kind, payload)
        now = numbering.step, numbering.turn
        # a call of an id still open, or answered with the same payload, is that call written again
        again = kind == "tool_called" and key in made and (key in still_open or made[key] == payload)
        if side or again or kind not in ("user_message", "assistant_message", "tool_called"):
            assert now == before  # nothing of the run's own begins (a step begins at model output: ``modelcalls``)
        if (kind in ("tool_completed", "tool_failed") and key in calls) or again:
            assert got == calls[key]  # the step and turn of the call it answers, or that it is written again
        else:
            assert got == now
        if kind == "tool_called" and key is not None and not again:
            calls[key], made[key] = got, payload
            still_open.add(key)
        elif kind in ("tool_completed", "tool_failed"):
            still_open.discard(key)


def test_a_task_calls_result_after_its_sub_agents_model_calls_is_in_the_task_calls_step():
    numbering = Numbering()
    said = [numbering.of(kind, payload) for kind, payload in [
        ("user_message", {}), ("assistant_message", {"messageId": "m1"}), ("tool_called", {"callId": "task"}),
        ("user_message", {"sidechain": True}), ("assistant_message", {"messageId": "m2", "sidechain": True}),
        ("tool_called", {"callId": "grep", "sidechain": True}), ("tool_completed", {"callId": "grep", "sidechain": True}),
        ("assistant_message", {"messageId": "m3", "sidechain": True}), ("tool_completed", {"callId": "task"}),
        ("assistant_message", {"messageId": "m4"})]]
    assert said == [(0, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1), (2, 1)]


@settings(max_examples=300, deadline=None)
@given(events=_EVENTS, data=st.data())
def test_a_call_written_again_anywhere_later_changes_no_step_and_is_in_its_calls_step(events, data):
    """A ``tool_called`` of an id made already, with the same payload (a resumed session's log repeats records):
    ``OpenCalls.written_again``, one call, as report and the OTLP export count it. Its copy, put anywhere after it,
    is numbered as that call and begins no step or turn, nor moves one on (after a result it is no model output)."""
    calls = [i for i, (kind, key, _side) in enumerate(events) if kind == "tool_called" and key is not None]
    if not calls:
        return
    at = data.draw(st.sampled_from(calls))
    where = data.draw(st.integers(at + 1, len(events)))
    copied = [*events[:where], events[at], *events[where:]]

    def numbered(stream):
        numbering = Numbering()
        return [numbering.of(kind, _payload(kind, key, side)) for kind, key, side in stream]

    before, after = numbered(events), numbered(copied)
    assert after[:where] + after[where + 1:] == before
    assert after[where] == before[at]


def test_a_codex_call_written_again_after_its_result_begins_no_step():
    """Found by a Codex rollout with a function_call line written again after its output: the copy began step 2 (the
    model asked again after a result), the next call step 3; the export, reading the copy as that call, made two
    ``chat`` spans."""
    numbering = Numbering()
    call = {"callId": "c1", "toolName": "exec_command", "args": {"cmd": "ls"}}
    said = [numbering.of(kind, payload) for kind, payload in [
        ("user_message", {}), ("tool_called", dict(call)), ("tool_completed", {"callId": "c1"}),
        ("tool_called", dict(call)), ("tool_completed", {"callId": "c1"}),  # (both written again)
        ("tool_called", {"callId": "c2", "toolName": "apply_patch"}), ("tool_completed", {"callId": "c2"}),
        ("tool_called", {"callId": "c1", "toolName": "exec_command", "args": {"cmd": "pwd"}}),  # (the id used again)
    ]]
    assert said == [(0, 1), (1, 1), (1, 1), (1, 1), (1, 1), (2, 1), (2, 1), (3, 1)]
