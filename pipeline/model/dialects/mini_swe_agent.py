"""mini-swe-agent trajectories (``*.traj.json``) onto canonical events.

A trajectory is one JSON document: ``{"info": {...}, "messages": [...], "trajectory_format": ...}``,
or (early versions) the bare ``messages`` array. Each message is a record. Mapping table:

| message | events |
| --- | --- |
| role ``system`` | ``system_message`` {text} |
| role ``user`` right after an assistant message that ran a command | ``tool_completed`` {callId, toolName: bash, output, exitCode}; ``tool_failed`` (with ``error``) when that code is not 0, or when it is the ``timeout_template``'s (then ``error``: ``command timed out and was killed``) |
| any other role ``user`` | ``user_message`` {text} |
| role ``assistant`` | ``assistant_message`` {text, usage}; then, when its text holds exactly one ```` ```mswea_bash_command ```` (or ```` ```bash ````) block, ``tool_called`` {callId: ``step-N``, toolName: bash, args: {command}}; with native ``tool_calls``, one ``tool_called`` per call |
| role ``tool`` | ``tool_completed`` {callId: ``tool_call_id``, output, exitCode}; ``tool_failed`` (with ``error``) when that code is not 0 |
| any other role X | an event of type X {text} |
| not a message (no ``role``) | ``unknown``, payload {} |

A result's ``exitCode`` is the message's ``extra.returncode`` (v2 writes it), else the ``<returncode>`` in its text
(of at most 10 digits, ``base.EXIT_CODE_TEXT``: a tag of a longer number, or of no number, gives no code).
A command that ran past its time is killed; v1 then writes no return code but its ``timeout_template``, which opens
``The last command <command>COMMAND</command> timed out and has been killed.`` (COMMAND the one the assistant ran):
a text that opens so (not one that says it further on: what the command printed follows) is a failed call, its
``<returncode>`` words, if any, the command's output. (v2 gives a timed-out command return code -1.)

Timestamps: ``extra.timestamp`` (epoch seconds) where the version writes one; early trajectories
record no time at all (heal then reports the missing timestamps). Run facts: ``runId`` the trajectory's
``instance_id`` (SWE-bench runs write one) or else from the file name, ``prompt`` = the first user message,
``model`` from ``info.config``, ``status`` ``ok`` when ``info.exit_status`` is ``Submitted`` (else ``error``
with that status as its code), ``response`` = ``info.submission``; a bare array says ``ok`` only when the
last command was the submit command.

A JSONL file of trajectories, one per line (a dataset of runs), is a run per line: each is mapped on its own,
seq from 1, and written back as its own line.
"""

from __future__ import annotations

import re
from typing import Any

from replay.pipeline.model.dialects.base import (
    EXIT_CODE_TEXT,
    UNKNOWN_TYPE,
    Mapped,
    Mapper,
    Part,
    compact,
    json_or_text,
    obj,
    text_of,
    tool_result,
    utc_timestamp,
)
from replay.pipeline.model.runs import run_id_from_source
from replay.pipeline.model.validation import is_integer

_COMMAND = re.compile(r"```(?:mswea_bash_command|bash)\s*\n(.*?)\n```", re.DOTALL)
_RETURNCODE = re.compile(rf"<returncode>\s*{EXIT_CODE_TEXT}\s*</returncode>")
_TIMED_OUT = "command timed out and was killed"  # a timed-out call's error
_SUBMIT = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")
RECORDS_KEY = "messages"


