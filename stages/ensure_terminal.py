"""InsertTerminalEvent: ends every run with run_completed or run_failed, inventing one when it is missing."""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.model.events import (
    RUN_FAILED,
    TERMINAL_OF_STATUS,
    TERMINAL_TYPES,
    UNKNOWN_END,
    event_type,
    is_timestamp,
    parse_timestamp,
)
from replay.pipeline.model.runs import Run, RunScoped
from replay.stages.ensure_run_started import synthetic_event


def last_timestamp(events: list[dict[str, Any]], start: int, end: int, default: Any) -> Any:
    """The timestamp of the last event in ``start``..``end``-1 that has one."""
    for i in range(end - 1, start - 1, -1):
        ts = events[i].get("timestamp")
        if ts is not None:
            return ts
    return default


def ended_at(facts: dict[str, Any], last: Any) -> Any:
    """The time of the end heal gives a run: when its run record says the run ended (``timings.endedAt``, which capture
    writes: a runner killed at its timeout wrote no event then), if that is no earlier than ``last`` (the run's last
    event's time, or its start); else ``last``."""
    timings = facts.get("timings")
    ended = timings.get("endedAt") if isinstance(timings, dict) else None
    if not is_timestamp(ended):
        return last
    until, since = parse_timestamp(ended), parse_timestamp(last)
    return ended if until is not None and (since is None or until >= since) else last


@register("ensure_terminal")
class InsertTerminalEvent(RunScoped):
    summary = "Insert run_completed/run_failed (from the run's status) when a run has no terminal event."

    def begin_run(self, run: Run) -> None:
        run.state.update(terminal=False, last=None)

    def on_events(self, batch: Batch, start: int, end: int) -> None:
        run = self.run
        events = batch.events
        assert run is not None and events is not None
        if not run.state["terminal"]:
            run.state["terminal"] = any(event_type(events[i]) in TERMINAL_TYPES for i in range(start, end))
        run.state["last"] = last_timestamp(events, start, end, run.state["last"])

    def end_run(self, run: Run) -> list[dict[str, Any]]:
        if run.state["terminal"]:
            return []
        facts = run.facts or {}
        status = facts.get("status")
        ts = ended_at(facts, run.state["last"] or facts.get("timestamp"))
        payload: dict[str, Any] = {}
        etype = TERMINAL_OF_STATUS.get(status) if status.__class__ is str else None
        decision = "inferred" if etype is None else "from run status"
        if etype is not None:
            why = f"the run record says status {status}"
            error = facts.get("error")
            if etype == RUN_FAILED and isinstance(error, dict):
                payload = {"error": error}
        else:
            # No run facts: the journal just stops. That is what an interrupted run leaves behind, and a
            # success we cannot see must not be claimed, so the run is marked failed with the reason.
            etype, why = RUN_FAILED, "no run record tells how the run ended; a journal that stops without a terminal event is treated as an interrupted run"
            payload = dict(UNKNOWN_END)
        self.repair("inserted", f"run has no terminal event; inserted {etype} ({why})", field="type", value=etype,
                    decision=decision)
        return [synthetic_event(etype, run, ts, None, payload)]
