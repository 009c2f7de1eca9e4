"""Walk lines: how one journal record reads as a step of a run (kind, step, detail, state, verdict, spend).

Two journal dialects are read alike:

- canonical (this project's): events with ``type``, ``seq``, ``runId``, ``payload`` and optionally
  ``step``; reserved records ``{"$record": "run" | "heal" | "source", ...}``;
- flows-style: records with ``kind`` and ``step_id``; run-level records carry no step.

For each record:

- **kind**: ``kind``, else ``type``; a reserved record is ``$`` + its name (``$run``, ``$heal``).
- **step**: ``step_id``, else ``step`` (a string, a number, or an object with an ``id``), else for a
  tool event its call id (``callId`` / ``toolCallId`` / ``id`` in the payload); None for run-level
  records (reserved records, ``run_*`` / ``run.*`` kinds, whatever ``step_id`` or ``step`` they carry: the
  seed's walk has step_id null for run-level events, and a mapped log's run_completed is numbered with the model call
  it came in, in every dialect, and is still the run's end; messages without a step).
- **state**: from the last word of the kind: ``pending`` (spawned, scheduled, queued), ``running``
  (started, called), ``succeeded`` (completed, succeeded, done), ``failed`` (failed, errored, timed
  out, or completed with a non-zero exit code or a failing verdict: ``outcome.went_wrong``), ``cancelled``, ``skipped``,
  ``parked``; a run-level end (``run_completed``, ``run.failed``, ``run.parked``, ...) is
  ``terminal``; anything else (messages, run and heal records) is ``info``.
- **detail**: what a reader needs to follow the run: the step's type and command, tool name, a shell
  tool call's command (its ``command`` / ``cmd`` argument), exit code, verification verdict, error,
  status, spend. Those are never cut; message texts and the other tool arguments are excerpts.
- **verification**: ``{"type", "verdict"}`` when the record (or its payload) carries a verdict.
- **spend**: the spend a record carries (a ``spend`` field, a spend record's numbers, a step's
  ``usage``); ``SpendLedger`` adds up what each step has recorded so far in its run, leaving out an amount that is no count
  (a negative number, true, a number as text: ``no_count``).

A step ends at its terminal record (``ends_step``, ``StepWatch``); finding it in a journal file, and the rest a walk
must know before it prints (where a run's journal is, its first unreadable line, its dialect), is ``walk_journal``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import excerpt
from replay.pipeline.model.markup import BIDI_CONTROLS
from replay.pipeline.model.outcome import UNKNOWN as _UNKNOWN
from replay.pipeline.model.outcome import exit_code_of, verification_of, went_wrong
from replay.pipeline.model.outcome import payload_of as _payload
from replay.pipeline.model.records import HEAL_RECORD, RECORD_KEY, RUN_RECORD, SOURCE_RECORD, is_record
from replay.pipeline.model.runs import Run, name_run, run_id_named, starts_run
from replay.pipeline.model.toolcalls import ARGUMENT_KEYS, OpenCalls, call_id, named_tool, tool_name
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
TOOL_CALLED, TOOL_ENDS = "tool_called", frozenset({"tool_completed", "tool_failed"})
EXCERPT = 60


# kind, step ---------------------------------------------------------------------------------------
def kind_of(record: dict[str, Any]) -> str:
    """A record's kind as the text walk shows and reads states from: ``raw_kind_of``, ``?`` when that is no text or
    empty."""
    kind = raw_kind_of(record)
    return kind if isinstance(kind, str) and kind else "?"


def raw_kind_of(record: dict[str, Any]) -> Any:
    """A record's kind as journaled (the seed's ``--json`` ``kind``: "the raw event kind from the journal"): its
    ``kind``, else its ``type``, the first that is a non-empty string; else the value written there as it is (``""``,
    a number, null: ``kind`` first), None when the record has neither. A reserved record's is ``$`` + its name."""
    reserved = record.get(RECORD_KEY)
    if is_record(record):  # (a kind that is no string, null say, as JSON writes it)
        return "$" + (reserved if isinstance(reserved, str) else exactjson.dumps(reserved).decode())
    for key in ("kind", "type"):
        value = record.get(key)
        if isinstance(value, str) and value:
            return value
    for key in ("kind", "type"):
        if key in record:
            return record[key]
    return None


