"""FixTimestamps: turns invalid or missing timestamps into RFC 3339, logging the original value."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.model.events import EPOCH, format_timestamp, is_timestamp, read_iso, with_field
from replay.pipeline.model.runs import Run, RunScoped
from replay.pipeline.model.validation import named


def convert(value: Any) -> str | None:
    """An RFC 3339 form of a timestamp written another way (epoch seconds/ms, ISO without zone, a leap second too),
    or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = value / 1000.0 if abs(value) >= 1e11 else float(value)
        try:
            return format_timestamp(datetime.fromtimestamp(seconds, UTC))
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        read = read_iso(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
        return None if read is None else format_timestamp(*read)
    return None


@register("fix_timestamp")
class FixTimestamps(RunScoped):
    summary = "Repair invalid timestamps: convert epoch/zone-less forms, else borrow the previous event's time."

    def begin_run(self, run: Run) -> None:
        facts = run.facts or {}
        run.state["last"] = facts.get("timestamp") if is_timestamp(facts.get("timestamp")) else None

    def on_events(self, batch: Batch, start: int, end: int) -> None:
        events = batch.events
        assert events is not None and self.run is not None
        if all(is_timestamp(events[i].get("timestamp")) for i in range(start, end)):
            self.run.state["last"] = events[end - 1]["timestamp"]
        else:
            super().on_events(batch, start, end)

    def on_event(self, batch: Batch, i: int, event: dict[str, Any]) -> None:
        run = self.run
        assert run is not None
        value = event.get("timestamp")
        if is_timestamp(value):
            run.state["last"] = value
            return
        fixed = convert(value)
        if fixed is not None:
            how = f"converted {named(value)} to RFC 3339"
        elif run.state["last"] is not None:
            fixed, how = run.state["last"], "borrowed the previous event's timestamp"
        else:
            fixed, how = EPOCH, "no earlier time in the run to borrow; used the Unix epoch"
        batch.replace(i, with_field(event, "timestamp", fixed))
        fields: dict[str, Any] = {"field": "timestamp", "value": fixed, "seqBefore": event.get("seq")}
        if "timestamp" in event:
            fields["original"] = value
        state = "missing" if "timestamp" not in event else f"{named(value)} is not RFC 3339"
        self.repair("changed", f"timestamp {state}; {how}", batch, i, **fields)
        run.state["last"] = fixed
