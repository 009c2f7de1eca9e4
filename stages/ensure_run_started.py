"""InsertRunStarted: begins every run with a run_started event, inventing one when it is missing."""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.batch import Batch, Column, invented
from replay.pipeline.engine.registry import register
from replay.pipeline.model.events import EPOCH, RUN_STARTED, is_timestamp
from replay.pipeline.model.runs import Run, RunScoped, run_id_of
from replay.pipeline.model.validation import MISSING, state_of
from replay.stages.fix_timestamp import convert


def synthetic_event(event_type: str, run: Run, timestamp: Any, seq: Any, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    """An event invented for ``run``, in canonical key order; ``renumber`` gives it its final seq."""
    return {
        "seq": seq if isinstance(seq, int) and not isinstance(seq, bool) and seq >= 1 else 1,
        "timestamp": timestamp if is_timestamp(timestamp) else convert(timestamp) or EPOCH,  # (a run record's epoch number)
        "type": event_type,
        "runId": run_id_of(run),
        "payload": payload or {},
        "synthetic": True,
    }


LOOK_AHEAD = 16  # how many of a run's first events are held while looking for its own run_started (memory bounded)


@register("ensure_run_started")
class InsertRunStarted(RunScoped):
    summary = ("Begin each run with run_started: its own, moved to its start when it comes among its first "
               f"{LOOK_AHEAD} events after others, else a synthetic one inserted before its first event.")

    def begin_run(self, run: Run) -> None:
        # while looking for the run's own run_started: the columns taken out of the stream so far (events and the
        # records among them, in order), how many are events, and where the first was
        run.state["waiting"] = None

    def on_events(self, batch: Batch, start: int, end: int) -> None:
        run = self.run
        events = batch.events
        assert run is not None and events is not None
        waiting = run.state["waiting"]
        if waiting is False:  # (decided: begun by its own run_started, moved, or an invented one)
            return
        if waiting is None:
            if run.events or events[start].get("type") == RUN_STARTED:
                run.state["waiting"] = False
                return  # (the usual run: begun by its run_started)
            event = events[start]
            waiting = run.state["waiting"] = {"columns": [], "events": 0, "first": event, "where": batch.where(start)}
        for i in range(start, end):
            event = events[i]
            if event.get("type") == RUN_STARTED:
                self._move(batch, i, waiting)
                return
            if waiting["events"] == LOOK_AHEAD:
                self.insert_before(i, self._invented(waiting))
                self.put_back(waiting["columns"], i)
                run.state["waiting"] = False
                return
            waiting["columns"].append(self.take_out(batch, i))
            waiting["events"] += 1

    def on_record(self, batch: Batch, i: int, record: dict[str, Any]) -> None:
        waiting = self.run.state["waiting"] if self.run is not None else None
        if waiting:  # (a record among the events held: it stays where it was among them)
            waiting["columns"].append(self.take_out(batch, i))
            return
        super().on_record(batch, i, record)

    def _move(self, batch: Batch, i: int, waiting: dict[str, Any]) -> None:
        """The run's own run_started came at column ``i``, after the events held: it goes first, they after it."""
        run = self.run
        assert run is not None
        began = _began_with(waiting["first"])
        self.put_back([self.take_out(batch, i), *waiting["columns"]], i)
        run.state["waiting"] = False
        self.repair("moved", f"run began with {began}; its own run_started came {waiting['events']} event(s) later and "
                    "was moved to its start", batch, i, field="type", value=RUN_STARTED)

    def _invented(self, waiting: dict[str, Any]) -> dict[str, Any]:
        """A synthetic run_started for a run that has none among its first events (logged at the first)."""
        run = self.run
        assert run is not None
        first = waiting["first"]
        ts = first.get("timestamp") or (run.facts or {}).get("timestamp")
        self.repair("inserted", f"run began with {_began_with(first)}; inserted run_started before it",
                    field="type", value=RUN_STARTED, **waiting["where"])
        return synthetic_event(RUN_STARTED, run, ts, first.get("seq"))

    def at_pause(self, run: Run) -> list[Column]:
        """The input waits while the run's first events are held: decided with those (a live stream is not held back
        for the next ``LOOK_AHEAD``): none was its run_started, one is inserted before them (a run_started after the
        pause stays where it comes)."""
        waiting = run.state["waiting"]
        if not waiting:
            return []
        run.state["waiting"] = False
        return [invented(self._invented(waiting)), *waiting["columns"]]

    def end_run(self, run: Run) -> list[dict[str, Any]]:
        waiting = run.state["waiting"]
        if waiting:  # the run ended while its first events were held: none was its run_started
            run.state["waiting"] = False
            self.put_back(waiting["columns"])  # (after what this returns: the synthetic run_started first)
            return [self._invented(waiting)]
        if run.events:
            return []
        ts = (run.facts or {}).get("timestamp")
        self.repair("inserted", "run has no events; inserted run_started", value=RUN_STARTED)
        return [synthetic_event(RUN_STARTED, run, ts, 1)]


def _began_with(event: dict[str, Any]) -> str:
    etype = event.get("type", MISSING)
    if isinstance(etype, str):
        return repr(etype)
    return "an event with no type" if etype is MISSING else f"an event whose type {state_of(etype)}"
