"""Walk lines: how one journal record reads as a step of a run (kind, step, detail, state, verdict, spend).

Two journal dialects are read alike:

- canonical (this project's): events with ``type``, ``seq``, ``runId``, ``payload`` and optionally
  ``step``; reserved records ``{"$record": "run" | "heal" | "source", ...}``;
- flows-style: records with ``kind`` and ``step_id``; run-level records carry no step.

For each record:

- **kind**: ``kind``, else ``type``; a reserved record is ``$`` + its name (``$run``, ``$heal``).
- **step**: ``step_id``, else ``step`` (a string, a number, or an object with an ``id``), else for a
  tool event its call id (``callId`` / ``toolCallId`` / ``id`` in the payload); None for run-level
  records (reserved records, ``run_*`` / ``run.*`` kinds without a step, messages without a step).
- **state**: from the last word of the kind: ``pending`` (spawned, scheduled, queued), ``running``
  (started, called), ``succeeded`` (completed, succeeded, done), ``failed`` (failed, errored, timed
  out, or completed with a non-zero exit code or a failing verdict), ``cancelled``, ``skipped``,
  ``parked``; a run-level end (``run_completed``, ``run.failed``, ``run.parked``, ...) is
  ``terminal``; anything else (messages, run and heal records) is ``info``.
- **detail**: what a reader needs to follow the run: the step's type and command, tool name, exit
  code, verification verdict, error, status, spend. Those are never cut; message texts and tool
  arguments are excerpts.
- **verification**: ``{"type", "verdict"}`` when the record (or its payload) carries a verdict.
- **spend**: the spend a record carries (a ``spend`` field, a spend record's numbers, a step's
  ``usage``); ``SpendLedger`` adds up what each step has recorded so far.

Another agent's log (Claude Code, Codex, ...) is walked as its canonical journal: ``journal_dialect`` says, from
a file's first records, which dialect the ``dialect`` stage would read it as.

The terminal record of a step (what ``--at`` stops after) is the first record of that step whose
state ends it (succeeded, failed, cancelled, skipped) while none of the step's tool calls is still
open, unless it ends only an attempt (``step.attempt.failed``) or says the step will be retried
(``"retrying": true``): see ``ends_step``. A step that never ends stops at its last record.
"""

from __future__ import annotations

import io
import json
import os
import re
import zlib
from collections import OrderedDict
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from gzip import BadGzipFile
from itertools import chain, compress, count
from typing import Any, cast

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError, excerpt, how_to_fix, printable, refused, utf8_fault
from replay.pipeline.io.journals import DOCUMENT, LineCutter, as_document, document_too_long, gunzipped, head_format
from replay.pipeline.model.artifacts import document_items
from replay.pipeline.model.dialects.detect import document_dialect, input_dialect
from replay.pipeline.model.markup import BIDI_CONTROLS
from replay.pipeline.model.records import DROPPED_RECORD, HEAL_RECORD, RECORD_KEY, RUN_RECORD, is_record
from replay.pipeline.model.toolcalls import ARGUMENT_KEYS, call_id, named_tool
from replay.pipeline.model.validation import is_number

PENDING, RUNNING, SUCCEEDED, FAILED = "pending", "running", "succeeded", "failed"
CANCELLED, SKIPPED, PARKED, TERMINAL, INFO = "cancelled", "skipped", "parked", "terminal", "info"
STEP_ENDS = frozenset({SUCCEEDED, FAILED, CANCELLED, SKIPPED})

_WORD_STATES = {
    **dict.fromkeys(("spawned", "scheduled", "queued", "pending", "created", "planned", "enqueued"), PENDING),
    **dict.fromkeys(("start", "started", "running", "resumed", "called", "retrying", "retried"), RUNNING),
    **dict.fromkeys(("completed", "succeeded", "success", "done", "finished", "passed", "ok", "end", "ended"), SUCCEEDED),
    **dict.fromkeys(("failed", "failure", "errored", "error", "timeout", "timedout"), FAILED),
    **dict.fromkeys(("cancelled", "canceled", "aborted", "killed", "interrupted"), CANCELLED),
    "skipped": SKIPPED,
    **dict.fromkeys(("parked", "paused", "suspended", "waiting", "blocked"), PARKED),
}
_RUN_ENDS = frozenset({SUCCEEDED, FAILED, CANCELLED, PARKED})
_WORDS = re.compile(r"[._:/\s-]+")
BAD_VERDICTS = frozenset({"fail", "failed", "failure", "error", "errored", "rejected", "false", "invalid",
                          "mismatch", "no", "not_ok", "ko"})
TOOL_CALLED, TOOL_ENDS = "tool_called", frozenset({"tool_completed", "tool_failed"})
EXCERPT = 60


# kind, step ---------------------------------------------------------------------------------------
def kind_of(record: dict[str, Any]) -> str:
    reserved = record.get(RECORD_KEY)
    if is_record(record):  # (a kind that is no string, null say, as JSON writes it)
        return "$" + (reserved if isinstance(reserved, str) else orjson.dumps(reserved).decode())
    for key in ("kind", "type"):
        value = record.get(key)
        if isinstance(value, str) and value:
            return value
    return "?"


def _id_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _payload(record: dict[str, Any]) -> dict[str, Any]:
    payload = record.get("payload")
    return payload if isinstance(payload, dict) else {}


