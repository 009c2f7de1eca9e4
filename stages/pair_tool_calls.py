"""PairToolCalls: drops tool results whose call is not in the run, and marks calls that never got a result as unanswered.

A result answers a call as ``report`` pairs them (``toolcalls.OpenCalls``): the open call of its call id (``callId``,
``toolCallId`` or ``id`` in the payload); else, naming a tool, the oldest open call of that tool without an id; else,
with neither, the latest open call without an id.

- a result written before its call (a ``tool_completed`` / ``tool_failed`` of a call id that answers no call yet, a
  runner writing its events out of order) waits for it, taken out of the stream: when a ``tool_called`` of that id
  comes later in the run (a new call: not one written again), the result is moved to just after it (logged
  ``moved``), with any result of that id written again after it that waited too; report pairs the two so (``toolcalls.
  CallPairing``);
- an orphaned result (one whose call never came: none by the run's end, or by a pause of a live input, or once more
  than ``MAX_WAITING`` records or ``MAX_WAITING_BYTES`` wait, the oldest) is dropped; the log keeps the whole event
  (``original``), so nothing is lost. A result without a call id that answers no call is not judged (nothing names
  the call it lacks): it is kept;
- a dangling call (a ``tool_called``, with a call id or without, with no result by the end of its run) gets a
  synthetic ``tool_unanswered`` event right before the run's terminal event, the first one it was open at: that
  event, when calls are open at it, waits with what follows it in the run (under ``ENDED``, bounded with the results
  that wait) until the run's end decides which are still open: a result after it answers its call (no mark; the
  result stays after the end, where heal leaves what a run goes on with); a result that answers nothing is the
  orphan it was; a mark never ends up after the end when what followed the end goes elsewhere (a run_started that
  ensure_run_started moves to the run's start, an orphan dropped here). The run's end, a pause of a live input, or the bound decides (``_decide``: a pause and the bound as if the run
  ended there). A call open at no terminal event (the run has none, or the call came after it) is marked at the run's
  end. A call without an id is marked by its tool name, which the mark answers it by; the marks in the order that
  pairs each with its call again: ``_mark_order``. A mark says that no result
  was recorded, and never invents one. A ``tool_unanswered`` already in the stream closes its call, so
  healing healed output adds nothing. A
  ``tool_called`` of an id still open, or answered with the same payload, is that call written again; one of an
  answered id with another payload (another tool, other arguments) is a new call of that id, marked if it gets no
  result. After a terminal event that waits, a call of an id open at it with another payload decides the end first
  (its marks go before the terminal event): a new call of an answered id, as heal reads its own output again. Its ``reason`` (and the repair's message) says why none was read as far as
  the run knows it: when a line of the run after the call was left out (too long, not JSON, cut off: what read or
  parse reported, ``model.dropped``), its result may have been on that line; when none was, the run has none.
"""

from __future__ import annotations

import sys
from typing import Any

from replay.pipeline.engine.batch import Batch, Column, column_bytes, column_position, invented
from replay.pipeline.engine.registry import register
from replay.pipeline.model.dropped import DROPPED_LINES, DroppedLines
from replay.pipeline.model.events import TERMINAL_TYPES, event_type
from replay.pipeline.model.runs import Run, RunScoped
from replay.pipeline.model.toolcalls import (
    CALLED,
    RESULTS,
    TOOL_UNANSWERED,
    UNANSWERED_MESSAGE,
    OpenCalls,
    call_id,
    call_print,
    tool_name,
)
from replay.stages.ensure_run_started import synthetic_event

MAX_WAITING = 10_000  # records of a run held (results for a call not come yet, what follows its end), at most
MAX_WAITING_BYTES = 8 << 20  # and the most they may come to
PLACE_KEYS = ("turn", "step")  # where in the run a call was made (a mapped log's model call): its mark is placed there too
ENDED: Any = object()  # (the key the run's terminal event, and what follows it, wait under: ``_wait``)
_JUDGED = CALLED | RESULTS | TERMINAL_TYPES | {TOOL_UNANSWERED}
_NOT_KNOWN = ("the run has none, or it was on a line that could not be read", "")  # (``_why_none``: no line tells)


def _mark_order(call: dict[str, Any]) -> tuple[int, int]:
    """Where an open call's mark goes among the run's marks, so that each mark answers its own call when the run is
    read again (``OpenCalls.close``: healing healed output adds nothing): a call's with an id, or of a named tool, in
    the order the calls were made (by id; the oldest open call of that tool first), then those of calls with neither,
    the latest call first (a mark naming nothing answers the latest call open without an id)."""
    if call["callId"] is not None or call["toolName"]:
        return 0, call["made"]
    return 1, -call["made"]


