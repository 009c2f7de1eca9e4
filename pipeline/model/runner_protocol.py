"""The runner contract: the request capture sends a runner on stdin, and how the runner's stdout is read.

Request (one JSON object on the runner's stdin): ``{"prompt", "query", "runId", "timestamp", "context"}``.

Reply (the runner's stdout), in one of two forms (``schemas/runner-output.schema.json``):

- one output object, on one line or pretty-printed: ``{"status": "ok"|"error", "events": [...],
  "response"?, "error"?, "framework"?, "sources"?, "usage"?}``;
- streamed: JSONL, one event per line as it happens (an object with a ``type`` and no ``events``),
  then the output object last (``is_output_line``: an object with a ``status``, ``response`` or ``events``; one with
  none of them nor a ``type``, a log line, is no line of the run, ``neither``): on a line of its own, or pretty-printed
  over several lines (the rest of stdout read as one document, as a reply of the output object alone is read:
  ``_last_document``), with nothing but white space after it (what follows it is left out and said:
  ``_note_after_output``). The run's events are the streamed ones followed by the output object's ``events`` (a
  streaming runner usually ends with ``"events": []``), each an object with a ``type`` (a non-empty string) either way.
  An event (or anything but the output object) printed over several lines fails the run at its first line and
  is left out, the lines after it read on (``_document_at``, ``_over_lines``); the scans for such documents read a
  few times stdout's size at most, all together (``_ScanBudget``: past it, such a line is a one-line fault). Only a
  line that opens a ``{`` or ``[`` and leaves it open is read as the start of such a document (``_opens_over_lines``):
  one that closes what it opens and is still no JSON (a Python dict printed, a trailing comma) is a one-line fault,
  on stdout's first line as on any other. Each line, document or listed item left out is one of ``Reply.left_out``
  (said by capture, whatever ended the runner), but what stdout ends inside: a last line, or a document over several
  lines, cut off mid-write, is torn (``Reply.tear``: a ``drop_torn_line`` repair of capture's).

A reply is read whole after the process ended; every complete event line counts, so a runner that
dies halfway still yields the events it printed. Problems become diagnostics with the E_RUNNER_*
codes, each naming the JSON path (or stdout line) at fault, what was expected and what came. What becomes of the run
facts an output object carries: ``runner_facts``.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import accumulate
from pathlib import Path
from typing import Any

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Column
from replay.pipeline.engine.errors import (
    AFTER_DOCUMENT,
    EXIT_REFUSED,
    ReplayError,
    diagnostic,
    input_unreadable,
    refuse_duplicate_key,
    torn_message,
    utf8_fault,
    utf8_text,
)
from replay.pipeline.engine.errors import excerpt as _excerpt
from replay.pipeline.io.journals import path_kind
from replay.pipeline.model.events import format_timestamp
from replay.pipeline.model.records import STATUSES
from replay.pipeline.model.runner_facts import with_article
from replay.pipeline.model.validation import EVENT_TYPE, is_event_type, json_type, state_of

OUTPUT_EXAMPLE = '{"status": "ok", "response": "Echo: hi", "events": []}'


# the request -------------------------------------------------------------------------------------
def new_run_id(moment: datetime | None = None) -> str:
    """``run_`` + UTC time to the second + 6 random hex digits: ids sort by start time."""
    moment = moment or datetime.now(UTC)
    return "run_" + moment.astimezone(UTC).strftime("%Y%m%dT%H%M%S") + "_" + secrets.token_hex(3)


def runner_request(prompt: str, run_id: str, moment: datetime, context: dict[str, Any]) -> dict[str, Any]:
    """The object a runner reads from stdin (``query`` repeats the prompt, as the contract says)."""
    return {"prompt": prompt, "query": prompt, "runId": run_id, "timestamp": format_timestamp(moment), "context": context}


def load_context(inline: str | None, file: str | None) -> dict[str, Any]:
    """The run context from ``--context JSON`` or ``--context-file PATH`` (at most one); {} without either."""
    if inline is not None and file is not None:
        raise ReplayError(
            "E_CONTEXT_CONFLICT", "--context and --context-file were both given; use one", path="--context",
            expected="only one of --context and --context-file", received="both",
        )
    if inline is None and file is None:
        return {}
    if file is not None:
        where, source = "--context-file", file
        kind = path_kind(file)  # a file, or a pipe: `--context-file <(make-context)`
        if kind is None:
            raise ReplayError(
                "E_CONTEXT_FILE_NOT_FOUND", f"context file {file!r} does not exist", path=where,
                expected="an existing JSON file", received=file,
            )
        if kind == "directory":
            raise ReplayError(
                "E_USAGE_INVALID", f"context file {file!r} is a directory; --context-file names a JSON file", path=where,
                expected="a JSON file (or a pipe)", received="a directory",
                howToFix="Name the JSON file that holds the context object, or pass it inline with --context.",
            )
        try:
            data = Path(file).read_bytes()
        except OSError as exc:
            raise input_unreadable(file, exc, what="context file", exit_code=EXIT_REFUSED, path=where,
                                   expected="a readable JSON file") from exc
        text, skipped = exactjson.skip_bom(data)  # (a Windows editor's byte order mark, as a config's)
    else:
        where, source, skipped = "--context", None, 0
        text = (inline or "").encode("utf-8", "surrogateescape")  # an argument's bytes that are not UTF-8, as given
    utf8_text(text, "E_CONTEXT_JSON_INVALID", where, skipped, path=where, source=source)  # (orjson: column 1 of a str)
    try:
        context = exactjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ReplayError(
            "E_CONTEXT_JSON_INVALID", f"{where} is not valid JSON: {exc.msg}", path=where, source=source,
            **exactjson.error_position(text, exc, skipped), expected="a JSON object", received=excerpt(text),
            example='--context \'{"userId": "u1"}\'',
        ) from exc
    refuse_duplicate_key(text, context, "E_CONTEXT_JSON_INVALID", where, skipped, rooted=True, source=source,  # as a config's
                         expected="a JSON object, each key written once", received=excerpt(text))
    if not isinstance(context, dict):
        raise ReplayError(
            "E_CONTEXT_SHAPE_INVALID", f"{where} must be a JSON object, not {json_type(context)}", path=where,
            source=source, expected="object", received=json_type(context), example='{"userId": "u1"}',
        )
    return context


# the reply ---------------------------------------------------------------------------------------
@dataclass
class Reply:
    """What a runner's stdout held: its events (as batch columns), its output object, the first problem, and every
    item left out of the run (``left_out``: the first problem too, when it is one)."""

    events: list[Column] = field(default_factory=list)
    output: dict[str, Any] | None = None
    problem: dict[str, Any] | None = None
    streamed: int = 0  # events that came as lines of their own
    duplicates: list[dict[str, Any]] = field(default_factory=list)  # a key written twice: keys, line, column, offset
    torn: dict[str, Any] | None = None  # stdout's end cut off (the runner died mid-write): where, its bytes (``tear``)
    torn_said: str = ""  # what capture's drop_torn_line repair of ``torn`` says
    listed_again: int = 0  # the output object's `events` began with the streamed events again: those left out (``_take_output``)
    left_out: list[dict[str, Any]] = field(default_factory=list)  # each line, document or item left out: ``leave_out``

    def note(self, code: str, message: str, **fields: Any) -> None:
        """Keep the first problem only: later ones are usually its consequences."""
        if self.problem is None:
            self.problem = diagnostic(code, message, **fields)

    def leave_out(self, problem: dict[str, Any]) -> None:
        """A line, document or listed item left out of the run (no event, E_RUNNER_OUTPUT_SHAPE; no JSON, or what
        follows the output object, E_RUNNER_INVALID_JSON): the run's problem when it is the first, and one of
        ``left_out`` either way, each said by capture whatever ended the runner (not only the first: they are no
        consequence of each other; a crash or a timeout, the run's error then, says none of them)."""
        if self.problem is None:
            self.problem = problem
        self.left_out.append(problem)

    def tear(self, line: int, offset: int, original: bytes, said: str, problem: dict[str, Any]) -> None:
        """Stdout ends inside what begins on its line ``line`` (at byte ``offset``): ``original``, its last line or a
        document over several lines it ends inside, cut off mid-write (``said``: which). It is no event: left out, and
        said by capture as a ``drop_torn_line`` repair (as heal's parse logs a torn line), whatever ended the runner;
        ``problem`` says it as the run's error only when it is the first (the process's failure comes first)."""
        self.torn = {"line": line, "offset": offset, "original": original.decode("utf-8", "replace")}
        self.torn_said = f"stdout's {said}"
        if self.problem is None:
            self.problem = problem


def excerpt(data: bytes | str) -> str:
    """A runner's line as an error shows it: without the white space around it."""
    return _excerpt(data.strip())


def is_event(value: Any) -> bool:
    """An event as the runner contract takes one (``runner-output.schema.json``'s ``runnerEvent``): an object with a
    ``type`` that is a non-empty string (``is_event_type``, as a stream's event has it). Each item of the output
    object's ``events`` must be one, as each streamed event line must."""
    return isinstance(value, dict) and is_event_type(value.get("type"))


def is_event_line(value: Any) -> bool:
    """A stdout line meant as a streamed event: an object with a ``type`` (of any value: one that is no event,
    ``{"type": 5}``, fails the run at its line, ``not_an_event``) that is not the output object (which has ``events``)."""
    return isinstance(value, dict) and "type" in value and "events" not in value


OUTPUT_KEYS = ("status", "response", "events")  # the output object's own members (the schema requires `status`, `events`)


def is_output_line(value: Any) -> bool:
    """A stdout line (or a document over several lines) of a stream meant as the output object: an object that is no
    event line (``is_event_line``) and has a member of the output object's own (``OUTPUT_KEYS``), right or wrong
    (``check_output`` then says what breaks the contract). An object with none of them nor a ``type`` (a structured
    log line, ``{"level": "info", "msg": "agent starting"}``) is neither an event nor the output object: it fails the
    run and is left out (``neither``), and the output object after it is the run's. (A stdout that is one JSON document
    and no event line is the output object whatever its members: ``read_reply``.)"""
    return isinstance(value, dict) and not is_event_line(value) and any(key in value for key in OUTPUT_KEYS)


def neither(value: Any, line: bytes, number: int, start: int) -> dict[str, Any]:
    """E_RUNNER_OUTPUT_SHAPE for stdout ``line`` ``number`` (at byte ``start``): ``value``, read from it, is neither an
    event nor the output object (``is_event_line``, ``is_output_line``): not an object, or an object without `type`,
    `status`, `response` and `events` (a log line printed on stdout: ``received`` shows it). It is left out of the run,
    as a line that is no event is."""
    what = (f"an object without {', '.join(f'`{k}`' for k in ('type', *OUTPUT_KEYS[:-1]))} or `{OUTPUT_KEYS[-1]}`"
            if isinstance(value, dict) else json_type(value))
    return diagnostic(
        "E_RUNNER_OUTPUT_SHAPE", f"stdout line {number} is {what}: neither an event nor the output object; it is left "
        "out of the run (the raw capture keeps it)", path="$", line=number, offset=start,
        expected="an event object (with a `type`) or the output object (with `status` and `events`)",
        received=excerpt(line) if isinstance(value, dict) else what,
        howToFix='Print logs on stderr. On stdout stream only events, each an object with a non-empty string `type`, '
                 'e.g. {"type": "run_started", "payload": {}}, then the output object ({"status", "response", "events"}) '
                 'last (`replay schema runner-output`).')


def no_event(value: Any, subject: str, fix: str, **where: Any) -> dict[str, Any]:
    """E_RUNNER_OUTPUT_SHAPE for ``subject`` (a streamed line, a listed item) that is no event (``is_event``): left
    out of the run; ``fix`` begins the advice (``Stream only events``)."""
    received = not_an_event(value)
    return diagnostic(
        "E_RUNNER_OUTPUT_SHAPE", f"{subject} is {received}, not an event (an object with a non-empty string `type`); it "
        "is left out of the run (the raw capture keeps it)", **where, expected=EVENT_EXPECTED, received=received,
        howToFix=f'{fix}, each an object with a non-empty string `type`, e.g. {{"type": "run_started", "payload": {{}}}} '
                 '(`replay schema runner-output`).')


def not_an_event(value: Any) -> str:
    """What a value that is no event (``is_event``) is, as a diagnostic's ``received`` says it: ``integer``, ``an object
    without `type```, ``an object whose `type` is string ''``."""
    if not isinstance(value, dict):
        return json_type(value)
    return "an object without `type`" if "type" not in value else f"an object whose `type` {state_of(value['type'])}"


EVENT_EXPECTED = f"an event object with a `type` ({EVENT_TYPE})"


def check_output(output: Any) -> dict[str, Any] | None:
    """The first way ``output`` breaks the output contract, as a diagnostic; None when it holds."""
    if not isinstance(output, dict):
        return diagnostic(
            "E_RUNNER_OUTPUT_SHAPE", f"runner output must be a JSON object, not {json_type(output)}", path="$",
            expected="object", received=json_type(output), example=OUTPUT_EXAMPLE,
        )
    status = output.get("status")
    if status not in STATUSES:
        return diagnostic(
            "E_RUNNER_STATUS_INVALID", "runner output field `status` must be \"ok\" or \"error\"", path="$.status",
            expected='"ok" | "error"', received="missing" if "status" not in output else excerpt(exactjson.dumps(status)),
        )
    events = output.get("events")
    if not isinstance(events, list):
        return diagnostic(
            "E_RUNNER_EVENTS_INVALID", "runner output field `events` must be an array", path="$.events",
            expected="array", received="missing" if "events" not in output else json_type(events),
            howToFix="Return `events: []` when there are no events (or when they were streamed).",
        )
    k = next((k for k, item in enumerate(events) if not is_event(item)), None)
    if k is not None:  # (as a streamed line that is no event fails the run; the item is left out of it)
        return no_event(events[k], f"runner output's `events[{k}]`", "List only events in `events`", path=f"$.events[{k}]")
    if status == "ok" and not isinstance(output.get("response"), str):
        return diagnostic(
            "E_RUNNER_RESPONSE_MISSING", "runner output has status \"ok\" but no `response` string", path="$.response",
            expected="string", received="missing" if "response" not in output else json_type(output.get("response")),
        )
    return None


def read_reply(stdout: bytes) -> Reply:
    """Read a runner's whole stdout: one output object, or streamed event lines and then the output object. A byte order
    mark before it (a Windows tool's) is skipped, as read skips one; positions stay positions in stdout."""
    reply = Reply()
    stdout, skipped = exactjson.skip_bom(stdout)
    if not stdout.strip():
        reply.note("E_RUNNER_EMPTY_STDOUT", "the runner wrote nothing on stdout", path="$",
                   expected="one JSON output object on stdout", received="empty stdout")
        return reply
    try:
        document = exactjson.loads(stdout)
    except orjson.JSONDecodeError as exc:
        if _spans_lines(stdout) and _is_output_at(stdout, 0):
            if not _output_then_more(reply, stdout, exc, 1, skipped):
                _document_fault(reply, stdout, exc, skipped)  # (all of stdout the one document left out)
            return reply
        document = _NOT_ONE_DOCUMENT  # (an event over several lines first: left out, the lines after it read)
    if document is not _NOT_ONE_DOCUMENT and not is_event_line(document):
        _take_output(reply, document, line=None)
        _note_duplicates(reply, stdout, document, 1, skipped)
        return reply
    _read_lines(reply, stdout, skipped)
    return reply


def _spans_lines(stdout: bytes) -> bool:
    """Does stdout open with one JSON document written over several lines (``json.dumps(output, indent=2)``): its
    first line opens an object or an array that it leaves open (``_opens_over_lines``), and lines follow?"""
    lines = [line for line in stdout.split(b"\n", 64) if line.strip()]
    return len(lines) >= 2 and _opens_over_lines(lines[0])


# a JSON string, escapes and all; or one still open at the text's end (then its group 1 is None): each match from the
# first quote on always ends, so the text is read once, whatever its quotes and back slashes
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:(")|\\?\Z)', re.DOTALL)
_BRACKETS = bytes(b for b in range(256) if b not in b"{}[]")  # (what ``bytes.translate`` deletes to keep the brackets)
_DEPTH = tuple(1 if b in b"{[" else -1 if b in b"}]" else 0 for b in range(256))  # how a bracket moves the depth


def _opens_over_lines(line: bytes) -> bool:
    """Can stdout line ``line`` (not JSON on its own) be the first line of one JSON document written over several
    lines? Only when it opens an object or an array and leaves it open at its end: its brackets (outside strings, none of
    them cut off at the line's end) never close all it opened. A line that closes what it opens is a one-line fault,
    never the start of a document (``{'type': 'debug'}``, a Python dict printed; a trailing comma; NaN; a byte that
    is not UTF-8 in an event line): it is read as a line of its own, the lines after it read on."""
    text = line.strip()
    if text[:1] not in (b"{", b"["):
        return False
    bare = _STRING.sub(lambda string: b"" if string.group(1) else b'"', text)
    if b'"' in bare:  # (a string still open at the line's end: no JSON text goes on from there on the next line)
        return False
    return min(accumulate(map(_DEPTH.__getitem__, bare.translate(None, _BRACKETS)))) > 0


def _document_fault(reply: Reply, stdout: bytes, exc: orjson.JSONDecodeError, skipped: int,
                    first: int = 1) -> tuple[int, bool]:
    """A document over several lines that does not parse: left out and said where reading it stopped (a line printed
    after it, or its end cut off), not at its first line, which is no JSON on its own. ``stdout``: the document and what
    follows it, from stdout line ``first`` on (after streamed events), ``skipped`` bytes into stdout (which the offset
    counts). Stdout ending inside it (``exactjson.cut_off``: a UTF-8 character cut in two at its very end too), it is
    torn, as a cut-off last line is (``Reply.tear``: the lines from ``first`` to stdout's end, dropped whole, newline
    after the last or not: a newline ends no document); else it is left out (``Reply.leave_out``, said whatever ended
    the runner). Returns the line reading stopped at and whether each line to it is the document's (torn)."""
    cut = exactjson.cut_off(stdout, exc)
    bad = utf8_fault(stdout)
    at = bad.position if bad is not None else exactjson.error_position(stdout, exc)
    number, start, column = at["line"] + first - 1, at["offset"], at["column"]
    written = stdout.rstrip() if cut else b""  # (torn: what was written, its last line the document's last)
    last = first + written.count(b"\n")
    if cut and bad is None:  # (where the writing stopped: after the last byte written, not on a line after its newline)
        start = written.rfind(b"\n") + 1
        number, column = last, len(written) - start + 1
    end = stdout.find(b"\n", start)
    line = stdout[start:] if end < 0 else stdout[start:end]
    expected = "one JSON output object (over several lines, or one line each for streamed events)"
    how: str | None = ("The output object may span lines only as stdout's last thing; print each streamed event on one line "
           "of its own (no indent), and anything else on stderr.")
    if cut:
        why, how = f"is cut off: stdout ends inside the output object that begins on line {first}", None
    elif bad is not None:
        why, expected, how = bad.not_json, "UTF-8 text", None
    elif exactjson.too_deep(exc):
        why = f"{_TOO_DEEP} (reading the output object that begins on line {first})"
    else:
        char = exactjson.char_at(line, exc.colno - 1)
        why = (f"is not valid JSON: {exc.msg}{f' ({char})' if char else ''} at column {column} (reading the output object "
               f"that begins on line {first})")
    fault = diagnostic("E_RUNNER_INVALID_JSON", f"stdout line {number} {why}", path="$", line=number,
                       offset=skipped + start, column=column, expected=expected, received=excerpt(line),
                       **({"howToFix": how} if how else {}))
    if not cut:
        reply.leave_out(fault)
        return number, False
    reply.tear(first, skipped, stdout, f"last lines {first}-{last} (from byte {skipped}) are one document that stdout "
               "ends inside: the write was cut off", fault)
    return last, True


_NOT_ONE_DOCUMENT = object()


def _note_duplicates(reply: Reply, data: bytes, value: Any, line: int, offset: int) -> None:
    """Note the keys ``data`` (stdout from its ``line``, at byte ``offset``; ``value`` read from it) writes twice in one
    object, where the first of them is: only the last value of each survives the reading."""
    keys, first = exactjson.duplicates(data, value, offset)
    if not keys:
        return
    where: dict[str, int] = {"line": line, "offset": offset}
    if first is not None:
        where = first[1]
        where["line"] += line - 1
    reply.duplicates.append({"keys": keys, **where})


def _take_output(reply: Reply, output: Any, line: int | None) -> None:
    problem = check_output(output)
    if problem is not None and not problem["path"].startswith("$.events["):  # (each such item: below)
        if line is not None:
            problem["line"] = line
        reply.note(**problem)
    if isinstance(output, dict):
        reply.output = output
        events = output.get("events")
        if isinstance(events, list):
            for k, item in enumerate(events):  # (check_output names the first; every one is left out, and said)
                if not is_event(item):
                    reply.leave_out(no_event(item, f"runner output's `events[{k}]`", "List only events in `events`",
                                             path=f"$.events[{k}]", **({"line": line} if line is not None else {})))
            again = _streamed_again(reply, events) if reply.streamed else 0
            reply.listed_again = again  # (streamed, then listed again: kept once, the repair logged by capture)
            reply.events.extend((e, None, line, None, f"$.events[{k}]") for k, e in enumerate(events)
                                if k >= again and is_event(e))  # (one that is no event failed the run: check_output)


def _streamed_again(reply: Reply, events: list[Any]) -> int:
    """How many of ``events`` (an output object's) are the events streamed before it listed again: all of those, every
    one, in order, value for value, at the list's start (what follows them is new); else 0."""
    streamed = [column[0] for column in reply.events]
    n = len(streamed)
    return n if n and len(events) >= n and all(map(exactjson.typed_equal, events[:n], streamed)) else 0


def _fault(line: bytes, exc: orjson.JSONDecodeError, cut: bool) -> tuple[str, int]:
    """Why a stdout line is no JSON, and the 1-based byte column where: ``cut`` off (the last line, with no newline, and
    the start of a JSON text); else the byte that is not UTF-8, or the character orjson stopped at."""
    if cut:
        return "is cut off (no newline, not valid JSON)", len(line) + 1
    bad = utf8_fault(line)
    if bad is not None:
        return bad.not_json, bad.column
    column = exactjson.byte_column(line, exc.pos)
    if exactjson.too_deep(exc):
        return _TOO_DEEP, column
    char = exactjson.char_at(line, exc.pos)
    return f"is not valid JSON: {exc.msg}{f' ({char})' if char else ''} at column {column}", column


_TOO_DEEP = f"is nested deeper than {exactjson.MAX_DEPTH} levels, the most replay reads"  # (as parse says of a line)


def _read_lines(reply: Reply, stdout: bytes, skipped: int) -> None:
    """Streamed form: event lines, then the output object, with nothing but white space after it (a line after it fails
    the run, and is left out with any after it: ``_note_after_output``). A line that is no JSON is left out and said
    (``Reply.leave_out``), each one; a cut-off last line (or document over several lines: ``_last_document``) is torn
    (``Reply.tear``), not kept. ``skipped``: the bytes of stdout before ``stdout`` (a byte order mark), where the offsets
    start."""
    raws = stdout.split(b"\n")
    torn_tail = raws[-1] != b""
    offset = skipped
    outputs = 0  # (the output object's line once it was read: nothing but white space may follow it)
    tried = False  # has a line that opens a document over several lines been read as the output object?
    within = 0  # the last line of a document printed over several lines, left out as one (``_over_lines``, torn)
    covered = 0  # the line reading a document over several lines stopped at (a fault in it): the lines to it that are
    # no JSON alone are its, left out with it and said with it (``_document_fault``); one that is JSON alone is read
    budget = _ScanBudget(_SCAN_TIMES * len(stdout) + _SCAN_FLOOR)  # (all ``_document_at`` scans together: linear)
    for number, raw in enumerate(raws, start=1):
        start, offset = offset, offset + len(raw) + 1
        line = raw.rstrip(b"\r")
        if number <= within or not line.strip():
            continue
        if outputs:
            _note_after_output(reply, line, number, start, outputs, len(line) - len(line.lstrip()) + 1)
            break
        try:
            value = exactjson.loads(line)
        except orjson.JSONDecodeError as exc:
            if number <= covered:
                continue
            opens = _opens_over_lines(line)  # (the first line of a document over several lines? else a fault of its own)
            found = _document_at(stdout, start - skipped, budget) if opens else None
            if found is not None and not is_output_line(found[0]):  # (an event over several lines: left out, as one)
                within = _over_lines(reply, found[0], number, number + found[1], start)
                continue
            if not tried and outputs == 0 and opens:  # (once: stdout is read in linear time)
                tried, rest = True, stdout[start - skipped:]
                if _spans_lines(rest):
                    last, whole = _last_document(reply, rest, number, start)
                    if last is None:
                        outputs = 1  # the output object, last, over several lines (after streamed events)
                        break
                    if whole:
                        within = last
                    else:
                        covered = last
                    continue
            cut = torn_tail and number == len(raws) and exactjson.cut_off(line, exc)
            why, column = _fault(line, exc, cut)
            fault = diagnostic("E_RUNNER_INVALID_JSON", f"stdout line {number} {why}", path="$", line=number,
                               offset=start, column=column, expected="one JSON value per line", received=excerpt(line))
            if cut:
                reply.tear(number, start, raw, torn_message(number, start), fault)
            else:
                reply.leave_out(fault)
            continue
        _note_duplicates(reply, line, value, number, start)
        event_line = is_event_line(value)
        if event_line and not is_event(value):  # (left out, as an item of `events` that is none: check_output)
            reply.leave_out(no_event(value, f"stdout line {number}", "Stream only events", path="$", line=number,
                                     offset=start))
        elif event_line:
            reply.events.append((value, line, number, start, None))
            reply.streamed += 1
        elif is_output_line(value):
            outputs = number
            _take_output(reply, value, number)
        else:  # (a log line printed on stdout, a number, ...: left out, the output object after it the run's)
            reply.leave_out(neither(value, line, number, start))
    if outputs == 0:
        reply.note(
            "E_RUNNER_OUTPUT_SHAPE",
            f"stdout ended after {reply.streamed} streamed event(s) without the output object", path="$",
            expected='a last line with the output object, e.g. {"status": "ok", "response": "...", "events": []}',
            received="end of stdout",
        )


def _note_after_output(reply: Reply, line: bytes, number: int, start: int, output: int, column: int) -> None:
    """Stdout line ``number`` (at byte ``start``; what is there from byte ``column`` on) follows the output object (that
    begins on line ``output``): stdout then holds no one JSON document, and the run fails (E_RUNNER_INVALID_JSON), the
    output object printed on one line or over several alike; what follows it is left out, the events before it kept,
    and said also when it is not the run's first problem (``Reply.leave_out``: a fault of the output object is none of
    its cause)."""
    reply.leave_out(diagnostic(
        "E_RUNNER_INVALID_JSON", f"stdout line {number} follows the output object (line {output}): nothing but white space "
        "may follow it; the output object is the run's, and what follows it is left out (the raw capture keeps it)",
        path="$", line=number, offset=start, column=column, expected="nothing but white space after the output object",
        received=excerpt(line[column - 1:]),
        howToFix="Print exactly one output object ({\"status\", \"response\", \"events\"}), as stdout's last thing: stream "
                 "each event on a line of its own before it, and print anything else on stderr."))


def _last_document(reply: Reply, rest: bytes, number: int, start: int) -> tuple[int | None, bool]:
    """``rest`` of stdout, from its line ``number`` (at byte ``start``) to its end, read as the one document it opens
    over several lines: the output object printed last (``json.dumps(output, indent=2)``), as ``read_reply`` reads one
    that is all of stdout. ``(None, True)`` when it is the output object. Else it is left out, and said, and this
    returns the last line it holds and whether each line to it is the document's (``True``: a whole document or one
    stdout ends inside, ``Reply.tear``) or only those that are no JSON alone (``False``: a fault in it, said where
    reading it stopped; the lines are then read on, as ever: an event or an output object on a line of its own still
    counts)."""
    try:
        value = exactjson.loads(rest)
    except orjson.JSONDecodeError as exc:
        if _output_then_more(reply, rest, exc, number, start):
            return None, True
        return _document_fault(reply, rest, exc, start, number)
    if not is_output_line(value):  # (``_read_lines`` leaves such a document out before it comes here: ``_document_at``)
        return _over_lines(reply, value, number, number + rest.rstrip().count(b"\n"), start), True
    _take_output(reply, value, number)
    _note_duplicates(reply, rest, value, number, start)
    return None, True


def _output_then_more(reply: Reply, rest: bytes, exc: orjson.JSONDecodeError, number: int, start: int) -> bool:
    """Is ``rest`` (stdout from its line ``number``, at byte ``start``; ``exc``, why it is no one JSON document) a whole
    output object with more after it? Then that object is taken, as one on a line of its own is, and what follows it
    is noted (``_note_after_output``): True. Else False (``exc`` is then the fault)."""
    if exc.msg != AFTER_DOCUMENT:
        return False
    at = exactjson.error_position(rest, exc)
    end = at["offset"] + at["column"] - 1  # (the first byte after the document and the white space after it)
    try:
        value = exactjson.loads(rest[:end])
    except orjson.JSONDecodeError:
        return False
    if not is_output_line(value):
        return False
    _take_output(reply, value, number)
    _note_duplicates(reply, rest[:end], value, number, start)
    close = rest.find(b"\n", at["offset"])
    line = (rest[at["offset"]:] if close < 0 else rest[at["offset"]:close]).rstrip(b"\r")
    _note_after_output(reply, line, number + at["line"] - 1, start + at["offset"], number, at["column"])
    return True



def _is_output_at(stdout: bytes, index: int) -> bool:
    """Is what opens at byte ``index`` of ``stdout`` over several lines the output object, or no whole document at all
    (then read as one, ``_document_fault`` saying where it stops)? Not when it is a whole event (or array, ...)."""
    found = _document_at(stdout, index)
    return found is None or is_output_line(found[0])


_WINDOW = 256  # the bytes ``_document_at`` reads first (then twice as many, ...): what it reads is bounded by the document
_SCAN_TIMES = 8  # the bytes all ``_document_at`` scans of one reply may read together, per byte of stdout (plus _SCAN_FLOOR)
_SCAN_FLOOR = 64 * _WINDOW  # (a document costs up to ~6 times what it spans; a small one at least a window)


@dataclass
class _ScanBudget:
    """The bytes ``_document_at`` may still read for one reply, every scan together. A scan that finds no document
    (stdout ending inside what a line opens, say) reads to where that stops, often stdout's end; a line after it may
    open one more (``[1, ...`` on each of many lines) and be scanned to the end again: without a budget, reading a
    reply grows with the square of stdout's size. Past it, a line that does not parse is a one-line fault."""

    left: int

    def spend(self, size: int) -> bool:
        """Take ``size`` bytes from the budget: False (the budget then spent, every later scan refused) when they are not left."""
        if size > self.left:
            self.left = 0
            return False
        self.left -= size
        return True


def _document_at(stdout: bytes, index: int, budget: _ScanBudget | None = None) -> tuple[Any, int] | None:
    """The one JSON document that opens at byte ``index`` of ``stdout`` (a line's start) over several lines, and how
    many lines after its first it ends on; None when there is none there that ends at a line's end (a fault in it, or
    stdout ending inside it), or when reading it would overrun ``budget`` (the scans of one reply, together). Read in
    windows that end at a line's end (never inside a string nor a UTF-8 character), each twice the last, until one
    holds the document: each document costs about what it spans, not what follows it."""
    size = _WINDOW
    while True:
        if budget is not None and budget.left <= 0:
            return None
        end = stdout.find(b"\n", index + size)
        if budget is not None and not budget.spend((len(stdout) if end < 0 else end) - index):
            return None
        window = stdout[index:] if end < 0 else stdout[index:end]
        try:
            return exactjson.loads(window), window.rstrip().count(b"\n")
        except orjson.JSONDecodeError as exc:
            if exc.msg == AFTER_DOCUMENT:  # (a whole document, more after it: from a line of its own on?)
                at = exactjson.error_position(window, exc)
                if window[at["offset"]:at["offset"] + at["column"] - 1].strip():
                    return None  # (more on the line the document ends on)
                if budget is not None and not budget.spend(at["offset"]):
                    return None
                try:
                    value = exactjson.loads(window[:at["offset"]])
                except orjson.JSONDecodeError:
                    return None
                return value, window[:at["offset"]].rstrip().count(b"\n")
            if end < 0 or not exactjson.cut_off(window, exc):
                return None
        size *= 2


def _over_lines(reply: Reply, value: Any, number: int, last: int, start: int) -> int:
    """Stdout lines ``number``-``last`` (from byte ``start``) are one document that is no output
    object (an event pretty-printed, ``json.dumps(event, indent=2)``): only the output object may span lines, so it
    fails the run (E_RUNNER_OUTPUT_SHAPE, at its first line) and is left out, as a line that is no event is; the lines
    after it are read on. Returns ``last``."""
    what = "one event" if is_event(value) else not_an_event(value) if isinstance(value, dict) else with_article(json_type(value))
    reply.leave_out(diagnostic(
        "E_RUNNER_OUTPUT_SHAPE", f"stdout lines {number}-{last} are {what} printed over several lines: only the output "
        "object may span lines, each streamed event is one line of its own; it is left out of the run (the raw capture "
        "keeps it)", path="$", line=number, offset=start,
        expected="each streamed event on one line of its own (only the output object, last, may span lines)",
        received=f"{what} over lines {number}-{last}: {excerpt(exactjson.dumps(value))}",
        howToFix="Print each streamed event on one line (no indent: json.dumps(event)), then the output object "
                 "({\"status\", \"response\", \"events\"}) last."))
    return last
