"""SynthesizeAssistantMessage: adds the run's final response as an assistant_message when no event carries it."""

from __future__ import annotations

from typing import Any

from replay.pipeline.batch import Batch
from replay.pipeline.events import ASSISTANT_MESSAGE, TERMINAL_TYPES
from replay.pipeline.runs import Run, RunScoped
from replay.stages.ensure_run_started import synthetic_event


class SynthesizeAssistantMessage(RunScoped):
    name = "synthesize_assistant_message"
    summary = "Insert a synthetic assistant_message from the run record's response when the run has none."

    def begin_run(self, run: Run) -> None:
        response = (run.facts or {}).get("response")
        run.state.update(response=response if isinstance(response, str) and response else None, seen=False, last=None)

    def on_event(self, batch: Batch, i: int, event: dict[str, Any]) -> None:
        run = self.run
        assert run is not None
        run.state["last"] = event.get("timestamp", run.state["last"])
        etype = event.get("type")
        if etype == ASSISTANT_MESSAGE:
            run.state["seen"] = True
        elif etype in TERMINAL_TYPES and run.state["response"] and not run.state["seen"]:
            self.hold(batch, i)  # the message goes before the terminal event if the run ends here

    def end_run(self, run: Run) -> list[dict[str, Any]]:
        if not run.state["response"] or run.state["seen"]:
            return []
        self.repair("inserted", "the run has a final response but no assistant_message; inserted one from it",
                    field="type", value=ASSISTANT_MESSAGE)
        ts = run.state["last"] or (run.facts or {}).get("timestamp")
        return [synthetic_event(ASSISTANT_MESSAGE, run.run_id, ts, None, {"response": run.state["response"]})]
