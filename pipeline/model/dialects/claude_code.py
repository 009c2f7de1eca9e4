"""Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``) onto canonical events.

One JSON record per line. Mapping table (record -> events, in this order):

| record | events |
| --- | --- |
| ``user``, ``message.content`` a string | ``user_message`` {text} |
| ``user``, ``message.content`` blocks | per block: ``text`` (or a bare string) -> ``user_message`` {text}; ``tool_result`` -> ``tool_completed`` {callId, output}, or ``tool_failed`` when ``is_error``; any other block -> an event of the block's type {block} |
| ``assistant`` | ``assistant_message`` {text, thinking, model, messageId, stopReason, usage} for its text and thinking blocks (and, even without text, for the first record of a message id, which is the model call, and for a later record of it whose usage counts grew); then per ``tool_use`` block ``tool_called`` {callId, toolName, args}; any other block -> an event of the block's type {block} |
| ``summary`` | ``summary`` {summary, leafUuid} |
| ``system`` | ``system`` {content, level, subtype}; ``error`` {content, level, subtype, code: subtype, message: content} when its ``level`` is ``error`` |
| ``assistant`` with ``isApiErrorMessage`` | its ``assistant_message`` is an ``error`` {..., code: the API error's ``type`` (else its HTTP status), message: the text}: no model output, the API's error |
| any other ``type`` (``file-history-snapshot``, ...) | an event of that type, payload {} |
| no ``type`` | ``unknown``, payload {} |
| ``user`` / ``assistant`` whose ``message`` is not an object with ``content`` | an event of the record's type (``user`` / ``assistant``), payload {} |

Every event of a record gets its ``timestamp``, ``id`` = ``uuid``, ``parentId`` = ``parentUuid``, and
``payload.sidechain: true`` when ``isSidechain``. Claude Code writes one record per content block of a response,
each with a usage: older versions repeat the response's, 2.x writes its first records with a placeholder
``output_tokens`` (1) and the count on its last. So ``usage`` is counted once for each message id, as its records
give it: the first record's event carries its usage as written (with the record's ``costUSD``, which older versions
write, as its ``costUsd``), and a later record's event only what its counts grew by since the largest its call's
records gave before (``{"output_tokens": 259}``), none when none grew: a call's events add up to its largest input,
cache and output counts (its last record's), none counted twice. Run facts:
``runId`` = ``sessionId``, ``prompt`` = the first user text that is not a meta record, ``model``,
``cwd``, ``version``, ``gitBranch``.

One file can hold more than one session (session logs written one after another into one file): a record of
another ``sessionId`` than the run's that opens its session (no ``parentUuid``, nor a ``logicalParentUuid``: the
root of its conversation) begins a run of its own. A record of another session that goes on from a record
before it (a resumed or continued session's records, which Claude Code writes under the new session's id into
the same transcript, linked by ``parentUuid``) goes on with the run, and so does a sidechain's root
(``isSidechain``, no ``parentUuid``: the first record of a sub-agent a ``Task`` call of the run started).
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any

from replay.pipeline.model.dialects.base import (
    UNKNOWN_TYPE,
    Mapped,
    Mapper,
    Part,
    compact,
    json_or_text,
    obj,
    text_of,
)
from replay.pipeline.model.events import ERROR
from replay.pipeline.model.validation import is_number
from replay.pipeline.model.walk import add_as_written

RECENT_CALLS = 64  # the message ids whose counts are kept, to count what a later record of the call adds


class ClaudeCodeMapper(Mapper):
    name = "claude-code"

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self._messages: set[str] = set()  # message ids whose model call was mapped already
        # the largest count of each usage field seen so far, of the latest ``RECENT_CALLS`` message ids
        self._counts: dict[str, dict[str, int | float]] = {}

    def starts_run(self, record: dict[str, Any]) -> bool:
        session = _str(record.get("sessionId"))
        if session is None or session == self.facts.get("runId", session) or record.get("isSidechain") is True:
            return False  # (a sidechain's root has no parentUuid either: a sub-agent's, of the session in progress)
        return record.get("parentUuid") is None and record.get("logicalParentUuid") is None  # the root of its session

    def map(self, record: Any) -> Mapped:
        rtype = record.get("type")
        if not isinstance(rtype, str):
            rtype = None
        parent = record.get("parentUuid")
        mapped = Mapped([], record.get("timestamp"), _str(record.get("uuid")), _str(parent))
        self.learn(runId=_str(record.get("sessionId")), cwd=_str(record.get("cwd")),
                   version=_str(record.get("version")), gitBranch=_str(record.get("gitBranch")))
        message = record.get("message")
        if rtype in ("user", "assistant") and isinstance(message, dict) and "content" in message:
            mapped.parts = self._user(record, message) if rtype == "user" else self._assistant(message, record)
        elif rtype == "summary":
            mapped.parts = [Part("summary", compact(summary=record.get("summary"), leafUuid=record.get("leafUuid")))]
        elif rtype == "system":
            failed = record.get("level") == "error"  # (an error Claude Code met: an API error it retries, ...)
            mapped.parts = [Part(ERROR if failed else "system", compact(
                content=record.get("content"), level=record.get("level"), subtype=record.get("subtype"),
                code=_str(record.get("subtype")) if failed else None,
                message=_str(record.get("content")) if failed else None))]
        else:
            mapped.parts = [Part(rtype if isinstance(rtype, str) and rtype else UNKNOWN_TYPE, {})]
        if record.get("isSidechain") is True:
            for part in mapped.parts:
                part.payload["sidechain"] = True
        if mapped.parts and mapped.timestamp is not None:
            self.learn(timestamp=mapped.timestamp)
        return mapped

    def _user(self, record: dict[str, Any], message: dict[str, Any]) -> list[Part]:
        content = message["content"]
        meta = record.get("isMeta") is True
        if not isinstance(content, list):
            text = content if isinstance(content, str) else None
            if not meta and text:
                self.learn(prompt=text)
            return [Part("user_message", compact(text=text, meta=meta or None))]
        parts: list[Part] = []
        for k, block in enumerate(content):
            kind = block.get("type") if isinstance(block, dict) else None
            if isinstance(block, str) or kind == "text":
                text = block if isinstance(block, str) else block.get("text")
                if not meta and isinstance(text, str) and text:
                    self.learn(prompt=text)
                parts.append(Part("user_message", compact(text=text, meta=meta or None), [k]))
            elif kind == "tool_result":
                failed = block.get("is_error") is True
                parts.append(Part("tool_failed" if failed else "tool_completed", compact(
                    callId=_str(block.get("tool_use_id")), output=block.get("content"),
                    error=_error_text(block.get("content")) if failed else None), [k]))
            else:
                parts.append(Part(kind if isinstance(kind, str) and kind else UNKNOWN_TYPE, {"block": block}, [k]))
        return parts

    def _assistant(self, message: dict[str, Any], record: dict[str, Any]) -> list[Part]:
        content = message["content"]
        blocks = content if isinstance(content, list) else [content]
        said = [k for k, b in enumerate(blocks) if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")]
        thought = [k for k, b in enumerate(blocks) if isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking")]
        message_id = _str(message.get("id"))
        first_of_call = message_id is None or message_id not in self._messages
        usage = self._usage_counted(message_id, _usage(message.get("usage"), record.get("costUSD")), first_of_call)
        model = _str(message.get("model"))
        self.learn(model=model)
        parts: list[Part] = []
        if said or thought or first_of_call or usage is not None:
            thinking = "\n".join(b.get("thinking") for k, b in enumerate(blocks) if k in thought
                                 and isinstance(b.get("thinking"), str)) or None
            parts.append(Part("assistant_message", compact(
                text=text_of(content) if isinstance(content, list) else content if isinstance(content, str) else None,
                thinking=thinking, model=model, messageId=message_id, stopReason=message.get("stop_reason"),
                usage=usage,
            ), sorted(said + thought) if isinstance(content, list) else None))
            if record.get("isApiErrorMessage") is True:  # no model output: the API's error, as Claude Code shows it
                parts[0].type = ERROR
                parts[0].payload.update(compact(code=_api_error_code(parts[0].payload.get("text")),
                                                message=parts[0].payload.get("text")))
        for k, block in enumerate(blocks):
            if k in said or k in thought or not isinstance(content, list):
                continue
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "tool_use":
                parts.append(Part("tool_called", compact(callId=_str(block.get("id")), toolName=_str(block.get("name")),
                                                         args=block.get("input")), [k]))
            else:
                parts.append(Part(kind if isinstance(kind, str) and kind else UNKNOWN_TYPE, {"block": block}, [k]))
        return parts

    def _usage_counted(self, message_id: str | None, usage: Any, first_of_call: bool) -> Any:
        """The usage a record's ``assistant_message`` carries: the first record of a message id (a model call), its usage
        as written; a later record of it, what its counts grew by since the largest its call's records gave before
        (Claude Code 2.x writes a response's first records with a placeholder ``output_tokens``, 1, and the count
        only on its last), None when none grew (older versions repeat one usage on every record). So a call's events
        add up to the largest count of each field its records give: its input and cache counts once, its output the
        count its last record gives. Only the latest ``RECENT_CALLS`` message ids are kept (a response's records are
        written together): a record of a call long past (a resumed session writes records again) counts nothing."""
        if message_id is None:
            return usage
        counts = _counts(usage)
        if first_of_call:
            self._messages.add(message_id)
            self._counts[message_id] = counts
            if len(self._counts) > RECENT_CALLS:
                del self._counts[next(iter(self._counts))]
            return usage
        largest = self._counts.get(message_id)
        if largest is None:
            return None
        grown: dict[str, int | float] = {}
        for key, count in counts.items():
            before = largest.get(key)
            if before is None or count > before:
                grown[key] = count if before is None else add_as_written(count, -before)
                largest[key] = count
        return grown or None

    def rebuild(self, record: Any, parts: list[dict[str, Any]]) -> Any | None:
        """Only the content blocks whose events survived (a dropped orphan tool result goes)."""
        if all(p.get("blocks") is None for p in parts) or len(parts) == parts[0].get("parts"):
            return record
        keep = sorted({k for p in parts for k in (p.get("blocks") or ())})
        if not keep:
            return None
        out = copy.deepcopy(record)
        content = out["message"]["content"]
        out["message"]["content"] = [content[k] for k in keep if k < len(content)]
        return out


def _usage(usage: Any, cost: Any) -> Any:
    """A message's usage, with the ``costUSD`` older Claude Code versions write beside it as its ``costUsd``."""
    if not is_number(cost):
        return usage
    return {**usage, "costUsd": cost} if isinstance(usage, dict) else {"costUsd": cost}


def _counts(usage: Any) -> dict[str, int | float]:
    """The counts of a usage object: its fields that hold a number >= 0 (an int, or a finite float)."""
    if not isinstance(usage, dict):
        return {}
    return {key: value for key, value in usage.items()
            if (value.__class__ is int or (value.__class__ is float and math.isfinite(value))) and value >= 0}


_API_ERROR = re.compile(r"API Error: (\d{3})")


def _api_error_code(text: Any) -> str | None:
    """The code of an API error as Claude Code writes it (``API Error: 529 {"type":"error","error":{"type":
    "overloaded_error",...}}``): the error's ``type``, else the HTTP status."""
    if not isinstance(text, str):
        return None
    body = json_or_text(text[text.find("{"):]) if "{" in text else None
    kind = obj(obj(body).get("error")).get("type")
    if isinstance(kind, str) and kind:
        return kind
    status = _API_ERROR.search(text)
    return status.group(1) if status else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _error_text(content: Any) -> str | None:
    text = text_of(content)
    return text[:2000] if text else None
