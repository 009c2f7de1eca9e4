"""What every dialect mapper shares: the parts a record maps to, the origin each event keeps, run facts.

A *dialect* is the log format of another agent (Claude Code, Codex CLI, OpenHands, mini-swe-agent).
Its ``Mapper`` turns the records of one run, in order, into canonical events by the table in its
module docstring. Every event keeps the record it came from under the reserved key ``$origin``::

    "$origin": {"dialect": "claude-code", "index": 4, "part": 1, "parts": 2, "blocks": [1], "record": {...}}

``index`` is the record's place in its input (0-based), ``part``/``parts`` which of the record's
events this is, ``blocks`` the record's content blocks this event stands for (dialects whose records
hold several), and ``record`` the original record, unchanged. Nothing is dropped: a record the table
does not know becomes an event of its own type. Writing the dialect back (``undialect``) groups the
events of each record and asks the mapper to ``rebuild`` it from the parts that survived healing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.model.events import format_timestamp, from_epoch, is_timestamp, read_iso
from replay.pipeline.model.outcome import exit_failed, exit_words

ORIGIN_KEY = "$origin"
UNKNOWN_TYPE = "unknown"  # the type of a record that names no type of its own
# An exit code a log writes in text (a regular expression's group): at most 10 digits, as a process's code (32 bits)
# is; a longer number is no code (beyond 4,300 digits Python would refuse to read it as an int)
EXIT_CODE_TEXT = r"(-?\d{1,10})"


@dataclass
class Part:
    """One canonical event a record maps to, before the stage numbers it and adds the origin."""

    type: str
    payload: dict[str, Any]
    blocks: list[int] | None = None  # the record's content blocks this event stands for


@dataclass
class Mapped:
    """What a record maps to: its events, and what they share (time, ids)."""

    parts: list[Part]
    timestamp: Any = None
    id: str | None = None  # the record's own id, when the dialect gives records one
    parent_id: str | None = None  # the id of the record this one descends from
    extra: dict[str, Any] = field(default_factory=dict)  # more top-level event keys


class Mapper:
    """Maps the records of one run of a dialect onto canonical events; one instance per run."""

    name: ClassVar[str] = ""
    framework: ClassVar[str] = ""  # the run record's `framework`
    # Written back as one JSON document (an array, or an object holding the records) rather than JSONL.
    document: ClassVar[bool] = False

    def __init__(self, source: str) -> None:
        self.source = source
        self.facts: dict[str, Any] = {"framework": self.framework or self.name}
        self.final = False  # True once every fact is known (a document read whole)

    # reading ------------------------------------------------------------------------------------
    def expand(self, record: Any) -> tuple[dict[str, Any], str, list[Any]] | None:
        """A record that holds a whole run (a trajectory object): (the object with its records' key
        set to null, that key, the records). None for an ordinary record."""
        return None

    def starts_run(self, record: dict[str, Any]) -> bool:
        """Does ``record`` begin another run of the input (logs written one after another into one file)? Then
        the run so far ends before it and a fresh mapper maps it. Asked of every record after the first."""
        return False

    def map(self, record: Any) -> Mapped:  # pragma: no cover - interface
        raise NotImplementedError

    def conclude(self, records: list[Any]) -> None:
        """All the run's records, when it was read whole (a document): learn the closing facts."""

    @property
    def ready(self) -> bool:
        """True when the run record can be written (the facts a run record opens with are known)."""
        return self.final or "prompt" in self.facts

    # writing back -------------------------------------------------------------------------------
    def rebuild(self, record: Any, parts: list[dict[str, Any]]) -> Any | None:
        """The record to write back, given the origins of its events that survived healing
        (``parts``); None when nothing of it is left. By default the record as it was."""
        return record

    # helpers ------------------------------------------------------------------------------------
    def learn(self, **facts: Any) -> None:
        """Set run facts that are not known yet (the first value wins)."""
        for key, value in facts.items():
            if value is not None and value != "" and key not in self.facts:
                self.facts[key] = value


# small helpers the dialects share -----------------------------------------------------------------
def text_of(value: Any, kinds: tuple[str, ...] = ("text",)) -> str | None:
    """The text of a message's content: a string, or the ``text`` of its blocks of the given kinds."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [b["text"] for b in value if isinstance(b, dict) and b.get("type") in kinds and isinstance(b.get("text"), str)]
        texts += [b for b in value if isinstance(b, str)]
        return "\n".join(texts) if texts else None
    return None


def json_or_text(value: Any) -> Any:
    """A JSON string (tool arguments) as the value it encodes; anything else as it is."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return exactjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def utc_timestamp(value: Any) -> Any:
    """An ISO time without a zone (OpenHands) or an epoch number (``from_epoch``), as RFC 3339 read as UTC; RFC 3339
    as it is; anything else unchanged (heal's fix_timestamp reports what is left)."""
    if is_timestamp(value):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return from_epoch(value) or value
    if isinstance(value, str):
        read = read_iso(value)  # (a leap second too)
        return value if read is None else format_timestamp(*read)
    return value


def tool_result(payload: dict[str, Any], failed: bool = False) -> Part:
    """A tool's result: ``tool_failed`` when its log says it failed (``failed``) or its ``exitCode`` is not 0 (then with
    ``error`` saying so, unless the payload has one), else ``tool_completed``. Every dialect decides it here, so a
    report, an export and a walk of the mapped run agree on which calls failed."""
    code = payload.get("exitCode")
    bad_exit = exit_failed(code)
    if not (failed or bad_exit):
        return Part("tool_completed", payload)
    if payload.get("error") is None and bad_exit:
        payload["error"] = exit_words(code)
    return Part("tool_failed", payload)


def obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (records from the wild are any shape)."""
    return value if isinstance(value, dict) else {}


def compact(**values: Any) -> dict[str, Any]:
    """A payload without the None values."""
    return {k: v for k, v in values.items() if v is not None}