class MiniSweAgentMapper(Mapper):
    name = "mini-swe-agent"
    document = True

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self.learn(runId=run_id_from_source(source))
        self._steps = 0
        self._waiting: str | None = None  # the call id whose output the next user message is
        self._command = ""  # the command of that call

    def expand(self, record: Any) -> tuple[dict[str, Any], str, list[Any]] | None:
        if _is_trajectory(record):
            instance = record.get("instance_id")  # (SWE-bench runs name the task; a file of many is told apart by it)
            if isinstance(instance, str) and instance:
                self.facts["runId"] = instance
            info = obj(record.get("info"))
            self._learn_info(info)
            # The other keys, with the records' place kept (null) so the object is written back in its order.
            return {k: None if k == RECORDS_KEY else v for k, v in record.items()}, RECORDS_KEY, record[RECORDS_KEY]
        return None

    def starts_run(self, record: dict[str, Any]) -> bool:
        """Trajectories written one per line (a file of many runs): each one is a run of its own."""
        return _is_trajectory(record)

    def _learn_info(self, info: dict[str, Any]) -> None:
        config = obj(info.get("config"))
        model = obj(config.get("model"))
        self.learn(model=model.get("model_name") if isinstance(model.get("model_name"), str) else None)
        status = info.get("exit_status")
        if isinstance(status, str) and status:
            if status == "Submitted":
                self.learn(status="ok")
            else:
                self.learn(status="error", error={"code": status, "message": f"mini-swe-agent exited with {status}"})
        self.learn(response=info.get("submission") if isinstance(info.get("submission"), str) else None)
        stats = obj(info.get("model_stats"))
        cost = stats.get("instance_cost")
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            self.learn(usage={"costUsd": cost})
        self.learn(miniVersion=info.get("mini_version") if isinstance(info.get("mini_version"), str) else None)

    def map(self, record: Any) -> Mapped:
        extra = obj(record.get("extra"))
        stamp = extra.get("timestamp", record.get("timestamp"))
        mapped = Mapped([], utc_timestamp(stamp) if stamp is not None else None)
        self.learn(timestamp=mapped.timestamp)
        role = record.get("role")
        content = record.get("content")
        text = text_of(content)
        waiting, self._waiting = self._waiting, None
        if role == "system":
            mapped.parts = [Part("system_message", compact(text=text))]
        elif role == "user" and waiting is not None:
            killed = _timed_out(self._command, text)
            mapped.parts = [tool_result(compact(callId=waiting, toolName="bash", output=content,
                                                exitCode=_exit_code(extra, None if killed else text),
                                                error=_TIMED_OUT if killed else None), killed)]
        elif role == "user":
            self.learn(prompt=text)
            mapped.parts = [Part("user_message", compact(text=text))]
        elif role == "assistant":
            mapped.parts = self._assistant(record, text, extra)
        elif role == "tool":
            mapped.parts = [tool_result(compact(callId=record.get("tool_call_id"), output=content,
                                                exitCode=_exit_code(extra, text)))]
        elif isinstance(role, str) and role:
            mapped.parts = [Part(role, compact(text=text))]
        else:
            mapped.parts = [Part(UNKNOWN_TYPE, {})]
        return mapped

    def _assistant(self, record: dict[str, Any], text: str | None, extra: dict[str, Any]) -> list[Part]:
        self._steps += 1
        response = obj(extra.get("response"))
        parts = [Part("assistant_message", compact(text=text, usage=response.get("usage")))]
        calls = record.get("tool_calls")
        if isinstance(calls, list) and calls:
            for call in calls:
                function = obj(obj(call).get("function"))
                parts.append(Part("tool_called", compact(callId=obj(call).get("id"),
                                                         toolName=function.get("name"),
                                                         args=json_or_text(function.get("arguments")))))
            return parts
        commands = _COMMAND.findall(text or "")
        if len(commands) == 1:
            self._waiting, self._command = f"step-{self._steps}", commands[0]
            parts.append(Part("tool_called", {"callId": self._waiting, "toolName": "bash", "args": {"command": commands[0]}}))
        return parts

    def conclude(self, records: list[Any]) -> None:
        if "status" not in self.facts:
            said = [r for r in records if isinstance(r, dict) and r.get("role") == "assistant"]
            commands = _COMMAND.findall(text_of(said[-1].get("content")) or "") if said else []
            if len(commands) == 1 and any(commands[0].lstrip().startswith(f"echo {m}") for m in _SUBMIT):
                last = records[-1] if records and isinstance(records[-1], dict) and records[-1].get("role") == "user" else None
                self.learn(status="ok", response=text_of(last.get("content")) if last else None)
        self.final = True


def _exit_code(extra: dict[str, Any], text: str | None) -> int | None:
    """A command result's exit code: ``extra.returncode`` where the message has one, else its ``<returncode>`` tag."""
    code = extra.get("returncode")
    if is_integer(code):
        return code
    tag = _RETURNCODE.search(text or "")
    return int(tag.group(1)) if tag else None


def _timed_out(command: str, text: str | None) -> bool:
    """Is ``text`` the observation v1's ``timeout_template`` writes of ``command`` (it opens with the command's name
    in ``<command>`` tags, stripped as v1 strips the command it parsed)?"""
    return (text or "").startswith(f"The last command <command>{command.strip()}</command> timed out and has been killed.")


def _is_trajectory(record: Any) -> bool:
    """A whole trajectory (an object holding the run's messages), not one message of one."""
    return isinstance(record, dict) and isinstance(record.get(RECORDS_KEY), list) and "role" not in record
