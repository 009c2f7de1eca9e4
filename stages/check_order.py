"""ReportTimestampOrder: notes events whose timestamp goes back in time; it leaves them where they are."""

from __future__ import annotations

from typing import Any

from replay.pipeline.batch import Batch
from replay.pipeline.events import parse_timestamp
from replay.pipeline.runs import Run, RunScoped


class ReportTimestampOrder(RunScoped):
    name = "check_order"
    summary = "Report (not reorder) events whose timestamp is earlier than the event before them."

    def begin_run(self, run: Run) -> None:
        run.state["last"] = None

    def on_event(self, batch: Batch, i: int, event: dict[str, Any]) -> None:
        run = self.run
        assert run is not None
        moment = parse_timestamp(event.get("timestamp"))
        if moment is None:
            return
        last = run.state["last"]
        if last is not None and moment < last[0]:
            self.repair("reported", f"timestamp {event['timestamp']} is earlier than the previous event's {last[1]}; "
                        "kept in journal order", batch, i, field="timestamp", seqBefore=event.get("seq"),
                        value=event["timestamp"])
        if last is None or moment >= last[0]:
            run.state["last"] = (moment, event.get("timestamp"))
