"""The step and turn of each event mapped from another agent's log (the ``dialect`` stage numbers them here).

A user message begins a turn and a model call (an assistant message of another message or response id than the one
before) a step. A tool result is in its call's step and turn, whatever came between (a sub-agent's work, other calls'
results), so ``walk --at STEP`` ends a step with its calls answered. A sidechain's records (Claude Code's sub-agent,
``payload.sidechain: true``) are the sub-agent's, inside the call that started it: they begin neither a turn nor a step
of the run's own, and are numbered with that call's step (the run's latest).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from replay.pipeline.model.toolcalls import CALLED, RESULTS, call_id, response_id


@dataclass
class Numbering:
    """The steps and turns of one run's mapped events, in their order."""

    step: int = 0
    turn: int = 0
    call: Any = None  # the model call of the last assistant message (a message or response id)
    calls: dict[str, tuple[int, int]] = field(default_factory=dict)  # each call id's (step, turn), for its result

    def of(self, kind: str, payload: dict[str, Any]) -> tuple[int, int]:
        """The (step, turn) of the next event, of type ``kind`` (0: none yet)."""
        if payload.get("sidechain") is not True:
            if kind == "user_message" and not payload.get("meta"):
                self.turn += 1
            if kind == "assistant_message":
                call = response_id(payload)
                if call is None or call != self.call:
                    self.step += 1
                self.call = call
        here = self.step, self.turn
        if kind in CALLED:
            cid = call_id(payload)
            if cid is not None:
                self.calls[cid] = here
        elif kind in RESULTS:
            cid = call_id(payload)
            if cid is not None:
                return self.calls.get(cid, here)
        return here
