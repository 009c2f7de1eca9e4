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
  than ``MAX_WAITING`` results or ``MAX_WAITING_BYTES`` wait, the oldest) is dropped; the log keeps the whole event
  (``original``), so nothing is lost. A result without a call id that answers no call is not judged (nothing names
  the call it lacks): it is kept;
- a dangling call (a ``tool_called``, with a call id or without, with no result by the end of its run) gets a
  synthetic ``tool_unanswered`` event at the run's end, before its terminal event (a call without an id is marked by
  its tool name, which the mark answers it by; the marks in the order that pairs each with its call again:
  ``_mark_order``): it says that no result
  was recorded, and never invents one. A ``tool_unanswered`` already in the stream closes its call, so
  healing healed output adds nothing. A
  ``tool_called`` of an id still open, or answered with the same payload, is that call written again; one of an
  answered id with another payload (another tool, other arguments) is a new call of that id, marked if it gets no
  result. Its ``reason`` (and the repair's message) says why none was read as far as
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

MAX_WAITING = 10_000  # results of a run held for a call not come yet, at most (past it, the oldest is an orphan)
MAX_WAITING_BYTES = 8 << 20  # and the most they may come to
PLACE_KEYS = ("turn", "step")  # where in the run a call was made (a mapped log's model call): its mark is placed there too
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
        # made: the run's calls so far (their order); waiting: the results taken out for a call of their id not come
        # yet, by id (oldest first), and what they come to
        run.state.update(calls=calls, last=None, last_line=None, made=0, waiting={}, waiting_bytes=0, waiting_count=0)

    def on_events(self, batch: Batch, start: int, end: int) -> None:
        events = batch.events
        assert events is not None and self.run is not None
        state = self.run.state
        for i in range(end - 1, start - 1, -1):  # the run's latest time so far, for the marks at its end
            stamp = events[i].get("timestamp")
            if stamp is not None:
                state["last"] = stamp
                break
        lines = [n for n in batch.lines[start:end] if n is not None]
        if lines:  # the run's last line so far (in its input), for the lines left out after a call
            state["last_line"] = max(lines) if state["last_line"] is None else max(state["last_line"], *lines)
        for i in [i for i in range(start, end) if event_type(events[i]) in _JUDGED]:
            self._judge(batch, i, events[i], i == end - 1)

    def _judge(self, batch: Batch, i: int, event: dict[str, Any], last: bool) -> None:
        state = self.run.state  # type: ignore[union-attr]
        etype = event_type(event)
        if etype in TERMINAL_TYPES:
            # the unanswered marks go before the run's end: a terminal event that may be its last waits for them (if
            # the run goes on after it, it comes back before the run's next event: where it was)
            if state["calls"] and last:
                self.hold(batch, i)
            return
        payload = event.get("payload")
        cid = call_id(payload)
        calls: OpenCalls[dict[str, Any]] = state["calls"]
        if etype in CALLED:
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
            return  # (its call's result, or the result of an answered call written again)
        if cid is not None and etype != TOOL_UNANSWERED and cid in state["waiting"]:
            self._wait(batch, i, cid)  # (that result written again, before the call too: it goes with it)
            return
        if calls.close(cid, tool_name(payload)) is not None:
            return  # (a call without an id: of its tool, or the latest)
        if etype == TOOL_UNANSWERED:
            if cid is not None:  # (a mark of a call not open: its results are not orphans)
                calls.answered.setdefault(cid, call_print(payload))
        elif cid is not None:
            self._wait(batch, i, cid)  # (its call may come later in the run: the runner wrote them out of order)

    def _wait(self, batch: Batch, i: int, cid: str) -> None:
        """Take result ``i`` of call id ``cid`` out of the stream until a call of that id comes; past ``MAX_WAITING``
        results or ``MAX_WAITING_BYTES`` waiting, those of the id that waits longest are orphans."""
        state = self.run.state  # type: ignore[union-attr]
        column = self.take_out(batch, i)
        self._dropped += 1  # (gone unless its call comes: a run of nothing else vanishes, ``RunScoped._keep_apart``)
        state["waiting"].setdefault(cid, []).append(column)
        state["waiting_count"] += 1
        state["waiting_bytes"] += column_bytes(column)
        while state["waiting_count"] > MAX_WAITING or state["waiting_bytes"] > MAX_WAITING_BYTES:
            self._orphaned(state, next(iter(state["waiting"])))

    def _move_after(self, batch: Batch, i: int, call: dict[str, Any], cid: str) -> None:
        """The call at column ``i`` is the one the results of ``cid`` waited for: they go right after it, in their
        order (the first answers it; any after it is that result written again)."""
        state = self.run.state  # type: ignore[union-attr]
        columns = state["waiting"].pop(cid)
        state["waiting_count"] -= len(columns)
        state["waiting_bytes"] -= sum(map(column_bytes, columns))
        self._dropped -= len(columns)
        state["calls"].close_id(cid)
        if i + 1 < len(batch):
            self.put_back(columns, i + 1)
        else:
            self.put_back(columns)  # (before the run's next event, or the batch's end when the input waits)
        for column in columns:
            result = column[0]
            self.repair("moved", f"{event_type(result)} for call {cid!r} came before its tool_called (seq "
                        f"{call.get('seq')!r}); moved to just after it", **column_position(column),
                        field="payload.callId", value=cid, seqBefore=result.get("seq"))

    def _orphaned(self, state: dict[str, Any], cid: str) -> None:
        """The results of ``cid`` that waited for their call (``state``: their run's) are orphans: no tool_called of the
        run made it (by its end, or a pause of its input), or they waited longest when too many did. Dropped, each
        logged whole."""
        columns = state["waiting"].pop(cid)
        state["waiting_count"] -= len(columns)
        state["waiting_bytes"] -= sum(map(column_bytes, columns))
        for column in columns:
            event = column[0]
            self.repair("dropped", f"{event_type(event)} for call {cid!r}, which no tool_called of the run made: an "
                        "orphaned result", **column_position(column), field="payload.callId", value=cid,
                        seqBefore=event.get("seq"), original=event)

    def at_pause(self, run: Run) -> list[Column]:
        """The input waits: the results that wait for their call are orphans (a live stream is not held back for a call
        that may come much later), and results moved after a call that ended the batch go at its end. After the run's
        terminal event, held for the marks of the calls still open: decided as if the run ended there (the marks, then
        the terminal event), not held until the next run begins. A result of one of those calls that still comes is no
        orphan (its call is answered: marked)."""
        for cid in list(run.state["waiting"]):
            self._orphaned(run.state, cid)
        if not self._held or not [1 for column in self._held if event_type(column[0]) in TERMINAL_TYPES]:
            held, self._held = self._held, []
            return held
        held, self._held = self._held, []
        calls: OpenCalls[dict[str, Any]] = run.state["calls"]
        marks = self.end_run(run)
        calls.close_all()
        run.state["calls"] = calls
        return [*map(invented, marks), *held]

    def end_run(self, run: Run) -> list[dict[str, Any]]:
        for cid in list(run.state["waiting"]):  # (no call of their id came)
            self._orphaned(run.state, cid)
        marks = []
        calls: OpenCalls[dict[str, Any]] = run.state["calls"]
        for call in sorted(calls, key=_mark_order):
            cid, name = call["callId"], call["toolName"]
            why, dropped = self._why_none(run, call)
            marks.append({**synthetic_event(TOOL_UNANSWERED, run, run.state["last"], None, {
                **({"callId": cid} if cid is not None else {}), "toolName": name, "status": "unanswered",
                "reason": f"{UNANSWERED_MESSAGE} (none is invented): {why}",
            }), **call["place"]})
            where = {k: call[k] for k in ("source", "line", "offset", "path") if k in call}
            named = f"{cid!r} ({name or 'unnamed tool'})" if cid is not None else \
                f"without a call id ({name or 'unnamed tool'}, seq {call['seq']!r})"
            self.repair("inserted", f"tool call {named}: {UNANSWERED_MESSAGE}"
                        f"{dropped}; marked it {TOOL_UNANSWERED}", field="type", value=TOOL_UNANSWERED,
                        seqBefore=call.get("seq"), **where)
        run.state["calls"] = OpenCalls()
        if marks and self._held and not [1 for column in self._held if event_type(column[0]) in TERMINAL_TYPES]:
            # the results moved after the run's last event, a call (``_move_after``), are still held (and the records
            # after them): the marks go after them all, as they do when the call is not its batch's last
            self.put_back([*map(invented, marks)])
            return []
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
