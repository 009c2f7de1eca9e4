"""Tool calls paired from a run's events (the report's tool-call table and the artifact's toolCalls)."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

import pytest

from replay.pipeline.engine import exactjson
from replay.pipeline.model import toolcalls
from replay.pipeline.model.toolcalls import TOOL_NAME_KEYS, named_tool, pair_tool_calls


def ev(seq: int, kind: str, second: int, **payload: Any) -> dict[str, Any]:
    return {"seq": seq, "type": kind, "timestamp": f"2026-03-01T12:00:{second:02d}.000Z", "payload": payload}


def test_a_call_is_closed_by_the_result_with_its_id_and_its_measured_duration_wins():
    calls = pair_tool_calls([
        ev(1, "tool_called", 0, callId="a", toolName="bash"),
        ev(2, "tool_called", 1, callId="b", toolName="grep"),
        ev(3, "tool_completed", 5, callId="b", durationMs=250),
        ev(4, "tool_failed", 9, callId="a"),
    ])
    assert [(c["toolName"], c["status"], c["durationMs"], c["callId"]) for c in calls] == [
        ("bash", "error", 9000.0, "a"), ("grep", "ok", 250.0, "b")]


def test_without_ids_a_result_closes_the_oldest_open_call_of_its_tool():
    calls = pair_tool_calls([
        ev(1, "tool_called", 0, toolName="bash"),
        ev(2, "tool_called", 2, toolName="bash"),
        ev(3, "tool_completed", 3, toolName="bash"),
    ])
    assert [(c["status"], c["durationMs"], c.get("unfinished", False)) for c in calls] == [
        ("ok", 3000.0, False), ("error", 1000.0, True)]  # the second is still open at the run's last instant


def test_an_open_call_lasts_until_the_runs_latest_timestamp_not_its_last_in_stream_order():
    """As a report's summary says (an artifact's toolCalls come from here): a run whose last event is stamped before
    an earlier one ends at its latest instant; an open call lasts until then (9 s, not 4 s)."""
    calls = pair_tool_calls([
        ev(1, "tool_called", 1, callId="a", toolName="bash"),
        ev(2, "assistant_message", 10),
        ev(3, "run_completed", 5),
    ])
    assert [(c["durationMs"], c.get("unfinished")) for c in calls] == [(9000.0, True)]


def test_a_result_whose_id_no_call_has_is_paired_by_its_tool_name():
    calls = pair_tool_calls([
        ev(1, "tool_called", 0, toolName="bash"),
        ev(2, "tool_completed", 4, callId="zzz", toolName="bash"),
    ])
    assert [(c["toolName"], c["status"], c["durationMs"]) for c in calls] == [("bash", "ok", 4000.0)]


def test_a_result_without_its_call_is_counted_on_its_own():
    calls = pair_tool_calls([
        ev(1, "tool_completed", 1, callId="x", tool="read_file"),
        ev(2, "tool_failed", 2, callId="y"),
        ev(3, "tool_called", 3, callId="x", name="write_file", durationMs=-1),
    ])
    # a call after the result of its id is that result's (written before its call: heal moves it after it), of the
    # tool the call names; a result whose call never comes is counted on its own, after the calls
    assert [(c["toolName"], c["status"], c.get("callId"), c["seq"]) for c in calls] == [
        ("write_file", "ok", "x", 3), ("unknown", "error", None, 2)]
    assert "unfinished" not in calls[0] and calls[0]["durationMs"] == 0  # (from 12:00:03 to a result at 12:00:01)


def test_a_negative_or_boolean_duration_is_not_taken_as_measured():
    calls = pair_tool_calls([
        ev(1, "tool_called", 0, callId="a", toolName="t"), ev(2, "tool_completed", 2, callId="a", durationMs=-5),
        ev(3, "tool_called", 3, callId="b", toolName="t"), ev(4, "tool_completed", 4, callId="b", durationMs=True),
    ])
    assert [c["durationMs"] for c in calls] == [2000.0, 1000.0]


@pytest.mark.parametrize(("value", "measured"), [
    (250, 250.0), (0, 0.0), (2.5, 2.5), (-5, None), (-0.5, None), (True, None), (False, None), ("250", None), (None, None),
    (10**400, None), (float("inf"), None), (float("nan"), None), (2**64, float(2**64)), (IntEnum("N", "ONE").ONE, 1.0),
    (exactjson.loads("1e400"), None), (exactjson.loads("12.5"), 12.5),
])
def test_a_measured_duration_is_a_number_at_least_0_a_double_holds(value: Any, measured: float | None) -> None:
    got = toolcalls._measured(value)
    assert got == measured and (got is None or type(got) is float)


def test_the_tool_a_record_names_is_read_from_its_payload_first_then_from_its_top():
    assert named_tool({"tool": "top", "payload": {"toolName": "", "name": "grep"}}) == "grep"  # first non-empty text
    assert named_tool({"tool_name": "top", "payload": {"toolName": 5}}) == "top"
    assert named_tool({"tool": "", "tool_name": "top", "payload": "text"}) == "top"
    assert named_tool({"payload": {"tool_name": "x"}}) is None  # not a payload key unless asked for
    assert named_tool({"payload": {"tool_name": "x"}}, (*TOOL_NAME_KEYS, "tool_name")) == "x"


def test_as_written_the_first_key_present_is_the_tool_whatever_its_value():
    assert named_tool({"tool": "top", "payload": {"toolName": None, "tool": "grep"}}, as_written=True) is None
    assert named_tool({"payload": {"tool": 5}}, as_written=True) == 5
    assert named_tool({"tool_name": "", "payload": {"name": "grep"}}, ("toolName", "tool"), as_written=True) == ""
    assert named_tool({"payload": {}}, as_written=True) is None


def test_a_call_or_result_written_again_is_the_same_call_not_another():
    """A resumed Claude Code session's log repeats records: its tool call and result written twice were two calls, the
    second open to the run's end ("error (unfinished)"), where heal drops the repeat and finds one."""
    calls = pair_tool_calls([
        ev(1, "tool_called", 0, callId="a", toolName="Task"),
        ev(2, "tool_completed", 7, callId="a"),
        ev(3, "tool_called", 0, callId="a", toolName="Task"),
        ev(4, "tool_completed", 7, callId="a"),
        ev(5, "tool_called", 8, callId="b", toolName="bash"),
        ev(6, "tool_called", 8, callId="b", toolName="bash"),
        ev(7, "tool_failed", 9, callId="b"),
    ])
    assert [(c["toolName"], c["status"], c["durationMs"], c.get("unfinished", False)) for c in calls] == [
        ("Task", "ok", 7000.0, False), ("bash", "error", 1000.0, False)]


