"""Business rules: each type passes and fails on the recording, effect counts are inconclusive without a complete ledger."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from incident_support import REFUND_EXPORT

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.exactjson import typed_equal
from replay.pipeline.model.incident.export import load_export
from replay.pipeline.model.incident.rules import FAIL, INCONCLUSIVE, PASS, evaluate, overall

BASE = load_export(str(REFUND_EXPORT))


def judge(rule: dict[str, Any], *, complete: bool = True, events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    incident = copy.deepcopy(BASE)
    incident["effects_complete"] = complete
    incident["assertions"] = [{"id": "r", **rule}]
    if events is not None:
        incident["events"] = events
    return evaluate(incident)["rules"][0]


REFUND = {"type": "effect_count", "effect_type": "refund"}


@pytest.mark.parametrize(("rule", "status"), [
    ({**REFUND, "max": 1}, FAIL),
    ({**REFUND, "max": 2}, PASS),
    ({**REFUND, "min": 3, "max": 5}, FAIL),
    ({**REFUND, "group_by": "order_id", "min": 1, "max": 1}, FAIL),
    ({**REFUND, "group_by": "refund_id", "min": 1, "max": 1}, PASS),
    ({**REFUND, "group_by": "order_id", "max": 2}, PASS),
    ({"type": "effect_count", "effect_type": "chargeback", "max": 0}, PASS),
    ({"type": "effect_count", "effect_type": "chargeback", "min": 1, "max": 1}, FAIL),
    ({"type": "effect_count", "effect_type": "chargeback", "group_by": "order_id", "min": 1, "max": 1}, FAIL),
])
def test_effect_count(rule: dict[str, Any], status: str) -> None:
    assert judge(rule)["status"] == status


def test_effect_count_reports_the_groups_outside_the_range() -> None:
    result = judge({**REFUND, "group_by": "order_id", "min": 1, "max": 1})
    assert result["observed"] == {"effects": 2, "groups": {'"order-1042"': 2}}
    assert '"order-1042" x2' in result["message"]


@pytest.mark.parametrize(("values", "groups"), [
    ([7, "7"], {"7": 1, '"7"': 1}),
    ([True, "true"], {"true": 1, '"true"': 1}),
    ([None, "null"], {"null": 1, '"null"': 1}),
    ([2, 2.0], {"2": 1, "2.0": 1}),  # (as output_equals compares: 1 is not 1.0)
    ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], {'{"a":1,"b":2}': 2}),
    (["(missing)", "x"], {'"(missing)"': 1, '"x"': 1}),
])
def test_effect_count_groups_values_exactly_type_included(values: list[Any], groups: dict[str, int]) -> None:
    """A group was a string as it is and any other value its JSON text: ``7`` and ``"7"``, ``true`` and ``"true"`` were
    one group (a double refund passed a max of 1 per batch), while ``2`` and ``2.0`` were two. Each group is now its
    value's JSON text, type included as the rules schema says, which the message names too."""
    events = [e for e in copy.deepcopy(BASE["events"]) if e["type"] != "business_effect"]
    effects = [{"type": "business_effect", "call_id": "c3", "effect": {"type": "refund", "batch": v}} for v in values]
    result = judge({**REFUND, "group_by": "batch", "max": 1}, events=events[:-1] + effects + events[-1:])
    assert result["observed"]["groups"] == groups
    assert result["status"] == (PASS if len(groups) == len(values) else FAIL)
    if result["status"] == FAIL:
        assert result["message"].endswith(f"{next(iter(groups))} x2")


@pytest.mark.parametrize(("group_by", "max_", "missing"), [("ordr_id", 1, 2), ("ordr_id", 2, 2), ("refund_id", 1, 1)])
def test_effects_without_the_group_by_field_make_the_count_per_group_unknown(group_by: str, max_: int, missing: int) -> None:
    """A group_by field no counted effect has (a name misspelt) counted them all in one group of none: a false failure
    with two refunds, a false pass with one; a field some effects lack did the same for those."""
    events = copy.deepcopy(BASE["events"])
    if group_by == "refund_id":
        del next(e for e in events if e["type"] == "business_effect")["effect"]["refund_id"]
    result = judge({**REFUND, "group_by": group_by, "max": max_}, events=events)
    assert result["status"] == INCONCLUSIVE and result["observed"]["ungrouped"] == missing
    assert f"{missing} of 2 'refund' effect(s) have no {group_by!r} field" in result["message"]


@pytest.mark.parametrize("rule", [{**REFUND, "max": 1}, {**REFUND, "max": 2}, {**REFUND, "group_by": "order_id", "max": 1}])
def test_effect_counts_are_inconclusive_without_a_complete_ledger(rule: dict[str, Any]) -> None:
    result = judge(rule, complete=False)
    assert result["status"] == INCONCLUSIVE
    assert "effects_complete" in result["message"]


