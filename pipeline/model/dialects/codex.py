"""OpenAI Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) onto canonical events.

One JSON record per line, ``{"timestamp", "type", "payload"}``. Mapping table (one event per record):

| record (``type`` / ``payload.type``) | event |
| --- | --- |
| ``session_meta`` | ``run_started`` {the session's meta: id, cwd, cli_version, originator, ...}: the run's first |
| ``session_meta`` again, of the run's session or one it descends from | ``session_meta`` {its payload}: the run goes on |
| ``turn_context`` | ``turn_context`` {cwd, model, approval_policy, ...} |
| ``event_msg`` / ``error`` | ``error`` {message, code: ``codex_error_info``}: an error Codex reported (a stream cut off, a rate limit) |
| ``event_msg`` / X | ``event_msg.X`` {the payload without ``type``}; for ``token_count`` also ``usage`` = ``info.last_token_usage`` (the tokens of one model call), but not when ``info.total_token_usage`` is the run's last token_count's again (a rate-limit refresh: the call is counted once) |
| ``response_item`` / ``message``, role ``user`` | ``user_message`` {text, role} |
| ``response_item`` / ``message``, role ``assistant`` | ``assistant_message`` {text, model} |
| ``response_item`` / ``message``, other roles | ``system_message`` {text, role} |
| ``response_item`` / ``reasoning`` | ``reasoning`` {text: the summary} |
| ``response_item`` / ``function_call``, ``custom_tool_call``, ``local_shell_call`` | ``tool_called`` {callId, toolName, args} (JSON arguments decoded) |
| ``response_item`` / ``function_call_output``, ``custom_tool_call_output`` | ``tool_completed`` {callId, output, exitCode: the output's exit code, see below}; ``tool_failed`` when the output says ``success: false`` or that exit code is not 0 |
| ``response_item`` / any other X | ``response_item.X`` {the payload without ``type``} |
| any other record type X (``compacted``, future ones) | an event of type X, payload = its payload when that is an object |

A shell result's exit code is where Codex writes it (codex-rs ``core/src/tools``): in a JSON output (older ``shell``
calls), its ``metadata.exit_code``; in a text output, its header only, never words further on in what the command
printed: the text's first line ``Exit code: N`` followed by ``Wall time: ...`` (``shell_command``, a freeform
``apply_patch``), or ``exec_command``'s / ``write_stdin``'s header ``[Chunk ID: ...]``, ``Wall time: ...``, ``Process
exited with code N`` (a process still running says ``Process running with session ID ...``: no code).

Run facts: ``runId`` = ``session_meta.payload.id``, ``prompt`` = the first ``event_msg`` /
``user_message`` (what the user typed; the first ``response_item`` user messages are usually the
environment context Codex adds), ``model`` from ``turn_context``, ``cwd``, ``cliVersion``.

One file can hold more than one ``session_meta`` (codex-rs ``core/src/rollout/recorder.rs``: its reader takes the
first as the thread's id and keeps every line). A forked session's file opens with its own meta (a new ``id``,
``forked_from_id`` the parent's), then the parent's lines copied in, which open with the parent's meta (and its
own ancestors'); a sub-agent's names its parent in ``source.subagent.thread_spawn.parent_thread_id``. Those
copied metas, right after the run's own and before any other record, and the run's own meta written again, are
the same run: a ``session_meta`` event, no second ``run_started``. (A resumed session appends to its file and
writes none.) Any other ``session_meta`` with an ``id`` (rollouts written one after another into one file)
begins another run of the input (``starts_run``): its own run record, ``run_started``, seq from 1.
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
)
from replay.pipeline.model.events import ERROR

_CALLS = {"function_call": "arguments", "custom_tool_call": "input", "local_shell_call": "action"}
_OUTPUTS = ("function_call_output", "custom_tool_call_output")
# A text output's header, as codex-rs writes it (anchored at the text's start: a command's output can print anything)
_TEXT_EXIT = (re.compile(rf"Exit code: {EXIT_CODE_TEXT}\nWall time: [^\n]*\n"),  # format_exec_output_for_model_freeform
              re.compile(rf"(?:Chunk ID: [^\n]*\n)?Wall time: [^\n]*\nProcess exited with code {EXIT_CODE_TEXT}\n"))  # unified exec


class CodexMapper(Mapper):
    name = "codex"

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self.model: str | None = None
        self.met = False  # the run's session_meta came
        self.session: str | None = None  # its id
        self.ancestors: set[str] = set()  # the sessions it descends from (forked from, spawned by), as its metas say
        self.opening = True  # no record but session_meta yet (where a fork's copied metas stand)
        self.total: Any = None  # the total_token_usage of the run's last token_count

    def starts_run(self, record: dict[str, Any]) -> bool:
        if not self.met or record.get("type") != "session_meta":
            return False
        session = _str(obj(record.get("payload")).get("id"))
        if session is None or session == self.session:
            return False  # the run's own meta again: it goes on
        return not (self.opening and session in self.ancestors)  # a copied ancestor's, right after the run's own

    def map(self, record: Any) -> Mapped:
        rtype = record.get("type")
        if not isinstance(rtype, str):
            rtype = None
        payload = record.get("payload")
        body = payload if isinstance(payload, dict) else {}
        sub = body.get("type") if isinstance(body.get("type"), str) else None
        rest = {k: v for k, v in body.items() if k != "type"}
        mapped = Mapped([], record.get("timestamp"))
        if rtype != "session_meta":
            self.opening = False
        if rtype == "session_meta":
            self.learn(runId=_str(body.get("id")), cwd=_str(body.get("cwd")), cliVersion=_str(body.get("cli_version")),
                       timestamp=body.get("timestamp") or record.get("timestamp"))
            if not self.met:
                self.met, self.session = True, _str(body.get("id"))
                part = Part("run_started", dict(body))
            else:
                part = Part("session_meta", dict(body))
            if self.opening:
                spawn = obj(obj(obj(body.get("source")).get("subagent")).get("thread_spawn"))
                self.ancestors.update(filter(None, map(_str, (body.get("id"), body.get("forked_from_id"),
                                                              spawn.get("parent_thread_id")))))
        elif rtype == "turn_context":
            self.model = _str(body.get("model")) or self.model
            self.learn(model=self.model)
            part = Part("turn_context", dict(body))
        elif rtype == "event_msg" and sub:
            if sub == "user_message" and isinstance(body.get("message"), str):
                self.learn(prompt=body["message"])
            if sub == "token_count":
                self._token_count(obj(body.get("info")), rest)
            if sub == "error":  # (an error Codex met and reported: a stream cut off, a rate limit)
                part = Part(ERROR, {**compact(code=_str(body.get("codex_error_info"))), **rest})
            else:
                part = Part(f"event_msg.{sub}", rest)
        elif rtype == "response_item" and sub:
            part = self._item(sub, body, rest)
        else:
            name = rtype if isinstance(rtype, str) and rtype else UNKNOWN_TYPE
            part = Part(name, dict(body))
        mapped.parts = [part]
        self.learn(timestamp=record.get("timestamp"))
        return mapped

    def _token_count(self, info: dict[str, Any], rest: dict[str, Any]) -> None:
        """``usage`` = the tokens of the model call a ``token_count`` counts (``last_token_usage``); none when its
        cumulative ``total_token_usage`` is the one the run's last token_count gave (Codex writes a token_count again
        when only its rate limits changed): the run's usage adds up to its last total, each call counted once. One
        without totals (``"info": null``: only the rate limits) counts nothing and forgets no total."""
        total = info.get("total_token_usage")
        if total is not None:
            if total == self.total:
                return
            self.total = total
        if isinstance(info.get("last_token_usage"), dict):
            rest["usage"] = info["last_token_usage"]

    def _item(self, sub: str, body: dict[str, Any], rest: dict[str, Any]) -> Part:
        if sub == "message":
            role = body.get("role")
            text = text_of(body.get("content"), ("input_text", "output_text", "text"))
            if role == "user":
                return Part("user_message", compact(text=text, role=role))
            if role == "assistant":
                return Part("assistant_message", compact(text=text, model=self.model))
            return Part("system_message", compact(text=text, role=role))
        if sub == "reasoning":
            return Part("reasoning", compact(text=text_of(body.get("summary"), ("summary_text",))))
        if sub in _CALLS:
            return Part("tool_called", compact(callId=_str(body.get("call_id")) or _str(body.get("id")),
                                               toolName=_str(body.get("name")) or ("local_shell" if sub == "local_shell_call" else None),
                                               args=json_or_text(body.get(_CALLS[sub]))))
        if sub in _OUTPUTS:
            output = body.get("output")
            said = json_or_text(output)  # (an older shell call's output is a JSON string: {output, metadata: {exit_code}})
            failed = isinstance(output, dict) and output.get("success") is False
            code = obj(obj(said).get("metadata")).get("exit_code")
            if code is None and not isinstance(said, dict):
                code = _text_exit_code(text_of(output, ("input_text", "output_text")))
            return tool_result(compact(callId=_str(body.get("call_id")), output=output, exitCode=code), failed)
        return Part(f"response_item.{sub}", rest)


def _text_exit_code(text: str | None) -> int | None:
    """The exit code a text output's header gives (``Exit code: N`` / ``Process exited with code N``), else None."""
    for header in _TEXT_EXIT:
        found = header.match(text or "")
        if found:
            return int(found.group(1))
    return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