def test_a_call_of_an_answered_id_with_another_payload_is_a_new_call():
    """A call id used again after its call was answered, for another tool (or the same tool with other arguments), was
    read as the first call written again: the second call vanished and its failure counted against the first's tool."""
    calls = pair_tool_calls([
        ev(1, "tool_called", 0, callId="c1", toolName="a"),
        ev(2, "tool_completed", 1, callId="c1"),
        ev(3, "tool_called", 2, callId="c1", toolName="b"),
        ev(4, "tool_failed", 4, callId="c1"),
        ev(5, "tool_called", 5, callId="c1", toolName="b", args={"n": 1}),
        ev(6, "tool_called", 5, callId="c1", toolName="b", args={"n": 2}),  # (while c1 is open: written again)
        ev(7, "tool_completed", 6, callId="c1"),
        ev(8, "tool_called", 6, callId="c1", toolName="b", args={"n": 1}),  # (the same record again: one call)
        ev(9, "tool_completed", 6, callId="c1"),
    ])
    assert [(c["toolName"], c["status"], c["durationMs"]) for c in calls] == [
        ("a", "ok", 1000.0), ("b", "error", 2000.0), ("b", "ok", 1000.0)]


def test_a_payload_written_again_is_the_same_whatever_its_keys_order_and_values_of_other_types_are_not():
    assert toolcalls.call_print({"a": 1, "b": [1]}) == toolcalls.call_print({"b": [1], "a": 1})
    assert len({toolcalls.call_print({"a": v}) for v in (1, 1.0, True, "1")}) == 4
