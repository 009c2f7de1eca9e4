"""A tool's calls whose durations add up past what a double holds: every report format still writes its report."""

from __future__ import annotations

import orjson
import pytest
from conftest import run_replay

from replay.pipeline.report.model import format_ms


def _journal() -> bytes:
    events = [{"seq": 1, "type": "run_started", "payload": {}}]
    for k in (1, 2):  # two calls of one tool, each near the largest double: their sum is past it
        events.append({"seq": len(events) + 1, "type": "tool_called", "payload": {"toolName": "a", "callId": str(k)}})
        events.append({"seq": len(events) + 1, "type": "tool_completed", "payload": {"callId": str(k), "durationMs": 1e308}})
    events.append({"seq": len(events) + 1, "type": "run_completed", "payload": {}})
    stamp = "2026-01-01T00:00:0{}.000Z"
    return b"".join(orjson.dumps({**e, "timestamp": stamp.format(min(i, 9)), "runId": "r"}) + b"\n"
                    for i, e in enumerate(events))


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "junit", "html"])
def test_a_tools_total_past_a_double_is_reported_in_every_format(fmt: str) -> None:
    done = run_replay("report", "--format", fmt, "-", input=_journal())
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout


def test_a_duration_past_a_double_is_written_in_whole_hours() -> None:
    hours = 10**306  # (hours that no double holds in milliseconds: 3.6e314)
    assert format_ms(hours * 3_600_000 + 125_499) == "1" + "0" * 306 + "h 02m"  # (125.499 s: 2 minutes)
    assert format_ms(hours * 3_600_000 + 3_599_500) == "1" + "0" * 305 + "1h 00m"  # (rounded up to the next hour)
    assert format_ms(3_600_000) == "1h 00m"  # (a duration a double holds: as before)