def _first_text(holder: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = holder.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def step_of(record: dict[str, Any], kind: str | None = None) -> str | None:
    """The step a record belongs to; None for run-level records."""
    if is_record(record):
        return None
    step = _id_text(record.get("step_id"))
    if step is not None:
        return step
    value = record.get("step")
    step = _id_text(value) if not isinstance(value, dict) else _id_text(value.get("id") or value.get("step_id"))
    if step is not None:
        return step
    kind = kind if kind is not None else kind_of(record)
    if kind.startswith("tool_"):
        return call_id(record.get("payload"))
    return None


# state --------------------------------------------------------------------------------------------
_KIND_WORDS: dict[str, tuple[str, ...]] = {}


def _words(kind: str) -> tuple[str, ...]:
    """The words of a kind (``step.attempt.started`` -> step, attempt, started), cached: kinds are few."""
    words = _KIND_WORDS.get(kind)
    if words is None:
        words = tuple(w for w in _WORDS.split(kind.lower()) if w)
        if len(_KIND_WORDS) < 10_000:
            _KIND_WORDS[kind] = words
    return words


def _word_state(kind: str) -> str | None:
    words = _words(kind)
    if not words:
        return None
    if words[-2:] == ("timed", "out"):
        return FAILED
    return _WORD_STATES.get(words[-1])


_UNKNOWN: Any = object()


def state_of(record: dict[str, Any], kind: str, step: str | None, verification: Any = _UNKNOWN,
             code: Any = _UNKNOWN) -> str:
    """The state a record leaves its step (or run) in; ``verification`` and ``code`` when known already."""
    if is_record(record):
        return INFO
    state = _word_state(kind)
    if step is None and _words(kind)[:1] == ("run",) and state in _RUN_ENDS:
        return TERMINAL
    if state == SUCCEEDED and _went_wrong(record, verification, code):
        return FAILED
    return state or INFO


def _went_wrong(record: dict[str, Any], verification: Any, code: Any) -> bool:
    """A 'completed' record that says it failed: a non-zero exit code or a failing verdict."""
    code = exit_code_of(record) if code is _UNKNOWN else code
    if code is not None and code != 0:
        return True
    verification = verification_of(record) if verification is _UNKNOWN else verification
    verdict = verification["verdict"] if verification else None
    if verdict is False:
        return True
    return isinstance(verdict, str) and (verdict.lower() in BAD_VERDICTS or verdict.lower().startswith("fail"))


# verification, exit code, spend ---------------------------------------------------------------------
_VERDICT_KEYS = ("verdict", "result", "outcome", "status")


def verification_of(record: dict[str, Any]) -> dict[str, Any] | None:
    """``{"type", "verdict"}`` when the record or its payload carries a verification verdict."""
    for holder in (record, _payload(record)):
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


_EXIT_KEYS = frozenset({"exit_code", "exitCode"})


def exit_code_of(record: dict[str, Any]) -> int | None:
    payload = _payload(record)
    output = payload.get("output")
    for holder in (record, payload, output if isinstance(output, dict) else {}):
        if _EXIT_KEYS.isdisjoint(holder):
            continue
        for key in ("exit_code", "exitCode"):
            value = holder.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


_SPEND_SKIP = frozenset({"seq", "attempt", "exit_code", "exitCode", "step", "step_id", "line"})


def spend_of(record: dict[str, Any], kind: str, step: str | None) -> Any:
    """The spend this record carries, or None."""
    if is_record(record):
        return None
    payload = _payload(record)
    for holder in (record, payload):
        value = holder.get("spend")
        if value is not None and (isinstance(value, dict) or is_number(value)):
            return value
    if _words(kind)[-1:] == ("spend",):  # a spend record: its numbers are the spend
        numbers = {k: v for k, v in record.items()
                   if isinstance(v, int | float) and not isinstance(v, bool) and k not in _SPEND_SKIP}
        return numbers or None
    if step is not None:
        for holder in (record, payload):
            usage = holder.get("usage")
            if isinstance(usage, dict) and usage:
                return usage
    return None


def merge_spend(before: Any, more: Any) -> Any:
    """Spend added up: numbers are summed key by key, anything else takes the later value."""
    if before is None:
        return more
    if is_number(before) and is_number(more):
        return _add(before, more)
    if isinstance(before, dict) and isinstance(more, dict):
        out = dict(before)
        for key, value in more.items():
            out[key] = _add(before[key], value) if is_number(before.get(key)) and is_number(value) else value
        return out
    return more


def _add(a: int | float, b: int | float) -> int | float:
    """``a + b`` as the numbers are written, not as their doubles add up: ``0.1 + 0.2`` is 0.3 (the nearest double to
    it), not 0.30000000000000004. Where a double cannot hold the sum (``1e308 + 1e308``) or a number was read exactly
    (``2e400``, more digits than a double has), the sum as exact JSON writes it (not infinity: null)."""
    total = a + b
    if isinstance(total, int):
        return total
    from decimal import Context, Decimal  # here: a sum with a fraction (a spend in dollars)

    context = Context(prec=34)  # (digits enough for any sum of two doubles' texts; 1e400 + 1 rounds, as it should)
    exact = context.add(*(Decimal(getattr(n, "text", repr(n)) if isinstance(n, float) else n) for n in (a, b)))
    if total - total == 0 and not isinstance(a, exactjson.ExactNumber) and not isinstance(b, exactjson.ExactNumber):
        return float(exact)
    return exactjson.ExactNumber(str(exact.normalize(context)))


class SpendLedger:
    """What each step has journaled as spend so far, so every line of a step can show it.

    Memory stays bounded on journals of millions of steps: only the ``keep`` steps that recorded
    spend most recently are remembered (steps run a few at a time, so their records are close).
    """

    def __init__(self, keep: int = 10_000) -> None:
        self.by_step: OrderedDict[str, Any] = OrderedDict()
        self.keep = keep

    def add(self, step: str | None, spend: Any) -> Any:
        """Record ``spend`` (may be None) for ``step``; the step's spend so far (None for run-level)."""
        if step is None:
            return None
        by_step = self.by_step
        if spend is None:
            return by_step.get(step) if by_step else None
        by_step[step] = merge_spend(by_step.get(step), spend)
        by_step.move_to_end(step)
        if len(by_step) > self.keep:
            by_step.popitem(last=False)
        return by_step[step]


# detail -------------------------------------------------------------------------------------------
# C0 and C1 controls (a terminal obeys ``\x9b`` as it does ``\x1b[``), bidi overrides (text reads in another order than
# written), and half of a surrogate pair (no character, not UTF-8)
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f\ud800-\udfff{BIDI_CONTROLS}]")
_SPACE = re.compile(r"\s")


