"""Validation of replay artifacts and stream records: plain functions returning error bodies, no I/O.

``validate_artifact(doc)`` checks one replay artifact (``schemas/replay-artifact.schema.json``);
``EventChecker`` checks the records of a stream one at a time (``schemas/stream.schema.json``),
keeping per-run state so it can tell that ``seq`` goes 1, 2, ... n inside each run. Both return
lists of diagnostic bodies (``pipeline.errors.diagnostic``) with ``path``, ``expected``,
``received`` and ``howToFix``; callers add the input position. Every problem is reported, not only
the first. The checks cover everything the schemas say, plus what a schema cannot say (seq order).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import diagnostic, excerpt, utf8_fault
from replay.pipeline.io.journals import JSON_SPACE, LINES, head_format, is_record_array
from replay.pipeline.model.artifacts import ARTIFACT_TYPE, SCHEMA_VERSION
from replay.pipeline.model.events import is_timestamp, run_id_origin
from replay.pipeline.model.records import (
    DROPPED_RECORD,
    HEAL_RECORD,
    RECORD_KEY,
    REDACTION_RECORD,
    RUN_DROPPED,
    RUN_RECORD,
    SOURCE_RECORD,
    STATUSES,
    STREAM_RECORDS,
    has_records,
    is_record,
)
from replay.pipeline.model.runs import ARTIFACT_EVENTS, Run, marks_input, name_run, of_artifact_run, starts_run

SUPPORTED_SCHEMA_VERSIONS = (SCHEMA_VERSION,)
SEQ_ORDERS = ("contiguous", "increasing", "any")

EXAMPLE_TIMESTAMP = "2026-03-01T12:00:00.000Z"
EXAMPLE_EVENT = (
    '{"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started", "runId": "run_1", "payload": {}}'
)
EXAMPLE_ARTIFACT = (
    '{"schemaVersion": "1.0.0", "artifactType": "replay", "id": "run_1", "timestamp": "2026-03-01T12:00:00.000Z",'
    ' "prompt": "hi", "query": "hi", "status": "ok", "response": "hello", "events": []}'
)

Problems = list[dict[str, Any]]


class _Missing:
    def __repr__(self) -> str:
        return "missing"


MISSING: Any = _Missing()


# describing values -------------------------------------------------------------------------------
def json_type(value: Any) -> str:
    """The JSON Schema type name of a parsed JSON value."""
    if value is MISSING:
        return "missing"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def named(value: Any) -> str:
    """How a message names a JSON value: ``missing``, ``null``, ``true``, ``3``, ``'text'`` (long strings cut),
    else its JSON type (``array``, ``object``); never a Python spelling such as None or True."""
    if value is MISSING or value is None or isinstance(value, dict | list):
        return json_type(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):  # as JSON writes it: 1e400 (read as infinity) as written, not inf
        return exactjson.dumps(value).decode()
    return repr(shown(value))


def shown(value: Any, limit: int = 120) -> Any:
    """What an error's ``received`` says: a scalar as itself (long strings cut), else its JSON type."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + "…"
    if isinstance(value, bool | int | float):
        return value
    return json_type(value)


# the small predicates both schemas use ---------------------------------------------------------
def is_integer(value: Any) -> bool:
    """An integer written as one (booleans and 2.0 are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_rfc3339(value: Any) -> bool:
    """An RFC 3339 date-time as JSON Schema's ``date-time`` format reads it (see events.is_timestamp)."""
    return is_timestamp(value)


def state_of(value: Any) -> str:
    """How a message describes what it found: ``is missing``, ``is string 'x'``, ``is array``."""
    if value is MISSING:
        return "is missing"
    if isinstance(value, dict | list) or value is None:
        return f"is {json_type(value)}"
    return f"is {json_type(value)} {named(value)}"