def test_other_rules_do_not_depend_on_the_ledger() -> None:
    assert judge({"type": "max_tool_errors", "max": 1}, complete=False)["status"] == PASS


@pytest.mark.parametrize(("path", "value", "status"), [
    ("/status", "refunded", PASS),
    ("/status", "pending", FAIL),
    ("/amount_cents", 4900, PASS),
    ("/amount_cents", 4900.0, FAIL),  # typed: 4900 is not 4900.0
    ("/amount_cents", "4900", FAIL),
    ("/missing", None, FAIL),
    ("", {"status": "refunded", "order_id": "order-1042", "refund_id": "re_1042_b", "amount_cents": 4900, "currency": "USD"}, PASS),
])
def test_output_equals(path: str, value: Any, status: str) -> None:
    assert judge({"type": "output_equals", "path": path, "value": value})["status"] == status


def test_output_equals_tells_true_from_one() -> None:
    events = copy.deepcopy(BASE["events"])
    events[-1]["output"]["flag"] = True
    assert judge({"type": "output_equals", "path": "/flag", "value": 1}, events=events)["status"] == FAIL
    assert judge({"type": "output_equals", "path": "/flag", "value": True}, events=events)["status"] == PASS


@pytest.mark.parametrize(("written", "rule", "status"), [
    (b"1e400", b"1e400", PASS),
    (b"1e400", b"2e400", FAIL),  # both read as infinity
    (b"3.14159265358979323846", b"3.14159265358979323846", PASS),
    (b"3.14159265358979323846", b"3.14159265358979323847", FAIL),  # both read as 3.141592653589793
])
def test_output_equals_compares_numbers_a_double_does_not_hold_as_written(written: bytes, rule: bytes, status: str) -> None:
    events = copy.deepcopy(BASE["events"])
    events[-1]["output"]["n"] = exactjson.loads(written)
    assert judge({"type": "output_equals", "path": "/n", "value": exactjson.loads(rule)}, events=events)["status"] == status


def test_output_equals_compares_values_as_deep_as_json_is_read() -> None:
    """typed_equal (output_equals, and replay's argument and output matching) walks 1024 levels without recursing."""
    def chain(levels: int, leaf: Any) -> Any:
        for _ in range(levels):
            leaf = [leaf] if levels % 2 else {"a": leaf}
        return leaf

    events = copy.deepcopy(BASE["events"])
    events[-1]["output"]["deep"] = chain(1020, 1)
    assert judge({"type": "output_equals", "path": "/deep", "value": chain(1020, 1)}, events=events)["status"] == PASS
    assert judge({"type": "output_equals", "path": "/deep", "value": chain(1020, 1.0)}, events=events)["status"] == FAIL
    assert typed_equal(chain(1021, [1, True]), chain(1021, [1, True])) and not typed_equal(chain(1021, [1]), chain(1021, [True]))


@pytest.mark.parametrize(("fields", "status"), [(["status", "refund_id"], PASS), (["status", "reason"], FAIL)])
def test_required_output(fields: list[str], status: str) -> None:
    result = judge({"type": "required_output", "fields": fields})
    assert result["status"] == status
    assert result["observed"]["missing"] == [f for f in fields if f == "reason"]


def test_output_rules_fail_when_the_task_ended_in_an_error() -> None:
    events = [{"type": "task_error", "message": "gave up"}]
    assert judge({"type": "required_output", "fields": ["status"]}, events=events)["status"] == FAIL
    assert judge({"type": "output_equals", "path": "/status", "value": "x"}, events=events)["status"] == FAIL


@pytest.mark.parametrize(("limit", "status"), [(0, FAIL), (1, PASS), (5, PASS)])
def test_max_tool_errors(limit: int, status: str) -> None:
    result = judge({"type": "max_tool_errors", "max": limit})
    assert result["status"] == status and result["observed"] == {"tool_errors": 1}


def test_the_overall_status_and_counts() -> None:
    assert overall([PASS, PASS]) == PASS
    assert overall([PASS, INCONCLUSIVE]) == INCONCLUSIVE
    assert overall([INCONCLUSIVE, FAIL]) == FAIL
    evaluation = evaluate({**BASE, "incident_id": "inc_1"})
    assert evaluation["status"] == FAIL
    assert evaluation["counts"] == {"pass": 3, "fail": 1, "inconclusive": 0}
    assert [r["id"] for r in evaluation["rules"]] == [r["id"] for r in BASE["assertions"]]
