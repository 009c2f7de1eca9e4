"""A tool's calls whose durations add up past what a double holds: every report format still writes its report."""

from __future__ import annotations

import math
import re

import orjson
import pytest
from conftest import run_replay

from replay.pipeline.report import render_html
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


def _svg_numbers(page: str) -> list[tuple[str, float]]:
    """Every coordinate and length of the timelines' SVG elements (attribute, value), and each number of a path."""
    found: list[tuple[str, float]] = []
    for svg in re.findall(r"<svg class=\"timeline\".*?</svg>", page, re.S):
        for name, value in re.findall(r'\s(x|x1|x2|y|y1|y2|width|height)="([^"]*)"', svg):
            found.append((name, float(value)))
        for path in re.findall(r'\sd="([^"]*)"', svg):
            found += [("d", float(number)) for number in re.findall(r"-?(?:inf|nan|\d+(?:\.\d+)?)", path)]
    return found


@pytest.mark.parametrize("measured", [1e308, 5000])
def test_a_call_measured_past_the_run_s_end_is_drawn_to_the_axis_end(measured: float) -> None:
    """A tool result's durationMs longer than what is left of the run (1e308, a double: ``x="inf"`` in the SVG, axis
    labels of 300-digit hours; or 5 s in a run of 1 s): the axis is the run's time (0 to 1s), the bar goes from the
    call's start to the axis end, every coordinate finite and on the page."""
    events = [{"type": "run_started", "payload": {}, "timestamp": "2026-03-01T12:00:00.000Z"},
              {"type": "tool_called", "payload": {"callId": "1", "toolName": "t"}, "timestamp": "2026-03-01T12:00:00.000Z"},
              {"type": "tool_completed" if measured > 5000 else "tool_failed",  # (failed: a marker drawn as a path)
               "payload": {"callId": "1", "durationMs": measured},
               "timestamp": "2026-03-01T12:00:00.500Z"},
              {"type": "run_completed", "payload": {}, "timestamp": "2026-03-01T12:00:01.000Z"}]
    journal = b"".join(orjson.dumps({"seq": k, "runId": "r", **e}) + b"\n" for k, e in enumerate(events, start=1))
    done = run_replay("report", "--format", "html", "-", input=journal)
    assert done.returncode == 0, done.stderr.decode()
    page = done.stdout.decode()
    numbers = _svg_numbers(page)
    assert numbers and all(math.isfinite(v) and -20 <= v <= render_html.WIDTH for _, v in numbers), numbers
    labels = re.findall(r'<text class="axis-label"[^>]*>([^<]*)</text>', page)
    assert labels == ["0", "200ms", "400ms", "600ms", "800ms", "1s"]
    [bar] = re.findall(r'<rect class="call-bar[^"]*"[^>]*x="([^"]*)"[^>]*width="([^"]*)"', page)
    start, width = map(float, bar)
    assert start == render_html.GUTTER  # (the call began with the run)
    assert start + width == render_html.GUTTER + render_html.PLOT


def test_the_calls_of_the_run_past_a_double_are_drawn_on_the_page() -> None:
    done = run_replay("report", "--format", "html", "-", input=_journal())
    numbers = _svg_numbers(done.stdout.decode())
    assert numbers and all(math.isfinite(v) and -20 <= v <= render_html.WIDTH for _, v in numbers), numbers
