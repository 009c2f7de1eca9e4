"""Incident exports -> one normalised incident: the canonical export, RunLedger JSONL logs and replay journals.

Every import rule is a validation with its own error code (a ``ReplayError``, exit 2, naming the file,
line and JSON path at fault). Nothing is manufactured: a missing result, terminal event, input or
effect is refused, never invented. The normalised incident is::

    {"input": {...}, "effects_complete": bool, "events": [...], "assertions": [...]}

with events from this table (call ids renumbered ``c1``, ``c2``, ... in call order, timestamps dropped):

    tool_call        call_id, name, args (object; a replay journal's that are none: {"input": <them>}, said in a notice)
    tool_result      call_id, ok (bool), result (default null), error (default null)
    business_effect  call_id, effect (object with a string `type`)
    final_output     output (object)
    task_error       message (string)

Calls are serial (a call's result comes before the next call), every call has exactly one result,
exactly one terminal event (``final_output`` / ``task_error``) ends the trace after every result, and
an effect names an earlier call and comes before the terminal event.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, NoReturn

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import (
    EXIT_REFUSED,
    ReplayError,
    diagnostic,
    folder_for_a_file,
    input_unreadable,
    option_setting,
    option_word,
    refuse_duplicate_key,
    utf8_fault,
)
from replay.pipeline.engine.exactjson import skip_bom
from replay.pipeline.io.journals import describe_kind, path_kind
from replay.pipeline.model.events import TERMINAL_TYPES
from replay.pipeline.model.incident.masking import masked, masked_error, masked_list, member
from replay.pipeline.model.incident.protocol_names import refuse_private_names
from replay.pipeline.model.incident.rules import check_rules
from replay.pipeline.model.outcome import failure_words
from replay.pipeline.model.records import DROPPED_RECORD, RUN_RECORD, is_record, record_kind
from replay.pipeline.model.toolcalls import ARGUMENT_KEYS, call_id, result_failed, tool_name
from replay.pipeline.model.validation import json_type

SCHEMA_VERSION = 1
FORMATS = ("canonical", "runledger", "replay")
# The flags of `replay incident import` that set the import's options (``load_incident``'s): what a refusal of one
# names when a command set it; a config's stage is named by its keys (``errors.option_word``)
FLAGS = {"format": "--format", "case": "--case", "rules": "--rules", "effects_complete": "--effects-complete"}
EXPORT_SUFFIXES = {"canonical": (".json",), "runledger": (".jsonl", ".ndjson"), "replay": (".jsonl", ".ndjson")}  # in a folder
TERMINAL = ("final_output", "task_error")
ROOT_REQUIRED = ("schema_version", "input", "events", "assertions")
ROOT_OPTIONAL = ("effects_complete",)
ROOT_DISCARDED = ("incident_id", "title", "metadata", "source")
DISCARDED_EVENT_FIELDS = ("timestamp",)
_NONE = object()  # (a payload without arguments)
# A replay journal's tool call whose arguments are no object (Codex's apply_patch: its custom_tool_call's `input` is the
# patch's text; a number, an array, null): an incident's args are an object, so the value is kept, as written, as the
# one member of this name, and the import says so (E_INCIDENT_ARGS_WRAPPED): a replayed agent sends them so
WRAPPED_ARGS = "input"


def _any(value: Any) -> bool:
    return True


def _text(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def _object(value: Any) -> bool:
    return isinstance(value, dict)


def _bool(value: Any) -> bool:
    return isinstance(value, bool)


def _string(value: Any) -> bool:
    return isinstance(value, str)


# type -> (required fields, optional fields): field -> (check, what it must be)
Check = tuple[Callable[[Any], bool], str]
EVENT_TABLE: dict[str, tuple[dict[str, Check], dict[str, Check]]] = {
    "tool_call": ({"call_id": (_text, "a non-empty string"), "name": (_text, "a non-empty string"),
                   "args": (_object, "an object")}, {}),
    "tool_result": ({"call_id": (_text, "a non-empty string"), "ok": (_bool, "true or false")},
                    {"result": (_any, "any JSON value"), "error": (_any, "any JSON value")}),
    "business_effect": ({"call_id": (_text, "a non-empty string"), "effect": (_object, "an object with a string `type`")}, {}),
    "final_output": ({"output": (_object, "an object")}, {}),
    "task_error": ({"message": (_string, "a string")}, {}),
}
EVENT_EXAMPLES = {
    "tool_call": '{"type": "tool_call", "call_id": "call-1", "name": "lookup_order", "args": {"order_id": "order-1"}}',
    "tool_result": '{"type": "tool_result", "call_id": "call-1", "ok": true, "result": {"status": "shipped"}}',
    "business_effect": '{"type": "business_effect", "call_id": "call-1", "effect": {"type": "refund", "amount_cents": 4900}}',
    "final_output": '{"type": "final_output", "output": {"status": "done"}}',
    "task_error": '{"type": "task_error", "message": "gave up"}',
}


# What an export of --max-bytes may become as a bundle: pretty-printed (two spaces a level, a line a value) and redacted
# (an alias is longer than most values it stands for), typically about twice its size. A bundle is held to this many
# times --max-bytes, read and written alike, so what an import wrote the next steps read at the same --max-bytes.
BUNDLE_GROWTH = 4


@dataclass(frozen=True)
class Limits:
    """Import limits; each has a flag that raises it."""

    max_bytes: int = 4 * 1024 * 1024
    max_events: int = 500
    max_depth: int = 20
    max_assertions: int = 30

    @property
    def bundle_bytes(self) -> int:
        """The largest bundle (an ``incident.json``, a fixture) read or written: ``BUNDLE_GROWTH`` times ``max_bytes``."""
        return self.max_bytes * BUNDLE_GROWTH

    @property
    def depth(self) -> int:
        """The nesting limit that applies: ``max_depth``, but no deeper than JSON is read (``exactjson.MAX_DEPTH``)."""
        return min(self.max_depth, exactjson.MAX_DEPTH)


DEFAULT_LIMITS = Limits()


def refuse(code: str, message: str, where: dict[str, Any] | None = None, **fields: Any) -> NoReturn:
    raise ReplayError(code, message, **{**(where or {}), **fields})


def _at(where: dict[str, Any], suffix: str) -> dict[str, Any]:
    return {**where, "path": (where.get("path") or "$") + suffix}


# reading ------------------------------------------------------------------------------------------
def read_limited(path: str, limits: Limits, what: str = "export") -> bytes:
    """The file's bytes; refused when missing, unreadable or over ``limits.max_bytes`` (a bundle: ``bundle_bytes``), or
    when it is ``-``: an incident command reads a file (a bundle: or its folder), never stdin (not "does not exist",
    nor `replay read -`)."""
    if path == "-":
        refuse("E_USAGE_INVALID", f"the {what} cannot be stdin: incident commands read a file or a folder, not stdin",
               {"path": path}, expected="a file or a folder", received="-",
               howToFix="Save the stream to a file first (... > file.json) and name that file (a bundle: or the folder "
                        "an import wrote).")
    target = Path(path)
    if not target.exists():
        refuse("E_INPUT_PATH_NOT_FOUND", f"{what} {path!r} does not exist", {"path": path},
               howToFix=f"Check the path of the {what}: incident commands read a file or a folder, not stdin.")
    if target.is_dir():
        raise folder_for_a_file(path, what=what)
    if not target.is_file():  # (a pipe too: the input is read whole and checked against its limits, never streamed)
        refuse("E_INPUT_NOT_FILE_OR_DIR", f"{what} {path!r} is not a regular file", {"path": path},
               expected="a regular file", received=describe_kind(path_kind(path)),
               howToFix="Save it to a file first (... > file.json) and name that file; incident commands read no pipe "
                        "and not stdin.")
    try:
        with target.open("rb") as handle:
            data = _read_at_most(handle, (limits.bundle_bytes if what == "bundle" else limits.max_bytes) + 1)
    except OSError as exc:
        raise input_unreadable(path, exc, what=what, exit_code=EXIT_REFUSED) from exc
    refuse_too_large(what, path, len(data), limits, received=os.path.getsize(path))
    return data


def refuse_too_large(what: str, path: str, size: int, limits: Limits, *, received: int | None = None,
                     written: bool = False) -> None:
    """Refuse ``size`` bytes of ``what`` (``path``; an export, a rules file, a bundle) over its limit: ``max_bytes``,
    a bundle's ``bundle_bytes``. ``written``: a bundle about to be written (nothing is: the next step could not read it)."""
    bundled = what == "bundle"
    most = limits.bundle_bytes if bundled else limits.max_bytes
    if size <= most:
        return
    told = f"{most} bytes" + (f" ({BUNDLE_GROWTH} x --max-bytes {limits.max_bytes})" if bundled else "")
    if written:
        refuse("E_INCIDENT_INPUT_TOO_LARGE", f"the bundle of {path!r} would be {size} bytes, larger than the {told} a "
               "bundle may be; nothing was written", {"source": path}, expected=f"a bundle of at most {told}",
               received=f"{size} bytes",
               howToFix="Export less (one incident per file), or raise --max-bytes here and in the commands that read the "
                        "bundle (inspect, replay, promote).")
    refuse("E_INCIDENT_INPUT_TOO_LARGE", f"{what} {path!r} is larger than {told}", {"source": path},
           expected=f"at most {told}", received=f"{received if received is not None else size} bytes",
           howToFix="Export one incident per file, or raise the limit with --max-bytes.")