def _id_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


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
    kind = kind if kind is not None else kind_of(record)
    if _run_level(kind):  # (the seed's walk: "step_id is null for run-level events", whatever step_id they carry; a
        return None  # mapped log's ``step`` on its run_completed is the model call it came in: no step of it either)
    step = _id_text(record.get("step_id"))
    if step is not None:
        return step
    value = record.get("step")
    step = _id_text(value) if not isinstance(value, dict) else _id_text(value.get("id") or value.get("step_id"))
    if step is not None:
        return step
    if kind.startswith("tool_"):
        return call_id(record.get("payload"))
    return None


def _run_level(kind: str) -> bool:
    """A kind of the run's own (``run_started``, ``run_completed``, ``run.spawned``, ``run.timed_out``): ``run``, then
    words ending in a state; not a kind such as ``run_command``."""
    return _words(kind)[:1] == ("run",) and _word_state(kind) is not None


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


def state_of(record: dict[str, Any], kind: str, step: str | None, verification: Any = _UNKNOWN,
             code: Any = _UNKNOWN) -> str:
    """The state a record leaves its step (or run) in; ``verification`` and ``code`` when known already."""
    if is_record(record):
        return INFO
    state = _word_state(kind)
    if step is None and _words(kind)[:1] == ("run",) and state in _RUN_ENDS:
        return TERMINAL
    if state == SUCCEEDED and went_wrong(record, verification, code):
        return FAILED
    return state or INFO


# spend --------------------------------------------------------------------------------------------
_SPEND_SKIP = frozenset({"seq", "attempt", "exit_code", "exitCode", "step", "step_id", "line",  # (a spend record's
                         "id", "run_id", "runId", "event_id", "ts", "time", "timestamp"})  # members that are no spend)


_NUMBER_TEXT = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*")


def spend_at(record: dict[str, Any], kind: str, step: str | None) -> tuple[Any, str]:
    """The spend this record carries (or None), and the JSON path it is at (``$.spend``, ``$`` for a spend record's
    own members)."""
    if is_record(record):
        return None, "$"
    payload = _payload(record)
    for holder, at in ((record, "$"), (payload, "$.payload")):
        value = holder.get("spend")
        if value is not None and (isinstance(value, dict) or is_number(value) or _is_number_text(value)):
            return value, f"{at}.spend"
    if _words(kind)[-1:] == ("spend",):  # a spend record: its numbers are the spend (a number as text too: no count),
        numbers = {k: v for k, v in record.items()  # but an id's or a version's digits (``"request_id": "4711"``) are none
                   if k not in _SPEND_SKIP and (is_number(v) or _is_number_text(v)) and not _names_a_thing(k)}
        return numbers or None, "$"
    if step is not None:
        for holder, at in ((record, "$"), (payload, "$.payload")):
            usage = holder.get("usage")
            if isinstance(usage, dict) and usage:
                return usage, f"{at}.usage"
    return None, "$"


def _names_a_thing(key: str) -> bool:
    """Is ``key`` an id's or a version's (``id``, ``uuid``, ``request_id``, ``requestId``, ``requestID``,
    ``model_version``), whose number is no amount? A word of the key, not its last letters: ``paid``, ``PAID`` and
    ``valid`` are no id."""
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", key)
    return bool(words) and words[-1].lower() in ("id", "uuid", "version")


def _is_number_text(value: Any) -> bool:
    return isinstance(value, str) and _NUMBER_TEXT.fullmatch(value) is not None


def no_count(value: Any) -> bool:
    """Is a spend amount no count or cost, so left out of a step's spend so far (E_USAGE_NOT_COUNTED, as report leaves
    such a usage value out): a negative number, true or false, or a number written as text (``"1.5"``)? Other values
    of a spend object (a name such as ``"service_tier": "default"``, an object, null) are no amounts: not added up,
    the later one kept."""
    return isinstance(value, bool) or (is_number(value) and value < 0) or _is_number_text(value)


