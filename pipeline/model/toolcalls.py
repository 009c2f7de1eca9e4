"""Tool calls of a run, paired from its events: name, status, duration.

Conventions read from event payloads (first match wins): the tool's name in ``toolName``, ``tool``
or ``name`` (a whole record may name it at its top instead, in ``tool`` or ``tool_name``: ``named_tool``);
the call's id in ``callId``, ``toolCallId`` or ``id``; a measured ``durationMs``.
A ``tool_called`` is closed by the next ``tool_completed`` / ``tool_failed`` with the same call id,
or, without ids, with the same tool name (first in, first out). A result failed when it is a ``tool_failed``, or a
``tool_completed`` that says it went wrong (a non-zero exit code, a failing verdict: ``outcome.went_wrong``, the
rule ``replay walk`` shows ``[failed]`` by): ``result_failed``, read by every report and export. Unclosed calls report status
``error`` and the time until the run's latest instant (its latest timestamp, not the last one in stream order).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from replay.pipeline.model.events import event_type, parse_timestamp
from replay.pipeline.model.outcome import went_wrong

CALLED = frozenset({"tool_called"})
COMPLETED = frozenset({"tool_completed"})
FAILED = frozenset({"tool_failed"})
TOOL_UNANSWERED = "tool_unanswered"  # heal's mark of a call that got no result (pair_tool_calls): none is invented
TOOL_NAME_KEYS = ("toolName", "tool", "name")  # in a payload, first match wins
TOP_TOOL_NAME_KEYS = ("tool", "tool_name")  # at a record's top, when its payload names no tool
CALL_ID_KEYS = ("callId", "toolCallId", "id")
CALL_FIELDS = (*TOOL_NAME_KEYS, *CALL_ID_KEYS, "durationMs")  # every payload field the pairing reads
ARGUMENT_KEYS = ("arguments", "args", "input", "parameters")  # a call's arguments in its payload, first match wins


def result_failed(kind: Any, record: dict[str, Any]) -> bool:
    """Did tool result ``record`` (of canonical type ``kind``: ``COMPLETED`` or ``FAILED``) fail: a ``tool_failed``, or
    a ``tool_completed`` with a non-zero exit code or a failing verdict (as ``replay walk`` reads it)."""
    return kind in FAILED or went_wrong(record)


def _first(payload: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def tool_name(payload: Any) -> str | None:
    if not isinstance(payload, dict):
        return None
    name = payload.get("toolName")  # the usual spelling first: one look
    return name if name.__class__ is str and name else _first(payload, TOOL_NAME_KEYS)


def call_id(payload: Any) -> str | None:
    if not isinstance(payload, dict):
        return None
    cid = payload.get("callId")
    return cid if cid.__class__ is str and cid else _first(payload, CALL_ID_KEYS)


def named_tool(record: dict[str, Any], keys: tuple[str, ...] = TOOL_NAME_KEYS, *, as_written: bool = False) -> Any:
    """The tool a record names: the first of ``keys`` in its payload, else ``tool`` / ``tool_name`` at its top.

    By default the first non-empty text (what to show); with ``as_written`` the value of the first key present,
    whatever it is (what to compare: ``None``, ``""`` or ``5`` are values too).
    """
    payload = record.get("payload")
    if not as_written:
        return (_first(payload, keys) if isinstance(payload, dict) else None) or _first(record, TOP_TOOL_NAME_KEYS)
    for holder, names in ((payload if isinstance(payload, dict) else {}, keys), (record, TOP_TOOL_NAME_KEYS)):
        for key in names:
            if key in holder:
                return holder[key]
    return None


def _ms_between(start: Any, end: Any) -> float | None:
    return _ms_until(parse_timestamp(start), parse_timestamp(end))


def _ms_until(a: datetime | None, b: datetime | None) -> float | None:
    if a is None or b is None:
        return None
    return max(0.0, (b - a).total_seconds() * 1000.0)


def _measured(value: Any) -> float | None:
    """A result's measured ``durationMs``: a number >= 0 that a double holds (not ``1e400``, read as infinity, nor
    an int beyond a double), else None (the timestamps say how long the call took)."""
    cls = value.__class__
    if cls is not int and cls is not float and (not isinstance(value, int | float) or cls is bool):  # (ints, floats at once)
        return None
    try:
        measured = float(value)
    except OverflowError:
        return None
    return measured if measured >= 0 and math.isfinite(measured) else None


def pair_tool_calls(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``[{toolName, status, durationMs, callId?, startedAt, seq}]`` in the order calls began."""
    pairing = CallPairing()
    latest: datetime | None = None
    for ev in events:
        etype, payload, ts = event_type(ev), ev.get("payload"), ev.get("timestamp")
        moment = parse_timestamp(ts)
        if moment is not None and (latest is None or moment > latest):
            latest = moment
        if etype in CALLED:
            pairing.called(payload, ts, ev.get("seq"))
        elif etype in COMPLETED or etype in FAILED:
            pairing.result(not result_failed(etype, ev), payload, ts, ev.get("seq"))
    return pairing.finish(latest)


