"""The canonical event and the run record: field names, reserved types, and small helpers.

A canonical event: ``seq`` (int >= 1), ``timestamp`` (RFC 3339), ``type``, ``runId``, ``payload``
(object), optionally ``step``, ``turn``, ``parentId`` and ``synthetic`` (true when a stage invented
it). A run record (``{"$record": "run", ...}``) precedes a run's events in a stream and carries the
run-level facts; see ``schemas/stream.schema.json``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypeGuard

from replay.pipeline.model.records import RECORD_KEY, RUN_RECORD

EVENT_FIELDS = ("seq", "timestamp", "type", "runId", "payload")
RUN_STARTED = "run_started"
RUN_COMPLETED = "run_completed"
RUN_FAILED = "run_failed"
TERMINAL_TYPES = frozenset({RUN_COMPLETED, RUN_FAILED})
# An error the agent recorded that neither failed a tool call nor ended the run (an API error it retried, a rate limit):
# payload {code, message}. A report lists it among the run's errors; the run's status is still what its end says.
ERROR = "error"
TOOL_UNANSWERED = "tool_unanswered"  # heal's mark of a call that got no result (pair_tool_calls): none is invented
# Every canonical event type: the ones schemas/event.schema.json names, and those replay itself gives a meaning
# (``error``, ``tool_unanswered``). No alias may rename one away (``healing.renamed_canonical``).
CANONICAL_TYPES = frozenset({RUN_STARTED, "user_message", "assistant_message", "tool_called", "tool_completed",
                             "tool_failed", RUN_COMPLETED, RUN_FAILED, ERROR, TOOL_UNANSWERED})
TERMINAL_OF_STATUS = {"ok": RUN_COMPLETED, "error": RUN_FAILED}  # the end a run record's status says a run had


def terminal_of_status(status: Any) -> str | None:
    """The terminal event a run record's ``status`` says its run ended with (``TERMINAL_OF_STATUS``), or None (another
    status, or none: a value of any JSON type, an unhashable one too)."""
    return TERMINAL_OF_STATUS.get(status) if status.__class__ is str else None
# The payload of the run_failed heal ends a run with when nothing tells how the run ended (no terminal event, no run
# record's status): a journal that just stops. It closes the run, and says no more than the raw journal did:
# a report counts such a run's status as unknown, as it counts the raw journal's (``ends_unknown``).
UNKNOWN_END = {"status": "unknown", "reason": "journal ended without a terminal event"}


def ends_unknown(kind: Any, payload: Any, synthetic: Any) -> bool:
    """Is this event (its type, payload and ``synthetic`` flag) the run_failed heal inserted where nothing told how the
    run ended (``UNKNOWN_END``), not a failure the run reported?"""
    return kind == RUN_FAILED and synthetic is True and payload.__class__ is dict and \
        payload.get("status") == UNKNOWN_END["status"]
ASSISTANT_MESSAGE = "assistant_message"
EPOCH = "1970-01-01T00:00:00.000Z"  # the time of last resort, when a run tells no time at all

# Run-level facts carried by a run record, in the order they are written.
RUN_FACTS = (
    "runId", "artifactId", "timestamp", "prompt", "query", "status", "response", "error",
    "usage", "framework", "sources", "context", "toolCalls", "timings",
)

_RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)", re.ASCII
)


# The same shape with the field ranges spelled out, so most values are judged by one regex match;
# only the calendar (Feb 30?) is left to ``date.fromisoformat``, cached per day.
_RFC3339_STRICT = re.compile(
    r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])[Tt](?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?"
    r"(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)",
    re.ASCII,
)
# A leap second: second 60, where the time in UTC is 23:59 (RFC 3339 5.7; on any day, as JSON Schema's date-time reads
# it: leap seconds are announced months ahead, a table of them would go stale). The strict pattern above leaves it
# out, so the usual timestamp is judged by that one match alone; this one is tried only when that match fails.
_LEAP_STRICT = re.compile(
    r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])[Tt](?:[01]\d|2[0-3]):[0-5]\d:60(?:\.\d+)?"
    r"(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)",
    re.ASCII,
)
_MINUTE = timedelta(minutes=1)
_DAYS: dict[str, bool] = {}
_STR = {str}


def event_type(event: dict[str, Any]) -> str | None:
    """An event's ``type`` when it is a string (anything else, a list or an object too, is no type)."""
    etype = event.get("type")
    return etype if etype.__class__ is str else None