def _nonempty_string(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


EVENT_TYPE = 'non-empty string, e.g. "tool_called"'  # what an event's `type` must be (event.schema.json's `type`)


def is_event_type(value: Any) -> bool:
    """An event's ``type`` as ``event.schema.json`` has it, to which ``runner-output.schema.json``'s ``runnerEvent``
    refers: a non-empty string. A stream's events and a runner's are held to it alike."""
    return _nonempty_string(value)


_STR = {str}


def all_event_types(values: list[Any]) -> bool:
    """Is each of ``values`` (a batch's types, read as a column) an event type (``is_event_type``)? By C-level maps."""
    return set(map(type, values)) <= _STR and "" not in values


def is_no_event(record: dict[str, Any]) -> bool:
    """Is ``record`` (a stream's object) no event: none of replay's own records (``$record``), and its ``type`` no event
    type (``is_event_type``): missing (``{"a": 1}``), empty, or no string (a number, null, an object)? ``report`` and
    ``export --otlp`` leave such a record out and say so (``no_event_error``), as ``validate`` reports its ``type``."""
    return not is_event_type(record.get("type")) and not is_record(record)


def no_event_error(record: dict[str, Any], outcome: str, **where: Any) -> dict[str, Any]:
    """The error ``report`` and ``export --otlp`` give a record that is no event (``is_no_event``), at ``where`` (its
    position, the stage): validate's code for its ``type`` (E_ARTIFACT_EVENT_TYPE_INVALID), ``outcome`` saying what
    is left without it (``it is not exported``)."""
    etype = record.get("type", MISSING)
    return diagnostic("E_ARTIFACT_EVENT_TYPE_INVALID", f"the record is no event: its `type` {state_of(etype)}; {outcome}",
                      **where, expected=EVENT_TYPE, received=shown(etype),
                      howToFix="Give every event a non-empty string `type` (`replay validate` says what else it lacks), "
                               "or leave the record out of the stream.", example='"type": "tool_called"')


def _problem(code: str, message: str, path: str, expected: Any, value: Any, example: str | None = None,
             how_to_fix: str | None = None) -> dict[str, Any]:
    fix = {"howToFix": how_to_fix} if how_to_fix else {}
    return diagnostic(code, message, path=path, expected=expected, received=shown(value), example=example, **fix)


# run-level facts (shared by artifacts and run records) -----------------------------------------
def _is_boolean(value: Any) -> bool:
    return isinstance(value, bool)


def _count_or_null(value: Any) -> bool:
    """A usage count or cost: a number >= 0, or null (one not given, as if left out: the schemas allow it)."""
    return value is None or (is_number(value) and value >= 0)


def _string_array(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _is_object(value: Any) -> bool:
    return isinstance(value, dict)


def _is_string(value: Any) -> bool:
    return isinstance(value, str)


# field -> (expected, predicate). A field that is present must satisfy its predicate.
FACTS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "timestamp": ("an RFC 3339 date-time string, e.g. " + EXAMPLE_TIMESTAMP, is_rfc3339),
    "prompt": ("string", _is_string),
    "query": ("string", _is_string),
    "response": ("string", _is_string),
    "framework": ("string", _is_string),
    "error": ("object", _is_object),
    "usage": ("object", _is_object),
    "sources": ("array of strings", _string_array),
    "context": ("object", _is_object),
    "timings": ("object", _is_object),
}


# Members of the object-valued facts: checked when present.
MEMBERS: dict[str, dict[str, tuple[str, Callable[[Any], bool]]]] = {
    "error": {"code": ("string", _is_string), "message": ("string", _is_string), "retryable": ("boolean", _is_boolean)},
    "usage": {"inputTokens": ("number >= 0", _count_or_null), "outputTokens": ("number >= 0", _count_or_null),
              "costUsd": ("number >= 0", _count_or_null)},
}
# A usage count or cost that is no count (a number >= 0): its one code wherever replay meets it. validate and heal's
# check report it (an error: the schemas hold a run's usage to counts), capture and report leave it out (a notice).
USAGE_NOT_COUNTED = "E_USAGE_NOT_COUNTED"
# The code of a member of MEMBERS that is not what it should be, by fact (else E_ARTIFACT_SHAPE_INVALID).
_MEMBER_CODES = {"usage": USAGE_NOT_COUNTED}


def _check_facts(record: dict[str, Any], prefix: str, what: str, required: tuple[str, ...]) -> Problems:
    problems: Problems = []
    for key, (expected, ok) in FACTS.items():
        value = record.get(key, MISSING)
        if value is MISSING and key not in required:
            continue
        if not ok(value):
            fix = f"Add `{key}` ({expected})." if value is MISSING else f"Make `{key}` {expected}, or leave it out."
            if key in required and value is not MISSING:
                fix = f"Make `{key}` {expected}."
            problems.append(_problem(
                "E_ARTIFACT_SHAPE_INVALID", f"{what} `{key}` {state_of(value)}; expected {expected}",
                f"{prefix}.{key}", expected, value, how_to_fix=fix,
            ))
            continue
        for member, (expected, ok) in MEMBERS.get(key, {}).items():
            inner = value.get(member, MISSING)
            if inner is not MISSING and not ok(inner):
                problems.append(_problem(
                    _MEMBER_CODES.get(key, "E_ARTIFACT_SHAPE_INVALID"),
                    f"{what} `{key}.{member}` {state_of(inner)}; expected {expected}",
                    f"{prefix}.{key}.{member}", expected, inner,
                    how_to_fix=f"Make `{key}.{member}` {expected}, or leave it out.",
                ))
    return problems


def _check_status(record: dict[str, Any], prefix: str, what: str, required: bool) -> Problems:
    status = record.get("status", MISSING)
    if (status is MISSING and not required) or status in STATUSES:
        return []
    state = state_of(status)
    return [_problem(
        "E_ARTIFACT_STATUS_INVALID", f"{what} `status` {state}; it must be \"ok\" or \"error\"",
        f"{prefix}.status", "\"ok\" or \"error\"", status, example='"status": "ok"',
    )]


TOOL_CALL_FIX = "Give each tool call a string toolName, a status of \"ok\" or \"error\" and a durationMs >= 0."


def _check_tool_calls(value: Any, prefix: str) -> Problems:
    path = f"{prefix}.toolCalls"
    if not isinstance(value, list):
        return [_problem("E_ARTIFACT_SHAPE_INVALID", f"artifact `toolCalls` is {json_type(value)}; expected an array",
                         path, "array of {toolName, status, durationMs}", value, how_to_fix=TOOL_CALL_FIX)]
    problems: Problems = []
    for k, call in enumerate(value):
        where = f"{path}[{k}]"
        if not isinstance(call, dict):
            problems.append(_problem("E_ARTIFACT_SHAPE_INVALID", f"tool call {where} is {json_type(call)}; expected an object",
                                     where, "object", call, how_to_fix=TOOL_CALL_FIX))
            continue
        name, status, duration = call.get("toolName", MISSING), call.get("status", MISSING), call.get("durationMs", MISSING)
        if not isinstance(name, str):
            problems.append(_problem("E_ARTIFACT_SHAPE_INVALID", f"tool call {where} needs a string toolName",
                                     f"{where}.toolName", "string", name, how_to_fix=TOOL_CALL_FIX))
        if status not in STATUSES:
            problems.append(_problem("E_ARTIFACT_SHAPE_INVALID", f"tool call {where} status must be \"ok\" or \"error\"",
                                     f"{where}.status", "\"ok\" or \"error\"", status, how_to_fix=TOOL_CALL_FIX))
        if not (is_number(duration) and duration >= 0):
            problems.append(_problem("E_ARTIFACT_SHAPE_INVALID", f"tool call {where} needs a non-negative durationMs",
                                     f"{where}.durationMs", "number >= 0", duration, how_to_fix=TOOL_CALL_FIX))
    return problems


# artifacts ----------------------------------------------------------------------------------------
def _not_an_object(doc: Any) -> Problems:
    return [] if isinstance(doc, dict) else [_problem(
        "E_ARTIFACT_SHAPE_INVALID", f"an artifact is one JSON object, not {json_type(doc)}", "$", "object", doc,
        example=EXAMPLE_ARTIFACT,
    )]


def _check_version(doc: dict[str, Any]) -> Problems:
    version = doc.get("schemaVersion", MISSING)
    if version in SUPPORTED_SCHEMA_VERSIONS:
        return []
    state = f"{shown(version)!r} is not supported" if isinstance(version, str) else state_of(version)
    return [_problem(
        "E_SCHEMA_VERSION_UNSUPPORTED", f"artifact `schemaVersion` {state}; this replay reads {SCHEMA_VERSION}",
        "$.schemaVersion", SCHEMA_VERSION, version, example=f'"schemaVersion": "{SCHEMA_VERSION}"',
    )]


def _check_type(doc: dict[str, Any]) -> Problems:
    kind = doc.get("artifactType", MISSING)
    if kind == ARTIFACT_TYPE:
        return []
    return [_problem(
        "E_ARTIFACT_TYPE_INVALID", f"artifact `artifactType` {state_of(kind)}; a replay artifact says \"{ARTIFACT_TYPE}\"",
        "$.artifactType", ARTIFACT_TYPE, kind, example=f'"artifactType": "{ARTIFACT_TYPE}"',
    )]


def _check_events_array(doc: dict[str, Any]) -> Problems:
    events = doc.get("events", MISSING)
    if isinstance(events, list):
        return []
    return [_problem(
        "E_ARTIFACT_EVENTS_INVALID", f"artifact `events` {state_of(events)}; it must be an array of events (empty is fine)",
        "$.events", "array", events, example='"events": []',
    )]


def artifact_refusal(doc: Any) -> dict[str, Any] | None:
    """Why a JSON document given as an artifact (a named ``.json`` file holding one JSON value, no array and no other
    agent's run) cannot be read as one at all, or None: it is no object (E_ARTIFACT_SHAPE_INVALID), it has no ``events``
    array (E_ARTIFACT_EVENTS_INVALID: a single event in a ``.json`` file too, which validate judges an artifact), or it
    names a ``schemaVersion`` or ``artifactType`` replay does not know (an unknown format: nothing in it can be read, nor
    healed into the current one). ``validate_artifact`` reports the same problems among the rest, in the same order;
    read, report and heal refuse the file with the first of them. (A ``schemaVersion`` or ``artifactType`` that is missing is the schema's
    problem, which validate reports: the file is still read.)"""
    if not isinstance(doc, dict):
        return _not_an_object(doc)[0]
    named = [check for key, check in (("schemaVersion", _check_version), ("artifactType", _check_type)) if key in doc]
    found = [*(p for check in named for p in check(doc)), *_check_events_array(doc)]  # validate_artifact's order
    return found[0] if found else None


def named_document_refusal(value: Any) -> dict[str, Any] | None:
    """Why ``value``, the one JSON value of a named ``.json`` file, is no artifact that can be read
    (``artifact_refusal``, validate's decision), or None: an array is a journal written as one, and another agent's run
    in one object (a mini-swe-agent trajectory) is read whole; neither is judged as an artifact, as validate judges
    neither. read, report, heal and walk refuse such a file with it. An object with no ``events`` at all (a record,
    maybe) is told that a journal is named .jsonl."""
    if is_record_array(value):
        return None
    from replay.pipeline.model.dialects.detect import is_dialect_document  # (its dialects use this module's checks)

    if is_dialect_document(value):
        return None
    refusal = artifact_refusal(value)
    if refusal is not None and refusal["code"] == "E_ARTIFACT_EVENTS_INVALID" and "events" not in value:
        refusal["howToFix"] = (f"Set `events` to an array of event objects; {JOURNAL_NAMED_JSONL}")
    return refusal


JOURNAL_NAMED_JSONL = "a journal (one JSON record a line: `jq -c .` writes them so) is named .jsonl, not .json."


def document_not_json(data: bytes, exc: orjson.JSONDecodeError, skipped: int) -> dict[str, Any]:
    """Why a .json file (one JSON document: ``data``, from ``skipped`` bytes into the file, past a byte order mark)
    does not parse (``exc``): E_ARTIFACT_JSON_INVALID where parsing stopped, its position in the file, as the keyword
    arguments of a ``diagnostic`` (read, validate and walk say it alike). JSON lines in it (a record on each) are told
    to be a journal, which is named .jsonl."""
    bad = utf8_fault(data, skipped)
    if bad is not None:
        return dict(code="E_ARTIFACT_JSON_INVALID", message=f"not valid JSON: byte 0x{bad.byte:02x} at line {bad.line}, "
                    f"column {bad.column} is not UTF-8 ({bad.reason})", path="$", **bad.position,
                    expected="one JSON object, UTF-8", received=excerpt(data[bad.line_start:], 80), example=EXAMPLE_ARTIFACT)
    at = exactjson.error_position(data, exc, skipped)
    why = " (the input ends inside the document: its write was cut off)" if exactjson.cut_off(data, exc) else ""
    lines = {"howToFix": f"It holds JSON lines: {JOURNAL_NAMED_JSONL}"} \
        if data.lstrip()[:1] == b"{" and head_format(data) == LINES else {}
    # JSON lines: shown from the start of the line where parsing stopped (its first record ends just before)
    received = excerpt(data[_line_start(data, exc.lineno):], 80) if lines else excerpt(data, 80, around=exc.pos)
    return dict(code="E_ARTIFACT_JSON_INVALID", message=f"not valid JSON: {exc.msg} at line {exc.lineno}, column "
                f"{at['column']}{why}", path="$", **at, expected="one JSON object", received=received,
                example=EXAMPLE_ARTIFACT, **lines)


def _line_start(data: bytes, lineno: int) -> int:
    """Where line ``lineno`` (from 1) of ``data`` starts."""
    start = 0
    for _ in range(lineno - 1):
        start = data.find(b"\n", start) + 1
        if not start:
            return 0
    return start




def json_lines_fault(head: bytes) -> orjson.JSONDecodeError | None:
    """Whether ``head``, the first bytes of a named .json file (past a byte order mark) with a line that is not blank
    after its first one (``JsonLinesHead`` asks only then), opens with JSON lines: its first line is one whole JSON
    value, so the file is no one JSON document, whatever comes after. Then the error parsing it gives (where the
    second line starts: ``document_not_json`` of ``head`` says what the whole file's parse would), told without
    reading the rest; None when it is not so."""
    nl = head.find(b"\n")
    try:
        exactjson.loads(head[:nl])
    except (orjson.JSONDecodeError, RecursionError):
        return None
    try:
        exactjson.loads(head)
    except orjson.JSONDecodeError as exc:
        return exc
    return None  # (cannot be: two values do not parse as one)


class JsonLinesHead:
    """Tells, a chunk at a time as a named .json file is read, whether it opens with JSON lines (``json_lines_fault``)
    within its first ``limit`` + 1 bytes (what a read of it whole reads, whatever the chunks it comes in): judged once
    a byte that is not blank follows its first newline, not before, so each byte is looked at a bounded number of
    times (megabytes of blank lines first are no slower than their size). ``read`` and the walk both ask it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[bytes] = []
        self.size = 0
        self.first_line = False  # the first newline was read
        self.told = False  # the answer is known (JSON lines or not), or the head is past: nothing more to look at

    def feed(self, data: bytes) -> tuple[bytes, orjson.JSONDecodeError] | None:
        """The next chunk read: (the head it was told from, past a byte order mark; the fault) once the file is told to
        open with JSON lines, else None (``told``: it is told not to, or the first ``limit`` + 1 bytes are read)."""
        if self.told:
            return None
        self.parts.append(data)
        seen = data[:max(0, self.limit + 1 - self.size)]  # (the part of it within the first limit + 1 bytes)
        self.size += len(data)
        if not self.first_line and (newline := seen.find(b"\n")) >= 0:
            self.first_line, seen = True, seen[newline + 1:]
        if self.first_line and seen.strip(JSON_SPACE):
            self.told = True
            head = exactjson.skip_bom(b"".join(self.parts)[:self.limit + 1])[0]
            self.parts = []
            fault = json_lines_fault(head)
            return None if fault is None else (head, fault)  # (None: its first line is no JSON value)
        if self.size > self.limit:
            self.told, self.parts = True, []
        return None


def validate_artifact(doc: Any, *, seq_order: str = "contiguous") -> Problems:
    """Every problem of one replay artifact (a parsed JSON document), as error bodies with paths."""
    if not isinstance(doc, dict):
        return _not_an_object(doc)
    problems: Problems = [*_check_version(doc), *_check_type(doc)]
    ident = doc.get("id", MISSING)
    if not _nonempty_string(ident):
        state = state_of(ident)
        problems.append(_problem(
            "E_ARTIFACT_ID_INVALID", f"artifact `id` {state}; it must be a non-empty string",
            "$.id", "non-empty string", ident, example='"id": "run_20260301_120000_ab12"',
        ))
    problems += _check_status(doc, "$", "artifact", required=True)
    problems += _check_facts(doc, "$", "artifact", required=("timestamp", "prompt", "query"))
    run_id = doc.get("runId", MISSING)
    if run_id is not MISSING and not _nonempty_string(run_id):
        problems.append(_problem("E_ARTIFACT_SHAPE_INVALID", "artifact `runId` must be a non-empty string",
                                 "$.runId", "non-empty string", run_id, how_to_fix="Make `runId` a non-empty string, or leave it out."))
    if "toolCalls" in doc:
        problems += _check_tool_calls(doc["toolCalls"], "$")
    if (unlisted := _check_events_array(doc)):
        return problems + unlisted
    events = doc["events"]
    checker = EventChecker(seq_order=seq_order)
    checker.begin_run(None, run_id_origin(doc)[0])  # (the runId its run record has, read as a stream: ``document_items``)
    for i, event in enumerate(events):
        problems += checker.check_event(event, f"$.events[{i}]")
    return problems


# streams ------------------------------------------------------------------------------------------
class EventChecker:
    """Checks the records of one stream in order: events, run records and heal records.

    A run begins at a run record, or (without run records) wherever ``runId`` changes, as in
    ``pipeline.runs``. Inside a run, ``seq`` must be 1, 2, ... n (``seq_order="contiguous"``),
    only go up (``"increasing"``, e.g. after a stage that selects events), or is not compared
    (``"any"``). Counts of what was seen are kept for summaries.
    """

    def __init__(self, seq_order: str = "contiguous", source: str = "") -> None:
        if seq_order not in SEQ_ORDERS:
            raise ValueError(f"seq_order must be one of {SEQ_ORDERS}")
        self.seq_order = seq_order
        self.source = source  # the input it reads: its mark (read's, before each of several inputs) ends a run
        self.run: Run | None = None
        self.last_seq = 0  # the seq of the run's previous event
        self.position = 0  # how many events the run has had, this one included
        self.events = 0
        self.runs = 0
        self.records = 0
        self.marks = 0  # read's marks of ``source`` met: which input of that name its records are of (``runs.Inputs``)
        self.place: Any = None  # ``dropped.place`` of the last record checked, in its input
        self._ahead = 0  # places left out before the first run of the input began: that run's

    def left_out(self, places: int) -> None:
        """``places`` records of the input were left out before the next (elements that are no object, which parse
        reported): each takes its place in the run, as in an artifact (``check_event``)."""
        if self.run is None:
            self._ahead += places
        else:
            self.position += places

    def check(self, record: Any, path: str = "$") -> Problems:
        """One stream record (a line, or an item of a document at ``path``)."""
        self.records += 1
        if not isinstance(record, dict):
            self.events += 1
            self.position += 1
            return self._not_object(record, path)
        if starts_run(record, self.run, "") and not of_artifact_run(record, self.run, path):
            # (one checker reads one source; an artifact is one run: an event of it naming another runId is its run's,
            # and said so, ``check_event``)
            self.begin_run(record if record.get(RECORD_KEY) == RUN_RECORD else None, record.get("runId"))
        kind = record.get(RECORD_KEY, MISSING)
        if kind is MISSING:
            return self.check_event(record, path)
        if kind == RUN_RECORD:
            return check_run_record(record, path)
        if kind == HEAL_RECORD:
            return check_heal_record(record, path)
        if kind == SOURCE_RECORD:
            if _nonempty_string(record.get("source")):
                if marks_input(record, self.source):  # (the same file read again is another input)
                    self.run = None
                    self.last_seq = self.position = self._ahead = 0
                    self.marks += 1
                    self.place = None
                extra = sorted(key for key in record if key not in (RECORD_KEY, "source"))
                return [_problem("E_EVENT_INVALID", f"a source record has only `$record` and `source`, not {extra[0]!r}",
                                 f"{path}.{extra[0]}", "no other key", record[extra[0]],
                                 example='{"$record": "source", "source": "a.jsonl"}',
                                 how_to_fix="Remove the key; see `replay schema stream`.")] if extra else []
            return [_problem("E_EVENT_INVALID", "a source record names its input in `source`", f"{path}.source",
                             "non-empty string", record.get("source", MISSING), example='{"$record": "source", "source": "a.jsonl"}')]
        if kind == DROPPED_RECORD:  # (one with its code was reported again by parse, as read reported its line, and left out)
            return [_problem("E_EVENT_INVALID", "a dropped record names the code its line was reported with in `code`",
                             f"{path}.code", "a code such as \"E_JSONL_LINE_INVALID\"", record.get("code", MISSING),
                             example='{"$record": "dropped", "code": "E_JSONL_LINE_INVALID", "message": "line 3 is not valid JSON"}',
                             how_to_fix="Write it as `replay read` does; see `replay schema stream`.")]
        if kind == REDACTION_RECORD:
            return check_redaction_record(record, path)
        kinds = [f'"{k}"' for k in STREAM_RECORDS]
        return [_problem(
            "E_EVENT_INVALID",
            f"unknown reserved record kind {shown(kind)!r}; streams carry {', '.join(kinds[:-1])} and {kinds[-1]} records",
            f"{path}.{RECORD_KEY}", f"{', '.join(kinds[:-1])} or {kinds[-1]}", kind,
        )]

    def check_stretch(self, records: list[Any]) -> bool:
        """The usual batch: plain events of the run in progress, numbered on, all valid. Noted at
        once (True), with a few list passes instead of a call per event; False leaves the checker as
        it was, and the records are then checked one by one."""
        run, n = self.run, len(records)
        if run is None or run.run_id is None or not n or self.seq_order != "contiguous":
            return False
        if [r.get("runId") if r.__class__ is dict else None for r in records].count(run.run_id) != n:
            return False
        if has_records(records):
            return False
        seqs = [r.get("seq") for r in records]
        first = self.last_seq + 1
        if seqs != list(range(first, first + n)) or not all(s.__class__ is int for s in seqs):
            return False
        if not all(t.__class__ is str and t for t in [r.get("type") for r in records]):
            return False
        if not all(r.get("payload").__class__ is dict for r in records):
            return False
        if not all(is_timestamp(r.get("timestamp")) for r in records):
            return False
        if any(_check_optional_event_fields(r, "$") for r in records if len(r) > 5):
            return False
        self.records += n
        self.events += n
        self.position += n
        self.last_seq = seqs[-1]
        return True

    def skip_runs(self, runs: int, events: int, records: int) -> None:
        """Whole valid runs checked elsewhere (the screen): counted; the next record begins a run."""
        self.runs += runs
        self.events += events
        self.records += records
        self.run = None
        self.last_seq = self.position = self._ahead = 0

    def begin_run(self, facts: dict[str, Any] | None, run_id: Any = None) -> None:
        """A new run starts (at a run record ``facts``, or at an event with a new ``run_id``)."""
        self.run = Run(run_id if _nonempty_string(run_id) else None, facts, "")
        self.last_seq, self.position, self._ahead = 0, self._ahead, 0
        self.runs += 1

    def check_event(self, event: Any, path: str) -> Problems:
        """One event of the current run. An artifact's element that is no object, or an event whose seq is invalid
        (``"x"``, 0), takes its place in the run but has no seq: the event after it may follow the seq before it (as
        after a line left out of a journal) or have its place's, and a seq problem after it names the seq of the last
        valid one."""
        self.events += 1
        self.position += 1
        if not isinstance(event, dict):
            return self._not_object(event, path)
        if self.run is None:
            self.begin_run(None, event.get("runId"))
        run = self.run
        assert run is not None
        name_run(run, event)
        problems: Problems = []
        if is_record(event):
            problems.append(_problem(
                "E_EVENT_INVALID", "an event must not carry `$record` (reserved records are not events)",
                f"{path}.{RECORD_KEY}", "no `$record` key", event[RECORD_KEY],
            ))
        etype = event.get("type", MISSING)
        if not is_event_type(etype):
            state = state_of(etype)
            problems.append(_problem(
                "E_ARTIFACT_EVENT_TYPE_INVALID", f"{_event_at(path)} `type` {state}; it must be a non-empty string",
                f"{path}.type", EVENT_TYPE, etype, example='"type": "tool_called"',
            ))
        problems += self._check_seq(event.get("seq", MISSING), path)
        stamp = event.get("timestamp", MISSING)
        if not is_rfc3339(stamp):
            state = f"{shown(stamp)!r} is not an RFC 3339 date-time" if isinstance(stamp, str) else state_of(stamp)
            problems.append(_problem(
                "E_ARTIFACT_EVENT_TIMESTAMP_INVALID", f"{_event_at(path)} `timestamp` {state}",
                f"{path}.timestamp", "RFC 3339 date-time string, e.g. " + EXAMPLE_TIMESTAMP, stamp,
                example=f'"timestamp": "{EXAMPLE_TIMESTAMP}"',
            ))
        rid = event.get("runId", MISSING)
        if not _nonempty_string(rid):
            state = state_of(rid)
            problems.append(_problem(
                "E_EVENT_INVALID", f"{_event_at(path)} `runId` {state}; it must be a non-empty string",
                f"{path}.runId", "non-empty string", rid, example='"runId": "run_1"',
            ))
        elif rid != run.run_id and run.run_id is not None and path.startswith(ARTIFACT_EVENTS):
            problems.append(_problem(
                "E_EVENT_INVALID", f"{_event_at(path)} `runId` {shown(rid)!r} is not its artifact's {shown(run.run_id)!r}: "
                "an artifact is one run, and each of its events names it", f"{path}.runId", run.run_id, rid,
                example=f'"runId": {exactjson.dumps(run.run_id).decode()}',
                how_to_fix="Give the event its artifact's runId, or move it to an artifact (or journal) of its own run.",
            ))
        payload = event.get("payload", MISSING)
        if not isinstance(payload, dict):
            state = state_of(payload)
            problems.append(_problem(
                "E_EVENT_INVALID", f"{_event_at(path)} `payload` {state}; it must be an object (`replay heal` turns others into {{}})",
                f"{path}.payload", "object", payload, example='"payload": {}',
            ))
        problems += _check_optional_event_fields(event, path)
        return problems

    def _check_seq(self, seq: Any, path: str) -> Problems:
        where = f"{path}.seq"
        if not (is_integer(seq) and seq >= 1):  # (its event takes its place in the run, ``position``, but it is no seq
            state = state_of(seq)  # the next event follows: that one may follow the seq before it, or have its place's)
            return [_problem(
                "E_ARTIFACT_EVENT_SEQ_INVALID", f"{_event_at(path)} `seq` {state}; it must be an integer >= 1",
                where, "integer >= 1", seq, example='"seq": 1',
            )]
        previous, self.last_seq = self.last_seq, seq
        # In order: one more than the previous seq, or (after a stray one) the event's place in its run.
        if self.seq_order == "contiguous" and seq != previous + 1 and seq != self.position:
            after = f"follows seq {previous}" if previous else "opens its run"
            return [_problem(
                "E_ARTIFACT_EVENT_SEQ_INVALID", f"{_event_at(path)} has seq {seq} but {after}: seq must go 1, 2, ... n in each run",
                where, previous + 1, seq,
            )]
        if self.seq_order == "increasing" and seq <= previous:
            return [_problem(
                "E_ARTIFACT_EVENT_SEQ_INVALID", f"{_event_at(path)} has seq {seq}, not above the previous seq {previous}",
                where, f"integer > {previous}", seq,
            )]
        return []

    @staticmethod
    def _not_object(value: Any, path: str) -> Problems:
        return [_problem(
            "E_ARTIFACT_EVENT_INVALID", f"{_event_at(path)} is {json_type(value)}; every event must be a JSON object",
            path, "object", value, example=EXAMPLE_EVENT,
        )]


def _event_at(path: str) -> str:
    """``event`` for a line of its own, ``event $.events[3]`` inside a document."""
    return "event" if path == "$" else f"event {path}"


def _step_or_turn(value: Any) -> bool:
    return is_integer(value) or isinstance(value, str)


# The optional event fields the event schema types (``replay schema event``): field -> (expected, predicate, what the
# rule says). A field that is present must satisfy its predicate: validate reports one that does not (E_EVENT_INVALID),
# capture leaves it out of a runner's event (``runner_events``). The one definition of them in code; a test holds it to
# the schema (read there, not here: validate and heal load no schema).
OPTIONAL_EVENT_FIELDS: dict[str, tuple[Any, Callable[[Any], bool], str]] = {
    "step": ("integer or string", _step_or_turn, "must be an integer or a string"),
    "turn": ("integer or string", _step_or_turn, "must be an integer or a string"),
    "parentId": ("string or null", lambda value: value is None or isinstance(value, str), "must be a string or null"),
    "synthetic": (True, lambda value: value is True, "may only be true (leave it out otherwise)"),
}
# each optional field: the values of it that say what leaving it out says (heal's ``drop_empty_fields`` leaves them
# out, logged), and what leaving it out says
SAYS_NOTHING: dict[str, tuple[tuple[Any, ...], str]] = {
    "step": ((None,), "an event of no step has no `step`"),
    "turn": ((None,), "an event of no turn has no `turn`"),
    "synthetic": ((None, False), "only an invented event carries `synthetic`, as true"),
}


def says_nothing(key: str, value: Any) -> bool:
    """Is ``value`` of the optional field ``key`` one that says what its absence says (``SAYS_NOTHING``; by identity
    and type: ``0`` is no ``False``)?"""
    nothing = SAYS_NOTHING.get(key)
    return nothing is not None and any(value is empty for empty in nothing[0])


def _check_optional_event_fields(event: dict[str, Any], path: str) -> Problems:
    problems: Problems = []
    for key, (expected, ok, rule) in OPTIONAL_EVENT_FIELDS.items():
        value = event.get(key, MISSING)
        if value is not MISSING and not ok(value):
            problems.append(_problem("E_EVENT_INVALID", f"{_event_at(path)} `{key}` {rule}", f"{path}.{key}", expected, value))
    return problems


def check_run_record(record: dict[str, Any], path: str = "$") -> Problems:
    """A run record: the run-level facts of the events that follow it."""
    problems: Problems = []
    rid = record.get("runId", MISSING)
    if not _nonempty_string(rid):
        state = state_of(rid)
        problems.append(_problem(
            "E_ARTIFACT_SHAPE_INVALID", f"run record `runId` {state}; it must be a non-empty string",
            f"{path}.runId", "non-empty string", rid, example='{"$record": "run", "runId": "run_1"}',
            how_to_fix="Name the run: a run record needs a non-empty string `runId`.",
        ))
    artifact_id = record.get("artifactId", MISSING)
    if artifact_id is not MISSING and not isinstance(artifact_id, str):
        problems.append(_problem(
            "E_ARTIFACT_ID_INVALID", f"run record `artifactId` is {json_type(artifact_id)}; it must be a string",
            f"{path}.artifactId", "string", artifact_id,
        ))
    problems += _check_status(record, path, "run record", required=False)
    problems += _check_facts(record, path, "run record", required=())
    if "toolCalls" in record and not isinstance(record["toolCalls"], list):
        problems.append(_problem("E_ARTIFACT_SHAPE_INVALID", "run record `toolCalls` must be an array",
                                 f"{path}.toolCalls", "array", record["toolCalls"], how_to_fix=TOOL_CALL_FIX))
    return problems


def check_redaction_record(record: dict[str, Any], path: str = "$") -> Problems:
    """A redaction record: the audit a `redact` stage sends after the records it redacted, as it writes it (counts and
    the warnings they give, no value: ``audit.audit_not_ours``, which checks an incident bundle's audit too)."""
    from replay.pipeline.model.incident.audit import audit_not_ours  # (only a stream that has one loads redaction)
    from replay.pipeline.model.incident.masking import masked_steps

    wrong = audit_not_ours({k: v for k, v in record.items() if k != RECORD_KEY}, None, [])
    if wrong is None:
        return []
    where = masked_steps(wrong, path)
    return [_problem("E_EVENT_INVALID", f"a redaction record holds at {where} what a `redact` stage does not write "
                                        "(its audit is counts and the warnings they give)", where,
                     "the audit a redact stage writes", where,  # (where, not what: an audit never shows a value)
                     how_to_fix="Leave a redaction record as the redact stage wrote it (or remove the whole line); see "
                                "`replay schema stream`.")]


def check_heal_record(record: dict[str, Any], path: str = "$") -> Problems:
    """A heal record: how many repairs heal made in the run before it, by rule."""
    problems: Problems = []
    rid = record.get("runId", MISSING)
    if not (rid is None or isinstance(rid, str)):
        problems.append(_problem("E_EVENT_INVALID", "heal record `runId` must be a string or null",
                                 f"{path}.runId", "string or null", rid))
    repairs = record.get("repairs", MISSING)
    if not (is_integer(repairs) and repairs >= 1):
        problems.append(_problem("E_EVENT_INVALID", "heal record `repairs` must be an integer >= 1",
                                 f"{path}.repairs", "integer >= 1", repairs))
    by_rule = record.get("byRule", MISSING)
    if by_rule is not MISSING and not (
        isinstance(by_rule, dict) and all(is_integer(n) and n >= 1 for n in by_rule.values())
    ):
        problems.append(_problem("E_EVENT_INVALID", "heal record `byRule` must map rule names to counts >= 1",
                                 f"{path}.byRule", "object of integers >= 1", by_rule))
    dropped = record.get(RUN_DROPPED, MISSING)
    if dropped is not MISSING and dropped is not True:
        problems.append(_problem("E_EVENT_INVALID", f"heal record `{RUN_DROPPED}` may only be true (leave it out otherwise)",
                                 f"{path}.{RUN_DROPPED}", True, dropped))
    return problems