def one_line(text: str) -> str:
    """``text`` with control characters escaped, so a line of output stays one line and a terminal shows it as it is
    written (bidi overrides too), and each half of a surrogate pair (a JSON ``\\ud83d`` alone, or a byte of a name that
    is not UTF-8) as its ``\\uXXXX``, so the line is UTF-8."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    point = ord(char)
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char) or (f"\\u{point:04x}" if point > 0xFF else f"\\x{point:02x}")


def _field(text: str) -> str:
    """A kind or a step as one whitespace-free column: quoted (JSON) when it is empty, has whitespace or is ``-``
    (which stands for no step), so ``awk '{print $1, $2, $NF}'`` still reads kind, step and state."""
    return exactjson.dumps(text).decode() if not text or text == "-" or _SPACE.search(text) else one_line(text)


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return exactjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def _excerpt(value: Any, limit: int = EXCERPT) -> str:
    return excerpt(_compact(value), limit)


def _quoted_excerpt(text: str) -> str:
    return exactjson.dumps(excerpt(text, EXCERPT)).decode()


def _message_text(payload: dict[str, Any]) -> str | None:
    for key in ("text", "content", "message", "prompt"):
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list):  # content blocks: [{"type": "text", "text": ...}]
            texts = [str(b["text"]) for b in value if isinstance(b, dict) and isinstance(b.get("text"), str)]
            if texts:
                return " ".join(texts)
    return None


def _error_text(error: Any) -> str | None:
    if isinstance(error, str) and error:
        return error
    if isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
        if isinstance(code, str) and isinstance(message, str):
            return f"{code}: {message}"
        return _first_text(error, ("code", "message", "type")) or _compact(error)
    return None


_SPEC_KEYS = frozenset({"step_type", "adapter", "uses", "command", "cmd", "run", "prompt", "input", "argv"})
_OUTCOME_KEYS = frozenset({"outcome", "result", "status"})


def _step_spec(record: dict[str, Any]) -> tuple[str | None, str | None]:
    """(step type, what it runs) of a flows-style record: ``(run git status)``, ``(llm Summarize...)``."""
    step = record.get("step")
    if not isinstance(step, dict) and _SPEC_KEYS.isdisjoint(record):
        return None, None
    holders = [step] if isinstance(step, dict) else []
    holders.append(record)
    inputs = record.get("input")
    if isinstance(inputs, dict):
        holders.append(inputs)
    step_type = command = None
    for holder in holders:
        step_type = step_type or _first_text(holder, ("step_type", "adapter", "uses"))
        if step_type is None and holder is not record:
            step_type = _first_text(holder, ("type", "kind"))
        command = command or _first_text(holder, ("command", "cmd", "run"))
        if command is None:
            prompt = _first_text(holder, ("prompt",))
            command = _quoted_excerpt(prompt) if prompt is not None else None
    if command is None and isinstance(record.get("argv"), list):
        command = " ".join(map(str, record["argv"]))
    return step_type, command


def detail_of(record: dict[str, Any], kind: str, verification: dict[str, Any] | None, spend: Any,
              code: Any = _UNKNOWN) -> str:
    """The essential facts of a record, as ``key=value`` words (values on one line, essential ones whole)."""
    reserved = record.get(RECORD_KEY)
    parts: list[str] = []
    if reserved == RUN_RECORD:
        for key in ("status",):
            if isinstance(record.get(key), str):
                parts.append(f"{key}={record[key]}")
        error = _error_text(record.get("error"))
        if error:
            parts.append(f"error={error}")
        prompt = record.get("prompt")
        if isinstance(prompt, str):
            parts.append(f"prompt={_quoted_excerpt(prompt)}")
        return one_line(" ".join(parts))
    if reserved == HEAL_RECORD:
        if record.get("repairs") is not None:
            parts.append(f"repairs={_compact(record['repairs'])}")
        return one_line(" ".join(parts))
    if reserved is not None:
        source = record.get("source")
        return one_line(f"source={source}" if isinstance(source, str) else "")

    payload = _payload(record)
    step_type, command = _step_spec(record)
    if command is not None:
        parts.append(f"({step_type} {command})" if step_type else f"({command})")
    tool = named_tool(record)
    if tool:
        parts.append(f"tool={tool}")
    if kind == TOOL_CALLED:
        for key in ARGUMENT_KEYS:
            if key in payload:
                parts.append(f"args={_excerpt(payload[key])}")
                break
    code = exit_code_of(record) if code is _UNKNOWN else code
    if code is not None:
        parts.append(f"exit_code={code}")
    if verification is not None:
        verdict, vtype = _compact(verification["verdict"]), verification.get("type")
        parts.append(f"verification={_compact(vtype)}:{verdict}" if vtype else f"verification={verdict}")
    for holder in (record, payload):
        if "error" in holder:
            error = _error_text(holder["error"])
            if error:
                parts.append(f"error={error}")
                break
    outcome = (_first_text(record, ("outcome", "result", "status")) if not _OUTCOME_KEYS.isdisjoint(record) else None) or (
        _first_text(payload, ("outcome", "status")) if payload else None)
    if outcome is not None:
        parts.append(outcome)
    for key in ("flow", "reason"):
        value = record.get(key) if key in record else payload.get(key)
        if isinstance(value, str) and value:
            parts.append(f"{key}={_quoted_excerpt(value) if _SPACE.search(value) else value}")
    if spend is not None:
        parts.append(f"spend={_compact(spend)}")
    text = _message_text(payload) if kind.endswith("_message") else None
    if text is not None:
        parts.append(_quoted_excerpt(text))
    return one_line(" ".join(parts))


# a walk line --------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class WalkLine:
    """One record read as a step of a run."""

    kind: str
    step_id: str | None
    state: str
    detail: str
    verification: dict[str, Any] | None
    spend: Any  # the spend journaled for this step so far, else None

    def text(self) -> str:
        """Human form: kind, step (``-`` for none), detail, ``[state]``, column-aligned; fields never cut."""
        return f"{_field(self.kind):<24} {_field(self.step_id) if self.step_id is not None else '-':<14} {self.detail:<52} [{self.state}]"

    def json(self, event: bytes) -> bytes:
        """Machine form: ``{"step_id", "kind", "event", "verification", "spend"}``, ``event`` being the
        record's bytes exactly as journaled."""
        dumps = exactjson.dumps
        return b"".join((
            b'{"step_id":', dumps(self.step_id), b',"kind":', dumps(self.kind), b',"event":', event,
            b',"verification":', dumps(self.verification), b',"spend":', dumps(self.spend), b"}",
        ))

    def as_dict(self, event: Any) -> dict[str, Any]:
        return {"step_id": self.step_id, "kind": self.kind, "event": event,
                "verification": self.verification, "spend": self.spend}


