"""Helpers for heal tests: heal a list of records in-process and look at the result."""

from __future__ import annotations

from typing import Any

import orjson

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.inline import InlineResult, run_inline
from replay.pipeline.engine.stage import Transform
from replay.stages.heal import rule_stages
from replay.stages.heal_summary import SummarizeRepairs
from replay.stages.parse import ParseLines


def lines_of(records: list[dict[str, Any]]) -> list[bytes]:
    return [orjson.dumps(r) for r in records]


def heal_lines(lines: list[bytes], rules: dict | None = None, *, summary: bool = True, source: str = "run.jsonl",
               batch_size: int = 3, tail_open: bool = False, then: tuple[Transform, ...] = ()) -> InlineResult:
    """Heal raw JSONL lines exactly as `replay heal` chains the stages, cut into small batches (``then``: stages after)."""
    batches = []
    offset = 0
    for start in range(0, max(len(lines), 1), batch_size):
        part = lines[start:start + batch_size]
        if not part:
            continue
        b = Batch.from_lines(part, source)
        b.lines = list(range(start + 1, start + 1 + len(part)))
        b.offsets = [offset + o for o in b.offsets]  # (positions in the whole input, not in the batch)
        offset += sum(len(line) + 1 for line in part)
        b.tail_open = tail_open and start + batch_size >= len(lines)
        batches.append(b)
    stages = [ParseLines(torn_tail="repair"), *rule_stages(rules)]
    feeds = {}
    if summary:
        stages.append(SummarizeRepairs())
        feeds = {len(stages) - 1: ("repairs",)}
    stages += then  # (stages after the rules: heal's check, say)
    return run_inline(stages, batches, feed_side=feeds)


def heal_records(records: list[dict[str, Any]], rules: dict | None = None, **kw: Any) -> InlineResult:
    return heal_lines(lines_of(records), rules, **kw)


def events_of(result: InlineResult) -> list[dict[str, Any]]:
    return [r for r in result.records if "$record" not in r]


def ev(seq: Any, etype: str, run: str | None = "r1", ts: Any = "2026-03-01T12:00:00.000Z", payload: Any = None,
       **extra: Any) -> dict[str, Any]:
    """A canonical event for tests (pass run=None / ts=None to leave the field out)."""
    out: dict[str, Any] = {"seq": seq}
    if ts is not None:
        out["timestamp"] = ts
    out["type"] = etype
    if run is not None:
        out["runId"] = run
    out["payload"] = {} if payload is None else payload
    out.update(extra)
    return out


# Runs a, b, d, with before b a run of d heal drops whole (a lone orphaned result): its heal record comes at the end,
# after the other d.
SAME_ID_DROPPED = b"".join(
    b'{"seq":%d,"timestamp":"2026-03-01T12:00:0%dZ","type":"%s","runId":"%s","payload":%s}\n' % row for row in [
        (1, 0, b"run_started", b"a", b"{}"), (2, 1, b"run_completed", b"a", b"{}"),
        (1, 2, b"tool_completed", b"d", b'{"callId":"gone"}'),  # a run of d heal drops whole
        (1, 3, b"run_started", b"b", b"{}"), (2, 4, b"run_completed", b"b", b"{}"),
        (1, 5, b"run_started", b"d", b"{}"), (2, 6, b"run_completed", b"d", b"{}")])  # another d, clean, last


def batches_as_read(lines: list[bytes], size: int, source: str = "j.jsonl") -> list[Batch]:
    """The lines as read's line cutter sends them: batches of ``size`` lines, each with its block of lines."""
    whole = Batch.from_lines(lines, source)
    batches = []
    for a in range(0, len(lines), size):
        part = whole.select(range(a, min(a + size, len(lines))))
        part.joined = b"\n".join(part.raws)  # type: ignore[arg-type]
        batches.append(part)
    return batches
