"""A report reads a tool result's outcome a batch at a time (``outcome.went_wrong_each``): it agrees with the one rule,
``outcome.went_wrong``, on every tool_completed, in both of the report's ways of reading a run (a batch at a time, and
event by event with a timeline)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.pipeline.model.outcome import went_wrong, went_wrong_each
from replay.pipeline.report.model import RunTally

_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([10**30, 1.0, 0.0, "1", "0", ""]),
                    st.sampled_from(["ok", "fail", "FAILED", "error", "passed", "no", "Failure x"]))
_OUTCOME_KEYS = ("exit_code", "exitCode", "verification", "verdict", "verification_type")
_VERIFICATIONS = st.one_of(_VALUES, st.dictionaries(st.sampled_from(["type", "verdict", "result", "status", "ok",
                                                                     "passed", "kind"]), _VALUES, max_size=3))


def _fields(keys: tuple[str, ...]) -> Any:
    return st.dictionaries(st.sampled_from(keys), st.one_of(_VALUES, _VERIFICATIONS), max_size=2)


@st.composite
def tool_results(draw: Any) -> dict[str, Any]:
    """A tool_completed: mostly the usual (an output object with an int exitCode, or none), at times with an exit
    code or a verdict anywhere the rule reads one, an output that is no object, or a payload that is none."""
    output = draw(st.one_of(
        st.builds(dict, exitCode=st.integers(-2, 2)), st.just({}), st.just({"stdout": "x"}), _VALUES,
        st.dictionaries(st.sampled_from(["exit_code", "exitCode", "stdout"]), _VALUES, max_size=2)))
    payload: Any = {"callId": "c", "output": output} | draw(_fields(_OUTCOME_KEYS))
    if draw(st.integers(0, 20)) == 0:
        payload = draw(_VALUES)
    return {"seq": 1, "type": "tool_completed", "runId": "r", "payload": payload} | draw(_fields(_OUTCOME_KEYS))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(tool_results(), max_size=12))
def test_outcomes_at_once_are_the_rule_on_each(records: list[dict[str, Any]]) -> None:
    assert went_wrong_each(records) == [went_wrong(record) for record in records]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(tool_results(), min_size=1, max_size=10), st.booleans())
def test_report_counts_a_call_failed_by_the_rule(results: list[dict[str, Any]], timeline: bool) -> None:
    """Each result answers its own call: the call's status, and the failures the run lists, are the rule's."""
    events: list[dict[str, Any]] = []
    for n, result in enumerate(results):
        call = f"c{n}"
        events.append({"seq": 2 * n, "type": "tool_called", "runId": "r", "timestamp": "2026-01-01T00:00:00Z",
                       "payload": {"callId": call, "toolName": "t"}})
        payload = result["payload"] if isinstance(result["payload"], dict) else {}  # (each answers its call by id)
        events.append(result | {"seq": 2 * n + 1, "timestamp": "2026-01-01T00:00:01Z", "payload": payload | {"callId": call}})
    tally = RunTally(run_id="r", timeline=timeline)
    tally.add_events(events)
    summary = tally.summary()
    wrong = [went_wrong(result) for result in events[1::2]]
    assert [call["status"] for call in summary["toolCalls"]["calls"]] == ["error" if bad else "ok" for bad in wrong]
    assert sum(1 for e in summary["errors"] if e["kind"] == "tool_completed") == sum(wrong)
