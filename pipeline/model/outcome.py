"""Outcome: does a record that says it completed say it went wrong (a non-zero exit code, a failing verdict)?

One rule, read by every command that tells how a step or a tool call ended: ``replay walk``'s ``[failed]``
(``walk.state_of``), the tool calls a report counts as failed (``toolcalls.result_failed``: the text, JSON, JUnit,
Markdown and HTML reports, the artifact's ``toolCalls``, the OTLP export's span status, an incident's ``ok``), and the
dialects' ``tool_failed`` (``dialects.base.tool_result``). The seeds' walk spec reads an exit code as a verification
(``exit_code=0 verification=ok [succeeded]``), so a record that completed with a non-zero one did not succeed.

- the **exit code** is the first integer (not a bool) under ``exit_code`` / ``exitCode`` in the record, else in its
  payload, else in its payload's ``output`` object; it says the step failed when it is not 0;
- the **verification** is ``{"type", "verdict"}`` from a ``verification`` object (its ``verdict``, ``result``,
  ``outcome`` or ``status``; or a boolean ``ok`` / ``passed``), a ``verification`` text or boolean, or a ``verdict``
  field, in the record, else its payload; a verdict ``false``, or one of ``BAD_VERDICTS``, or starting with ``fail``
  (any case), says it failed.
"""

from __future__ import annotations

import itertools
from typing import Any

UNKNOWN: Any = object()  # (an argument not looked up yet: ``went_wrong`` reads it from the record)
BAD_VERDICTS = frozenset({"fail", "failed", "failure", "error", "errored", "rejected", "false", "invalid",
                          "mismatch", "no", "not_ok", "ko"})
EXIT_KEYS = ("exit_code", "exitCode")
_EXIT_KEY_SET = frozenset(EXIT_KEYS)
_VERDICT_KEYS = ("verdict", "result", "outcome", "status")
_RECORD_FIELDS = (*EXIT_KEYS, "verification", "verdict", "verification_type")
_RECORD_FIELD_SET = frozenset(_RECORD_FIELDS)
_DICT, _CODES = {dict}, {int, type(None)}
_NONE: dict[str, Any] = {}
# Every field of an event the rule reads (a report decodes no other: ``report.model.SUMMARY_FIELDS``)
OUTCOME_FIELDS = (*_RECORD_FIELDS, *(f"payload.{key}" for key in _RECORD_FIELDS),
                  *(f"payload.output.{key}" for key in EXIT_KEYS))


def payload_of(record: dict[str, Any]) -> dict[str, Any]:
    """A record's payload when it is an object, else an empty one."""
    payload = record.get("payload")
    return payload if isinstance(payload, dict) else {}


def exit_failed(code: Any) -> bool:
    """Does ``code``, an exit code, say the step (the tool) failed: an integer other than 0."""
    return isinstance(code, int) and not isinstance(code, bool) and code != 0  # (not validation.is_integer: it
    # imports artifacts, which pairs tool calls by this rule)


def exit_words(code: Any) -> str:
    """How a failure by exit code is told (a dialect's ``error``, a report's message)."""
    return f"exit code {code}"


def exit_code_of(record: dict[str, Any]) -> int | None:
    """The exit code a record carries (at its top, in its payload, in its payload's ``output`` object), or None."""
    payload = payload_of(record)
    output = payload.get("output")
    for holder in (record, payload, output if isinstance(output, dict) else {}):
        if _EXIT_KEY_SET.isdisjoint(holder):
            continue
        for key in EXIT_KEYS:
            value = holder.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def verification_of(record: dict[str, Any]) -> dict[str, Any] | None:
    """``{"type", "verdict"}`` when the record or its payload carries a verification verdict."""
    for holder in (record, payload_of(record)):
        if "verification" not in holder and "verdict" not in holder:
            continue
        value = holder.get("verification")
        if isinstance(value, dict):
            kind = value.get("type", value.get("kind"))
            for key in _VERDICT_KEYS:
                if key in value and value[key] is not None:
                    return {"type": kind, "verdict": value[key]}
            for key in ("ok", "passed"):
                if isinstance(value.get(key), bool):
                    return {"type": kind, "verdict": "ok" if value[key] else "fail"}
        elif isinstance(value, str | bool) and value != "":
            return {"type": None, "verdict": value}
        verdict = holder.get("verdict")
        if isinstance(verdict, str | bool) and verdict != "":
            return {"type": holder.get("verification_type"), "verdict": verdict}
    return None


def went_wrong(record: dict[str, Any], verification: Any = UNKNOWN, code: Any = UNKNOWN) -> bool:
    """Does a record that says it completed say it failed: a non-zero exit code or a failing verdict
    (``verification`` and ``code``: what ``verification_of`` and ``exit_code_of`` read, when known already)."""
    if exit_failed(exit_code_of(record) if code is UNKNOWN else code):
        return True
    verification = verification_of(record) if verification is UNKNOWN else verification
    verdict = verification["verdict"] if verification else None
    if verdict is False:
        return True
    return isinstance(verdict, str) and (verdict.lower() in BAD_VERDICTS or verdict.lower().startswith("fail"))


def went_wrong_each(records: list[dict[str, Any]]) -> list[bool]:
    """``went_wrong`` of each of ``records`` (dicts), by C-level maps over them all when each is a usual tool result: no
    exit code, verification or verdict field in it or in its payload, and in its payload's ``output`` object (when it
    is one) no ``exit_code`` and an ``exitCode`` that is an int or absent (then it went wrong when that code is not 0:
    ``bool`` of it, None for none). Any other batch, record by record (``went_wrong``)."""
    payloads = _objects(list(map(dict.get, records, itertools.repeat("payload"))))
    outputs = _objects(list(map(dict.get, payloads, itertools.repeat("output")))) if payloads is not None else None
    if (outputs is not None and payloads is not None
            and all(map(_RECORD_FIELD_SET.isdisjoint, records)) and all(map(_RECORD_FIELD_SET.isdisjoint, payloads))
            and not any(map(dict.__contains__, outputs, itertools.repeat(EXIT_KEYS[0])))):
        codes = list(map(dict.get, outputs, itertools.repeat(EXIT_KEYS[1])))
        if set(map(type, codes)) <= _CODES:
            return list(map(bool, codes))
    return list(map(went_wrong, records))


def _objects(values: list[Any]) -> list[dict[str, Any]] | None:
    """``values`` with each that is no object as an empty one (as ``payload_of`` reads it); None when one is an object
    of a subclass of dict (not what JSON gives: read record by record)."""
    if set(map(type, values)) == _DICT:
        return values
    if any(value.__class__ is not dict and isinstance(value, dict) for value in values):
        return None
    return [value if value.__class__ is dict else _NONE for value in values]


def failure_words(record: dict[str, Any]) -> str | None:
    """What a completed record that went wrong says of it: its exit code, else its verdict (None: it did not)."""
    code = exit_code_of(record)
    if exit_failed(code):
        return exit_words(code)
    verification = verification_of(record)
    if not (verification and went_wrong(record, verification, code)):
        return None
    verdict = verification["verdict"]
    return f"verification {'false' if verdict is False else verdict}"
