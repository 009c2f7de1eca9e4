"""ReportTimestampOrder: notes events whose timestamp goes back in time; it leaves them where they are."""

from __future__ import annotations

import itertools
from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.model.events import leap_rank, parse_timestamp, same_shape_utc
from replay.pipeline.model.run_checks import RunCheck
from replay.pipeline.model.runs import Run


@register("check_order")
class ReportTimestampOrder(RunCheck):
    summary = "Report (not reorder) events whose timestamp is earlier than the event before them, on the notices port."
    ports = ("errors", "notices")
    notice_code = "E_TIMESTAMP_BACKWARDS"

    def begin_run(self, run: Run) -> None:
        run.state["last"] = None  # the previous event's timestamp (text), its instant parsed when needed
        run.state["moment"] = None

    def on_events(self, batch: Batch, start: int, end: int) -> None:
        run = self.run
        events = batch.events
        assert run is not None and events is not None
        stamps = [events[i].get("timestamp") for i in range(start, end)]
        last = run.state["last"]
        chain = stamps if last is None else [last, *stamps]
        # (text order is time order for these: a leap second, 23:59:60.x, after 23:59:59.x, before the next day)
        if same_shape_utc(chain) and all(a <= b for a, b in itertools.pairwise(chain)):
            run.state["last"], run.state["moment"] = stamps[-1], None
            return
        super().on_events(batch, start, end)

    def on_event(self, batch: Batch, i: int, event: dict[str, Any]) -> None:
        run = self.run
        assert run is not None
        moment = parse_timestamp(event.get("timestamp"))
        if moment is None:
            return
        state = run.state
        if state["last"] is not None and state["moment"] is None:
            state["moment"] = parse_timestamp(state["last"])
        before = state["moment"]
        # one instant (a leap second counts as 23:59:59.999999): the leap second's fraction says which comes first
        if before is not None and moment <= before and (
                moment < before or leap_rank(event["timestamp"]) < leap_rank(state["last"])):
            self.notice(f"timestamp {event['timestamp']} is earlier than the previous event's {state['last']}; "
                        "kept in journal order", batch, i, field="timestamp", seqBefore=event.get("seq"),
                        value=event["timestamp"])
        # the next event is held to this one (the one before it), not to the latest time so far: one step back is one
        # notice, not one for every event after a time too far ahead
        state["last"], state["moment"] = event["timestamp"], moment