def _read_at_most(handle: BinaryIO, limit: int) -> bytes:
    """Up to ``limit`` bytes of ``handle``, a MiB at a time: one ``read(limit)`` makes a buffer of ``limit`` bytes
    first, whatever the file holds (a --max-bytes of 1e20 was E_UNHANDLED: OverflowError; of 2e9, 2 GB asked for)."""
    parts: list[bytes] = []
    while limit > 0:
        part = handle.read(min(limit, 1 << 20))
        if not part:
            break
        parts.append(part)
        limit -= len(part)
    return b"".join(parts)


def parse_json(data: bytes, where: dict[str, Any], limits: Limits, *, lines_hint: bool = False) -> Any:
    """The JSON value of ``data`` (the whole file, or the one line ``where`` names); refused with the position of
    the fault: a byte that is not UTF-8, nesting deeper than the limit, anything else that is not JSON. A whole file
    may start with a UTF-8 byte order mark, as `replay read` takes it; offsets stay positions in the file."""
    skipped = 0
    if "line" not in where:
        data, skipped = skip_bom(data)
    try:
        value = exactjson.loads(data)
    except orjson.JSONDecodeError as exc:
        bad = utf8_fault(data, skipped)
        if bad is not None:
            at = {**where, **_position(where, bad.position)}
            # (the message names the byte's place in the file; the field ``offset`` is its line's start: ERROR_CODES.md)
            refuse("E_INCIDENT_JSON_INVALID", f"not valid UTF-8: byte 0x{bad.byte:02x} at line {at['line']}, column "
                   f"{bad.column} (byte {at['offset'] + bad.column - 1} of the file): {bad.reason}", at,
                   howToFix="Save the file as UTF-8: the byte at the reported line and column is not part of a UTF-8 character.")
        stopped = {**where, **_position(where, exactjson.error_position(data, exc, skipped))}
        if exactjson.too_deep(exc):
            refuse_too_deep(limits, stopped, received=f"more than {exactjson.MAX_DEPTH} levels", readable=False)
        if lines_hint and data.strip().count(b"\n") and all(_is_json(line) for line in data.splitlines() if line.strip()):
            refuse("E_INCIDENT_FORMAT_UNSUPPORTED", "this file is JSON Lines, not one canonical export object", where,
                   expected="one JSON object (schema_version 1)", received="JSON Lines",
                   howToFix="Import RunLedger logs with --format runledger, replay journals with --format replay.")
        refuse("E_INCIDENT_JSON_INVALID", f"not valid JSON: {exc.msg}", stopped)
    _refuse_duplicate_key(data, value, where, skipped)
    return value


