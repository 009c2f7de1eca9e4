"""A line `join_split_records` made of several keeps its join's log entry while a per-run stage holds it back
(``RunScoped``: ``hold``, ``take_out``/``put_back``, what ``close_run`` lets go), across batches too: the join is
logged once, at its line and with its run, whatever size the batches the input is read in (it was lost when the
stage let the line go in another batch than the one it took it from, or at the stream's end)."""

from __future__ import annotations

import json
from typing import Any

from dialect_support import batches_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.pipeline.engine.inline import run_inline
from replay.stages.cut_runs import CutRuns
from replay.stages.ensure_run_started import InsertRunStarted
from replay.stages.fill_run_id import FillRunId
from replay.stages.fix_timestamp import FixTimestamps
from replay.stages.join_split_records import JoinSplitRecords
from replay.stages.parse import ParseLines
from replay.stages.synthesize_assistant_message import SynthesizeAssistantMessage

SIZES = (1, 2, 3, 7, 4096)  # lines per batch read sends: one at a time, a few, all at once


def holding_stages() -> list[Any]:
    """A custom config's stages between ``parse`` (which hands the joins on) and heal's ``cut_runs`` (which logs them),
    each holding lines back: a run record that names no run (``fill_run_id``), events with no time yet
    (``fix_timestamp``), a run's first events while its run_started may come (``ensure_run_started``), a terminal event
    while its message is made (``synthesize_assistant_message``)."""
    return [JoinSplitRecords(), ParseLines(), FillRunId(), FixTimestamps(), InsertRunStarted(),
            SynthesizeAssistantMessage(), CutRuns()]


def joins_logged(data: bytes, size: int) -> list[tuple[Any, Any]]:
    """(line, runId: the joined record's own) of each join logged, the input read in batches of ``size`` lines."""
    result = run_inline(holding_stages(), batches_of(data, "j.jsonl", size))
    return sorted((e["line"], e.get("runId")) for e in result.side.get("repairs", []) if e["rule"] == "join_split_records")


@st.composite
def journals(draw: st.DrawFn) -> tuple[bytes, list[tuple[int, str | None]]]:
    """Runs whose records are some of them pretty-printed (joined again), that the stages hold lines of; and (first line,
    runId) of each record pretty-printed."""
    lines: list[str] = []
    joins: list[tuple[int, str | None]] = []

    def write(record: dict[str, Any]) -> None:
        if draw(st.booleans()):
            joins.append((len(lines) + 1, record.get("runId")))
            lines.extend(json.dumps(record, indent=2).splitlines())
        else:
            lines.append(json.dumps(record))

    for k in range(draw(st.integers(1, 3))):
        run = f"r{k}"
        if draw(st.booleans()):  # a run record naming no run (fill_run_id holds it), with a response (a message is made)
            write({"$record": "run", "response": "hi"})
        count = draw(st.integers(1, 5))
        kinds = ["run_started" if draw(st.booleans()) else "user_message", *["user_message"] * (count - 1)]
        if draw(st.booleans()):
            kinds[-1] = "run_completed"
        for seq, kind in enumerate(kinds, 1):
            event: dict[str, Any] = {"seq": seq, "runId": run, "type": kind, "payload": {}}
            if draw(st.booleans()):  # (else fix_timestamp holds it until the run's first time)
                event["timestamp"] = f"2026-03-01T12:00:{seq:02d}Z"
            write(event)
    return ("\n".join(lines) + "\n").encode(), joins


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(journals())
def test_each_join_is_logged_once_at_its_line_with_its_run_whatever_the_batch_size(journal):
    data, joins = journal
    for size in SIZES:
        assert joins_logged(data, size) == joins, f"batches of {size} lines"


def test_a_join_held_past_a_batch_and_one_held_to_the_stream_s_end_are_logged():
    """run a has no run_started: ensure_run_started holds its first event (joined, lines 1-7) while it looks for one; in
    batches of 2 lines it lets it go in a later batch. run b's last event has no time: fix_timestamp holds it (joined,
    lines 11-16) to the stream's end, where ``close_run`` lets it go."""
    a = [{"seq": 1, "timestamp": "2026-03-01T12:00:01Z", "runId": "a", "type": "user_message", "payload": {}},
         {"seq": 2, "timestamp": "2026-03-01T12:00:02Z", "runId": "a", "type": "user_message", "payload": {}},
         {"seq": 3, "timestamp": "2026-03-01T12:00:03Z", "runId": "a", "type": "run_completed", "payload": {}}]
    b = [{"seq": 1, "runId": "b", "type": "user_message", "payload": {}}]
    lines = [*json.dumps(a[0], indent=1).splitlines(), json.dumps(a[1]), json.dumps(a[2]),
             *json.dumps(b[0], indent=1).splitlines()]
    data = ("\n".join(lines) + "\n").encode()
    assert [joins_logged(data, size) for size in (2, 4096)] == [[(1, "a"), (10, "b")]] * 2
