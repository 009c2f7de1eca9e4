"""OpenHands trajectories (a JSON array of actions and observations linked by ``cause``) onto canonical events.

Mapping table (record -> events, in this order):

| record | events |
| --- | --- |
| action ``message`` from the user | ``user_message`` {text} |
| action ``message`` from the agent | ``assistant_message`` {text, model, responseId, usage} |
| action ``system`` | ``system_message`` {text} |
| action ``finish`` | ``assistant_message`` {text, ...} then ``run_completed`` {outputs} |
| any other action (``run``, ``edit``, ``read``, ``think``, ``browse``, ...) | ``assistant_message`` {text: its thought, model, responseId, usage} when it is the first action of a model response (``tool_call_metadata.model_response.id``), then ``tool_called`` {callId, toolName, args} |
| observation ``error`` with a ``cause`` | ``tool_failed`` {callId, toolName, output, error} |
| any other observation with a ``cause`` | ``tool_completed`` {callId, toolName, output, exitCode}; ``tool_failed`` when it says ``success: false`` or its exit code (``extras.exit_code``, ``extras.metadata.exit_code``) is not 0 |
| observation ``error`` without a ``cause`` | ``error`` {its extras, code: ``extras.error_id``, message: its content}: an error the agent met outside a tool call (an LLM rate limit) |
| any other observation without a ``cause`` (``agent_state_changed``, ...) | an event of the observation's name {extras} |
| neither an action nor an observation | ``unknown``, payload {} |

``callId`` is ``tool_call_metadata.tool_call_id`` when the record has one, else the action's ``id``
(and the observation's ``cause``), as a string. Every event gets ``id`` = the record's ``id`` and
``parentId`` = its ``cause``. Timestamps are written without a zone by OpenHands; they are read as
UTC. Run facts: ``runId`` from the file name, ``prompt`` = the first user message, ``model``,
``response`` = the ``finish`` message and ``status`` ``ok`` when the agent finished, ``error`` when its
last state change says ``error`` (its ``reason`` in the error's message); otherwise the trajectory does not say how the
run ended. ``usage`` = {costUsd: the last ``llm_metrics.accumulated_cost``} (each event writes the run's cost so far);
the tokens are the model calls' ``usage``, summed.
"""

from __future__ import annotations

from typing import Any

from replay.pipeline.model.dialects.base import (
    UNKNOWN_TYPE,
    Mapped,
    Mapper,
    Part,
    compact,
    obj,
    tool_result,
    utc_timestamp,
)
from replay.pipeline.model.events import ERROR
from replay.pipeline.model.runs import run_id_from_source
from replay.pipeline.model.validation import is_number


class OpenHandsMapper(Mapper):
    name = "openhands"
    document = True

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self.learn(runId=run_id_from_source(source))
        self._responses: set[str] = set()

    def map(self, record: Any) -> Mapped:
        rid = record.get("id")
        cause = record.get("cause")
        mapped = Mapped([], utc_timestamp(record.get("timestamp")), _id(rid), _id(cause))
        self.learn(timestamp=mapped.timestamp)
        if isinstance(record.get("action"), str):
            mapped.parts = self._action(record)
        elif isinstance(record.get("observation"), str):
            mapped.parts = [self._observation(record)]
        else:
            mapped.parts = [Part(UNKNOWN_TYPE, {})]
        return mapped

    def _action(self, record: dict[str, Any]) -> list[Part]:
        action = record["action"]
        args = obj(record.get("args"))
        source = record.get("source")
        if action == "message" and source == "user":
            text = args.get("content") if isinstance(args.get("content"), str) else record.get("message")
            self.learn(prompt=text)
            return [Part("user_message", compact(text=text))]
        if action == "system":
            return [Part("system_message", compact(text=args.get("content")))]
        meta = obj(record.get("tool_call_metadata"))
        response = obj(meta.get("model_response"))
        response_id = response.get("id") if isinstance(response.get("id"), str) else None
        model = response.get("model") if isinstance(response.get("model"), str) else None
        self.learn(model=model)
        parts: list[Part] = []
        said = action in ("message", "finish")
        new_call = response_id is not None and response_id not in self._responses  # this record is the model call
        if said or new_call:
            text = args.get("content") if action == "message" else record.get("message") if said else args.get("thought")
            parts.append(Part("assistant_message", compact(
                text=text if isinstance(text, str) and text else None, model=model, responseId=response_id,
                usage=response.get("usage") if new_call else None,
            )))
        if response_id is not None:
            self._responses.add(response_id)
        if action == "finish":
            parts.append(Part("run_completed", compact(outputs=args.get("outputs"), message=record.get("message"))))
        elif action != "message":
            parts.append(Part("tool_called", compact(
                callId=_call_id(meta, record.get("id")), toolName=meta.get("function_name") or action,
                action=action, args={k: v for k, v in args.items() if k != "thought"},
            )))
        return parts

    def _observation(self, record: dict[str, Any]) -> Part:
        name = record["observation"]
        extras = obj(record.get("extras"))
        if record.get("cause") is None:
            if name == ERROR:  # an error the agent met outside any tool call (an LLM rate limit)
                content = record.get("content")
                return Part(ERROR, {**extras, **compact(code=extras.get("error_id"),
                                                        message=content if isinstance(content, str) else None)})
            return Part(name or UNKNOWN_TYPE, dict(extras))
        meta = obj(record.get("tool_call_metadata"))
        content = record.get("content")
        exit_code = extras.get("exit_code")
        if exit_code is None and isinstance(extras.get("metadata"), dict):
            exit_code = extras["metadata"].get("exit_code")
        payload = compact(callId=_call_id(meta, record.get("cause")), toolName=meta.get("function_name") or name,
                          observation=name, output=content, exitCode=exit_code)
        if name == ERROR:
            payload["error"] = content if isinstance(content, str) else record.get("message")
        return tool_result(payload, name == ERROR or record.get("success") is False)

    def conclude(self, records: list[Any]) -> None:
        finish = [r for r in records if isinstance(r, dict) and r.get("action") == "finish"]
        states = [r["extras"] for r in records
                  if isinstance(r, dict) and r.get("observation") == "agent_state_changed" and isinstance(r.get("extras"), dict)]
        if finish:
            self.learn(status="ok", response=finish[-1].get("message"))
        elif states and states[-1].get("agent_state") == "error":
            reason = states[-1].get("reason")
            self.learn(status="error", error={"code": "agent_state_error", "message": f"the agent's last state was error: {reason}"
                                              if isinstance(reason, str) and reason else "the agent's last state was error"})
        costs = [obj(r.get("llm_metrics")).get("accumulated_cost") for r in records if isinstance(r, dict)]
        costs = [c for c in costs if is_number(c)]
        if costs:  # (the run's cost so far, as each event writes it: the last is the run's)
            self.learn(usage={"costUsd": costs[-1]})
        self.final = True


def _id(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    return str(value) if isinstance(value, int | str) and str(value) else None


def _call_id(meta: dict[str, Any], fallback: Any) -> str | None:
    cid = meta.get("tool_call_id")
    return cid if isinstance(cid, str) and cid else _id(fallback)