@register("pair_tool_calls")
class PairToolCalls(RunScoped):
    summary = ("Move a tool result written before its call to just after it; drop tool results with no call in the "
               "run (orphans); mark calls with no result by a synthetic tool_unanswered.")

    def begin_run(self, run: Run) -> None:
        calls: OpenCalls[dict[str, Any]] = OpenCalls()
        # made: the run's calls so far (their order); waiting: what is taken out of the stream for now, by key (the
        # oldest first): the results of a call id not made yet, by id; ``ENDED``, the run's terminal event and what
        # follows it; and what they come to; ends: the terminal events waiting, each (where it is among them, the
        # calls made by then, the run's time then)
        run.state.update(calls=calls, last=None, last_line=None, made=0, waiting={}, waiting_bytes=0, waiting_count=0,
                         ends=[])

    def on_events(self, batch: Batch, start: int, end: int) -> None:
        events = batch.events
        assert events is not None and self.run is not None
        state = self.run.state
        before = state["last"]  # (the run's latest time before this stretch: a terminal event's in it, for its marks)
        for i in range(end - 1, start - 1, -1):  # the run's latest time so far, for the marks at its end
            stamp = events[i].get("timestamp")
            if stamp is not None:
                state["last"] = stamp
                break
        lines = [n for n in batch.lines[start:end] if n is not None]
        if lines:  # the run's last line so far (in its input), for the lines left out after a call
            state["last_line"] = max(lines) if state["last_line"] is None else max(state["last_line"], *lines)
        waiting = state["waiting"]
        after = start  # (where the events begin that follow a terminal event that waits)
        if ENDED not in waiting:
            for i in [i for i in range(start, end) if event_type(events[i]) in _JUDGED]:
                self._judge(batch, i, events[i], start, before)
                if ENDED in waiting:  # (the run's end came with calls open: what follows it waits too)
                    after = i + 1
                    break
            else:
                return
        for k in range(after, end):  # (each event of the run waits after the terminal event, while it waits)
            if event_type(events[k]) in _JUDGED:
                self._judge(batch, k, events[k], start, before)
            elif ENDED in waiting:
                self._wait(batch, k, ENDED)

    def on_record(self, batch: Batch, i: int, record: dict[str, Any]) -> None:
        """A record of the run after its terminal event that waits (a heal record of an earlier heal) waits after it,
        in its place."""
        if self.run is not None and ENDED in self.run.state["waiting"]:
            self._wait(batch, i, ENDED)
        else:
            super().on_record(batch, i, record)

    def _judge(self, batch: Batch, i: int, event: dict[str, Any], start: int, before: Any) -> None:
        state = self.run.state  # type: ignore[union-attr]
        etype = event_type(event)
        ended = ENDED in state["waiting"]
        calls: OpenCalls[dict[str, Any]] = state["calls"]
        if etype in TERMINAL_TYPES:
            # the run ends here with calls open: the terminal event waits, with what follows it in the run, until the
            # run's end decides which are still open (a result after it may answer one): their marks go right before
            # it (``_decide``); one the run goes on after stays in its place
            if calls or ended:
                events = batch.events
                assert events is not None
                stamp = next((t for k in range(i, start - 1, -1) if (t := events[k].get("timestamp")) is not None),
                             before)
                state["ends"].append((len(state["waiting"].get(ENDED, ())), state["made"], stamp))
                self._wait(batch, i, ENDED)
            return
        payload = event.get("payload")
        cid = call_id(payload)
        if etype in CALLED:
            if ended and cid and cid in calls.by_id and calls.prints.get(cid) != call_print(payload):
                # a new call of an id open at the run's end (another tool, other arguments): the end is decided first,
                # its marks right before the terminal event, so the id is answered and this is a new call of it, as
                # heal reads its own output again (healing healed output adds nothing)
                self.put_back(self._decide(self.run), i)  # type: ignore[arg-type]
                ended = False
            if ended:
                self._wait(batch, i, ENDED)
            if not calls.written_again(cid, payload):
                state["made"] += 1
                name = tool_name(payload)
                calls.open(cid, name or "", {"callId": cid, "toolName": name, "seq": event.get("seq"),
                                             "made": state["made"],
                                             "place": {k: event[k] for k in PLACE_KEYS if k in event}, **batch.where(i)},
                           payload)
                if cid is not None and cid in state["waiting"]:
                    self._move_after(batch, i, event, cid)
            return
        if cid is not None and (calls.close_id(cid) is not None or cid in calls.answered):
            pass  # (its call's result, or the result of an answered call written again)
        elif cid is not None and etype != TOOL_UNANSWERED and cid in state["waiting"]:
            self._wait(batch, i, cid)  # (that result written again, before the call too: it goes with it)
            return
        elif calls.close(cid, tool_name(payload)) is not None:
            pass  # (a call without an id: of its tool, or the latest)
        elif etype == TOOL_UNANSWERED:
            if cid is not None:  # (a mark of a call not open: its results are not orphans)
                calls.answered.setdefault(cid, call_print(payload))
        elif cid is not None:
            self._wait(batch, i, cid)  # (its call may come later in the run: the runner wrote them out of order)
            return
        if ended:
            self._wait(batch, i, ENDED)

    def _wait(self, batch: Batch, i: int, key: Any) -> None:
        """Take record ``i`` out of the stream to wait under ``key``: a call id, until a call of that id comes; or
        ``ENDED``, until the run's end decides the marks that go before its terminal event. Past ``MAX_WAITING``
        records or ``MAX_WAITING_BYTES`` waiting, what waits longest is decided: the results of an id are orphans, the
        run's end is decided as at a pause (``_decide``) and goes back where it was."""
        state = self.run.state  # type: ignore[union-attr]
        column = self.take_out(batch, i)
        if key is not ENDED:
            self._dropped += 1  # (gone unless its call comes: a run of nothing else vanishes, ``RunScoped._keep_apart``)
        state["waiting"].setdefault(key, []).append(column)
        state["waiting_count"] += 1
        state["waiting_bytes"] += column_bytes(column)
        while state["waiting_count"] > MAX_WAITING or state["waiting_bytes"] > MAX_WAITING_BYTES:
            oldest = next(iter(state["waiting"]))
            if oldest is ENDED:
                self._put_back_after(batch, i, self._decide(self.run))  # type: ignore[arg-type]
            else:
                self._orphaned(state, oldest)

    def _put_back_after(self, batch: Batch, i: int, columns: list[Column]) -> None:
        """Put ``columns`` back right after column ``i`` (before the run's next event or record, or at the batch's end
        when the input waits, when ``i`` ends its batch)."""
        if i + 1 < len(batch):
            self.put_back(columns, i + 1)
        else:
            self.put_back(columns)

    def _unwait(self, state: dict[str, Any], key: Any) -> list[Column]:
        """What waits under ``key`` (``_wait``), no longer waiting."""
        columns = state["waiting"].pop(key, [])
        state["waiting_count"] -= len(columns)
        state["waiting_bytes"] -= sum(map(column_bytes, columns))
        return columns

    def _move_after(self, batch: Batch, i: int, call: dict[str, Any], cid: str) -> None:
        """The call at column ``i`` is the one the results of ``cid`` waited for: they go right after it, in their
        order (the first answers it; any after it is that result written again); after the run's terminal event that
        waits, they wait after the call."""
        state = self.run.state  # type: ignore[union-attr]
        columns = self._unwait(state, cid)
        self._dropped -= len(columns)
        state["calls"].close_id(cid)
        if ENDED in state["waiting"]:  # (the call waits there too, last)
            state["waiting"][ENDED].extend(columns)
            state["waiting_count"] += len(columns)
            state["waiting_bytes"] += sum(map(column_bytes, columns))
        else:
            self._put_back_after(batch, i, columns)
        for column in columns:
            result = column[0]
            self.repair("moved", f"{event_type(result)} for call {cid!r} came before its tool_called (seq "
                        f"{call.get('seq')!r}); moved to just after it", **column_position(column),
                        field="payload.callId", value=cid, seqBefore=result.get("seq"))

    def _orphaned(self, state: dict[str, Any], cid: str) -> None:
        """The results of ``cid`` that waited for their call (``state``: their run's) are orphans: no tool_called of the
        run made it (by its end, or a pause of its input), or they waited longest when too many did. Dropped, each
        logged whole."""
        for column in self._unwait(state, cid):
            event = column[0]
            self.repair("dropped", f"{event_type(event)} for call {cid!r}, which no tool_called of the run made: an "
                        "orphaned result", **column_position(column), field="payload.callId", value=cid,
                        seqBefore=event.get("seq"), original=event)

    def _orphans(self, state: dict[str, Any]) -> None:
        """The results that wait for their call are orphans (the run ends, or its input waits)."""
        for cid in [key for key in state["waiting"] if key is not ENDED]:
            self._orphaned(state, cid)

    def at_pause(self, run: Run) -> list[Column]:
        """The input waits: the results that wait for their call are orphans (a live stream is not held back for a call
        that may come much later), and results moved after a call that ended the batch go at its end. The run's
        terminal event that waits, and what followed it, are decided as if the run ended there (``_decide``: the marks,
        then the terminal event), not held until the run ends; a result of a call marked that still comes is no orphan
        (its call is answered: marked)."""
        self._orphans(run.state)
        held, self._held = self._held, []
        return [*held, *self._decide(run)] if ENDED in run.state["waiting"] else held

    def end_run(self, run: Run) -> list[dict[str, Any]]:
        self._orphans(run.state)  # (no call of their id came)
        # (after the results moved after the run's last event, a call, still held (``_move_after``): as they go when
        # the call is not its batch's last)
        self.put_back(self._decide(run))
        run.state["calls"] = OpenCalls()
        return []

    def _decide(self, run: Run) -> list[Column]:
        """The run's end, decided (the run ends, its input waits, or too much waits): the calls still open are marked
        (each logged), those made before a terminal event that waits right before it (the first such one after them),
        the others after all that waited; then every call is answered (a result of one that still comes answers a call
        marked: no orphan). The columns, in order: what waited after the run's terminal event, with the marks."""
        state = run.state
        waited, ends = self._unwait(state, ENDED), state["ends"]
        state["ends"] = []
        calls: OpenCalls[dict[str, Any]] = state["calls"]
        left = sorted(calls, key=_mark_order)
        out: list[Column] = []
        at = 0
        for where, made, stamp in ends:
            out += waited[at:where]
            at = where
            out += map(invented, self._marks(run, [c for c in left if c["made"] <= made], stamp))
            left = [c for c in left if c["made"] > made]
        out += waited[at:]
        out += map(invented, self._marks(run, left, state["last"]))
        calls.close_all()
        return out

    def _marks(self, run: Run, calls: list[dict[str, Any]], stamp: Any) -> list[dict[str, Any]]:
        """The marks of open calls ``calls`` (in their order: ``_mark_order``), stamped ``stamp``, each logged."""
        marks = []
        for call in calls:
            cid, name = call["callId"], call["toolName"]
            why, dropped = self._why_none(run, call)
            marks.append({**synthetic_event(TOOL_UNANSWERED, run, stamp, None, {
                **({"callId": cid} if cid is not None else {}), "toolName": name, "status": "unanswered",
                "reason": f"{UNANSWERED_MESSAGE} (none is invented): {why}",
            }), **call["place"]})
            where = {k: call[k] for k in ("source", "line", "offset", "path") if k in call}
            named = f"{cid!r} ({name or 'unnamed tool'})" if cid is not None else \
                f"without a call id ({name or 'unnamed tool'}, seq {call['seq']!r})"
            self.repair("inserted", f"tool call {named}: {UNANSWERED_MESSAGE}"
                        f"{dropped}; marked it {TOOL_UNANSWERED}", field="type", value=TOOL_UNANSWERED,
                        seqBefore=call.get("seq"), **where)
        return marks

    def _why_none(self, run: Run, call: dict[str, Any]) -> tuple[str, str]:
        """Why no result of ``call`` was read, as far as this run knows: (the mark's words, the log message's). A line
        of the run left out after the call may have held it; with every line read, the run has none. The run's lines
        go up to where the next run of its input begins (``Run.ends_before``: the lines between, blank or left out, are
        its own, as heal_summary counts them), or to its input's end when it is the last (a line cut off at the end is
        its own however many blank lines come before it); where the next run begins unknown, up to the line right
        after its last. Run alone (no graph run tells it what was left out), the stage cannot tell the two apart, nor
        of a record a document held (no lines)."""
        known: DroppedLines | None = self.shared.get(DROPPED_LINES)
        line, last_line = call.get("line"), run.state["last_line"]
        if known is None or type(line) is not int or last_line is None:  # (or a document's record: no lines)
            return _NOT_KNOWN
        if run.last_of_input:
            upto = sys.maxsize
        elif run.ends_before is not None and run.ends_before > last_line:
            upto = run.ends_before - 1
        else:
            upto = max(last_line, line) + 1
        found = known.first_between(run.input or (run.source, 0), line, upto)
        if found is None and not known.complete:  # (so many lines left out that not all were noted)
            return _NOT_KNOWN
        if found is None:
            return "the run has none (every line of it after the call was read)", ""
        at, code = found
        # (the mark's words name no line: they are data, the same down a pipe, whose positions are the pipe's)
        return (f"a line of the run after the call was left out ({code}): its result may have been on it",
                f" (line {at} after it was left out, {code}: the result may have been on it)")