def read_record(record: dict[str, Any], ledger: SpendLedger | None = None, detail: bool = True) -> WalkLine:
    """The walk line of one record; with a ledger, ``spend`` is the step's spend so far. Without
    ``detail`` (the JSON form has none) the line's detail is left empty."""
    kind = kind_of(record)
    step = step_of(record, kind)
    own_spend = spend_of(record, kind, step)
    spend = ledger.add(step, own_spend) if ledger is not None else (own_spend if step is not None else None)
    verification = verification_of(record)
    code = exit_code_of(record)
    return WalkLine(kind, step, state_of(record, kind, step, verification, code),
                    detail_of(record, kind, verification, own_spend, code) if detail else "", verification, spend)


# the end of a step --------------------------------------------------------------------------------
def ends_step(record: dict[str, Any], kind: str) -> bool:
    """Whether a record whose state ends its step (succeeded, failed, cancelled, skipped) is the step's
    terminal one: not when it ends one attempt (``step.attempt.failed``: the step may retry) or says
    the step will be retried (``"retrying": true``, on the record or its payload)."""
    if "attempt" in _words(kind):
        return False
    return record.get("retrying") is not True and _payload(record).get("retrying") is not True


class StepWatch:
    """Follows one step through a stream: ``feed`` says whether a record is that step's terminal one."""

    def __init__(self, step: str) -> None:
        self.step = step
        self.seen = False
        self.ended = False
        self._open: list[str | None] = []  # the step's tool calls still running

    def feed(self, record: dict[str, Any], kind: str, step: str | None, state: str) -> bool:
        if step != self.step or self.ended:
            return False
        self.seen = True
        if kind == TOOL_CALLED:
            self._open.append(call_id(record.get("payload")))
        elif kind in TOOL_ENDS and self._open:
            call = call_id(record.get("payload"))
            self._open.remove(call if call in self._open else self._open[0])
        if state in STEP_ENDS and not self._open and ends_step(record, kind):
            self.ended = True
        return self.ended


_PLAIN_ID = re.compile(r"[A-Za-z0-9._-]*")


def step_tokens(step: str) -> tuple[bytes, ...]:
    """Byte strings one of which every line naming ``step`` contains (a cheap filter before parsing):
    the step's own bytes, plus a backslash when a JSON writer may have escaped some of its characters
    (quotes, control or non-ASCII characters)."""
    raw = step.encode("utf-8", "surrogateescape")
    return (raw,) if _PLAIN_ID.fullmatch(step) else (raw, b"\\")


# finding where --at stops, before anything is printed ------------------------------------------------
_DROPPED = b'"' + RECORD_KEY.encode() + b'":"' + DROPPED_RECORD.encode() + b'"'  # how `replay read` writes one
@dataclass(frozen=True, slots=True)
class StepEnd:
    """Where a walk ``--at`` a step stops: the record after which nothing more is shown."""

    found: bool
    terminated: bool = False  # the step's terminal record was found (else: its last record, or a line
    # that cannot be read and may be the step's)
    end: int | None = None  # byte offset just past the stop record's line (JSONL input)
    line: int | None = None  # line number of the stop record (JSONL input)
    index: int | None = None  # 0-based position of the stop record among the records (documents)


def _watch_line(watch: StepWatch, raw: bytes) -> bool | None:
    """Feed one line to ``watch``: whether it is the step's; None when it cannot be read (not JSON,
    not an object; a dropped record once the step has appeared: what `replay read` left out may be its end),
    False for a blank line."""
    try:
        record = exactjson.loads(raw)
    except orjson.JSONDecodeError:
        return None if raw.strip(b" \t\r") else False
    if type(record) is not dict:
        return None
    if record.get(RECORD_KEY) == DROPPED_RECORD:
        return None if watch.seen else False
    kind = kind_of(record)
    step = step_of(record, kind)
    if step != watch.step:
        return False
    watch.feed(record, kind, step, state_of(record, kind, step))
    return True


