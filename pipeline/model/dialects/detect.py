"""Which dialect a record is written in, judged from the record alone (``dialect = "auto"``).

Each dialect has a claim: a few keys only its records carry. A canonical record (a ``$record``, or an
event with ``seq`` and ``runId``) is claimed by none and says "no dialect". ``detect`` returns every
dialect that claims a record; the ``dialect`` stage decides on the first record of each input that
somebody claims, and only when exactly one does.

| dialect | a record is claimed when it has |
| --- | --- |
| claude-code | ``type`` ``user``/``assistant``/``summary``/``system``/... and a ``uuid``, ``sessionId`` or ``leafUuid`` |
| codex | ``type`` ``session_meta``/``turn_context``/``response_item``/``event_msg``/``compacted`` and a ``payload`` |
| openhands | ``action`` or ``observation`` (a string), and an ``id`` |
| mini-swe-agent | ``role`` and ``content`` and no ``type``; or ``messages`` (an array) with ``info`` or ``trajectory_format`` |
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice
from typing import Any

from replay.pipeline.model.records import is_canonical

CANONICAL = "canonical"  # the stream is replay's own: nothing to map
LOOKAHEAD = 64  # records looked at, at most, to detect an input's dialect

_CLAUDE_TYPES = frozenset({"user", "assistant", "summary", "system", "file-history-snapshot", "queue-operation"})
_CODEX_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})


def claims(record: Any) -> list[str]:
    """The dialects whose records look like ``record``; ``[CANONICAL]`` for replay's own records."""
    if not isinstance(record, dict):
        return []
    if is_canonical(record):
        return [CANONICAL]
    found = []
    rtype = record.get("type")
    if not isinstance(rtype, str):  # an object or an array is no type (and no key of a set)
        rtype = None
    if rtype in _CLAUDE_TYPES and ("uuid" in record or "sessionId" in record or "leafUuid" in record):
        found.append("claude-code")
    if rtype in _CODEX_TYPES and "payload" in record:
        found.append("codex")
    if (isinstance(record.get("action"), str) or isinstance(record.get("observation"), str)) and "id" in record:
        found.append("openhands")
    if ("role" in record and "content" in record and "type" not in record) or (
        isinstance(record.get("messages"), list) and ("info" in record or "trajectory_format" in record)
    ):
        found.append("mini-swe-agent")
    return found


def input_dialect(records: Iterable[Any]) -> str:
    """The dialect ``dialect = "auto"`` reads an input as, from its first records: the one dialect that claims the first
    record somebody claims, of the first ``LOOKAHEAD``; CANONICAL when that is replay's own, when more than one claims
    it (ambiguous: passed through unmapped), or when none claims any."""
    for record in islice(records, LOOKAHEAD):
        found = claims(record)
        if found:
            return found[0] if len(found) == 1 else CANONICAL
    return CANONICAL


def is_dialect_document(value: Any) -> bool:
    """A JSON object that holds a whole run of a dialect (a mini-swe-agent trajectory), to be read whole."""
    return isinstance(value, dict) and claims(value) == ["mini-swe-agent"] and "role" not in value


def document_dialect(value: Any) -> str | None:
    """The dialect a whole JSON document is written in, when it is another agent's: a mini-swe-agent trajectory, or
    an array whose first record somebody claims (of its first ``LOOKAHEAD``) is claimed by one dialect alone, as the
    ``dialect`` stage decides an input's (an OpenHands event list). None for replay's own, or nobody's."""
    if is_dialect_document(value):
        return "mini-swe-agent"
    found = input_dialect(value) if isinstance(value, list) else CANONICAL
    return found if found != CANONICAL else None
