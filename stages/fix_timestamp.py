"""FixTimestamps: turns invalid or missing timestamps into RFC 3339, logging the original value.

A timestamp written another way (an epoch number of seconds, ms, µs or ns; ISO without a zone) is converted; one that says no
time borrows the previous event's (or the run record's). A run's first events with no time to borrow wait, taken
out of the stream in order (with the records after them), for the run's first time and borrow it; a run with no
valid time at all, or ``MAX_WAITING`` such events (and records after them) before its first one, or more than
``MAX_WAITING_BYTES`` of them, gets the Unix epoch instead. Every repair is logged with its reason.
"""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.batch import Batch, Column, changed, column_bytes, column_position
from replay.pipeline.engine.registry import register
from replay.pipeline.model.events import EPOCH, format_timestamp, from_epoch, is_timestamp, read_iso, with_field
from replay.pipeline.model.runs import Run, RunScoped
from replay.pipeline.model.validation import named

MAX_WAITING = 10_000  # events a run's first events without a time wait for its first time, at most
MAX_WAITING_BYTES = 8 << 20  # and the most they may come to (as JSON): the wait holds them in memory


def convert(value: Any) -> str | None:
    """An RFC 3339 form of a timestamp written another way (an epoch number: seconds, ms, µs or ns; ISO without a
    zone; a leap second too), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return from_epoch(value)
    if isinstance(value, str):
        read = read_iso(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
        return None if read is None else format_timestamp(*read)
    return None


@register("fix_timestamp")
class FixTimestamps(RunScoped):
    summary = "Repair invalid timestamps: convert epoch/zone-less forms, else borrow the previous (or first later) event's time."

    def begin_run(self, run: Run) -> None:
        stamp = (run.facts or {}).get("timestamp")  # (written another way, as an event's would be: epoch seconds, ...)
        run.state["last"] = stamp if is_timestamp(stamp) else convert(stamp)
        run.state["waiting"] = []  # what waits for the run's first time: (column, whether an event to fix) each
        run.state["waiting_bytes"] = 0  # what they come to

    def on_events(self, batch: Batch, start: int, end: int) -> None:
        events = batch.events
        assert events is not None and self.run is not None
        if not self.run.state["waiting"] and all(is_timestamp(events[i].get("timestamp")) for i in range(start, end)):
            self.run.state["last"] = events[end - 1]["timestamp"]
        else:
            super().on_events(batch, start, end)

    def on_event(self, batch: Batch, i: int, event: dict[str, Any]) -> None:
        run = self.run
        assert run is not None
        value = event.get("timestamp")
        if is_timestamp(value):
            self._borrow(value, i)
            return
        fixed = convert(value)
        if fixed is not None:
            self._borrow(fixed, i)
            how = f"converted {named(value)} to RFC 3339"
        elif run.state["last"] is not None:
            fixed, how = run.state["last"], "borrowed the previous event's timestamp"
        else:  # no time yet: the event waits for the run's first one (a bounded wait)
            batch.replace(i, event)  # (it will be written anew: a key written twice is noted now, where it was read)
            self._wait(self.take_out(batch, i), True)
            return
        batch.replace(i, with_field(event, "timestamp", fixed))
        self.repair("changed", f"timestamp {_state(event)}; {how}", batch, i, **_fields(event, fixed))
        run.state["last"] = fixed

    def on_record(self, batch: Batch, i: int, record: dict[str, Any]) -> None:
        if self.run is not None and self.run.state["waiting"]:  # it stays after the events that wait
            self._wait(self.take_out(batch, i), False)
        else:
            super().on_record(batch, i, record)

    def _wait(self, column: Column, fix: bool) -> None:
        """``column`` (an event to fix, or a record after one) waits for the run's first time; at ``MAX_WAITING``
        waiting, events and records alike, or past ``MAX_WAITING_BYTES`` of them, the wait is over: they get the Unix
        epoch."""
        state = self.run.state  # type: ignore[union-attr]
        waiting = state["waiting"]
        waiting.append((column, fix))
        state["waiting_bytes"] += column_bytes(column)
        if len(waiting) >= MAX_WAITING or state["waiting_bytes"] > MAX_WAITING_BYTES:
            what = "events" if all(to_fix for _, to_fix in waiting) else "events and records"
            size = f" (over {MAX_WAITING_BYTES >> 20} MiB)" if len(waiting) < MAX_WAITING else ""
            self._borrow(EPOCH, None, f"no time in the run's first {len(waiting)} {what}{size} to borrow; used the Unix "
                                      "epoch")

    def at_pause(self, run: Run) -> list[Column]:
        """The input waits while the run's first events wait for a time: decided with what came (a live stream is not
        held back for a time that may come much later), as at the run's end: the Unix epoch."""
        if not run.state["waiting"]:
            return []
        self._borrow(EPOCH, None, "no valid time in the run before its input paused to borrow; used the Unix epoch")
        held, self._held = self._held, []
        return held

    def end_run(self, run: Run) -> list[dict[str, Any]]:
        if run.state["waiting"]:
            self._borrow(EPOCH, None, "the run has no valid time to borrow; used the Unix epoch")
        return []

    def _borrow(self, stamp: str, i: int | None,
                how: str = "no earlier time in the run to borrow; borrowed the first later timestamp in the run") -> None:
        """The run's time is ``stamp`` from event ``i`` on: what waited for a time takes it, logged one by one, and goes
        back before event ``i`` (with no ``i``: before the run's next event or record, or at its end)."""
        run = self.run
        assert run is not None
        run.state["last"] = stamp
        waiting, run.state["waiting"], run.state["waiting_bytes"] = run.state["waiting"], [], 0
        if not waiting:
            return
        out: list[Column] = []
        for column, fix in waiting:
            if fix:
                event = column[0]
                self.repair("changed", f"timestamp {_state(event)}; {how}", **column_position(column), **_fields(event, stamp))
                column = changed(column, with_field(event, "timestamp", stamp))
            out.append(column)
        self.put_back(out, i)


def _state(event: dict[str, Any]) -> str:
    return "missing" if "timestamp" not in event else f"{named(event['timestamp'])} is not RFC 3339"


def _fields(event: dict[str, Any], fixed: str) -> dict[str, Any]:
    """A repair's fields: the field, its new value, the event's seq, and the value it had (when it had one)."""
    fields: dict[str, Any] = {"field": "timestamp", "value": fixed, "seqBefore": event.get("seq")}
    if "timestamp" in event:
        fields["original"] = event["timestamp"]
    return fields