def find_step_end(chunks: Iterable[bytes], step: str, max_line_bytes: int = 64 << 20) -> StepEnd:
    """Scan JSONL bytes for the end of ``step``, stopping at its terminal record.

    Only lines containing the step's text are parsed (``step_tokens``), so a scan costs about a
    ``bytes.find`` per chunk; a step that never terminates is scanned to the end for its last record.
    A line that cannot be read and may be the step's (it contains the step's text, or it is the last
    line, cut off, of a step seen already) is where the scan stops too, not terminated: the walk reads
    up to it and reports it, as it would without ``--at``. Lines longer than ``max_line_bytes`` are no
    records (``read`` skips them too), and cannot be read: the first one after the last record of a step that
    never ended may hold its end, and is where the scan stops (the walk reads up to it and reports it as too long).
    """
    tokens = (*step_tokens(step), _DROPPED)  # (a dropped record after the step's last may hide its end)
    watch = StepWatch(step)
    last: tuple[int, int] | None = None
    pieces: list[bytes] = []  # the unfinished line, as the chunks it came in
    pending = 0  # its length
    skipping = False  # inside a line longer than max_line_bytes
    skipped: int | None = None  # the line number of that line, when it came after the step's last record
    long: tuple[int, int] | None = None  # the first line too long after the step's last record: its end and number
    base = 0  # offset of the unfinished line in the input
    line = 1  # its line number
    for chunk in chunks:
        cut = chunk.rfind(b"\n") + 1
        if not cut:
            if skipping:
                base += len(chunk)
                continue
            pieces.append(chunk)
            pending += len(chunk)
            if pending > max_line_bytes:  # too long to be a record: skip to its end
                skipping = True
                skipped = line if last is not None else None
                base += pending
                pieces, pending = [], 0
            continue
        block = b"".join((*pieces, chunk[:cut])) if pieces else chunk[:cut]
        start = 0
        if skipping:  # the long line ends in this chunk: look only past it
            start = block.find(b"\n") + 1
            skipping = False
            if skipped is not None and long is None:
                long = (base + start, skipped)
        first = start  # the first line of the block that is not the end of one skipped
        if any(t in block for t in tokens):
            counted, numbered = 0, line  # newlines counted up to ``counted``; its line number
            while True:
                hits = [p for p in (block.find(t, start) for t in tokens) if p >= 0]
                if not hits:
                    break
                hit = min(hits)
                begin = block.rfind(b"\n", 0, hit) + 1
                finish = block.find(b"\n", hit)
                numbered += block.count(b"\n", counted, begin)
                counted = begin
                if finish - begin <= max_line_bytes:  # (a longer line is no record: see ``_first_long_line`` below)
                    mine = _watch_line(watch, block[begin:finish])
                    if mine is None:  # unreadable, maybe the step's own record: the walk reports it
                        return StepEnd(True, False, base + finish + 1, numbered)
                    if mine:
                        last = (base + finish + 1, numbered)
                        long = None
                        if watch.ended:
                            return StepEnd(True, True, last[0], last[1])
                start = finish + 1
        if last is not None and long is None and len(block) > max_line_bytes:  # (the first after the step's last record)
            after = max(first, last[0] - base)  # (where the step's last record ends, when it is in this block)
            found = _first_long_line(block, after, max_line_bytes)
            if found is not None:
                long = (base + found[1] + 1, line + block.count(b"\n", 0, found[0]))
        line += block.count(b"\n")
        base += len(block)
        pieces = [chunk[cut:]] if cut < len(chunk) else []
        pending = len(chunk) - cut
    if skipping and skipped is not None and long is None:  # the input ends in that line
        long = (base, skipped)
    tail = b"".join(pieces)  # the last line, without a newline
    if len(tail) > max_line_bytes:  # no record: as a line too long before it
        if last is not None and long is None:
            long = (base + len(tail), line)
    elif tail and not skipping and (last is not None or any(t in tail for t in tokens)):
        mine = _watch_line(watch, tail)
        if mine is None:  # cut off or unreadable: it may be the step's own terminal record
            return StepEnd(True, False, base + len(tail), line)
        if mine:
            last = (base + len(tail), line)
            long = None
            if watch.ended:
                return StepEnd(True, True, last[0], last[1])
    if last is None:
        return StepEnd(False)
    stop = long or last
    return StepEnd(True, False, stop[0], stop[1])


def _first_long_line(block: bytes, start: int, max_line_bytes: int) -> tuple[int, int] | None:
    """Where in ``block`` (whole lines, each ending in a newline) the first line from ``start`` on that is longer than
    ``max_line_bytes`` begins and ends (its newline); None when there is none."""
    lengths = list(map(len, block[start:].split(b"\n")))
    k = next(compress(count(), map(max_line_bytes.__lt__, lengths)), None)  # (one pass, that stops at it)
    if k is None:
        return None
    begin = start + sum(lengths[:k]) + k
    return begin, begin + lengths[k]


def find_step_end_in(records: Iterable[Any], step: str) -> StepEnd:
    """The same over records already parsed (a JSON document's): the stop record's index."""
    watch = StepWatch(step)
    last: int | None = None
    for index, record in enumerate(records):
        if type(record) is not dict:
            continue
        kind = kind_of(record)
        mine = step_of(record, kind)
        if mine != step:
            continue
        last = index
        if watch.feed(record, kind, mine, state_of(record, kind, mine)):
            return StepEnd(True, True, index=index)
    return StepEnd(False) if last is None else StepEnd(True, False, index=last)


