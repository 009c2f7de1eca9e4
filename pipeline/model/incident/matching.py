"""Replaying an agent against an incident: answer its tool calls from the recording, and judge what it did.

The recording is the incident's ordered tool calls with their results. A candidate call matches when
its tool name and arguments equal the next recorded call's exactly (call ids may differ); it then
gets that call's recorded result, so repeated identical requests consume separate recorded
responses, in order (a timeout followed by a success replays as a timeout followed by a success).

Divergence kinds, decided at the first difference (the agent is stopped there, and no tool is ever
called for real):

- ``extra_call``: a call after every recorded call was consumed;
- ``reordered_call``: a call that is not the next recorded one but equals a later, unconsumed one;
- ``changed_call``: a call that is neither (other name or other arguments);
- ``missing_call``: the agent finished while recorded calls were still to come;
- ``changed_terminal``: it finished with task_error where the recording has final_output, or the reverse;
- ``changed_final_output``: its final output differs from the recorded one.

What the candidate sent that differs from the recording is withheld: a divergence names the recorded
call and which of its argument names differ, never the candidate's values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from replay.pipeline.engine.exactjson import same_json

MATCHED, DIVERGED, AGENT_ERROR = "matched", "diverged", "agent_error"
TERMINALS = ("final_output", "task_error")
DIVERGENCE_KINDS = ("extra_call", "missing_call", "reordered_call", "changed_call", "changed_terminal", "changed_final_output")


@dataclass(frozen=True)
class RecordedCall:
    call_id: str
    name: str
    args: dict[str, Any]
    ok: bool
    result: Any
    error: Any


def recorded_calls(incident: dict[str, Any]) -> list[RecordedCall]:
    """The incident's calls paired with their results, in order."""
    results = {e["call_id"]: e for e in incident["events"] if e["type"] == "tool_result"}
    return [RecordedCall(e["call_id"], e["name"], e["args"], results[e["call_id"]]["ok"], results[e["call_id"]]["result"],
                         results[e["call_id"]]["error"])
            for e in incident["events"] if e["type"] == "tool_call"]


def same_call(call: RecordedCall, name: Any, args: Any) -> bool:
    return call.name == name and same_json(call.args, args)


@dataclass
class Cursor:
    """Where a replay stands in the recording: the next recorded call to hand out."""

    calls: list[RecordedCall]
    position: int = 0
    answered: list[str] = field(default_factory=list)  # recorded call ids consumed, in order

    def answer(self, name: Any, args: Any) -> RecordedCall | None:
        """The recorded call (with its result) that answers this request, or None: a divergence, stop."""
        if self.position < len(self.calls) and same_call(self.calls[self.position], name, args):
            call = self.calls[self.position]
            self.position += 1
            self.answered.append(call.call_id)
            return call
        return None


def _differing_args(recorded: dict[str, Any], candidate: Any) -> dict[str, Any]:
    if not isinstance(candidate, dict):
        return {"differing": sorted(recorded), "extra": 0, "args_object": False}
    differing = sorted(k for k in recorded if k not in candidate or not same_json(recorded[k], candidate[k]))
    return {"differing": differing, "extra": sum(1 for k in candidate if k not in recorded), "args_object": True}


def _expected(call: RecordedCall) -> dict[str, Any]:
    return {"call_id": call.call_id, "name": call.name, "args": call.args}


def _after_terminal(after: list[dict[str, Any]], terminal_message: dict[str, Any], step: int,
                    terminal: dict[str, Any]) -> dict[str, Any] | None:
    """The divergence of a message the agent sent after its terminal one (``after``: what followed it, in the grace it
    had to exit), if it did: a call after the answer is an extra call, as any call past the recording is; a second
    terminal message, another end."""
    if not after:
        return None
    kind = after[0].get("type")
    sent = terminal_message.get("type")
    if kind == "tool_call":
        return {"kind": "extra_call", "step": step, "message": f"step {step}: the agent made a call after its {sent}",
                "expected": {"terminal": terminal["type"]}, "received": {"withheld": True}}
    return {"kind": "changed_terminal", "step": step, "message": f"the agent sent a {kind} after its {sent}",
            "expected": {"terminal": terminal["type"]}, "received": {"terminal": kind}}


