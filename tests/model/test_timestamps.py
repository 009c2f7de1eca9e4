"""Timestamps: what parse_timestamp reads (each string parsed once, then remembered) and what format_timestamp writes;
leap seconds."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

import pytest

from replay.pipeline.model import events
from replay.pipeline.model.events import format_timestamp, is_timestamp, leap_rank, parse_timestamp, read_iso, written_timestamp


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


# leap seconds (RFC 3339: second 60, only where the time in UTC is 23:59) -----------------------------------------
LEAPS = ["2016-12-31T23:59:60Z", "2016-12-31T23:59:60.500Z", "2016-12-31t23:59:60.5z", "2016-12-31T23:59:60-00:00",
         "2016-12-31T18:59:60.123-05:00", "2017-01-01T00:59:60+01:00", "2017-01-01T05:29:60.25+05:30",
         "2026-03-01T23:59:60.000Z"]  # (any day: leap seconds are announced months ahead, no table decides)
NO_LEAPS = ["2016-12-31T23:58:60Z", "2016-12-31T12:00:60Z", "2016-12-31T22:59:60Z", "2016-12-31T00:00:60.5Z",
            "2016-12-31T23:59:61Z", "2016-12-31T23:59:60+01:00", "2016-12-31T18:59:60-04:00", "2016-02-30T23:59:60Z",
            "2016-12-31T23:59:60", "2016-12-31T23:59:60.Z", "2016-12-31T23:59:60+05:30:15"]


@pytest.mark.parametrize("text", LEAPS)
def test_a_leap_second_is_a_timestamp_and_counts_as_the_last_microsecond_of_its_utc_day(text: str) -> None:
    assert is_timestamp(text)
    moment = parse_timestamp(text)
    assert moment is not None and moment.astimezone(UTC).time() == time(23, 59, 59, 999_999)
    assert parse_timestamp(text) == moment  # (and remembered as such)


@pytest.mark.parametrize("text", NO_LEAPS)
def test_second_60_anywhere_else_is_no_timestamp(text: str) -> None:
    assert not is_timestamp(text)
    assert parse_timestamp(text) is None


def test_parse_timestamp_reads_a_leap_second_with_a_space_as_it_reads_any_time() -> None:
    assert parse_timestamp("2016-12-31 23:59:60.5Z") == parse_timestamp("2016-12-31T23:59:60.5Z") is not None
    assert not is_timestamp("2016-12-31 23:59:60.5Z")  # (as 2016-12-31 23:59:59Z is none)


def test_a_leap_second_sorts_after_second_59_by_its_fraction_and_before_the_next_day() -> None:
    texts = ["2016-12-31T23:59:59.999999Z", "2016-12-31T23:59:60Z", "2016-12-31T23:59:60.1Z",
             "2016-12-31T18:59:60.5-05:00", "2016-12-31T23:59:60.999999Z", "2017-01-01T00:00:00Z"]
    keys = [(parse_timestamp(t), leap_rank(t)) for t in texts]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert [leap_rank(t) for t in texts] == [0, 1, 100_001, 500_001, 1_000_000, 0]
    assert leap_rank(None) == leap_rank(17) == leap_rank("") == 0


def test_a_duration_over_a_leap_second_counts_it_as_no_time() -> None:
    def span(a: str, b: str) -> timedelta:
        start, end = parse_timestamp(a), parse_timestamp(b)
        assert start is not None and end is not None
        return end - start

    assert span("2016-12-31T23:59:59.500Z", "2016-12-31T23:59:60.250Z") == timedelta(microseconds=499_999)
    assert span("2016-12-31T23:59:60.250Z", "2016-12-31T23:59:60.750Z") == timedelta(0)
    assert span("2016-12-31T23:59:60.750Z", "2017-01-01T00:00:00.500Z") == timedelta(microseconds=500_001)
    assert span("2016-12-31T23:59:59.500Z", "2017-01-01T00:00:00.500Z") == timedelta(seconds=1)  # (UTC: 2 s passed)


@pytest.mark.parametrize(("text", "written"), [
    ("2016-12-31T23:59:60.500Z", "2016-12-31T23:59:60.500Z"),
    ("2016-12-31T23:59:60Z", "2016-12-31T23:59:60.000Z"),
    ("2016-12-31T23:59:60.9999Z", "2016-12-31T23:59:60.999Z"),  # cut to milliseconds, never rounded up
    ("2017-01-01T00:59:60.25+01:00", "2016-12-31T23:59:60.250Z"),
])
def test_format_timestamp_writes_a_leap_second_as_second_60_given_its_rank(text: str, written: str) -> None:
    moment = parse_timestamp(text)
    assert moment is not None
    assert format_timestamp(moment, leap_rank(text)) == written
    assert format_timestamp(moment) == written[:17] + "59.999Z"  # (its instant, without the rank)
    assert read_iso(text.replace("Z", "+00:00")) == (moment, leap_rank(text))


@pytest.mark.parametrize("text", ["0001-01-01T00:30:00+01:00", "9999-12-31T23:30:00-01:00", "0001-01-01T00:59:60+01:00"])
def test_a_valid_timestamp_outside_the_years_a_datetime_holds_in_utc_is_no_instant_replay_can_place(text: str) -> None:
    """Valid RFC 3339 (a year 0001 or 9999 in its own zone), but year 0 or 10000 in UTC: parse_timestamp and read_iso
    give None (a time replay cannot order or write), where converting it to UTC raised OverflowError."""
    assert is_timestamp(text)
    assert parse_timestamp(text) is None
    assert read_iso(text) is None
    assert read_iso(text.replace("T", " ")) is None
    assert parse_timestamp("0001-01-01T01:30:00+01:00") == datetime(1, 1, 1, 0, 30, tzinfo=UTC)  # (in range: read)


@pytest.mark.parametrize("text", [
    "2026-03-01T12:00:00.291Z", "2026-03-01T12:00:00Z", "2026-03-01T12:00:00.9999Z", "2026-03-01t14:00:00.5+02:00",
    "2026-03-01T12:00:00.291z", "2026-03-01 12:00:00.291Z", "2016-12-31T23:59:60.500Z", "2016-12-31T23:59:60Z",
    "2017-01-01T00:59:60.250+01:00", "0999-03-01T12:00:00.000Z", "9999-12-31T23:59:59.999Z",
    "2026-03-01T12:00:00.000-00:00", "2026-03-01T12:00:00.00+00:00",
])
def test_written_timestamp_is_format_timestamp_of_what_the_stamp_reads(text: str) -> None:
    moment = parse_timestamp(text)
    assert moment is not None
    assert written_timestamp(moment, text) == format_timestamp(moment, leap_rank(text))


def test_written_timestamp_gives_back_no_stamp_that_format_timestamp_would_write_otherwise() -> None:
    """Stamps of the written shape with odd characters in any place: the stamp itself only when it is what
    format_timestamp writes."""
    base = "2016-12-31T23:59:59.999Z"
    odd = "0123456789 +-_.:,aTZz\u0663\uff11"
    for place in range(len(base)):
        for ch in odd:
            text = base[:place] + ch + base[place + 1:]
            moment = parse_timestamp(text)
            if moment is not None:
                assert written_timestamp(moment, text) == format_timestamp(moment, leap_rank(text)), text
