"""Matching an agent's messages against the recording: the cursor, and every divergence kind (candidate values withheld)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from incident_support import REFUND_EXPORT

from replay.pipeline.model.incident.export import load_export
from replay.pipeline.model.incident.matching import Cursor, judge, recorded_calls

INCIDENT = load_export(str(REFUND_EXPORT))
ORDER = {"order_id": "order-1042"}
REFUND_ARGS = {"order_id": "order-1042", "amount_cents": 4900, "currency": "USD"}
OUTPUT = INCIDENT["events"][-1]["output"]


def call(name: str, args: dict[str, Any], cid: str = "z") -> dict[str, Any]:
    return {"type": "tool_call", "call_id": cid, "name": name, "args": args}


LOOKUP, REFUND = call("lookup_order", ORDER), call("issue_refund", REFUND_ARGS)
FINAL = {"type": "final_output", "output": OUTPUT}


def test_repeated_identical_requests_consume_separate_recorded_responses() -> None:
    cursor = Cursor(recorded_calls(INCIDENT))
    first = cursor.answer("lookup_order", ORDER)
    timeout = cursor.answer("issue_refund", REFUND_ARGS)
    success = cursor.answer("issue_refund", REFUND_ARGS)
    assert first is not None and first.ok
    assert timeout is not None and not timeout.ok and timeout.error["code"] == "TIMEOUT"
    assert success is not None and success.ok and success.result["refund_id"] == "re_1042_b"
    assert cursor.answer("issue_refund", REFUND_ARGS) is None  # nothing recorded is left
    assert cursor.answered == ["c1", "c2", "c3"]


def test_call_ids_may_differ_but_names_and_args_must_match_exactly() -> None:
    cursor = Cursor(recorded_calls(INCIDENT))
    assert cursor.answer("lookup_order", {"order_id": "order-1042", "extra": 1}) is None
    assert cursor.answer("lookup_order", ORDER) is not None
    assert cursor.answer("issue_refund", {**REFUND_ARGS, "amount_cents": "4900"}) is None  # a string is no number
    assert cursor.answer("issue_refund", {**REFUND_ARGS, "amount_cents": 4900.5}) is None
    assert cursor.answer("issue_refund", {**REFUND_ARGS, "amount_cents": 4900.0}) is not None  # one JSON number


def test_the_recorded_path_matches() -> None:
    verdict = judge(INCIDENT, [LOOKUP, REFUND, REFUND, FINAL])
    assert verdict["status"] == "matched" and verdict["divergence"] is None
    assert [s.get("call_id") for s in verdict["steps"]] == ["c1", "c2", "c3", None]
    assert [s.get("ok") for s in verdict["steps"][:3]] == [True, False, True]


SECRET = "CANDIDATE-VALUE-7f1c"


@pytest.mark.parametrize(("messages", "kind", "step"), [
    ([LOOKUP, REFUND, REFUND, REFUND], "extra_call", 4),
    ([LOOKUP, REFUND, FINAL], "missing_call", 3),
    ([REFUND], "reordered_call", 1),
    ([call("lookup_order", {"order_id": SECRET})], "changed_call", 1),
    ([LOOKUP, call("refund_payment", {"ref": SECRET})], "changed_call", 2),
    ([LOOKUP, REFUND, REFUND, {"type": "task_error", "message": SECRET}], "changed_terminal", 4),
    ([LOOKUP, REFUND, REFUND, {"type": "final_output", "output": {**OUTPUT, "status": SECRET, SECRET: 1}}], "changed_final_output", 4),
    # what the agent sent after its terminal message (in the grace it has to exit) was never looked at
    ([LOOKUP, REFUND, REFUND, FINAL, call("issue_refund", {"ref": SECRET})], "extra_call", 5),
    ([LOOKUP, REFUND, REFUND, FINAL, {"type": "task_error", "message": SECRET}], "changed_terminal", 5),
])
def test_every_divergence_kind_without_candidate_values(messages: list[dict[str, Any]], kind: str, step: int) -> None:
    verdict = judge(INCIDENT, messages)
    assert verdict["status"] == "diverged"
    assert verdict["divergence"]["kind"] == kind and verdict["divergence"]["step"] == step
    assert SECRET.encode() not in orjson.dumps(verdict)


def test_a_changed_call_says_which_recorded_arguments_differ() -> None:
    verdict = judge(INCIDENT, [LOOKUP, call("issue_refund", {**REFUND_ARGS, "amount_cents": 9800, "note": SECRET})])
    received = verdict["divergence"]["received"]
    assert received == {"withheld": True, "same_name": True, "differing": ["amount_cents"], "extra": 1, "args_object": True}
    assert verdict["divergence"]["expected"] == {"call_id": "c2", "name": "issue_refund", "args": REFUND_ARGS}


def test_a_reordered_call_names_the_recorded_call_it_matches() -> None:
    verdict = judge(INCIDENT, [REFUND])
    assert verdict["divergence"]["received"] == {"matches_recorded_call": "c2"}
    assert verdict["divergence"]["expected"]["call_id"] == "c1"


def test_a_changed_final_output_lists_the_differing_recorded_fields() -> None:
    verdict = judge(INCIDENT, [LOOKUP, REFUND, REFUND, {"type": "final_output", "output": {**OUTPUT, "status": "pending"}}])
    assert verdict["divergence"]["received"] == {"withheld": True, "differing": ["status"], "extra": 0}
