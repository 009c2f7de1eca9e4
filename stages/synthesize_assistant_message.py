"""SynthesizeAssistantMessage: adds the run's final response as an assistant_message when no event carries it."""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.batch import Batch, Column, invented
from replay.pipeline.engine.registry import register
from replay.pipeline.model.events import ASSISTANT_MESSAGE, TERMINAL_TYPES, event_type
from replay.pipeline.model.runs import Run, RunScoped
from replay.stages.ensure_run_started import synthetic_event
from replay.stages.ensure_terminal import latest_timestamp


@register("synthesize_assistant_message")
class SynthesizeAssistantMessage(RunScoped):
    summary = "Insert a synthetic assistant_message from the run record's response when the run has none."

    def begin_run(self, run: Run) -> None:
        response = (run.facts or {}).get("response")
        run.state.update(response=response if isinstance(response, str) and response else None, seen=False, last=None)

    def on_events(self, batch: Batch, start: int, end: int) -> None:
        run = self.run
        events = batch.events
        assert run is not None and events is not None
        state = run.state
        if not state["response"] or state["seen"]:
            return  # (no message is made: its time is not needed)
        state["last"] = latest_timestamp(events, start, end, state["last"])
        if any(events[i].get("type") == ASSISTANT_MESSAGE for i in range(start, end)):
            state["seen"] = True
        elif event_type(events[end - 1]) in TERMINAL_TYPES:
            # If the run ends here, the message goes before its terminal event: hold the terminal
            # back; it returns unchanged before the run's next event or after the message.
            self.hold(batch, end - 1)

    def at_pause(self, run: Run) -> list[Column]:
        """The input waits after the run's terminal event, held: decided as if the run ended there (the message, then
        the terminal event), not held until the next run begins."""
        if not self._held:
            return []
        held, self._held = self._held, []
        message = self.end_run(run)
        run.state["seen"] = True  # (made: none is made again at the run's end)
        return [*map(invented, message), *held]

    def end_run(self, run: Run) -> list[dict[str, Any]]:
        if not run.state["response"] or run.state["seen"]:
            return []
        self.repair("inserted", "the run has a final response but no assistant_message; inserted one from it",
                    field="type", value=ASSISTANT_MESSAGE)
        ts = run.state["last"] or (run.facts or {}).get("timestamp")
        return [synthetic_event(ASSISTANT_MESSAGE, run, ts, None, {"response": run.state["response"]})]