def _refuse_duplicate_key(data: bytes, value: Any, where: dict[str, Any], skipped: int) -> None:
    """Refuse a key written twice in one object of what ``parse_json`` read (an export, a rules file, a bundle, or one
    line of a log: every format alike), at the second writing: an incident is evidence, and which value was meant is
    unknowable (a reader keeps the last without a word). Its path masked as every import refusal's is."""
    what = str(where.get("source", "the document")) + (f" line {where['line']}" if "line" in where else "")
    try:
        refuse_duplicate_key(data, value, "E_INCIDENT_JSON_INVALID", what, skipped, rooted=True, **where)
    except ReplayError as exc:
        if "line" in where:  # (its place on the line read, as the line's number and the offset of its start in the file)
            exc.body.update({**where, **_position(where, exc.body)})
        raise masked_error(exc) from None  # (its path names the key: ``$.input["jane@example.com"]``)


def _position(where: dict[str, Any], place: dict[str, int]) -> dict[str, Any]:
    """Where a place in the data ``parse_json`` read is (``place``: its line, byte column and the offset in the file of
    its line's start, as ``exactjson.position`` gives them): all of it when the data is the whole file, else its column
    on the one line ``where`` already names (with its offset)."""
    if "line" in where:
        return {"column": place["column"], **({"offset": where["offset"]} if "offset" in where else {})}
    return place


def _is_json(line: bytes) -> bool:
    try:
        exactjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


def refuse_too_deep(limits: Limits, where: dict[str, Any], received: str, *, readable: bool) -> NoReturn:
    """Refuse JSON nested deeper than ``limits.max_depth`` (or than JSON is read: the limit named is the one that
    applies); ``readable``: the JSON was read, so a higher --max-depth (up to ``exactjson.MAX_DEPTH``) would take it."""
    limit = limits.depth
    how = ("Flatten the payload or leave it out of the export (it is checked before --redact removes anything), or raise "
           "the limit with --max-depth." if readable and limit < exactjson.MAX_DEPTH else
           f"Flatten the payload or leave it out of the export: {exactjson.MAX_DEPTH} levels is the deepest JSON the importer "
           "reads, whatever --max-depth says.")
    refuse("E_INCIDENT_NESTING_TOO_DEEP", f"the JSON is nested deeper than {limit} levels", where,
           expected=f"at most {limit} levels", received=received, howToFix=how)


def check_depth(document: Any, limits: Limits, where: dict[str, Any]) -> None:
    """Refuse documents nested deeper than ``limits.max_depth`` (the outermost value is level 1)."""
    stack: list[tuple[Any, int, str]] = [(document, 1, where.get("path") or "$")]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, dict | list):
            if depth > limits.depth:
                refuse_too_deep(limits, {**where, "path": path}, received=f"level {depth}", readable=True)
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, child in items:
                if isinstance(child, dict | list):
                    step = member(key) if isinstance(key, str) else f"[{key}]"
                    stack.append((child, depth + 1, path + step))


# the event table ----------------------------------------------------------------------------------
def check_fields(record: dict[str, Any], required: dict[str, Check], optional: dict[str, Check], where: dict[str, Any],
                 *, ignored: tuple[str, ...] = (), what: str, example: str | None = None) -> None:
    known = set(required) | set(optional) | set(ignored) | {"type"}
    for key in record:
        if key not in known:
            refuse("E_INCIDENT_FIELD_UNKNOWN", f"{what} has an unknown field {masked(key)!r}", _at(where, member(key)),
                   expected="one of: " + ", ".join(sorted(known)), received=masked(key), example=example)
    for key, (_ok, must) in required.items():
        if key not in record:
            refuse("E_INCIDENT_FIELD_MISSING", f"{what} needs field {key!r} ({must})", _at(where, f".{key}"),
                   expected=must, received="nothing", example=example)
    for key, (ok, must) in (required | optional).items():
        if key in record and not ok(record[key]):
            refuse("E_INCIDENT_FIELD_INVALID", f"{what} field {key!r} must be {must}", _at(where, f".{key}"),
                   expected=must, received=json_type(record[key]), example=example)