def is_timestamp(value: Any) -> TypeGuard[str]:
    """True when ``value`` is an RFC 3339 date-time as JSON Schema's ``date-time`` reads it (``T``
    between date and time, ASCII digits, a leap second at 23:59:60 UTC): the one definition heal, validate and
    the schemas share."""
    if value.__class__ is not str:
        return False
    if _RFC3339_STRICT.fullmatch(value) is None:
        return _LEAP_STRICT.fullmatch(value) is not None and leap_second(value) is not None
    day = value[:10]
    known = _DAYS.get(day)
    if known is None:
        try:
            date.fromisoformat(day)
            known = True
        except ValueError:
            known = False
        if len(_DAYS) > 100_000:
            _DAYS.clear()
        _DAYS[day] = known
    return known


MOMENTS_KEPT = 16_384  # timestamps remembered (a few MiB at most)
_MOMENTS: dict[str, datetime | None] = {}  # the last timestamps parsed: a report reads each one two or three times
_UNSEEN: Any = object()  # what ``_MOMENTS`` gives for a timestamp not parsed yet


def parse_timestamp(value: Any) -> datetime | None:
    """The instant an RFC 3339 timestamp names, or None when ``value`` is not one."""
    if value.__class__ is not str:
        return None
    moment = _MOMENTS.get(value, _UNSEEN)  # (not ``[value]``: a KeyError raised and caught costs more than the parse)
    if moment is not _UNSEEN:
        return moment  # type: ignore[no-any-return]
    if len(_MOMENTS) >= MOMENTS_KEPT:
        _MOMENTS.clear()
    moment = _MOMENTS[value] = _parse_timestamp(value)
    return moment


def _parse_timestamp(value: str) -> datetime | None:
    if len(value) in (20, 24) and value[-1] == "Z" and value[10] == "T" and value[19] in ".Z" \
            and value.isascii() and value[4] == "-" and value[7] == "-" and value[13] == ":" and value[16] == ":" \
            and value[:4].isdigit():
        # The form replay writes (2026-03-01T12:00:00.000Z): fromisoformat alone decides, no regex.
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            leap = leap_second(value)
            return None if leap is None else leap[0]
    if not _RFC3339.fullmatch(value):
        return None
    text = value.replace("z", "Z").replace("Z", "+00:00")
    if text[10] in "t ":
        text = text[:10] + "T" + text[11:]
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        leap = leap_second(text)
        return None if leap is None else _placed(leap[0])
    return _placed(moment) if moment.tzinfo else moment.replace(tzinfo=UTC)


def _placed(moment: datetime) -> datetime | None:
    """``moment`` (with a zone), or None when in UTC it falls outside the years 1..9999 a datetime holds
    (``0001-01-01T00:30:00+01:00`` is valid RFC 3339, and in UTC a time of year 0): replay cannot place, order or write
    it in UTC, so it counts as a time it cannot read (report leaves it out, heal converts nothing to it)."""
    try:
        moment.astimezone(UTC)
    except OverflowError:
        return None
    return moment


