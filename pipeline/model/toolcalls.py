"""Tool calls of a run, paired from its events: name, status, duration.

Conventions read from event payloads (first match wins): the tool's name in ``toolName``, ``tool``
or ``name`` (a whole record may name it at its top instead, in ``tool`` or ``tool_name``: ``named_tool``);
the call's id in ``callId``, ``toolCallId`` or ``id``; a measured ``durationMs``.
Which call a result answers is ``OpenCalls.close``, one rule for the report, the artifact's ``toolCalls``, ``replay
walk`` and the OTLP export: the open call of its call id; else, when it names a tool, the oldest open call of that tool
without an id (first in, first out); else, when it has neither id nor name, the most recent open call without an id (last
in, first out, as an end closes the innermost open span in a trace of begin/end events); a result of an id that answers no
call yet waits for a call of that id made later in the run and answers it there (``CallPairing.early``: a runner that
wrote the result before its call; heal's ``pair_tool_calls`` moves it right after the call), counted on its own after
the run's calls when none comes. A result failed when it is a ``tool_failed``, or a
``tool_completed`` that says it went wrong (a non-zero exit code, a failing verdict: ``outcome.went_wrong``, the
rule ``replay walk`` shows ``[failed]`` by): ``result_failed``, read by every report and export. Unclosed calls report status
``error`` and the time until the run's latest instant (its latest timestamp, not the last one in stream order).
A call of an id seen already is that call's record written again (one call, ``OpenCalls.written_again``) while that
call is open, or when it was answered and this record's payload is the same; a call of an answered id with another
payload (another tool, other arguments) is a new call that uses the id again.
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Callable, Iterator, Sized
from datetime import datetime
from typing import Any, Generic, TypeVar

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.model.events import TOOL_UNANSWERED as TOOL_UNANSWERED  # (read from here too)
from replay.pipeline.model.events import event_type, parse_timestamp
from replay.pipeline.model.outcome import went_wrong

CALLED = frozenset({"tool_called"})
COMPLETED = frozenset({"tool_completed"})
FAILED = frozenset({"tool_failed"})
RESULTS = COMPLETED | FAILED  # a call's answer, either way
TOOL_NAME_KEYS = ("toolName", "tool", "name")  # in a payload, first match wins
TOP_TOOL_NAME_KEYS = ("tool", "tool_name")  # at a record's top, when its payload names no tool
CALL_ID_KEYS = ("callId", "toolCallId", "id")
CALL_FIELDS = (*TOOL_NAME_KEYS, *CALL_ID_KEYS, "durationMs")  # every payload field the pairing reads
ARGUMENT_KEYS = ("arguments", "args", "input", "parameters")  # a call's arguments in its payload, first match wins
# What a call never answered is told by, one text for all: report's error of it, heal's mark of it (``pair_tool_calls``:
# its reason and its log line) and the OTLP export's span of it (when no mark's reason says more)
UNANSWERED_MESSAGE = "no result was read before the run ended"


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


def response_id(payload: dict[str, Any]) -> Any:
    """The model response a message is of (Claude Code's ``messageId``, OpenHands' ``responseId``), else None: the
    records of one model call share it."""
    return payload.get("messageId") or payload.get("responseId")


def call_id(payload: Any) -> str | None:
    if not isinstance(payload, dict):
        return None
    cid = payload.get("callId")
    return cid if cid.__class__ is str and cid else _first(payload, CALL_ID_KEYS)


def call_print(payload: Any) -> int:
    """What tells a call's record from another call of its id: its payload as written (keys in any order; 1, 1.0 and
    true differ), hashed (the records of a run's calls are not held to be compared)."""
    return hash(exactjson.dumps(payload, option=orjson.OPT_SORT_KEYS))


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


T = TypeVar("T")
_HELD_SLACK = 64  # answered calls the queues may still hold (skipped when met) before they are swept


class _Slot(Generic[T]):
    """An open call without an id, held in its tool's queue and in the stack of such calls (answered: ``open`` False)."""

    __slots__ = ("item", "open")

    def __init__(self, item: T) -> None:
        self.item, self.open = item, True


class OpenCalls(Generic[T]):
    """The tool calls of a run not answered yet (``T``: what a caller keeps of a call), and the call a result answers.

    ``close`` pairs a result: the open call of its call id; else, when the result names a tool, the oldest open call of
    that tool without an id (first in, first out: calls of one tool answered in the order they were made); else, when it
    has neither id nor name (a runner's ``tool_end {}``), the most recent open call without an id (last in, first out:
    with one call open, that call; with several, the innermost, as an end closes the latest open span of a begin/end
    trace); with none open, no call (the result is one without its call). A result whose id no open call has, naming no
    tool, answers none (an orphan: heal drops it); nor does one of a call answered already (written again). A call of
    an id seen already is a call made already written again, or a new call of that id (``written_again``). Every step
    is O(1) amortized: an answered call is left where it is held and skipped when met, and the queues are swept when
    they hold more answered calls than open ones."""

    __slots__ = ("anonymous", "answered", "by_id", "by_name", "held", "prints", "stack")

    def __init__(self) -> None:
        self.by_id: dict[str, T] = {}
        self.prints: dict[str, int] = {}  # the open calls with an id: their record's ``call_print``
        # the ids of the calls answered (by id), each with its record's ``call_print``: a result of one is written again
        self.answered: dict[str, int] = {}
        self.by_name: dict[str, deque[_Slot[T]]] = {}
        self.stack: list[_Slot[T]] = []  # the open calls without an id, in the order they were made
        self.anonymous = 0  # open calls without an id
        self.held = 0  # answered calls still held in a queue or in the stack

    def open(self, cid: str | None, name: str, item: T, payload: Any = None) -> None:
        """A call made: of id ``cid`` (None: it has none), tool ``name`` and payload ``payload`` (what
        ``written_again`` compares a later call of its id with, once it is answered)."""
        if cid:
            self.by_id[cid] = item
            self.prints[cid] = call_print(payload)
            return
        slot = _Slot(item)
        self.by_name.setdefault(name, deque()).append(slot)
        self.stack.append(slot)
        self.anonymous += 1

    def written_again(self, cid: str | None, payload: Any) -> bool:
        """Is a call of id ``cid`` and payload ``payload`` a call made already, its record written again (a resumed
        session's log repeats records): the call of that id is still open, or it was answered and its payload is the
        same? Not one (a call to make): a call without an id, of an id not seen yet, or of an id answered already with
        another payload (another tool, other arguments: the id used again for a new call)."""
        if not cid:
            return False
        if cid in self.by_id:
            return True
        printed = self.answered.get(cid)
        return printed is not None and printed == call_print(payload)

    def close_id(self, cid: str) -> T | None:
        """The open call of id ``cid``, now answered; None: no call of that id is open."""
        item = self.by_id.pop(cid, None)
        if item is not None:
            self.answered[cid] = self.prints.pop(cid)
        return item

    def close_all(self) -> None:
        """Every open call answered (a result of one that still comes answers it, written again: no orphan)."""
        for cid in list(self.by_id):
            self.close_id(cid)
        self.by_name, self.stack, self.anonymous, self.held = {}, [], 0, 0

    def close(self, cid: str | None, name: str | None) -> T | None:
        """The call a result of id ``cid`` naming tool ``name`` (None: neither given) answers, no longer open; None:
        a result without its call, or the result of a call answered already written again (it answers no other)."""
        if cid:
            item = self.close_id(cid)
            if item is not None or cid in self.answered:
                return item
        if name:
            queue = self.by_name.get(name)
            return self._first_open(queue.popleft, queue) if queue else None
        if cid:
            return None  # (an id no open call has: an orphan, not the latest call's result)
        return self._first_open(self.stack.pop, self.stack)

    def _first_open(self, take: Callable[[], _Slot[T]], slots: Sized) -> T | None:
        """The first open call ``take`` gives from ``slots`` (its tool's queue, oldest first, or the stack, latest
        first), now answered; the answered calls taken before it are no longer held. None: no open call left there."""
        while slots:
            slot = take()
            if slot.open:
                return self._answered(slot)
            self.held -= 1
        return None

    def _answered(self, slot: _Slot[T]) -> T:
        slot.open = False
        self.anonymous -= 1
        self.held += 1  # (still in the stack or in its tool's queue)
        stack = self.stack
        while stack and not stack[-1].open:
            stack.pop()
            self.held -= 1
        if self.held > _HELD_SLACK and self.held > self.anonymous:
            self.stack = [s for s in stack if s.open]
            self.by_name = {name: deque(s for s in queue if s.open) for name, queue in self.by_name.items()
                            if any(s.open for s in queue)}
            self.held = 0
        return slot.item

    def __len__(self) -> int:
        return len(self.by_id) + self.anonymous

    def __iter__(self) -> Iterator[T]:
        """The open calls: those with an id, then those without."""
        yield from self.by_id.values()
        yield from (slot.item for slot in self.stack if slot.open)


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


_OPEN, _OK, _ERROR = 0, 1, 2  # a call's state (``CallPairing.state``)
CALL_STATUS = ("error", "ok", "error")  # its status by state (an open call reports ``error``)
_NONE = math.nan  # (``CallPairing.duration``: no time tells how long the call took; a length is never NaN)


def _measured_of(payload: Any) -> float | None:
    """A result's measured length (``_measured``: its ``durationMs``), None when it measured none."""
    length = payload.get("durationMs") if isinstance(payload, dict) else None
    return None if length is None else _measured(length)


def _known(duration: float) -> float | None:
    """A length of ``CallPairing.duration``: None for _NONE (no time tells)."""
    return None if math.isnan(duration) else duration


def ms_until(a: datetime | None, b: datetime | None) -> float | None:
    """How long from instant ``a`` to ``b``, in ms, not below 0; None when either is not known."""
    if a is None or b is None:
        return None
    return max(0.0, (b - a).total_seconds() * 1000.0)


class PackedColumn:
    """Values appended in order, at 8 bytes each for an int of 64 bits (an event's seq, its place in a run); any other
    value (a text, a float, null, a larger int) held apart by its place."""

    __slots__ = ("ints", "other")

    def __init__(self) -> None:
        self.ints = array("q")
        self.other: dict[int, Any] = {}

    def append(self, value: Any) -> None:
        if value.__class__ is int and -(2 ** 63) <= value < 2 ** 63:
            self.ints.append(value)
        else:
            self.other[len(self.ints)] = value
            self.ints.append(0)

    def __len__(self) -> int:
        return len(self.ints)

    def __getitem__(self, at: int) -> Any:
        """The value at place ``at``."""
        return self.other.get(at, self.ints[at]) if self.other else self.ints[at]

    def __iter__(self) -> Iterator[Any]:
        """The values in order, read one at a time (``tolist`` without the list)."""
        if not self.other:
            return iter(self.ints)
        return (self.other.get(at, value) for at, value in enumerate(self.ints))

    def tolist(self) -> list[Any]:
        values: list[Any] = self.ints.tolist()
        for at, value in self.other.items():
            values[at] = value
        return values


class CallPairing:
    """The pairing of ``pair_tool_calls`` fed one tool event at a time (a report pairs a run's calls as it reads
    them, keeping nothing else of its tool events): ``called`` and ``result`` in stream order, then ``finish``.

    A call is held as a row of compact columns (its tool's number, its state, its length in an array of doubles,
    its seq packed; its start, an instant as ``parse_timestamp`` keeps it; its id), some 150 bytes a call, not a dict of Python objects: a run
    of many calls fits (``stamps=False``: without the timestamps as written, which only ``finish``'s dicts list)."""

    __slots__ = (
        "answered",
        "cids",
        "duration",
        "early",
        "name_at",
        "names",
        "open",
        "seq",
        "stamps",
        "started",
        "state",
        "tool",
    )

    def __init__(self, stamps: bool = True) -> None:
        self.open: OpenCalls[int] = OpenCalls()  # (an open call: its row)
        # the calls answered, by id: a result of an id answered already is that call's written again (a resumed
        # session's log repeats records), not a result without its call; a call of that id, ``OpenCalls.written_again``
        self.answered: dict[str, int] = {}
        # the results of an id no call had yet (a runner wrote them before their call), by id, oldest first: whether it
        # went well, the tool it names, its measured length (None: not measured), its timestamp and seq. A call of that
        # id made later in the run is its call (``called``); one none is of by the run's end is counted on its own then
        self.early: dict[str, tuple[bool, str | None, float | None, Any, Any]] = {}
        self.names: list[str] = []  # the tools' names, each once
        self.name_at: dict[str, int] = {}
        self.tool = array("I")  # a call's tool: its name's place in ``names``
        self.state = array("b")  # _OPEN, _OK or _ERROR
        self.duration = array("d")  # how long it took, in ms (_NONE: no time tells)
        self.started: list[datetime | None] = []  # when it began (None: no time tells)
        self.seq = PackedColumn()  # the seq the call's first event was given with
        self.cids: list[str | None] = []  # its id (None: none; a result without its call keeps none)
        # the timestamps as written, when kept: when each call began and ended (None: not answered)
        self.stamps: tuple[list[Any], list[Any]] | None = ([], []) if stamps else None

    def __len__(self) -> int:
        return len(self.state)

    def _new(self, name: str, ts: Any, seq: Any, cid: str | None) -> int:
        at = self.name_at.get(name)
        if at is None:
            at = self.name_at[name] = len(self.names)
            self.names.append(name)
        row = len(self.state)
        self.tool.append(at)
        self.state.append(_OPEN)
        self.duration.append(_NONE)
        self.started.append(parse_timestamp(ts))
        self.seq.append(seq)
        self.cids.append(cid)
        if self.stamps is not None:
            self.stamps[0].append(ts)
            self.stamps[1].append(None)
        return row

    def name(self, row: int) -> str:
        """The tool of call ``row``."""
        return self.names[self.tool[row]]

    def called(self, payload: Any, ts: Any, seq: Any) -> int | None:
        """A call made; when a result of its id came before it (``early``), that result is its, answered here as if it
        came right after it (where heal moves it): returns the call's row then, else None."""
        cid = call_id(payload)
        if self.open.written_again(cid, payload):
            return None  # (the call of that id, written again: one call)
        name = tool_name(payload) or "unknown"
        row = self._new(name, ts, seq, cid)
        self.open.open(cid, name, row, payload)
        early = self.early.pop(cid, None) if cid else None
        if cid is None or early is None:
            return None
        self.open.close_id(cid)
        self.answered[cid] = row
        ok, _, measured, ended, _ = early
        self._ended(row, ok, measured, ended)
        return row

    def _ended(self, row: int, ok: bool, measured: float | None, ts: Any) -> None:
        """Call ``row`` answered by a result (``ok``: it went well) of ``measured`` length (None: its timestamp ``ts``
        and the call's start tell it)."""
        self.state[row] = _OK if ok else _ERROR
        if measured is None:  # (None: no time tells how long it took)
            measured = ms_until(self.started[row], parse_timestamp(ts))
        self.duration[row] = _NONE if measured is None else measured
        if self.stamps is not None:
            self.stamps[1][row] = ts

    def result_again(self, payload: Any) -> bool:
        """Is tool result ``payload`` the result of a call answered already, written again (a resumed session's log
        repeats records): of an id no open call has, whose call was answered, or whose result written before its call
        came already (``early``)? ``result`` keeps the first; it is no failure of its own either (``report`` lists one
        error of a failed call, as the export fails one span)."""
        cid = call_id(payload)
        return cid is not None and cid not in self.open.by_id and (cid in self.answered or cid in self.early)

    def result(self, ok: bool, payload: Any, ts: Any, seq: Any) -> int | None:
        """The result of a call: the row of the call it answers (its tool the call's: ``name``), or None for a result
        without its call, counted on its own (one of an id, which its call may follow: ``early``, when the run ends)."""
        cid = call_id(payload)
        row = paired = self.open.close_id(cid) if cid else None
        if row is not None:
            self.answered[cid] = row  # type: ignore[index]
            self.cids[row] = cid  # (the same id: one text of it held, the one the answered ids hold)
        elif cid in self.answered:
            return self.answered[cid]  # (the result of that call, written again: the call keeps its first)
        elif cid in self.early:
            return None  # (a result written before its call, written again: the first counts)
        else:  # (the result's own tool name matters only now: most results name no tool)
            result_name = tool_name(payload)
            row = paired = self.open.close(cid, result_name)
            if row is None and cid:  # its call may come later in the run: it waits for it (``early``)
                self.early[cid] = (ok, result_name, _measured_of(payload), ts, seq)
                return None
            if row is None:  # a result without its call: count it on its own
                row = self._new(result_name or "unknown", ts, seq, None)
        self._ended(row, ok, _measured_of(payload), ts)
        return paired

    def _settle(self) -> None:
        """The run ended: each result that waited for a call none made (``early``) is counted on its own, in the order
        they came, after the calls."""
        early, self.early = self.early, {}
        for ok, name, measured, ts, seq in early.values():
            self._ended(self._new(name or "unknown", ts, seq, None), ok, measured, ts)

    def end_open(self, latest: datetime | None) -> list[int]:
        """The rows of the calls still open, each now as long as until ``latest`` (the run's latest instant), or of no
        known length (``duration``: NaN) when either instant is not known. The results that waited for a call none
        made (``early``) are counted on their own first, after the calls."""
        if self.early:
            self._settle()
        open_rows = [row for row, state in enumerate(self.state) if state == _OPEN] if _OPEN in self.state else []
        for row in open_rows:
            length = ms_until(self.started[row], latest)
            self.duration[row] = _NONE if length is None else length
        return open_rows

    def finish(self, latest: datetime | None) -> list[dict[str, Any]]:
        """The calls in the order they began, ``{toolName, status, durationMs, startedAt, seq, callId?, endedAt?,
        unfinished?}`` (``durationMs`` None: unknown; ``startedAt`` and ``endedAt`` as written, with ``stamps``); those
        still open end at ``latest`` (the run's latest instant: its latest timestamp, wherever it stands in the
        stream), unfinished. Each column is read as it is iterated: a long run's calls are not held a second time."""
        self.end_open(latest)
        began, ended = self.stamps if self.stamps is not None else ([None] * len(self), [None] * len(self))
        calls = []
        for name, status, duration, seq, cid, state, start, end in zip(
                map(self.names.__getitem__, self.tool), map(CALL_STATUS.__getitem__, self.state),
                map(_known, self.duration), self.seq, self.cids, self.state, began, ended, strict=True):
            unfinished = state == _OPEN
            call = {"toolName": name, "status": status, "durationMs": duration, "startedAt": start, "seq": seq}
            if cid:
                call["callId"] = cid
            if unfinished:
                call["unfinished"] = True
            else:
                call["endedAt"] = end
            calls.append(call)
        return calls

