"""The step and turn of each event mapped from another agent's log (the ``dialect`` stage numbers them here).

A user message begins a turn and a model call a step: the rule the OTLP export makes its ``chat`` spans by
(``modelcalls.ModelCalls``), so step N is the Nth ``chat`` span of the run's own (a sub-agent's calls are spans too,
but number no step): an assistant message of another
response, and model output with no assistant message (Codex's response that only calls tools), and an error that is a
failed call of its own. A tool result is in its call's step and turn, whatever came between (a sub-agent's work, other calls'
results), so ``walk --at STEP`` ends a step with its calls answered. A call written again (``OpenCalls.written_again``: a
resumed session's log repeats records) is that call, as the export reads it (one ``execute_tool`` span, no model call):
it is in that call's step and turn, and neither begins a step nor moves one on. A sidechain's records (Claude Code's sub-agent,
``payload.sidechain: true``) are the sub-agent's, inside the call that started it: they begin neither a turn nor a step
of the run's own, and are numbered with that call's step (the run's latest).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from replay.pipeline.model.modelcalls import NEW, ModelCalls
from replay.pipeline.model.toolcalls import CALLED, RESULTS, OpenCalls, call_id


@dataclass
class Numbering:
    """The steps and turns of one run's mapped events, in their order."""

    step: int = 0
    turn: int = 0
    model_calls: ModelCalls = field(default_factory=ModelCalls)  # which model call of the run's own an event is of
    open_calls: OpenCalls[tuple[int, int]] = field(default_factory=OpenCalls)  # the calls with an id not answered yet
    answered: dict[str, tuple[int, int]] = field(default_factory=dict)  # each answered call id's (step, turn)

    def of(self, kind: str, payload: dict[str, Any]) -> tuple[int, int]:
        """The (step, turn) of the next event, of type ``kind`` (0: none yet)."""
        cid = call_id(payload) if kind in CALLED or kind in RESULTS else None
        if cid and kind in CALLED and self.open_calls.written_again(cid, payload):  # (that call's record again)
            return self._of(cid)
        if payload.get("sidechain") is not True:
            if kind == "user_message" and not payload.get("meta"):
                self.turn += 1
            if self.model_calls.of(kind, payload) == NEW:
                self.step += 1
        here = self.step, self.turn
        if cid is None:
            return here
        if kind in CALLED:
            self.open_calls.open(cid, "", here, payload)
            return here
        answers = self.open_calls.close_id(cid)
        if answers is not None:
            self.answered[cid] = answers
            return answers
        return self.answered.get(cid, here)  # (a result of a call answered already: its call's; else one without its call)

    def _of(self, cid: str) -> tuple[int, int]:
        """The (step, turn) of the call of id ``cid`` (made already, open or answered)."""
        return self.open_calls.by_id.get(cid) or self.answered[cid]