@dataclass(frozen=True, slots=True)
class LineProblem:
    """A line that is no record: where it is and why."""

    message: str
    line: int
    offset: int
    excerpt: bytes
    column: int | None = None  # the fault's 1-based byte column on its line, where there is one
    cause: str | None = None  # the code read gives it, where it is not a record's fault (a line too long)


def first_record_problem(chunks: Iterable[bytes], max_line_bytes: int = 64 << 20) -> LineProblem | None:
    """Whether the first non-blank line of JSONL bytes is a record (a JSON object); stops there."""
    tail = b""
    base, line = 0, 1
    for chunk in chunks:
        tail += chunk
        while True:
            cut = tail.find(b"\n")
            if (cut if cut >= 0 else len(tail)) > max_line_bytes:
                return LineProblem(f"line {line} is longer than {max_line_bytes} bytes", line, base,
                                   tail[:min(cut if cut >= 0 else len(tail), 120)], cause=TOO_LONG)
            if cut < 0:
                break
            raw, tail = tail[:cut], tail[cut + 1:]
            if raw.strip(b" \t\r"):
                return _line_problem(raw, line, base, complete=True)
            base += cut + 1
            line += 1
    if tail.strip(b" \t\r"):
        return _line_problem(tail, line, base, complete=False)
    return None


def record_problem(record: Any, pointer: str | None) -> dict[str, Any] | None:
    """None when a record of a JSON document (an artifact's event, an array's item) is an object, else
    why it is no record, as the fields of its E_JOURNAL_READ_FAILED: ``reason``, the JSON ``path``, the
    ``cause`` (``read`` reports the same record as E_EVENT_NOT_OBJECT) and what it is."""
    if type(record) is dict:
        return None
    where = pointer or "a record"
    return {"reason": f"{where} is JSON but not an object", "path": pointer, "cause": "E_EVENT_NOT_OBJECT",
            "expected": "object", "received": excerpt(exactjson.dumps(record)),
            "howToFix": f"Each record of the document must be a JSON object: fix or remove {where}."}


def line_problem(raw: bytes, line: int, offset: int, complete: bool = True) -> LineProblem | None:
    """None when ``raw`` is a record (or blank), else what is wrong with it (a dropped record `replay read` wrote where
    it left a line out is no record of the journal: a line that could not be read)."""
    if not raw.strip(b" \t\r"):
        return None
    return _line_problem(raw, line, offset, complete)


def _line_problem(raw: bytes, line: int, offset: int, complete: bool) -> LineProblem | None:
    try:
        record = exactjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if not complete and exactjson.cut_off(raw, exc):  # (a wrong byte in it is no cut: said as for any line)
            return LineProblem(f"line {line} has no newline and is not valid JSON: the write was cut off", line, offset, raw)
        bad = utf8_fault(raw)  # (parse's words)
        if bad is not None:
            return LineProblem(f"line {line} {bad.not_json}", line, offset, raw, bad.column)
        column = exactjson.byte_column(raw, exc.pos)
        return LineProblem(f"line {line} is not valid JSON: {exc.msg} at column {column}", line, offset, raw, column)
    if type(record) is not dict:
        return LineProblem(f"line {line} is JSON but not an object", line, offset, raw)
    if record.get(RECORD_KEY) == DROPPED_RECORD:  # (a saved stream's: heal, validate and diff report it again too)
        code = record.get("code")
        return LineProblem(f"line {line} stands for what `replay read` left out there: {record.get('message')}", line,
                           offset, raw, cause=code if isinstance(code, str) else None)
    return None


# where a run's journal is ------------------------------------------------------------------------------
RUN_ID = re.compile(r"[A-Za-z0-9._-]{1,200}")
DEFAULT_DATA_DIR = ".replay"  # where capture writes: <data dir>/journal/<run id>.jsonl
JOURNAL_FOLDER = "journal"
PATH_SUFFIXES = (".jsonl", ".json", ".ndjson", ".gz")


def is_run_id(text: str) -> bool:
    """Letters, digits, ``.``, ``_`` and ``-`` (at most 200), never ``..``: such a name joined to a
    folder names a file directly inside it, so no run id can lead out of the data dir."""
    return RUN_ID.fullmatch(text) is not None and ".." not in text


def looks_like_path(text: str) -> bool:
    """An argument that names a file rather than a run: it has a path separator or a journal suffix."""
    return "/" in text or os.sep in text or text.endswith(PATH_SUFFIXES)


def journal_of(data_dir: str, run_id: str) -> str:
    """``<data_dir>/journal/<run_id>.jsonl`` for a run id that passed ``is_run_id``."""
    if not is_run_id(run_id):
        raise ValueError(f"not a run id: {run_id!r}")
    folder = os.path.join(data_dir, JOURNAL_FOLDER)
    path = os.path.join(folder, run_id + ".jsonl")
    if os.path.dirname(os.path.normpath(path)) != os.path.normpath(folder):  # cannot happen; never read outside
        raise ValueError(f"run id {run_id!r} leads out of {folder!r}")
    return path


# scanning a journal file before a walk -------------------------------------------------------------------
SCAN_CHUNK = 1 << 20


TOO_LONG, GZIP_INVALID = "E_JSONL_LINE_TOO_LONG", "E_GZIP_INVALID"


def read_failure_advice(cause: Any) -> dict[str, str]:
    """The ``howToFix`` of an E_JOURNAL_READ_FAILED whose cause has a remedy of its own, as what it adds to the error:
    a line longer than --max-line-bytes is read with a higher limit, a gzip stream cut off or corrupt from a whole copy,
    neither cut out of the journal; none for the others (the catalogue's advice: fix or cut the journal there)."""
    return {"howToFix": how_to_fix(cause)} if cause in (TOO_LONG, GZIP_INVALID) else {}