def judge(incident: dict[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The verdict over what the agent sent (its tool_call / final_output / task_error messages, in order):
    ``{"status": "matched"|"diverged", "steps": [...], "divergence": {...}|None}``. Candidate values
    that differ from the recording are not copied into it."""
    calls = recorded_calls(incident)
    terminal = incident["events"][-1]
    steps: list[dict[str, Any]] = []
    cursor = Cursor(calls)

    def verdict(divergence: dict[str, Any] | None) -> dict[str, Any]:
        return {"status": DIVERGED if divergence else MATCHED, "steps": steps, "divergence": divergence,
                "recorded_calls": len(calls), "consumed_calls": cursor.position}

    for at, message in enumerate(messages):
        kind = message.get("type")
        if kind == "tool_call":
            name, args = message.get("name"), message.get("args")
            step = len(steps) + 1
            if cursor.answer(name, args) is not None:
                call = calls[cursor.position - 1]
                steps.append({"step": step, "call_id": call.call_id, "name": call.name, "status": MATCHED,
                              "ok": call.ok})
                continue
            if cursor.position >= len(calls):
                return verdict({"kind": "extra_call", "step": step,
                                "message": f"step {step}: the agent made a call after all {len(calls)} recorded calls",
                                "expected": {"terminal": terminal["type"]}, "received": {"withheld": True}})
            nxt = calls[cursor.position]
            later = next((c for c in calls[cursor.position + 1:] if same_call(c, name, args)), None)
            if later is not None:
                return verdict({"kind": "reordered_call", "step": step,
                                "message": f"step {step}: the agent made recorded call {later.call_id} ({later.name}) "
                                           f"before {nxt.call_id} ({nxt.name})",
                                "expected": _expected(nxt), "received": {"matches_recorded_call": later.call_id}})
            same_name = name == nxt.name
            return verdict({"kind": "changed_call", "step": step,
                            "message": f"step {step}: the agent's call differs from recorded call {nxt.call_id} ({nxt.name}) "
                                       + ("in its arguments" if same_name else "in its tool name"),
                            "expected": _expected(nxt),
                            "received": {"withheld": True, "same_name": same_name}
                            | (_differing_args(nxt.args, args) if same_name else {})})
        if kind in TERMINALS:
            if cursor.position < len(calls):
                nxt = calls[cursor.position]
                return verdict({"kind": "missing_call", "step": len(steps) + 1,
                                "message": f"the agent finished ({kind}) before recorded call {nxt.call_id} ({nxt.name}); "
                                           f"{len(calls) - cursor.position} recorded call(s) never made",
                                "expected": _expected(nxt), "received": {"terminal": kind}})
            if kind != terminal["type"]:
                return verdict({"kind": "changed_terminal", "step": len(steps) + 1,
                                "message": f"the agent ended with {kind}; the recording ends with {terminal['type']}",
                                "expected": {"terminal": terminal["type"]}, "received": {"terminal": kind}})
            if kind == "final_output" and not same_json(terminal["output"], message.get("output")):
                output = message.get("output")
                differing = sorted(k for k in terminal["output"]
                                   if not isinstance(output, dict) or k not in output or not same_json(terminal["output"][k], output[k]))
                extra = sum(1 for k in output if k not in terminal["output"]) if isinstance(output, dict) else 0
                return verdict({"kind": "changed_final_output", "step": len(steps) + 1,
                                "message": "the agent's final output differs from the recorded one",
                                "expected": {"output": terminal["output"]},
                                "received": {"withheld": True, "differing": differing, "extra": extra}})
            steps.append({"step": len(steps) + 1, "terminal": kind, "status": MATCHED})
            return verdict(_after_terminal(messages[at + 1:], message, len(steps) + 1, terminal))
    return verdict({"kind": "missing_call" if cursor.position < len(calls) else "changed_terminal", "step": len(steps) + 1,
                    "message": "the agent sent no terminal message", "expected": {"terminal": terminal["type"]},
                    "received": {"terminal": None}})