def counted_spend(spend: Any, at: str) -> tuple[Any, list[str]]:
    """``spend`` (found at JSON path ``at``) without its amounts that are no count (``no_count``; None when nothing is
    left), and the JSON paths of those left out."""
    if isinstance(spend, dict):
        out = [key for key, value in spend.items() if no_count(value)]
        if not out:
            return spend, []
        kept = {key: value for key, value in spend.items() if key not in out}
        return kept or None, [f"{at}.{key}" for key in out]
    if no_count(spend):
        return None, [at]
    return spend, []


def merge_spend(before: Any, more: Any) -> Any:
    """Spend added up: numbers are summed key by key, anything else takes the later value."""
    if before is None:
        return more
    if is_number(before) and is_number(more):
        return add_as_written(before, more)
    if isinstance(before, dict) and isinstance(more, dict):
        out = dict(before)
        for key, value in more.items():
            out[key] = add_as_written(before[key], value) if is_number(before.get(key)) and is_number(value) else value
        return out
    return more


def add_as_written(a: int | float, b: int | float) -> int | float:
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
    """What each step has journaled as spend so far in its run, so every line of a step can show it. An amount that is
    no count (``no_count``: a negative number, true, a number as text) is left out of it; ``left_out`` holds the JSON
    paths of those the last record added had.

    Exact: every step of the run that recorded spend is remembered (a step id and its sums, a few hundred bytes), and
    the ledger starts over where a new run begins (``begin``): a step's spend is its run's, never an earlier run's of
    the same step id, so memory grows with the steps of one run that recorded spend, not with the journal.
    """

    def __init__(self) -> None:
        self.by_step: dict[str, Any] = {}
        self.left_out: list[str] = []
        self.run: Run | None = None  # the run in progress: its input, and the run id its records name once one has

    def begin(self, record: dict[str, Any], source: str) -> None:
        """Before ``record`` (read from ``source``) is added: start over when it begins another run than the one in
        progress (``starts_run``, a run told by ``run_id_named``: a canonical ``runId``, else a flows journal's
        ``run_id``). An input's mark (``{"$record": "source"}``, whatever input it names: walk reads a saved stream's
        lines as they are) ends the run; other reserved records (heal's) are no run's."""
        if is_record(record):
            reserved = record.get(RECORD_KEY)
            if reserved == SOURCE_RECORD:
                self.run = None
            elif reserved != RUN_RECORD:
                return
        run = self.run
        if run is None or starts_run(record, run, source, run_id_named):
            self.by_step, self.run = {}, Run(run_id_named(record), None, source)
        else:
            name_run(run, record, run_id_named)

    def add(self, step: str | None, spend: Any, at: str = "$") -> Any:
        """Record ``spend`` (may be None; at JSON path ``at`` in its record) for ``step``; the step's spend so far (None
        for run-level)."""
        if self.left_out:
            self.left_out = []
        if step is None:
            return None
        by_step = self.by_step
        if spend is not None:
            spend, self.left_out = counted_spend(spend, at)
        if spend is None:
            return by_step.get(step) if by_step else None
        total = by_step[step] = merge_spend(by_step.get(step), spend)
        return total


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
    """A kind or a step as one whitespace-free column: quoted (JSON) when it is empty, has whitespace or a control
    character (``one_line``'s: all of them, so a step shown can be read back, JSON-decoded, for ``--at``), begins with
    ``"`` (else it would read as the quoted form of another) or is ``-`` (which stands for no step), so
    ``awk '{print $1, $2, $NF}'`` still reads kind, step and state. Each control character JSON writes as it is (DEL,
    C1, bidi overrides) is written as its ``\\uXXXX`` too."""
    if text and text != "-" and text[0] != '"' and not _SPACE.search(text) and not _CONTROL.search(text):
        return text
    return _CONTROL.sub(_json_escaped, exactjson.dumps(text).decode())


def _json_escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


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


# where a message's text is in its payload, first found first; ``response``: the assistant_message heal makes of a run
# record's final response (synthesize_assistant_message)
MESSAGE_TEXT_KEYS = ("text", "content", "message", "prompt", "response")


def _message_text(payload: dict[str, Any]) -> str | None:
    for key in MESSAGE_TEXT_KEYS:
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