def _unreadable(journal: str, reason: str, **fields: Any) -> ReplayError:
    at = f" at byte {fields['offset']}" if fields.get("offset") is not None else ""
    return refused("E_JOURNAL_READ_FAILED", f"the journal could not be read{at}: {reason}", source=printable(journal), **fields)


def journal_chunks(path: str) -> Generator[bytes, None, None]:
    """The bytes of a journal file (gunzipped), as ``read`` sees them (a byte order mark included);
    E_JOURNAL_READ_FAILED when it cannot be opened or read."""
    opened = False
    offset = 0
    line, start = 1, 0  # the line being read, and the offset where it starts: where a failure is said to be, as read says it
    try:
        with open(path, "rb") as raw:
            opened = True
            # (the file or a GzipFile over it: buffered both. read1, not read: what a gzip stream cut off holds before
            # the cut comes out, where read(SCAN_CHUNK) raises and gives none of the MiB it was reading)
            stream = cast(io.BufferedIOBase, gunzipped(raw))
            while data := stream.read1(SCAN_CHUNK):
                yield data
                if (last := data.rfind(b"\n")) >= 0:
                    line, start = line + data.count(b"\n"), offset + last + 1
                offset += len(data)
    except (OSError, EOFError, zlib.error) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        if not opened:
            raise _unreadable(path, f"cannot open it: {reason}") from exc
        said: dict[str, str] = {}
        if isinstance(exc, EOFError | zlib.error | BadGzipFile):  # (read's words and code for it: E_GZIP_INVALID)
            reason = "gzip stream is truncated" if isinstance(exc, EOFError) else f"gzip stream is corrupt: {exc}"
            said = {"cause": GZIP_INVALID, **read_failure_advice(GZIP_INVALID)}
        raise _unreadable(path, reason, line=line, offset=start, **said) from exc


def _until_unreadable(chunks: Iterable[bytes], failed: list[ReplayError]) -> Iterator[bytes]:
    """``chunks`` up to where the file could not be read on (``journal_chunks``' E_JOURNAL_READ_FAILED, put in
    ``failed``), which ends them."""
    try:
        yield from chunks
    except ReplayError as exc:
        failed.append(exc)


def _without(chunks: Iterable[bytes], skip: int) -> Iterator[bytes]:
    for k, data in enumerate(chunks):
        yield data[skip:] if k == 0 else data


@dataclass(frozen=True, slots=True)
class JournalScan:
    """What a look at a journal file found before walking it."""

    document: bool  # one JSON document (an artifact), not JSONL
    end: StepEnd | None  # where the walk to the step asked for stops (None: no step asked for)


_SCANS: dict[tuple[Any, ...], JournalScan] = {}


