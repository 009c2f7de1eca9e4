"""Which model call each event of a run is of: one rule for the steps of another agent's log (``dialects.numbering``)
and the OTLP export's ``chat`` spans (``report.otlp``), so a step is a ``chat`` span.

A model call begins at model output that comes after input (a prompt, a tool result, an error: ``awaiting``): an
``assistant_message``, or, with none, a ``tool_called`` or ``reasoning`` (Codex writes a response that only calls tools,
or reasons then calls them, with no message and no response id). Later output joins it: an ``assistant_message`` of
its response id (``messageId`` / ``responseId``: Claude Code writes one record per content block), the
``assistant_message`` that answers a call that gave only reasoning so far (``thinking``: Codex names no response), its
tool calls. An ``error`` (an API error, a rate limit) is a model call that failed: the call that gave only reasoning
so far (a stream cut off), or the one of the response it names, else a call of its own (each retry's).
"""

from __future__ import annotations

from typing import Any

from replay.pipeline.model.events import ASSISTANT_MESSAGE, ERROR, TOOL_UNANSWERED
from replay.pipeline.model.toolcalls import CALLED, RESULTS, response_id

# the event begins a model call; it is more of the current one; it is the answer of the current one (an
# ``assistant_message`` after the call gave only reasoning: what it says of the call, its model and response, is news)
NEW, SAME, ANSWER = "new", "same", "answer"
REASONING = "reasoning"
_INPUT = RESULTS | {TOOL_UNANSWERED, "user_message"}  # what the model is asked again after


class ModelCalls:
    """The model calls of one run's events, fed in order (``of``)."""

    __slots__ = ("awaiting", "failed", "key", "thinking")

    def __init__(self) -> None:
        self.key: Any = None  # the response id of the current call
        self.awaiting = True  # input came that no model call has answered yet
        self.thinking = False  # the current call gave only reasoning so far: an assistant_message next is its answer
        self.failed = False  # the current call failed (an error ended it): another error is another call's

    def of(self, kind: Any, payload: dict[str, Any]) -> str | None:
        """``NEW`` when the event of (canonical) type ``kind`` begins a model call, ``SAME`` when it is more of the
        current one (its output, or the error that ended it), ``ANSWER`` when it is the current call's answer, None when it is no model call's."""
        if kind == ASSISTANT_MESSAGE:
            key = response_id(payload)
            if key is not None and key == self.key:
                went = SAME
            elif self.thinking and (key is None or self.key is None):
                went = ANSWER
                self.key = key if key is not None else self.key
            else:
                went = self._begin(key)
            self.awaiting = self.thinking = False
            return went
        if kind in CALLED or kind == REASONING:
            went = SAME
            if self.awaiting:  # model output with no assistant_message: still a model call
                went = self._begin(None)
                self.awaiting, self.thinking = False, kind == REASONING
            if kind in CALLED:
                self.thinking = False
            return went
        if kind == ERROR:
            key = response_id(payload)
            went = SAME if not self.failed and (self.thinking or (key is not None and key == self.key)) else self._begin(None)
            self.failed, self.awaiting, self.thinking = True, True, False  # (the model is asked again, or the run ends)
            return went
        if kind in _INPUT:
            self.awaiting, self.thinking = True, False
        return None

    def _begin(self, key: Any) -> str:
        self.key, self.failed = key, False
        return NEW