class CallPairing:
    """The pairing of ``pair_tool_calls`` fed one tool event at a time (a report pairs a run's calls as it reads
    them, keeping nothing else of its tool events): ``called`` and ``result`` in stream order, then ``finish``."""

    __slots__ = ("answered", "calls", "open_by_id", "open_by_name")

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.open_by_id: dict[str, dict[str, Any]] = {}
        self.open_by_name: dict[str, list[dict[str, Any]]] = {}
        # the calls answered, by id: a call or a result of an id seen already is that call written again (a resumed
        # session's log repeats records), not another call, nor a result without its call
        self.answered: dict[str, dict[str, Any]] = {}

    def called(self, payload: Any, ts: Any, seq: Any) -> None:
        cid = call_id(payload)
        if cid and (cid in self.open_by_id or cid in self.answered):
            return  # (the call of that id, written again: one call)
        name = tool_name(payload) or "unknown"
        call = {"toolName": name, "status": "error", "durationMs": None, "startedAt": ts, "seq": seq}  # open: no endedAt
        if cid:
            call["callId"] = cid
            self.open_by_id[cid] = call
        else:
            self.open_by_name.setdefault(name, []).append(call)
        self.calls.append(call)

    def result(self, ok: bool, payload: Any, ts: Any, seq: Any) -> dict[str, Any] | None:
        """The result of a call: the call it answers (its ``toolName`` the call's), or None for a result without its
        call, counted on its own."""
        cid = call_id(payload)
        call = paired = self.open_by_id.pop(cid, None) if cid else None
        if call is None and cid in self.answered:
            return self.answered[cid]  # (the result of that call, written again: the call keeps its first)
        if call is not None:
            self.answered[cid] = call  # type: ignore[index]
        if call is None:  # (the result's own tool name matters only now: most results name no tool)
            result_name = tool_name(payload)
            if result_name and self.open_by_name.get(result_name):
                call = paired = self.open_by_name[result_name].pop(0)
            else:  # a result without its call: count it on its own
                call = {"toolName": result_name or "unknown", "startedAt": ts, "seq": seq}
                self.calls.append(call)
        call["status"] = "ok" if ok else "error"
        measured = _measured(payload.get("durationMs")) if isinstance(payload, dict) else None
        if measured is not None:
            call["durationMs"] = measured
        else:
            call["durationMs"] = _ms_between(call.get("startedAt"), ts)  # (None: no time tells how long it took)
        call["endedAt"] = ts
        return paired

    def finish(self, latest: datetime | None) -> list[dict[str, Any]]:
        """The calls in the order they began; those still open end at ``latest`` (the run's latest instant: its
        latest timestamp, wherever it stands in the stream), unfinished."""
        for call in self.calls:
            if "endedAt" not in call:  # (every result sets it)
                call["durationMs"] = _ms_until(parse_timestamp(call.get("startedAt")), latest)
                call["unfinished"] = True
        return self.calls