COMMAND_KEYS = ("command", "cmd")  # where a shell tool call's command is in its arguments, as the dialects name it


def _arguments(args: Any) -> list[str]:
    """A tool call's arguments as detail words: the command of a shell call (``command`` / ``cmd``, a string or a
    list of words, as JSON) whole, as ``command="..."``; the other arguments, ``args=...``, an excerpt."""
    if isinstance(args, str) and args.startswith("{"):  # (arguments as the model wrote them: a JSON text)
        try:
            parsed = exactjson.loads(args)
        except (orjson.JSONDecodeError, RecursionError):
            parsed = None
        if isinstance(parsed, dict):
            args = parsed
    if not isinstance(args, dict):
        return [f"args={_excerpt(args)}"]
    key = next((k for k in COMMAND_KEYS if _is_command(args.get(k))), None)
    if key is None:
        return [f"args={_excerpt(args)}"]
    words = [f"{key}={exactjson.dumps(args[key]).decode()}"]
    rest = {k: v for k, v in args.items() if k != key}
    if rest:
        words.append(f"args={_excerpt(rest)}")
    return words


def _is_command(value: Any) -> bool:
    return (isinstance(value, str) and value != "") or (
        isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value))


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
                parts.extend(_arguments(payload[key]))
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
    raw_kind: Any  # the kind as journaled (``raw_kind_of``): the JSON form's; ``kind`` is the text form's

    def text(self) -> str:
        """Human form: kind, step (``-`` for none), detail, ``[state]``, column-aligned; fields never cut."""
        return f"{_field(self.kind):<24} {_field(self.step_id) if self.step_id is not None else '-':<14} {self.detail:<52} [{self.state}]"

    def json(self, event: bytes) -> bytes:
        """Machine form: ``{"step_id", "kind", "event", "verification", "spend"}``, ``event`` being the
        record's bytes exactly as journaled and ``kind`` its kind as journaled (``raw_kind``)."""
        dumps = exactjson.dumps
        return b"".join((
            b'{"step_id":', dumps(self.step_id), b',"kind":', dumps(self.raw_kind), b',"event":', event,
            b',"verification":', dumps(self.verification), b',"spend":', dumps(self.spend), b"}",
        ))

    def as_dict(self, event: Any) -> dict[str, Any]:
        return {"step_id": self.step_id, "kind": self.raw_kind, "event": event,
                "verification": self.verification, "spend": self.spend}


def read_record(record: dict[str, Any], ledger: SpendLedger | None = None, detail: bool = True) -> WalkLine:
    """The walk line of one record; with a ledger, ``spend`` is the step's spend so far. Without
    ``detail`` (the JSON form has none) the line's detail is left empty."""
    raw_kind = raw_kind_of(record)
    kind = raw_kind if isinstance(raw_kind, str) and raw_kind else "?"  # (``kind_of``: read once)
    step = step_of(record, kind)
    own_spend, at = spend_at(record, kind, step)
    spend = ledger.add(step, own_spend, at) if ledger is not None else (own_spend if step is not None else None)
    verification = verification_of(record)
    code = exit_code_of(record)
    return WalkLine(kind, step, state_of(record, kind, step, verification, code),
                    detail_of(record, kind, verification, own_spend, code) if detail else "", verification, spend,
                    raw_kind)


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
        self._open: OpenCalls[bool] = OpenCalls()  # the step's tool calls still running (paired as a report pairs them)
        self._early: set[str] = set()  # the ids of results written before their call: that call is answered when made

    def feed(self, record: dict[str, Any], kind: str, step: str | None, state: str) -> bool:
        if step != self.step or self.ended:
            return False
        self.seen = True
        if kind == TOOL_CALLED:
            payload = record.get("payload")
            cid = call_id(payload)
            if cid is None or cid not in self._early:
                self._open.open(cid, tool_name(payload) or "unknown", True)
            else:  # (its result came first: ``toolcalls.CallPairing.early``)
                self._early.discard(cid)
        elif kind in TOOL_ENDS:
            payload = record.get("payload")
            cid = call_id(payload)
            if self._open.close(cid, tool_name(payload)) is None and cid is not None and cid not in self._open.answered:
                self._early.add(cid)
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