def normalise_events(events: Any, positions: list[dict[str, Any]], limits: Limits, *, trace: dict[str, Any],
                     extra_fields: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Check the trace against the event table and the ordering rules; return it normalised. ``positions``: where each
    event is; ``trace``: where the trace is (said of one with no events)."""
    if len(events) > limits.max_events:
        refuse("E_INCIDENT_TOO_MANY_EVENTS", f"the trace has {len(events)} events; at most {limits.max_events} are imported",
               positions[limits.max_events] if len(positions) > limits.max_events else None,
               expected=f"at most {limits.max_events} events", received=f"{len(events)} events",
               howToFix="Export only the failing task, or raise the limit with --max-events.")
    ids: dict[str, str] = {}
    open_call: str | None = None
    answered: set[str] = set()
    terminal_at: int | None = None
    out: list[dict[str, Any]] = []
    for k, event in enumerate(events):
        where = positions[k]
        if not isinstance(event, dict):
            refuse("E_INCIDENT_SHAPE_INVALID", f"event {k} is not an object", where, expected="object", received=json_type(event))
        kind = event.get("type")
        if "type" not in event:
            refuse("E_INCIDENT_FIELD_MISSING", f"event {k} has no `type`", _at(where, ".type"),
                   expected="one of: " + ", ".join(EVENT_TABLE), received="nothing")
        if not isinstance(kind, str) or kind not in EVENT_TABLE:  # (a list or an object is no key: TypeError)
            refuse("E_INCIDENT_EVENT_TYPE_UNKNOWN", f"event {k} has a type this importer does not know", _at(where, ".type"),
                   expected="one of: " + ", ".join(EVENT_TABLE), received=masked(kind),
                   howToFix="Map your trace to tool_call, tool_result, business_effect, final_output and task_error; "
                            "unsupported events are refused rather than approximated.")
        if terminal_at is not None:
            refuse("E_INCIDENT_TERMINAL_NOT_LAST", f"event {k} ({kind}) comes after the terminal event {terminal_at}", where,
                   expected="the terminal event (final_output or task_error) last", received=str(kind),
                   howToFix="End the trace with exactly one final_output or task_error, after every result and effect.")
        required, optional = EVENT_TABLE[kind]
        check_fields(event, required, optional, where, ignored=DISCARDED_EVENT_FIELDS + extra_fields,
                     what=f"{kind} event {k}", example=EVENT_EXAMPLES[kind])
        if kind == "tool_call":
            if event["call_id"] in ids:
                refuse("E_INCIDENT_CALL_ID_DUPLICATE", f"call id of event {k} was already used by an earlier tool_call",
                       _at(where, ".call_id"), expected="a call id unique in the trace", received="a repeated call id")
            if open_call is not None:
                refuse("E_INCIDENT_CALL_CONCURRENT", f"event {k} starts a call while call {open_call} has no result yet", where,
                       expected=f"the tool_result of {open_call} first", received="another tool_call",
                       howToFix="Tool calls must be serial, each followed by its result; concurrent calls are not supported yet.")
            open_call = ids[event["call_id"]] = f"c{len(ids) + 1}"
            out.append({"type": kind, "call_id": open_call, "name": event["name"], "args": event["args"]})
        elif kind == "tool_result":
            cid = ids.get(event["call_id"])
            if cid is None or cid in answered:
                refuse("E_INCIDENT_RESULT_UNMATCHED",
                       f"tool_result event {k} " + ("names no earlier tool_call" if cid is None else f"is a second result for {cid}"),
                       _at(where, ".call_id"), expected="the call id of the open tool_call",
                       received="an unknown call id" if cid is None else "a call that already has its result")
            answered.add(cid)
            open_call = None
            out.append({"type": kind, "call_id": cid, "ok": event["ok"], "result": event.get("result"), "error": event.get("error")})
        elif kind == "business_effect":
            cid = ids.get(event["call_id"])
            if cid is None:
                refuse("E_INCIDENT_EFFECT_CALL_UNKNOWN", f"business_effect event {k} names no earlier tool_call",
                       _at(where, ".call_id"), expected="the call id of an earlier tool_call", received="an unknown call id",
                       howToFix="An effect may come after its call's result, but must reference a call recorded before it.")
            effect = event["effect"]
            if "type" not in effect:
                refuse("E_INCIDENT_FIELD_MISSING", f"the effect of event {k} has no `type`", _at(where, ".effect.type"),
                       expected="a non-empty string", received="nothing", example=EVENT_EXAMPLES[kind])
            if not _text(effect["type"]):
                refuse("E_INCIDENT_FIELD_INVALID", f"the effect type of event {k} must be a non-empty string",
                       _at(where, ".effect.type"), expected="a non-empty string", received=json_type(effect["type"]))
            out.append({"type": kind, "call_id": cid, "effect": effect})
        else:
            if open_call is not None:
                refuse("E_INCIDENT_RESULT_MISSING", f"the terminal event {k} comes while call {open_call} has no result", where,
                       expected=f"a tool_result for {open_call} first", received=kind,
                       howToFix="Record an ambiguous timeout as a failed tool_result (ok false), not as a missing one.")
            terminal_at = k
            out.append({"type": kind, "output": event["output"]} if kind == "final_output" else {"type": kind, "message": event["message"]})
    if open_call is not None:
        refuse("E_INCIDENT_RESULT_MISSING", f"call {open_call} has no tool_result", positions[-1],
               expected=f"a tool_result for {open_call}", received="end of trace",
               howToFix="Record an ambiguous timeout as a failed tool_result (ok false), not as a missing one.")
    if terminal_at is None:
        refuse("E_INCIDENT_TERMINAL_MISSING", "the trace has no terminal event (final_output or task_error)",
               positions[-1] if positions else trace, expected="a final_output or task_error last", received="end of trace",
               howToFix="Incomplete traces are not supported: export the agent's final output or its recorded error.")
    return out


def assemble(input_: Any, effects_complete: Any, events: Any, assertions: Any, positions: list[dict[str, Any]],
             where: dict[str, Any], limits: Limits, *, rules_where: dict[str, Any] | None = None,
             extra_fields: tuple[str, ...] = ()) -> dict[str, Any]:
    """The normalised incident from its four parts (each checked). ``where``: the document the input and events are in
    (an export or a bundle, with its ``path``; a log, without: its lines hold them); ``rules_where``: the --rules file the
    assertions come from, else they are the document's ``assertions``."""
    rules_at = rules_where if rules_where is not None else _at(where, ".assertions")
    if not isinstance(input_, dict):
        refuse("E_INCIDENT_FIELD_INVALID", "`input` must be an object", _at(where, ".input"),
               expected="an object", received=json_type(input_))
    if not isinstance(effects_complete, bool):
        refuse("E_INCIDENT_FIELD_INVALID", "`effects_complete` must be true or false", _at(where, ".effects_complete"),
               expected="true or false", received=json_type(effects_complete))
    if not isinstance(events, list):
        refuse("E_INCIDENT_FIELD_INVALID", "`events` must be an array", _at(where, ".events"),
               expected="an array of events", received=json_type(events))
    if not isinstance(assertions, list):
        refuse("E_INCIDENT_FIELD_INVALID", "`assertions` must be an array", rules_at,
               expected="an array of rules", received=json_type(assertions))
    if rules_where is None:
        check_depth({"input": input_, "events": events, "assertions": assertions}, limits, {**where, "path": "$"})
    else:  # (each file its own levels: the rules file's array is its first)
        check_depth({"input": input_, "events": events}, limits, {**where, "path": "$"})
        check_depth(assertions, limits, rules_where)
    normalised = normalise_events(events, positions, limits, trace=_at(where, ".events") if "path" in where else where,
                                  extra_fields=extra_fields)
    check_rules(assertions, rules_at, max_rules=limits.max_assertions)
    incident = {"input": input_, "effects_complete": effects_complete, "events": normalised, "assertions": assertions}
    # (a name redaction keeps is refused here, where its position in the file is known, not after the load)
    refuse_private_names(incident, lambda part, k: positions[k] if part == "events" else _at(rules_at, f"[{k}]"))
    return incident


# the canonical export -----------------------------------------------------------------------------
def load_canonical(data: bytes, source: str, limits: Limits) -> dict[str, Any]:
    where = {"source": source}
    document = parse_json(data, where, limits, lines_hint=True)
    if not isinstance(document, dict):
        refuse("E_INCIDENT_SHAPE_INVALID", "a canonical export is one JSON object", {**where, "path": "$"},
               expected="object", received=json_type(document))
    if "schema_version" not in document:
        refuse("E_INCIDENT_SCHEMA_VERSION_UNSUPPORTED", "the export has no `schema_version`", {**where, "path": "$.schema_version"},
               expected=SCHEMA_VERSION, received="nothing", example='"schema_version": 1')
    version = document["schema_version"]
    if version != SCHEMA_VERSION or isinstance(version, bool):
        refuse("E_INCIDENT_SCHEMA_VERSION_UNSUPPORTED", "this importer reads schema_version 1 only",
               {**where, "path": "$.schema_version"}, expected=SCHEMA_VERSION,
               received=masked(version))
    known = ROOT_REQUIRED + ROOT_OPTIONAL + ROOT_DISCARDED
    for key in document:
        if key not in known:
            refuse("E_INCIDENT_FIELD_UNKNOWN", f"the export has an unknown field {masked(key)!r}",
                   {**where, "path": "$" + member(key)}, expected="one of: " + ", ".join(known), received=masked(key),
                   howToFix="Remove the field; unknown fields are refused rather than guessed at.")
    for key in ROOT_REQUIRED:
        if key not in document:
            refuse("E_INCIDENT_FIELD_MISSING", f"the export needs field {key!r}", {**where, "path": f"$.{key}"},
                   received="nothing")
    events = document["events"]
    positions = [{**where, "path": f"$.events[{k}]"} for k in range(len(events))] if isinstance(events, list) else []
    return assemble(document["input"], document.get("effects_complete", False), events, document["assertions"],
                    positions, {**where, "path": "$"}, limits)


# JSON Lines formats -------------------------------------------------------------------------------
def _jsonl(data: bytes, source: str, limits: Limits, format: str) -> list[tuple[int, dict[str, Any]]]:
    records: list[tuple[int, dict[str, Any]]] = []
    data, offset = skip_bom(data)
    for n, line in enumerate(data.split(b"\n"), 1):
        start, offset = offset, offset + len(line) + 1
        if not line.strip():
            continue
        try:
            value = parse_json(line, {"source": source, "line": n, "offset": start}, limits)
        except ReplayError as exc:
            if exc.code == "E_INCIDENT_JSON_INVALID" and not records and not _is_json(line) and _is_json(data):
                _refuse_document(data, source, format)  # a line of a JSON document written over several lines
            raise
        if n == 1 and isinstance(value, dict) and "schema_version" in value and data.strip().count(b"\n") == 0:
            _refuse_document(data, source, format)  # a canonical export on one line
        if not isinstance(value, dict):
            refuse("E_INCIDENT_SHAPE_INVALID", f"line {n} is not a JSON object", {"source": source, "line": n, "path": "$"},
                   expected="object", received=json_type(value))
        records.append((n, value))
    if not records:
        refuse("E_INCIDENT_TERMINAL_MISSING", "the log holds no records", {"source": source},
               expected="a task's events", received="an empty file")
    return records


def _refuse_document(data: bytes, source: str, format: str) -> NoReturn:
    """A file given as a ``format`` log (JSON Lines) that is one JSON document: a canonical export, most likely."""
    export = b'"schema_version"' in data
    refuse("E_INCIDENT_FORMAT_UNSUPPORTED", f"this file is one JSON document{' (a canonical export)' if export else ''}, "
           f"not a --format {format} log (JSON Lines)", {"source": source},
           expected=f"a {format} log: one JSON object a line", received="one JSON document",
           howToFix="Import a canonical export without --format (and without --case, --rules and --effects-complete: "
           "it declares its assertions and effects_complete itself)." if export else
           f"Give a {format} log (one JSON object a line), or import a canonical export without --format.")


def _choose_case(found: list[str], case: str | None, source: str, flag_help: str, flags: dict[str, str]) -> str:
    """The case to import; ``flags``: option -> the flag that set it (``FLAGS``), else a config's key names it."""
    word, path = option_word("case", flags), flags.get("case", "case")
    if case is not None:
        if case not in found:
            refuse("E_INCIDENT_CASE_NOT_FOUND", f"no records of case {case!r} in {source!r}", {"source": source, "path": path},
                   expected="one of: " + masked_list(found), received=case)
        return case
    if len(found) > 1:
        refuse("E_INCIDENT_CASE_REQUIRED", f"{source!r} holds {len(found)} {flag_help}s; choose one with {word}",
               {"source": source, "path": path}, expected="one of: " + masked_list(found), received=f"no {word}",
               howToFix=f"Choose one with {flags['case']} ID." if "case" in flags else "Choose one: set `case` to it.",
               example=option_setting("case", masked(found[0]), flags))
    return found[0]


RUNLEDGER_SELECTED = ("task_start", *tuple(EVENT_TABLE))
RUNLEDGER_DISCARDED = ("log", "assertion_failure", "budget_failure", "case_end")


def load_runledger(data: bytes, source: str, case: str | None, rules: list[Any], rules_where: dict[str, Any],
                   effects_complete: bool, limits: Limits, flags: dict[str, str] = FLAGS) -> dict[str, Any]:
    """A RunLedger ``run.jsonl``: one case's task_start input, tool events, explicit effects and terminal event;
    its logs and earlier assertion/budget results are dropped."""
    records = _jsonl(data, source, limits, "runledger")
    cases: list[str] = []
    for n, record in records:
        where = {"source": source, "line": n}
        if "type" not in record or not _text(record["type"]):
            refuse("E_INCIDENT_FIELD_MISSING", f"line {n} has no string `type`", {**where, "path": "$.type"}, received="nothing")
        if record["type"] not in RUNLEDGER_SELECTED + RUNLEDGER_DISCARDED:
            refuse("E_INCIDENT_EVENT_TYPE_UNKNOWN", f"line {n} has a record type RunLedger logs do not have", {**where, "path": "$.type"},
                   expected="one of: " + ", ".join(RUNLEDGER_SELECTED + RUNLEDGER_DISCARDED), received=masked(record["type"]))
        if not _text(record.get("case_id")):
            refuse("E_INCIDENT_FIELD_MISSING", f"line {n} has no string `case_id`", {**where, "path": "$.case_id"},
                   received=json_type(record.get("case_id")) if "case_id" in record else "nothing")
        if record["case_id"] not in cases:
            cases.append(record["case_id"])
    chosen = _choose_case(cases, case, source, "case id", flags)
    input_: Any = None
    events: list[Any] = []
    positions: list[dict[str, Any]] = []
    for n, record in records:
        if record["case_id"] != chosen or record["type"] in RUNLEDGER_DISCARDED:
            continue
        where = {"source": source, "line": n, "path": "$"}
        body = {k: v for k, v in record.items() if k not in ("case_id", "timestamp")}
        if record["type"] == "task_start":
            if input_ is not None:
                refuse("E_INCIDENT_TASK_START_DUPLICATE", f"case {masked(chosen)!r} has a second task_start at line {n}", where,
                       expected="one task_start per case", received="another task_start",
                       howToFix="Export one run of the case per log file.")
            check_fields(body, {"input": (_object, "an object")}, {"task_id": (_any, "any")}, where, what="task_start")
            input_ = body["input"]
            continue
        if record["type"] == "task_error":
            body.pop("data", None)  # free-form diagnostics: not part of the incident
        events.append(body)
        positions.append(where)
    if input_ is None:
        refuse("E_INCIDENT_TASK_START_MISSING", f"case {masked(chosen)!r} has no task_start with its input", {"source": source},
               expected="a task_start record with `input`", received="none")
    return assemble(input_, effects_complete, events, rules, positions, {"source": source}, limits, rules_where=rules_where)


# The event types of a replay journal that hold no tool call, result, effect or ending: what the agent and the user said
# and thought, and the context other agents' logs add (heal maps Codex and Claude Code logs onto these). Dropped, as
# the spec drops a RunLedger log's logs; any other type is refused (it could be a call the importer would lose).
REPLAY_DISCARDED = ("run_started", "user_message", "assistant_message", "system_message", "reasoning", "turn_context",
                    "session_meta", "summary", "system", "compacted")
REPLAY_DISCARDED_PREFIXES = ("event_msg.",)  # Codex's UI messages: they repeat what its response items record


def discarded(kind: Any) -> bool:
    """Is ``kind`` an event type a replay journal import drops (``REPLAY_DISCARDED``)?"""
    return isinstance(kind, str) and (kind in REPLAY_DISCARDED or kind.startswith(REPLAY_DISCARDED_PREFIXES))


def load_replay_journal(data: bytes, source: str, case: str | None, rules: list[Any], rules_where: dict[str, Any],
                        effects_complete: bool, limits: Limits, flags: dict[str, str] = FLAGS,
                        notices: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A replay journal (``replay read`` output): one run's prompt, tool calls, explicit effects and ending. A call's
    arguments that are no object are taken as ``{"input": <them>}`` (``WRAPPED_ARGS``), said by one notice appended to
    ``notices`` once the import is whole (``_wrapped_notice``)."""
    records = _jsonl(data, source, limits, "replay")
    runs: list[str] = []
    for n, record in records:
        kind = record_kind(record)
        if kind == DROPPED_RECORD:  # a line `replay read` could not read: the run it belonged to is not whole
            refuse("E_INCIDENT_JSON_INVALID", f"line {n} is a dropped record: `replay read` left out line {record.get('line')} "
                   f"of {record.get('source')!r} ({record.get('message')})", {"source": source, "line": n, "path": "$"},
                   expected="a journal every line of which was read", received=record.get("code"), cause=record.get("code"),
                   howToFix="Mend the line `replay read` reported in its journal, then read and import it again.")
        if kind != RUN_RECORD and is_record(record):
            continue  # source, heal, redaction, ... records (of a kind null too): no event of a run
        run_id = record.get("runId")
        if not isinstance(run_id, str) or not run_id:
            refuse("E_INCIDENT_FIELD_MISSING", f"line {n} has no string `runId`", {"source": source, "line": n, "path": "$.runId"},
                   received="nothing")
        if run_id not in runs:
            runs.append(run_id)
    chosen = _choose_case(runs, case, source, "run", flags)
    run: dict[str, Any] = {}
    prompt: Any = None
    events: list[Any] = []
    positions: list[dict[str, Any]] = []
    wrapped: list[tuple[int, str, dict[str, Any]]] = []  # (the event, what its arguments were, where they are)
    for n, record in records:
        if record.get("runId") != chosen:
            continue
        where = {"source": source, "line": n, "path": "$"}
        if record.get("$record") == "run":
            run = record
            continue
        if is_record(record):
            continue
        kind = record.get("type")
        raw_payload = record.get("payload")
        payload: dict[str, Any] = raw_payload if isinstance(raw_payload, dict) else {}
        if kind == "user_message" and prompt is None and isinstance(payload.get("text"), str):
            prompt = payload["text"]
        if discarded(kind):
            continue
        if kind in TERMINAL_TYPES and record.get("synthetic") is True:
            refuse("E_INCIDENT_TERMINAL_MISSING", f"run {masked(chosen)!r} has no ending of its own: line {n} is a {kind} heal "
                   "made up (synthetic) for a journal that ended without one", _at(where, ".synthetic"),
                   expected="the run's own run_completed or run_failed", received=f"a synthetic {kind}",
                   howToFix="Import the journal of a run that ended (its final answer or its error): the importer does "
                            "not make up an ending, and a replay needs the recorded one.")
        event = _replay_event(kind, payload, run, _at(where, ".payload"), record)
        if event["type"] == "tool_call" and "args" in event and not isinstance(event["args"], dict):
            key = next(key for key in ARGUMENT_KEYS if key in payload)
            wrapped.append((len(events), json_type(event["args"]), _at(where, f".payload.{key}")))
            event["args"] = {WRAPPED_ARGS: event["args"]}
        events.append(event)
        positions.append(where)
    input_: dict[str, Any] = {}
    if isinstance(run.get("prompt"), str):
        input_["prompt"] = run["prompt"]
    elif prompt is not None:
        input_["prompt"] = prompt
    else:
        refuse("E_INCIDENT_TASK_START_MISSING", f"run {masked(chosen)!r} has no prompt (run record) or user_message", {"source": source},
               expected="a run record with `prompt`, or a user_message", received="none")
    if isinstance(run.get("context"), dict) and run["context"]:
        input_["context"] = run["context"]
    incident = assemble(input_, effects_complete, events, rules, positions, {"source": source}, limits, rules_where=rules_where)
    if wrapped and notices is not None:
        notices.append(_wrapped_notice(incident["events"], wrapped, masked(chosen)))
    return incident


_WRAPPED_NAMED = 3  # the calls a notice of wrapped arguments names in its message (all of them in its `calls`)


def _wrapped_notice(events: list[dict[str, Any]], wrapped: list[tuple[int, str, dict[str, Any]]], run: str) -> dict[str, Any]:
    """The one notice (E_INCIDENT_ARGS_WRAPPED, a warning) of an import whose calls ``wrapped`` (the event, the JSON type
    of its arguments, where they are) had arguments that are no object, with the calls' ids and tool names as the
    incident has them (``events``: renumbered, the names checked by ``assemble``); no value."""
    calls = [(events[k]["call_id"], events[k]["name"], kind) for k, kind, _where in wrapped]
    named = "; ".join(f"{cid} {name}: {kind}" for cid, name, kind in calls[:_WRAPPED_NAMED])
    more = f"; and {len(calls) - _WRAPPED_NAMED} more" if len(calls) > _WRAPPED_NAMED else ""
    return diagnostic("E_INCIDENT_ARGS_WRAPPED", f"{len(calls)} tool call(s) of run {run!r} have arguments that are no "
                      f"object ({named}{more}): each is imported as {{\"{WRAPPED_ARGS}\": <its arguments as written>}}, "
                      "the args a replayed agent sends for it", **wrapped[0][2], expected="an object",
                      received=sorted({kind for _k, kind, _where in wrapped}), calls=[cid for cid, _name, _kind in calls])


def _replay_event(kind: Any, payload: dict[str, Any], run: dict[str, Any], where: dict[str, Any],
                  record: dict[str, Any]) -> dict[str, Any]:
    if kind == "tool_called":
        args = next((payload[key] for key in ARGUMENT_KEYS if key in payload), _NONE)  # capture writes `arguments`
        return {"type": "tool_call", "call_id": call_id(payload), "name": tool_name(payload),
                **({"args": args} if args is not _NONE else {})}
    if kind == "tool_completed" and result_failed(kind, record):  # (a non-zero exit code: failed, as walk shows it)
        return {"type": "tool_result", "call_id": call_id(payload), "ok": False,
                "result": payload.get("output", payload.get("result")), "error": payload.get("error") or failure_words(record)}
    if kind == "tool_completed":
        return {"type": "tool_result", "call_id": call_id(payload), "ok": True,
                "result": payload.get("output", payload.get("result"))}
    if kind == "tool_failed":
        return {"type": "tool_result", "call_id": call_id(payload), "ok": False, "error": payload.get("error")}
    if kind == "business_effect":
        return {"type": "business_effect", "call_id": call_id(payload), "effect": payload.get("effect")}
    if kind == "tool_unanswered":  # heal's marker of a call the journal has no result for: none is made up here either
        refuse("E_INCIDENT_RESULT_MISSING", f"call {masked(call_id(payload))!r} has no result: the journal marks it "
               "tool_unanswered", {**where, "path": "$.type"}, expected="a tool_completed or tool_failed for the call",
               received="tool_unanswered",
               howToFix="Record an ambiguous timeout as a failed tool result (tool_failed), not as a missing one.")
    if kind == "run_completed":
        if isinstance(payload.get("output"), dict):
            return {"type": "final_output", "output": payload["output"]}
        if isinstance(run.get("response"), str):
            return {"type": "final_output", "output": {"response": run["response"]}}
        refuse("E_INCIDENT_FIELD_MISSING", "run_completed has no output object and the run record no response", where,
               expected="payload.output (object) or the run's `response`", received="nothing")
    if kind == "run_failed":
        for error in (payload.get("error"), run.get("error")):
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                return {"type": "task_error", "message": error["message"]}
            if isinstance(error, str):
                return {"type": "task_error", "message": error}
        refuse("E_INCIDENT_FIELD_MISSING", "run_failed has no error message", where,
               expected="payload.error.message or the run's error.message", received="nothing")
    shown = masked(kind)
    refuse("E_INCIDENT_EVENT_TYPE_UNKNOWN", f"the journal has an event of type {shown!r}, which the importer neither "
           "maps nor drops", {**where, "path": "$.type"},
           expected="tool_called, tool_completed, tool_failed, business_effect, run_completed, run_failed (dropped: "
                    f"{', '.join(REPLAY_DISCARDED)}, {', '.join(p + '*' for p in REPLAY_DISCARDED_PREFIXES)})",
           received=shown,
           howToFix=f"If {shown!r} records no tool call, result, effect or ending, drop it and import what is left: "
                    "`replay run drop.toml JOURNAL > kept.jsonl` with drop.toml as in the example, then "
                    "`replay incident import kept.jsonl --format replay ...`. If it is a tool call or its result, write it "
                    "as tool_called / tool_completed / tool_failed.",
           example=f'chain = [{{ type = "select", exclude = ["{shown}"] }}]')


def load_rules_file(path: str, limits: Limits) -> tuple[list[Any], dict[str, Any]]:
    """The assertion array of a ``--rules`` file, and where it came from (for error positions)."""
    data = read_limited(path, limits, what="rules file")
    where = {"source": path, "path": "$"}
    rules = parse_json(data, {"source": path}, limits)
    if not isinstance(rules, list):
        refuse("E_INCIDENT_SHAPE_INVALID", "a rules file is a JSON array of rules", where, expected="array",
               received=json_type(rules), example='[{"id": "one-refund-per-order", "type": "effect_count", '
                                                  '"effect_type": "refund", "group_by": "order_id", "min": 1, "max": 1}]')
    return rules, where


def given_rules(format: str, rules_path: str | None, limits: Limits, *, check: bool = False,
                flags: dict[str, str] = FLAGS) -> tuple[list[Any], dict[str, Any]]:
    """The rules of ``--rules FILE`` that a runledger/replay import needs; ``check``: also every rule, as an
    import would (an import of many exports checks the one file once, before any export); ``flags``: as for ``load_export``."""
    if rules_path is None:
        refuse("E_INCIDENT_RULES_MISSING", f"{option_setting('format', format, flags)} needs "
               f"{option_setting('rules', 'FILE', flags)}: at least one explicit rule",
               {"path": flags.get("rules", "rules")}, example=option_setting("rules", "rules.json", flags),
               howToFix=f"Give {option_word('rules', flags)} a JSON file with an array of at least one rule.")
    rules, where = load_rules_file(rules_path, limits)
    if check:
        check_rules(rules, where, max_rules=limits.max_assertions)
    return rules, where


def load_export(path: str, *, format: str = "canonical", case: str | None = None, rules_path: str | None = None,
                effects_complete: bool | None = None, limits: Limits = DEFAULT_LIMITS,
                flags: dict[str, str] = FLAGS, notices: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Read and check an export of any supported format; the normalised incident (not yet redacted). ``flags``: option
    -> the command-line flag that set it (``FLAGS``); an option no flag set is named by its key, as a config writes it
    (the path then is the option, ``case``, which ``load_incident`` names where its config has it). ``notices``: where
    what the import took otherwise than written goes (warnings: a replay journal's call arguments that are no object)."""
    if format not in FORMATS:
        refuse("E_INCIDENT_FORMAT_UNSUPPORTED", f"unknown export format {format!r}", {"path": flags.get("format", "format")},
               expected="one of: " + ", ".join(FORMATS), received=format)
    if format == "canonical":
        for option, given in (("case", case), ("rules", rules_path), ("effects_complete", effects_complete)):
            if given is not None:
                refuse("E_USAGE_INVALID", f"{option_word(option, flags)} is for {option_word('format', flags)} "
                       "runledger/replay; a canonical export declares it itself", {"path": flags.get(option, option)},
                       howToFix="Put `assertions` and `effects_complete` in the export, or pick "
                                f"{option_setting('format', 'runledger', flags)} (or replay).")
        return load_canonical(read_limited(path, limits), path, limits)
    rules, rules_where = given_rules(format, rules_path, limits, flags=flags)
    data = read_limited(path, limits)
    if format == "runledger":
        return load_runledger(data, path, case, rules, rules_where, bool(effects_complete), limits, flags)
    return load_replay_journal(data, path, case, rules, rules_where, bool(effects_complete), limits, flags, notices)
