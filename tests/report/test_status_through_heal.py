"""A run's status in a report is the same before and after heal: heal ends every run, and where nothing told how a run
ended it says no more than the journal did (``unknown``), whatever else it repairs."""

from __future__ import annotations

from typing import Any

from heal_support import heal_records
from hypothesis import event, given, settings
from hypothesis import strategies as st
from test_report_model import summarize

from replay.pipeline.model.records import RECORD_KEY, SUMMARY_RECORD

_MIDDLE = ["user_message", "assistant_message", "tool_called", "tool_completed", "tool_failed", "reasoning"]


@st.composite
def runs(draw: Any) -> list[dict[str, Any]]:
    """Runs of canonical events (no alias heal would rename into a terminal type), each maybe with a run record of
    some status, maybe with a terminal event, with gaps and repeats in seq, some events without a time."""
    records: list[dict[str, Any]] = []
    for k in range(draw(st.integers(1, 4))):
        rid = f"r{k}"
        status = draw(st.sampled_from([None, "ok", "error", "weird"]))
        if status is not None or draw(st.booleans()):
            records.append({"$record": "run", "runId": rid, **({"status": status} if status else {})})
        kinds = draw(st.lists(st.sampled_from(_MIDDLE), max_size=6))
        if draw(st.booleans()):
            kinds = ["run_started", *kinds]
        end = draw(st.sampled_from([None, "run_completed", "run_failed"]))
        kinds += [end] if end else []
        for i, kind in enumerate(kinds):
            event = {"seq": draw(st.sampled_from([i + 1, i + 1, 1, 7])), "type": kind, "runId": rid,
                     "payload": {"callId": f"c{i // 2}", "toolName": "bash"} if kind.startswith("tool") else {}}
            if draw(st.integers(0, 5)):
                event["timestamp"] = f"2026-03-01T12:00:{i:02}.000Z"
            records.append(event)
    return records


def statuses(records: list[dict[str, Any]]) -> dict[Any, str]:
    summaries, _ = summarize([records], timeline=False)
    return {s["runId"]: s["status"] for s in summaries if s.get(RECORD_KEY) == SUMMARY_RECORD}


@settings(max_examples=150, deadline=None)
@given(runs())
def test_a_runs_status_is_what_it_was_before_heal(records: list[dict[str, Any]]) -> None:
    before = statuses(records)
    after = statuses(heal_records(records).records)
    assert after == {rid: before[rid] for rid in after}  # (a run heal drops whole, each event an orphan, is in neither)
    assert set(before.values()) <= {"ok", "error", "unknown"}
    event(f"statuses {sorted(set(before.values()))}")