def leap_second(text: str) -> tuple[datetime, int] | None:
    """A leap second read: the instant it counts as, 23:59:59.999999 UTC of its day (in ``text``'s own offset), and
    its ``leap_rank``; None unless ``text`` is a date-time with second 60 where the time in UTC is 23:59 (RFC 3339's
    only leap second), written YYYY-MM-DD?HH:MM:60 and the rest as ``datetime.fromisoformat`` reads it (no zone: UTC).

    A leap second sorts after every instant of the second before it and before the next day's 00:00:00 (by its own
    fraction among leap seconds: ``leap_rank``); for arithmetic it is the last microsecond of its day, so it stays in
    its day, a duration from it to the next day's first instant is never 0, and order and arithmetic never disagree
    (a span inside the leap second counts as 0)."""
    if len(text) < 19 or text[17:19] != "60" or text[13] != ":" or text[16] != ":":
        return None
    try:
        moment = datetime.fromisoformat(f"{text[:17]}59{text[19:]}".replace("z", "Z"))
    except ValueError:
        return None
    offset = moment.utcoffset() or timedelta(0)
    if offset % _MINUTE or (moment.hour * 60 + moment.minute - offset // _MINUTE) % 1440 != 23 * 60 + 59:
        return None
    return moment.replace(microsecond=999_999), 1 + moment.microsecond


def read_iso(text: str) -> tuple[datetime, int] | None:
    """A date-time as ``datetime.fromisoformat`` reads it (no zone: UTC), a leap second too (``leap_second``): its
    instant and ``leap_rank`` (``format_timestamp`` takes both); None when ``text`` is none, or names a time replay
    cannot place in UTC (``_placed``)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        leap = leap_second(text)
        if leap is None:
            return None
        moment, rank = leap
    else:
        rank = 0
    placed = _placed(moment) if moment.tzinfo else moment.replace(tzinfo=UTC)
    return None if placed is None else (placed, rank)


def leap_rank(value: Any) -> int:
    """Where a timestamp ``parse_timestamp`` reads sorts among those it reads as the same instant: 0, or for a leap
    second 1 + its microseconds (23:59:60.5 is 500001: after 23:59:59.999999, after 23:59:60.1)."""
    if value.__class__ is not str or value[17:19] != "60":
        return 0
    leap = leap_second(value)
    return 0 if leap is None else leap[1]


def same_shape_utc(stamps: Sequence[Any], joined: str | None = None) -> bool:
    """Strings of one length in UTC (``T`` at 10, ``Z`` last): then text order is time order, no parsing needed
    (whether each is a real date is still for ``parse_timestamp`` to say). ``joined``: the stamps joined by newlines,
    when the caller has it."""
    first = stamps[0]
    if first.__class__ is not str or len(first) < 20 or set(map(type, stamps)) != _STR or set(map(len, stamps)) != {len(first)}:
        return False
    n, step = len(stamps), len(first) + 1
    text = "\n".join(stamps) if joined is None else joined  # a column at a time: every 11th character, then every last
    return text[10::step] == "T" * n and text[step - 2::step] == "Z" * n


# An epoch number's unit, told by its size (``from_epoch``): each bound is the year 5138 in the unit before it and 1973
# in its own, so the times of the last fifty years and the next three thousand read the same in any of them.
EPOCH_UNITS = ((1e11, 1), (1e14, 1_000), (1e17, 1_000_000))
_NANOSECONDS = 1_000_000_000


def from_epoch(value: int | float) -> str | None:
    """The RFC 3339 form of an epoch number (seconds, milliseconds, microseconds or nanoseconds since 1970, told
    apart by size: ``EPOCH_UNITS``), or None when it names no time a datetime holds. An int is divided exactly (a
    nanosecond count has more digits than a double holds); the result has milliseconds, as replay writes times."""
    size = abs(value)
    unit = next((unit for bound, unit in EPOCH_UNITS if size < bound), _NANOSECONDS)
    try:
        if value.__class__ is int:
            seconds, rest = divmod(value, unit)
            moment = datetime.fromtimestamp(seconds, UTC) + timedelta(microseconds=rest * 1_000_000 // unit)
        else:
            moment = datetime.fromtimestamp(value / unit, UTC)
        return format_timestamp(moment)
    except (OverflowError, OSError, ValueError):
        return None


def format_timestamp(moment: datetime, leap: int = 0) -> str:
    """RFC 3339 in UTC with milliseconds, the form replay writes. ``leap``: the ``leap_rank`` of the timestamp
    ``moment`` was read from; a leap second's (``moment`` is 23:59:59.999999 UTC) is written as second 60."""
    text = moment.astimezone(UTC).isoformat(timespec="milliseconds")[:-6] + "Z"  # "+00:00" -> "Z"; years 0001..9999
    return text if not leap else f"{text[:17]}60.{(leap - 1) // 1000:03}Z"


def written_timestamp(moment: datetime, stamp: Any) -> str:
    """``format_timestamp(moment, leap_rank(stamp))`` for the ``moment`` that ``parse_timestamp`` read from ``stamp``:
    ``stamp`` itself when it is written so already (in UTC with milliseconds, no leap second: ``parse_timestamp``
    reads that form by ``datetime.fromisoformat`` alone, which takes digits only, so it writes the same text back)."""
    if stamp.__class__ is str and len(stamp) == 24 and stamp[19] == "." and stamp[23] == "Z" and stamp[10] == "T" \
            and stamp[17:19] != "60" and stamp.isascii():
        return stamp  # type: ignore[no-any-return]
    return format_timestamp(moment, leap_rank(stamp))


def with_field(event: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A copy of ``event`` with ``key`` set; a canonical field that was missing goes in its canonical place."""
    if key in event or key not in EVENT_FIELDS:
        return {**event, key: value}
    out: dict[str, Any] = {}
    for name in EVENT_FIELDS:
        if name == key:
            out[key] = value
        elif name in event:
            out[name] = event[name]
    out.update((k, v) for k, v in event.items() if k not in out)
    return out


def run_record(**facts: Any) -> dict[str, Any]:
    """A run record with the given facts (None values left out), in the canonical key order."""
    record: dict[str, Any] = {RECORD_KEY: RUN_RECORD}
    for key in RUN_FACTS:
        if facts.get(key) is not None:
            record[key] = facts[key]
    for key, value in facts.items():
        if key not in record and value is not None:
            record[key] = value
    return record


# An artifact's keys that are no fact of its run: its envelope, its events, and heal's counts (a heal record's).
ARTIFACT_ONLY = frozenset({"schemaVersion", "artifactType", "id", "events", "heal"})
# A run record's mark, from an artifact that gave its run no runId (``run_record_from_artifact``): where its runId came
# from ("its events", "its id") and the artifact's own (missing or empty) runId, {"from", "original"?}; `fill_run_id`
# logs that repair from it and takes it out, in a pipe (`replay read a.json | replay heal`) as when healing the file.
RUN_ID_FILLED = "$runIdFilled"
NOT_RUN_FACTS = ARTIFACT_ONLY | {"runId", "artifactId", RUN_ID_FILLED}  # (and an artifact's run id and id: a run record's own)


def named_by_events(artifact: dict[str, Any]) -> str | None:
    """The runId of an artifact's first event that names one (an artifact without its own ``runId`` is that run's)."""
    events = artifact.get("events") or []
    return next((e["runId"] for e in events if isinstance(e, dict) and isinstance(e.get("runId"), str)), None)


def run_id_origin(artifact: dict[str, Any]) -> tuple[Any, str | None]:
    """The runId of an artifact's run record and where it came from: its own runId (None), else the first event's
    that names one ("its events"), else its id ("its id"; None when it has none either)."""
    if own := artifact.get("runId"):
        return own, None
    if named := named_by_events(artifact):
        return named, "its events"
    ident = artifact.get("id")
    return ident, "its id" if ident else None


def run_record_from_artifact(artifact: dict[str, Any]) -> dict[str, Any]:
    """The run record of a replay artifact (``schemas/replay-artifact.schema.json``): its facts, and its other keys
    (a dialect's ``model``, ``$origin``, ...) after them, as ``artifacts.artifact_from_run`` keeps a run record's."""
    run_id, origin = run_id_origin(artifact)
    facts = {key: value for key, value in artifact.items() if key not in NOT_RUN_FACTS}  # (run_record orders them)
    record = run_record(runId=run_id, artifactId=artifact.get("id"), **facts)
    if origin is not None:  # its runId came from its events or its id: marked, for `fill_run_id` to log
        record[RUN_ID_FILLED] = {"from": origin, **({"original": artifact["runId"]} if "runId" in artifact else {})}
    return record
