"""InsertTerminalEvent: ends every run with run_completed or run_failed, inventing one when it is missing."""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.model.events import (
    RUN_FAILED,
    TERMINAL_TYPES,
    UNKNOWN_END,
    event_type,
    is_timestamp,
    parse_timestamp,
    same_shape_utc,
    terminal_of_status,
)
from replay.pipeline.model.runs import Run, RunScoped
from replay.stages.ensure_run_started import synthetic_event


def latest_timestamp(events: list[dict[str, Any]], start: int, end: int, default: Any) -> Any:
    """The latest time among events ``start``..``end``-1 and ``default`` (a time so far, or None): a run's end comes after
    all of it, whatever order its events were written in (the last one written may be earlier: check_order notes it).
    Stamps of one shape in UTC compare as text; others by the instant they name (one that names none is passed over)."""
    stamps = [stamp for i in range(start, end) if (stamp := events[i].get("timestamp")) is not None]
    if default is not None:
        stamps.append(default)
    if not stamps:
        return None
    if same_shape_utc(stamps):
        return max(stamps)
    moments = [(moment, k) for k, stamp in enumerate(stamps) if (moment := parse_timestamp(stamp)) is not None]
    return stamps[max(moments)[1]] if moments else stamps[-1]


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
        if run.state["terminal"]:
            return  # (it ends as it is: its time is not needed)
        run.state["terminal"] = any(event_type(events[i]) in TERMINAL_TYPES for i in range(start, end))
        if not run.state["terminal"]:
            run.state["last"] = latest_timestamp(events, start, end, run.state["last"])

    def end_run(self, run: Run) -> list[dict[str, Any]]:
        if run.state["terminal"]:
            return []
        facts = run.facts or {}
        status = facts.get("status")
        ts = ended_at(facts, run.state["last"] or facts.get("timestamp"))
        payload: dict[str, Any] = {}
        etype = terminal_of_status(status)
        decision = "inferred" if etype is None else "from run status"
        if etype is not None:
            why = f"the run record says status {status}"
            error = facts.get("error")
            if etype == RUN_FAILED and isinstance(error, dict):
                payload = {"error": error}
        else:
            # No run facts: the journal just stops. That is what an interrupted run leaves behind, and a
            # success we cannot see must not be claimed, so the run is marked failed with the reason.
            etype, why = RUN_FAILED, ("status unknown: no run record tells how the run ended, and a journal that stops "
                                      "without a terminal event may have been interrupted or had its end left unwritten")
            payload = dict(UNKNOWN_END)
        self.repair("inserted", f"run has no terminal event; inserted {etype} ({why})", field="type", value=etype,
                    decision=decision)
        return [synthetic_event(etype, run, ts, None, payload)]
