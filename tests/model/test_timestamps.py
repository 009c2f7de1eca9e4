"""Timestamps: what parse_timestamp reads (each string parsed once, then remembered) and what format_timestamp writes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from replay.pipeline.model import events
from replay.pipeline.model.events import format_timestamp, parse_timestamp


@pytest.mark.parametrize(("text", "written"), [
    ("2026-03-01T12:00:00.291Z", "2026-03-01T12:00:00.291Z"),
    ("2026-03-01T12:00:00Z", "2026-03-01T12:00:00.000Z"),
    ("2026-03-01T12:00:00.9999Z", "2026-03-01T12:00:00.999Z"),  # cut to milliseconds, never rounded up
    ("2026-03-01t14:00:00.5+02:00", "2026-03-01T12:00:00.500Z"),
    ("0999-03-01T12:00:00.000Z", "0999-03-01T12:00:00.000Z"),  # four digits: strftime wrote "999-03-01"
])
def test_format_timestamp_writes_rfc3339_utc_with_milliseconds(text: str, written: str) -> None:
    moment = parse_timestamp(text)
    assert moment is not None
    assert format_timestamp(moment) == written


@pytest.mark.parametrize("text", ["2026-02-30T12:00:00Z", "2026-03-01T25:00:00Z", "2026-13-01T00:00:00.000Z", "", "now"])
def test_parse_timestamp_refuses_what_is_no_instant_also_the_second_time(text: str) -> None:
    assert parse_timestamp(text) is None
    assert parse_timestamp(text) is None  # remembered as refused, not as something else


def test_parse_timestamp_reads_non_strings_as_nothing() -> None:
    for value in (None, 1767225600, 17.5, ["2026-03-01T12:00:00Z"], {"t": 1}):
        assert parse_timestamp(value) is None


def test_the_memory_of_parsed_timestamps_stays_bounded() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    for k in range(events.MOMENTS_KEPT + 5000):
        text = format_timestamp(datetime.fromtimestamp(start + k, UTC))
        assert parse_timestamp(text) == datetime.fromtimestamp(start + k, UTC)
    assert len(events._MOMENTS) <= events.MOMENTS_KEPT
