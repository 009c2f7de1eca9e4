"""ReportRunShape: notes runs whose shape is not a whole run's (no run_started first, a second one, events after the end, no end, an end its run record's status contradicts, alias types); changes nothing.

What heal repairs (a missing ``run_started``, a missing terminal event, an alias type) it notes with the
advice to heal; what heal leaves as it is (a second ``run_started``, events after the terminal event) it
notes as what it is. One notice per fault and place, on the notices port, as heal's ``check_order``
notes a timestamp going back: nothing here fails a command or changes an event. Runs mapped from another
agent's log are left alone (their formats write no run_started and no end).
"""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.model.dialects.base import ORIGIN_KEY
from replay.pipeline.model.events import RUN_STARTED, TERMINAL_TYPES, terminal_of_status
from replay.pipeline.model.run_checks import RunCheck
from replay.pipeline.model.runner_facts import capture_failure
from replay.pipeline.model.runs import Run
from replay.stages.alias import resolved_aliases

_WATCHED = frozenset({RUN_STARTED, *TERMINAL_TYPES})


@register("check_runs")
class ReportRunShape(RunCheck):
    summary = ("Report (not repair) runs that do not begin with run_started, begin twice, go on after their terminal "
               "event or have none, or use a type heal renames, on the notices port.")
    ports = ("errors", "notices")
    notice_code = "E_RUN_NOT_WHOLE"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.aliases = resolved_aliases(True, ())
        self._last: tuple[Batch, int] | None = None  # the run's last event so far: where its missing end is noted

    def begin_run(self, run: Run) -> None:
        run.state["ended"] = None  # the seq of its terminal event, once one came
        run.state["after"] = False  # an event after it was noted
        # another agent's log, mapped (its run record, or its first event, says from what): its format writes no
        # run_started and no end, so their absence says nothing; only replay's own journals are judged
        run.state["mapped"] = ORIGIN_KEY in (run.facts or {})

    def on_events(self, batch: Batch, start: int, end: int) -> None:
        run = self.run
        events = batch.events
        assert run is not None and events is not None
        if run.state["mapped"]:
            return
        if not run.events and ORIGIN_KEY in events[start]:
            run.state["mapped"] = True
            return
        types = [events[i].get("type") for i in range(start, end)]
        self._last = (batch, end - 1)
        # the usual stretch: inside a run, no type that begins or ends one, none heal renames (two C-level passes)
        try:
            plain = _WATCHED.isdisjoint(types) and self.aliases.keys().isdisjoint(types)
        except TypeError:  # (a type that is an object or an array: validate reports it)
            plain = False
        if plain and run.events and run.state["ended"] is None:
            return  # (run.events is counted on by RunScoped)
        super().on_events(batch, start, end)

    def on_event(self, batch: Batch, i: int, event: dict[str, Any]) -> None:
        run = self.run
        assert run is not None
        kind, seq, state = event.get("type"), event.get("seq"), run.state
        kind = kind if kind.__class__ is str else None  # (not a type: validate reports it)
        if state["ended"] is not None and not state["after"]:
            state["after"] = True
            self.notice(f"the run goes on after its terminal event (seq {state['ended']}): an event of type {kind!r} "
                        "comes after it; heal leaves it where it is", batch, i, field="type", seqBefore=seq, value=kind)
        if not run.events and kind != RUN_STARTED:
            self.notice(f"the run begins with an event of type {kind!r}, not run_started; `replay heal` inserts one",
                        batch, i, field="type", seqBefore=seq, value=kind)
        elif run.events and kind == RUN_STARTED:
            self.notice("a second run_started in one run; heal leaves it where it is (a run resumed under the same "
                        "runId: give the resumed run an id of its own)", batch, i, field="type", seqBefore=seq, value=kind)
        if kind in TERMINAL_TYPES and state["ended"] is None:
            state["ended"] = seq
            status = (run.facts or {}).get("status")
            said = terminal_of_status(status)
            if said is not None and said != kind:
                self.notice(_disagree(kind, status, (run.facts or {}).get("error")), batch, i, field="type",
                            seqBefore=seq, value=kind)
        renamed = self.aliases.get(kind) if kind is not None else None
        if renamed is not None:
            self.notice(f"type {kind!r} is an alias of {renamed!r}; `replay heal` renames it", batch, i,
                        field="type", seqBefore=seq, value=kind)

    def end_run(self, run: Run) -> list[dict[str, Any]]:
        last, self._last = self._last, None
        if not run.events and run.facts is not None and not run.state["mapped"]:
            self.notice("the run record has no events: `replay heal` gives the run a run_started and a terminal event "
                        "(at the record's time, else at 1970-01-01, the time of nothing)", field="runId")
        elif run.events and run.state["ended"] is None and not run.state["mapped"]:
            batch, i = last if last is not None else (None, None)
            self.notice("the run has no terminal event (run_completed or run_failed): it did not end, or its end was "
                        "not written; `replay heal` adds one", batch, i, field="type")
        return []


def _disagree(kind: str, status: Any, error: Any) -> str:
    """What a run whose first terminal event ``kind`` its record's ``status`` contradicts is told: who decided which is
    not known in general (the writer of both, or a capture that failed the run: its ``error`` then says so)."""
    said = (f"the run ends with {kind} but its run record says status {status!r} (a report counts the run as an "
            "error); heal leaves both as they are: the events and the run record disagree")
    code = capture_failure(error) if status == "error" else None
    if code is None:
        return said
    return (f"{said}. The record's error, {code}, is capture's: the runner failed as capture ran it (a non-zero exit, a "
            "timeout, output it could not read), whatever its events say; the raw capture (*.raw.json) and the heal log "
            "say what happened")