def scan_journal(path: str, at: str | None, max_line_bytes: int = 64 << 20) -> JournalScan:
    """Refuse a journal whose first record is unreadable (E_JOURNAL_READ_FAILED) and find where a
    walk ``at`` a step stops. The last scan is remembered while the file is unchanged, so the
    command that binds the walk and the stage that runs it share one pass."""
    st = os.stat(path)
    key = (path, at, max_line_bytes, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if key in _SCANS:
        return _SCANS[key]
    scan = _scan(path, at, max_line_bytes)
    _SCANS.clear()
    _SCANS[key] = scan
    return scan


class _OneRead:
    """The chunks of a journal file, read once for several looks in turn: what the early looks (the head, the
    first record) took is kept and given again to the next look; the last look keeps nothing (it may read the
    whole file)."""

    def __init__(self, path: str) -> None:
        self.chunks = journal_chunks(path)
        self.taken: list[bytes] = []

    def look(self, keep: bool = True) -> Iterator[bytes]:
        yield from list(self.taken)
        for data in self.chunks:
            if keep:
                self.taken.append(data)
            yield data

    def close(self) -> None:
        self.chunks.close()


def _scan(path: str, at: str | None, max_line_bytes: int) -> JournalScan:
    read = _OneRead(path)
    try:
        return _scan_read(read, path, at, max_line_bytes)
    finally:
        read.close()


def _whole(chunks: Iterable[bytes], limit: int) -> bytes | None:
    """All the bytes of ``chunks``, or None as soon as there are more than ``limit`` (not read further)."""
    parts: list[bytes] = []
    size = 0
    for data in chunks:
        parts.append(data)
        size += len(data)
        if size > limit:
            return None
    return b"".join(parts)


def _head(read: _OneRead, max_line_bytes: int) -> tuple[bytes, bool]:
    """The input's first bytes, enough for ``head_format`` to tell lines from a document, and whether they are the
    whole input (too short for head_format to tell: `read` tries it as a document)."""
    head = b""
    for data in read.look():
        head += data
        if head_format(head) is not None or len(head) > max_line_bytes:
            return head, False
    return head, True


def _scan_read(read: _OneRead, path: str, at: str | None, max_line_bytes: int) -> JournalScan:
    head, whole = _head(read, max_line_bytes)
    bom = exactjson.skip_bom(head)[1]
    if head_format(head) == DOCUMENT or (whole and as_document(head[bom:]) is not None):
        # one JSON document (an artifact, an array): read whole, as `read` does
        whole_input = _whole(read.look(keep=False), max_line_bytes)
        if whole_input is None:  # as `read` reads it: not past the limit, and one error for the input
            too_long = document_too_long(max_line_bytes)
            raise _unreadable(path, f"it is {too_long.pop('what')}", line=1, offset=bom, cause="E_JSONL_LINE_TOO_LONG",
                              **too_long)
        data = whole_input[bom:]
        document = as_document(data)
        if document is None:
            raise _unreadable(path, "it is neither JSONL nor one JSON artifact", offset=0, received=excerpt(data[:120]))
        first = next(document_items(document, path), None)  # its first record: the $run record of an artifact
        bad = record_problem(first.events[0], first.pointers[0]) if first is not None and first.events else None
        if bad is not None:
            raise _unreadable(path, bad.pop("reason"), **bad)
        if at is None:
            return JournalScan(True, None)
        records = [r for batch in document_items(document, path) for r in batch.events or ()]
        return JournalScan(True, find_step_end_in(records, at))
    problem = first_record_problem(_without(read.look(), bom), max_line_bytes)
    if problem is not None:
        raise _unreadable(path, problem.message, line=problem.line, column=problem.column, offset=problem.offset + bom,
                          cause=problem.cause, **read_failure_advice(problem.cause),
                          received=excerpt(problem.excerpt))
    if at is None:
        return JournalScan(False, None)
    cut: list[ReplayError] = []  # (the file stops being readable before its end: a gzip stream cut off or corrupt)
    end = find_step_end(_until_unreadable(_without(read.look(keep=False), bom), cut), at, max_line_bytes)
    if cut and not end.found:
        raise cut[0]
    if cut and not end.terminated:  # the step's end may be in what cannot be read: the walk reads up to that place
        return JournalScan(False, StepEnd(True))  # and reports it there (exit 1), as a cut-off last line
    if end.end is not None and bom:
        end = StepEnd(end.found, end.terminated, end.end + bom, end.line)
    return JournalScan(False, end)


def journal_dialect(path: str, max_line_bytes: int = 64 << 20) -> str:
    """The dialect ``dialect = "auto"`` reads a journal file as (``input_dialect``): judged from the records ``read``
    gives of it, a JSON document's (read whole, within ``max_line_bytes``) or its first lines that are JSON objects.
    CANONICAL for replay's own (and for a document too long or not JSON: the walk reports it as ever)."""
    read = _OneRead(path)
    try:
        head, whole = _head(read, max_line_bytes)
        if whole or head_format(head) == DOCUMENT:
            data = _whole(read.look(keep=False), max_line_bytes)
            try:
                value = exactjson.loads(exactjson.skip_bom(data)[0]) if data is not None else None
            except orjson.JSONDecodeError:
                value = None  # (lines after all: a one-line input that is no JSON, or JSONL too short to tell)
            else:
                if isinstance(value, list):  # an array of records (an OpenHands event list, a flows journal's)
                    return input_dialect(_walks_own(value))
                if isinstance(value, dict):  # a trajectory, an artifact; or one line's record
                    return document_dialect(value) or input_dialect(_walks_own([value]))
        lines = _line_objects(_without(read.look(keep=False), exactjson.skip_bom(head)[1]), path, max_line_bytes)
        first = next(lines, None)
        if first is None:  # no line is a record on its own: records pretty-printed, or split as join_split_records joins
            return input_dialect(_walks_own(_split_records(path, max_line_bytes)))
        return input_dialect(_walks_own(chain([first], lines)))
    finally:
        read.close()


def _split_records(path: str, limit: int) -> Iterator[Any]:
    """The records of a journal's first ``limit`` bytes read as JSON values one after another, whatever lines they
    span (pretty-printed, or a raw newline in a string: what ``join_split_records`` joins for heal); where no value
    can be read, the next line is tried."""
    read = _OneRead(path)
    try:
        data = b"".join(_first_bytes(read.look(keep=False), limit))
    finally:
        read.close()
    text = data[exactjson.skip_bom(data)[1]:].decode("utf-8", "replace")
    decoder, blank, at = json.JSONDecoder(strict=False), re.compile(r"[ \t\r\n]*"), 0
    while True:
        at = blank.match(text, at).end()  # type: ignore[union-attr]
        if at >= len(text):
            return
        try:
            value, at = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            at = text.find("\n", at) + 1
            if not at:
                return
            continue
        yield value


def _first_bytes(chunks: Iterable[bytes], limit: int) -> Iterator[bytes]:
    """``chunks`` up to ``limit`` bytes (the last one cut there); nothing read after."""
    for data in chunks:
        yield data[:limit]
        limit -= len(data)
        if limit <= 0:
            return


_WALKS_OWN = {RECORD_KEY: "flows"}  # what a flows-style record counts as when the dialect is judged: a record of walk's own


def _walks_own(records: Iterable[Any]) -> Iterator[Any]:
    """``records``, each flows-style one (a ``kind`` and a ``run_id`` or ``step_id``) as one of replay's own: walk reads
    those itself, whatever other keys they have (a flows message's ``role`` and ``content`` are no mini-swe-agent
    record's)."""
    for record in records:
        flows = isinstance(record, dict) and isinstance(record.get("kind"), str) and ("run_id" in record or "step_id" in record)
        yield _WALKS_OWN if flows else record


def _line_objects(chunks: Iterable[bytes], source: str, max_line_bytes: int) -> Iterator[dict[str, Any]]:
    """The lines of JSONL bytes that are JSON objects (the records ``parse`` makes of them), in order."""
    cutter = LineCutter(source, max_line_bytes)
    for items in chain((cutter.feed(data) for data in chunks), (cutter.finish(),)):
        for item in items:
            for raw in item.raws if isinstance(item, Batch) else ():
                try:
                    record = exactjson.loads(raw or b"")
                except orjson.JSONDecodeError:
                    continue
                if type(record) is dict:
                    yield record
