"""join_split_records' repairs are logged with their run: heal's log goes run by run, the same however the input was
cut into reads (found by a tester: a read's joins were logged before the repairs of every run in it)."""

from __future__ import annotations

import json
from typing import Any

import orjson
from heal_support import batches_as_read
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.pipeline.engine.inline import run_inline
from replay.stages.heal import rule_stages
from replay.stages.heal_summary import SummarizeRepairs
from replay.stages.join_split_records import JoinSplitRecords
from replay.stages.parse import ParseLines
from replay.stages.screen import ScreenRuns

TYPES = ["run_started", "user_message", "tool_called", "tool_completed", "assistant_message", "run_completed"]


def journal(runs: list[tuple[bool, bool, bool]]) -> list[bytes]:
    """A run for each (pretty-printed record, aliased type, no terminal event): six events, the fourth pretty-printed
    (a record across lines, which join_split_records joins), `user` for `user_message` (alias), the last left out
    (ensure_terminal)."""
    lines: list[bytes] = []
    for k, (split, aliased, endless) in enumerate(runs):
        for seq, kind in enumerate(TYPES[:-1] if endless else TYPES, 1):
            payload = {"callId": "c1", "output": "x\ny"} if kind.startswith("tool_") else {}
            event = {"seq": seq, "timestamp": f"2026-03-01T12:00:{seq:02}Z", "runId": f"run_{k:03}",
                     "type": "user" if aliased and kind == "user_message" else kind, "payload": payload}
            lines += json.dumps(event, indent=2).encode().split(b"\n") if split and seq == 4 else [orjson.dumps(event)]
    return lines


def heal_log(lines: list[bytes], size: int, fast: bool) -> list[dict[str, Any]]:
    """The heal log `replay heal --log` writes (in its order) from what heal runs, join_split_records on."""
    stages = [JoinSplitRecords(), ScreenRuns(fast=fast), ParseLines(torn_tail="repair"), *rule_stages(None),
              SummarizeRepairs()]
    return run_inline(stages, batches_as_read(lines, size), feed_side={len(stages) - 1: ("repairs",)}).side.get("repairs", [])


def run_by_run(log: list[dict[str, Any]]) -> bool:
    """Does ``log`` go run by run: each run's lines together, the runs in the order they come (ids run_000, ...)?"""
    ids = [entry["runId"] for entry in log]
    return ids == sorted(ids)


runs = st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()), min_size=1, max_size=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs, st.integers(1, 80), st.booleans())
def test_the_heal_log_goes_run_by_run_with_the_joins_however_the_reads_fell(shape, size, fast):
    lines = journal(shape)
    log = heal_log(lines, size, fast)
    assert log == heal_log(lines, len(lines), fast)  # one read of the whole input
    assert log == heal_log(lines, 1, not fast)  # a line a read, every run the slow way or not
    assert run_by_run(log), [(e["rule"], e["runId"]) for e in log]
    joins = [e["runId"] for e in log if e["rule"] == "join_split_records"]
    assert joins == [f"run_{k:03}" for k, (split, _, _) in enumerate(shape) if split]


def test_a_read_of_several_runs_logs_each_join_before_that_run_s_other_repairs_and_after_the_run_before():
    lines = journal([(True, True, False), (True, True, True)])
    assert [(e["rule"], e["runId"]) for e in heal_log(lines, len(lines), fast=True)] == [
        ("join_split_records", "run_000"), ("alias", "run_000"),
        ("join_split_records", "run_001"), ("alias", "run_001"), ("ensure_terminal", "run_001")]
