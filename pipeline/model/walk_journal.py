"""Walk's journal scan: where a run's journal is, and what a walk must know before it prints a line (where ``--at``
stops, the first line it cannot read, the dialect of another agent's log).

The terminal record of a step (what ``--at`` stops after) is the first record of that step whose state ends it
(succeeded, failed, cancelled, skipped) while none of the step's tool calls is still open, unless it ends only an
attempt (``step.attempt.failed``) or says the step will be retried (``"retrying": true``): see ``walk.ends_step``. A
step that never ends stops at its last record. Another agent's log (Claude Code, Codex, ...) is walked as its
canonical journal: ``journal_dialect`` says, from a file's first records, which dialect the ``dialect`` stage would
read it as.
"""

from __future__ import annotations

import functools
import io
import json
import os
import re
import shlex
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain, compress, count
from typing import Any, cast

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError, excerpt, how_to_fix, printable, refusal, utf8_fault
from replay.pipeline.io.journals import (
    BLANK,
    DOCUMENT,
    DOCUMENT_SUFFIXES,
    Gunzipping,
    GzipUnreadable,
    HeadFormat,
    LineCutter,
    as_document,
    document_too_long,
    head_format,
    is_document,
    line_too_long,
)
from replay.pipeline.io.run_files import HEAL_LOG, HEALED, HEALED_JOURNAL, JOURNAL, JOURNAL_FOLDER, is_heal_log, is_raw_capture
from replay.pipeline.io.run_files import RAW as RAW_SIDE_FILE
from replay.pipeline.model.artifacts import document_items
from replay.pipeline.model.dialects.detect import CANONICAL, document_dialect, input_dialect
from replay.pipeline.model.records import DROPPED_RECORD, RECORD_KEY, not_object_fix
from replay.pipeline.model.split_records import joined_lines
from replay.pipeline.model.validation import JsonLinesHead, document_not_json, named_document_refusal
from replay.pipeline.model.walk import StepWatch, kind_of, state_of, step_of, step_tokens

# finding where --at stops, before anything is printed ------------------------------------------------
_DROPPED = b'"' + RECORD_KEY.encode() + b'":"' + DROPPED_RECORD.encode() + b'"'  # how `replay read` writes one
# What a record the parser reads as a dropped one, or as the step's, has when written otherwise: a dropped record with
# blanks around its colon, or one whose key or value is escaped (``"\u0024record"``, ``"$r\u0065cord"``: `$`, letters,
# digits, `.`, `_` and `-` escape only as ``\u00`` and two hex digits, ``_ESCAPED_NAME``), or a plain step id so
# escaped (not one of a control character, a non-ASCII letter, `<`, `>` or `&`). Only a block that has one is searched
# for them, and a line they alone find is parsed only to tell which record it is; one that cannot be read, never the
# step's text to the scan, is passed over as before.
_SPACED = b'"' + DROPPED_RECORD.encode() + b'"'
_ESCAPED_NAME = re.compile(rb"\\u00(?:2[4dDeE]|3[0-9]|[4-7][0-9a-fA-F])")  # `$`, `-`, `.`, digits, letters, `_`, ...


@dataclass(frozen=True, slots=True)
class StepEnd:
    """Where a walk ``--at`` a step stops: the record after which nothing more is shown."""

    found: bool
    terminated: bool = False  # the step's terminal record was found (else: its last record, or a line
    # that cannot be read and may be the step's)
    end: int | None = None  # byte offset just past the stop record's line (JSONL input)
    line: int | None = None  # line number of the stop record (JSONL input)
    index: int | None = None  # 0-based position of the stop record among the records (documents)
    unread: bool = False  # the stop is a line that cannot be read on its own (it may be a piece of a split record)


def _watch_line(watch: StepWatch, raw: bytes, strict: bool = True) -> bool | None:
    """Feed one line to ``watch``: whether it is the step's; None when it cannot be read (not JSON,
    not an object; a dropped record once the step has appeared: what `replay read` left out may be its end),
    False for a blank line. Not ``strict`` (a line only ``_SPACED`` or ``_ESCAPED_NAME`` found), a line that is no JSON
    object is False: it holds no text of the step's."""
    try:
        record = exactjson.loads(raw)
    except orjson.JSONDecodeError:
        return None if strict and raw.strip(BLANK) else False
    if type(record) is not dict:
        return None if strict else False
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
        looked = _looked_for(block, tokens)
        if looked is not None:
            counted, numbered = 0, line  # newlines counted up to ``counted``; its line number
            while True:
                hit_at = looked.search(block, start)
                if hit_at is None:
                    break
                hit = hit_at.start()
                begin = block.rfind(b"\n", 0, hit) + 1
                finish = block.find(b"\n", hit)
                numbered += block.count(b"\n", counted, begin)
                counted = begin
                if finish - begin <= max_line_bytes:  # (a longer line is no record: see ``_first_long_line`` below)
                    raw = block[begin:finish]
                    mine = _watch_line(watch, raw, strict=any(t in raw for t in tokens))
                    if mine is None:  # unreadable, maybe the step's own record: the walk reports it
                        return StepEnd(True, False, base + finish + 1, numbered, unread=True)
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
    elif tail and not skipping and (last is not None or _looked_for(tail, tokens) is not None):
        mine = _watch_line(watch, tail, strict=last is not None or any(t in tail for t in tokens))
        if mine is None:  # cut off or unreadable: it may be the step's own terminal record
            return StepEnd(True, False, base + len(tail), line, unread=True)
        if mine:
            last = (base + len(tail), line)
            long = None
            if watch.ended:
                return StepEnd(True, True, last[0], last[1])
    if last is None:
        return StepEnd(False)
    stop = long or last
    return StepEnd(True, False, stop[0], stop[1])


def _looked_for(block: bytes, tokens: tuple[bytes, ...]) -> re.Pattern[bytes] | None:
    """What finds, in one pass, the lines of ``block`` to read: those with one of ``tokens``, ``_SPACED`` or a name's
    escape (``_ESCAPED_NAME``), of those ``block`` has, so that a dropped record or a step record written otherwise
    (``"$record": "dropped"``, ``"\\u0024record"``) is parsed and told; None for most blocks, that have none (a
    ``bytes.find`` each)."""
    present = tuple(t for t in dict.fromkeys((*tokens, _SPACED)) if t in block)
    escaped = _ESCAPED_NAME.search(block) is not None
    return _pattern(present, escaped) if present or escaped else None


@functools.lru_cache(maxsize=64)
def _pattern(present: tuple[bytes, ...], escaped: bool) -> re.Pattern[bytes]:
    """One pattern for the ``present`` bytes (and a name's escape, when ``escaped``): the first of them found first."""
    return re.compile(b"|".join((*map(re.escape, present), *((_ESCAPED_NAME.pattern,) if escaped else ()))))


def _first_long_line(block: bytes, start: int, max_line_bytes: int) -> tuple[int, int] | None:
    """Where in ``block`` (whole lines, each ending in a newline) the first line from ``start`` on that is longer than
    ``max_line_bytes`` begins and ends (its newline); None when there is none."""
    lengths = list(map(len, block[start:].split(b"\n")))
    k = next(compress(count(), map(max_line_bytes.__lt__, lengths)), None)  # (one pass, that stops at it)
    if k is None:
        return None
    begin = start + sum(lengths[:k]) + k
    return begin, begin + lengths[k]


def find_step_end_joined(chunks: Iterable[bytes], step: str, max_line_bytes: int = 64 << 20) -> StepEnd:
    """``find_step_end`` over the records a walk is given, those its writer split across lines joined back
    (``split_records.joined_lines``, as walk.toml's ``join`` stage joins them): every line is parsed, so this is what
    the scan falls back to only where a line it looked at could not be read on its own. The stop is the record's
    first line, and ``end`` the byte just past its last."""
    tokens = (*step_tokens(step), _DROPPED)
    watch = StepWatch(step)
    last: tuple[int, int] | None = None
    long: tuple[int, int] | None = None  # the first line too long after the step's last record: its end and number
    for read in joined_lines(chunks, max_line_bytes):
        if read.raw is None:
            if last is not None and long is None:
                long = (read.end, read.line)
            continue
        mine = _watch_line(watch, read.raw, strict=any(t in read.raw for t in tokens) or (not read.complete and last is not None))
        if mine is None:  # unreadable, maybe the step's own record: the walk reports it
            return StepEnd(True, False, read.end, read.line, unread=True)
        if mine:
            last, long = (read.end, read.line), None
            if watch.ended:
                return StepEnd(True, True, read.end, read.line)
    if last is None:
        return StepEnd(False)
    stop = long or last
    return StepEnd(True, False, stop[0], stop[1])


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
    return next(_lines_read(chunks, max_line_bytes), None)


def line_problems(chunks: Iterable[bytes], max_line_bytes: int = 64 << 20) -> Iterator[LineProblem]:
    """Every line of JSONL bytes that is no record (not JSON, not an object, a dropped record, too long, a last line
    cut off), in order: what a walk ``--at`` a step the pre-scan did not find says the step may be in."""
    return (problem for problem in _lines_read(chunks, max_line_bytes) if problem is not None)


def _lines_read(chunks: Iterable[bytes], max_line_bytes: int) -> Iterator[LineProblem | None]:
    """Each non-blank line of JSONL bytes read, a record split across lines joined (as the walk is given it): None for
    a record, else what is wrong with it (a line longer than ``max_line_bytes`` as soon as it is, never held whole)."""
    for read in joined_lines(chunks, max_line_bytes):
        if read.raw is None:
            yield LineProblem(line_too_long(read.line, max_line_bytes), read.line, read.offset, read.head, cause=TOO_LONG)
        else:
            yield _line_problem(read.raw, read.line, read.offset, complete=read.complete)


def record_problem(record: Any, pointer: str | None) -> dict[str, Any] | None:
    """None when a record of a JSON document (an artifact's event, an array's item) is an object, else
    why it is no record, as the fields of its E_JOURNAL_READ_FAILED: ``reason``, the JSON ``path``, the
    ``cause`` (``read`` reports the same record as E_EVENT_NOT_OBJECT) and what it is."""
    if type(record) is dict:
        return None
    where = pointer or "a record"
    return {"reason": f"{where} is JSON but not an object", "path": pointer, "cause": "E_EVENT_NOT_OBJECT",
            "expected": "object", "received": excerpt(exactjson.dumps(record)),
            "howToFix": not_object_fix(pointer)}


def line_problem(raw: bytes, line: int, offset: int, complete: bool = True) -> LineProblem | None:
    """None when ``raw`` is a record (or blank), else what is wrong with it (a dropped record `replay read` wrote where
    it left a line out is no record of the journal: a line that could not be read)."""
    if not raw.strip(BLANK):
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
        said = record.get("message")
        return LineProblem(f"line {line} stands for what `replay read` left out there"
                           + (f": {said}" if isinstance(said, str) and said else ""), line,
                           offset, raw, cause=code if isinstance(code, str) else None)
    return None


# where a run's journal is ------------------------------------------------------------------------------
RUN_ID = re.compile(r"[A-Za-z0-9._-]{1,200}")
DEFAULT_DATA_DIR = ".replay"  # where capture writes: <data dir>/journal/<run id>.jsonl
WALK_LOG = "walk-log"  # the graph another agent's log is walked with: pipeline/specs/walk-log.toml (mapped, healed)
PATH_SUFFIXES = (".jsonl", ".json", ".ndjson", ".gz")


def is_run_id(text: str) -> bool:
    """Letters, digits, ``.``, ``_`` and ``-`` (at most 200), never ``..``: such a name joined to a
    folder names a file directly inside it, so no run id can lead out of the data dir."""
    return RUN_ID.fullmatch(text) is not None and ".." not in text


def looks_like_path(text: str) -> bool:
    """An argument that names a file rather than a run: it has a path separator or a journal suffix (in any case:
    ``RUN.JSONL``, as a journal's suffix is read everywhere)."""
    return "/" in text or os.sep in text or text.lower().endswith(PATH_SUFFIXES)


def journal_of(data_dir: str, run_id: str) -> str:
    """``<data_dir>/journal/<run_id>.jsonl`` for a run id that passed ``is_run_id``."""
    if not is_run_id(run_id):
        raise ValueError(f"not a run id: {run_id!r}")
    folder = os.path.join(data_dir, JOURNAL_FOLDER)
    path = os.path.join(folder, run_id + JOURNAL)
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


class JournalUnreadable(ReplayError):
    """E_JOURNAL_READ_FAILED (a refusal), with its ``reason`` alone (what the message says after where)."""

    def __init__(self, journal: str, reason: str, **fields: Any) -> None:
        at = f" at byte {fields['offset']}" if fields.get("offset") is not None else ""
        name, message = refusal("E_JOURNAL_READ_FAILED", f"the journal could not be read{at}: {reason}")
        super().__init__("E_JOURNAL_READ_FAILED", message, refusal=name, source=printable(journal), **fields)
        self.reason = reason


def _unreadable(journal: str, reason: str, **fields: Any) -> ReplayError:
    return JournalUnreadable(journal, reason, **fields)


def not_a_journal_file(journal: str) -> ReplayError:
    """E_JOURNAL_READ_FAILED (a refusal) for a run's journal path that holds something other than a file (a folder, a
    socket): the journal is there but cannot be read, an IO error as the seeds' walk counts it, not E_RUN_NOT_FOUND
    (which says there is nothing), and as a file that cannot be opened is refused."""
    what = "a directory" if os.path.isdir(journal) else "not a regular file"
    return _unreadable(journal, f"cannot open it: it is {what}",
                       howToFix="A run's journal is a file, <data-dir>/journal/<run-id>.jsonl: move what is there away "
                                "(or pass the journal file's own path).")


def journal_chunks(path: str) -> Generator[bytes, None, None]:
    """The bytes of a journal file (gunzipped), as ``read`` sees them (a byte order mark included);
    E_JOURNAL_READ_FAILED when it cannot be opened or read."""
    reading: Gunzipping | None = None
    try:
        with open(path, "rb") as raw:
            # (the file or a GzipFile over it: buffered both. read1, not read: what a gzip stream cut off holds before
            # the cut comes out, where read(SCAN_CHUNK) raises and gives none of the MiB it was reading)
            reading = Gunzipping(raw, lambda stream: cast(io.BufferedIOBase, stream).read1(SCAN_CHUNK))
            yield from reading
    except GzipUnreadable as exc:  # (read's words and code for it: E_GZIP_INVALID)
        reason = "gzip stream is truncated" if exc.truncated else f"gzip stream is corrupt: {exc}"
        raise _unreadable(path, reason, line=exc.line, offset=exc.offset, cause=GZIP_INVALID,
                          **read_failure_advice(GZIP_INVALID)) from exc
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if reading is None:
            raise _unreadable(path, f"cannot open it: {reason}") from exc
        raise _unreadable(path, reason, line=reading.line, offset=reading.offset) from exc


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
    # the step was not found: the first line that could not be read (the step may be in it), as the reason and
    # fields of its E_JOURNAL_READ_FAILED, and how many more there are
    unread: tuple[str, dict[str, Any]] | None = None
    more_unread: int = 0


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
        scan = _scan_read(read, path, at, max_line_bytes)
    finally:
        read.close()
    if scan is not None:
        return scan
    read = _OneRead(path)  # (records pretty-printed one after another: no document, lines after all, read again)
    try:
        return _scan_lines(read, path, at, max_line_bytes, exactjson.skip_bom(_head(read, max_line_bytes)[0])[1])
    finally:
        read.close()


def whole_written(chunks: Iterable[bytes], limit: int) -> bytes | None:
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
    """The input's first bytes, enough for ``head_format`` to tell lines from a document (``HeadFormat``), and whether
    they are the whole input (too short for head_format to tell: `read` tries it as a document)."""
    judge = HeadFormat()
    for data in read.look():
        if judge.feed(data) is not None or judge.size > max_line_bytes:
            return judge.head(), False
    return judge.head(), True


def _scan_read(read: _OneRead, path: str, at: str | None, max_line_bytes: int) -> JournalScan | None:
    """The scan of a journal file; None when what looked like one JSON document is records written one after another
    over several lines each (pretty-printed): lines, as `read` reads them (``_scan_lines`` on a new read)."""
    head, whole = _head(read, max_line_bytes)
    bom = exactjson.skip_bom(head)[1]
    named = path.endswith(DOCUMENT_SUFFIXES)  # a named .json file: one JSON document whatever its lines, as `read` reads it
    if named or head_format(head) == DOCUMENT or (whole and as_document(head[bom:]) is not None):
        # one JSON document (an artifact, an array): read whole, as `read` does
        if named:  # JSON lines in it: told from its head, as `read` tells them, not read whole
            _refuse_json_lines(path, read, bom, max_line_bytes)
        whole_input = whole_written(read.look(keep=False), max_line_bytes)
        if whole_input is None and not named and not _one_text_so_far(head[bom:]):
            return None  # (a head that holds a whole value and more after it is no one document, however long)
        if whole_input is None:  # as `read` reads it: not past the limit, and one error for the input
            too_long = document_too_long(max_line_bytes)
            raise _unreadable(path, f"it is {too_long.pop('what')}", line=1, offset=bom, cause="E_JSONL_LINE_TOO_LONG",
                              **too_long)
        data = whole_input[bom:]
        del whole_input
        try:  # parsed once: the document, the side file and the refusal are told from this one value
            value, fault = exactjson.loads(data), None
        except orjson.JSONDecodeError as exc:
            value, fault = None, exc
        document = value if fault is None and is_document(value) else None
        side_file = _side_file(path, value)
        if named and (side_file is None or document is not None):
            # (a document with `events` whose artifactType is a side file's is an artifact read refuses; as read says
            # of a raw capture, it is one: what to walk instead)
            advice = side_file[1] if side_file is not None and is_raw_capture(path, value) else None
            _refuse_no_artifact(path, data, bom, value, fault, advice)
        if document is None and side_file is None and (
                type(value) is dict or (fault is not None and not exactjson.cut_off(data, fault))):
            return None  # one record or several, pretty-printed: lines, as `read` reads them (their pieces joined)
        if document is None:
            if side_file is not None:
                what, advice = side_file
                raise _unreadable(path, f"it is {what}, not a journal", offset=0, received=excerpt(data[:120]),
                                  howToFix=advice)
            raise _unreadable(path, "it is neither JSONL nor one JSON artifact", offset=0, received=excerpt(data[:120]))
        first = next(document_items(document, path), None)  # its first record: the $run record of an artifact
        bad = record_problem(first.events[0], first.pointers[0]) if first is not None and first.events else None
        if bad is not None:
            raise _unreadable(path, bad.pop("reason"), **bad)
        if at is None:
            return JournalScan(True, None)
        records = [r for batch in document_items(document, path) for r in batch.events or ()]
        return JournalScan(True, find_step_end_in(records, at))  # (each record read: one no object holds no step)
    return _scan_lines(read, path, at, max_line_bytes, bom)


def _one_text_so_far(head: bytes) -> bool:
    """Could ``head``, an input's first bytes (past a byte order mark), still be the start of one JSON text? Not when
    it holds a whole value with more after it, or a wrong token (as `read` tells it)."""
    try:
        exactjson.loads(head)
    except orjson.JSONDecodeError as exc:
        return exactjson.cut_off(head, exc)
    return True


def _scan_lines(read: _OneRead, path: str, at: str | None, max_line_bytes: int, bom: int) -> JournalScan:
    """The scan of a JSONL journal: its first record, and where a walk ``at`` a step stops."""
    problem = first_record_problem(_without(read.look(), bom), max_line_bytes)
    if problem is not None:
        raise _unreadable(path, problem.message, line=problem.line, column=problem.column, offset=problem.offset + bom,
                          cause=problem.cause, **read_failure_advice(problem.cause),
                          received=excerpt(problem.excerpt))
    if at is None:
        return JournalScan(False, None)
    cut: list[ReplayError] = []  # (the file stops being readable before its end: a gzip stream cut off or corrupt)
    end = find_step_end(_until_unreadable(_without(read.look(keep=False), bom), cut), at, max_line_bytes)
    if end.unread:  # a line that cannot be read alone may be a piece of a record split across lines: read them joined
        cut = []
        end = find_step_end_joined(_until_unreadable(_without(journal_chunks(path), bom), cut), at, max_line_bytes)
    if cut and not end.found and isinstance(cut[0], JournalUnreadable):
        # the step may be in what could not be read (a gzip stream cut off): refused as a step in none of the records
        # that could be read, naming where the journal stops, as a torn last line is
        fault = cut[0]
        fields = {k: fault.body[k] for k in ("line", "offset", "cause") if fault.body.get(k) is not None}
        return JournalScan(False, end, (fault.reason, fields), 0)
    if cut and not end.found:
        raise cut[0]
    if not end.found:  # (only now is every line parsed: the step may be in one that is no record)
        problems = line_problems(_without(journal_chunks(path), bom), max_line_bytes)
        unread = next(problems, None)
        if unread is not None:
            fields = {"line": unread.line, "column": unread.column, "offset": unread.offset + bom, "cause": unread.cause}
            return JournalScan(False, end, (unread.message, fields), sum(1 for _ in problems))
    if cut and not end.terminated:  # the step's end may be in what cannot be read: the walk reads up to that place
        return JournalScan(False, StepEnd(True))  # and reports it there (exit 1), as a cut-off last line
    if end.end is not None and bom:
        end = StepEnd(end.found, end.terminated, end.end + bom, end.line)
    return JournalScan(False, end)




def _refuse_json_lines(path: str, read: _OneRead, bom: int, max_line_bytes: int) -> None:
    """Refuse a named .json file that opens with JSON lines (``validation.JsonLinesHead``, as `read` tells them):
    E_ARTIFACT_JSON_INVALID."""
    head = JsonLinesHead(max_line_bytes)
    for data in read.look():
        if (told := head.feed(data)) is not None:
            _refuse_no_artifact(path, told[0], bom, None, told[1])
        if head.told:
            return


def _refuse_no_artifact(path: str, data: bytes, bom: int, value: Any,
                        parse_fault: orjson.JSONDecodeError | None, advice: str | None = None) -> None:
    """Refuse a named .json file (``data``, ``bom`` bytes into it; ``value`` parsed from it, or ``parse_fault``) that is
    no artifact to read, as read, report and heal refuse it: it does not parse (E_ARTIFACT_JSON_INVALID: JSON lines in
    it too), or its one value is no artifact (``validation.named_document_refusal``: no object, no ``events`` array, a
    format replay does not know); the code they give it is the refusal's ``cause``, with their words (``advice``, when
    given, is its ``howToFix``)."""
    if parse_fault is not None:
        fault = document_not_json(data, parse_fault, bom)
    else:
        refusal = named_document_refusal(value)
        if refusal is None:
            return
        fault = refusal | {"line": 1, "offset": bom}
    fault.pop("example", None)
    cause, reason = fault.pop("code"), fault.pop("message")
    fault["howToFix"] = advice or fault.get("howToFix") or how_to_fix(cause)
    raise _unreadable(path, reason, cause=cause, **fault)


def _side_file(path: str, value: Any) -> tuple[str, str] | None:
    """When ``path`` is a side file replay wrote beside a run, no journal: capture's raw side file (``<id>.raw.json``,
    or a document whose ``artifactType`` is ``raw-capture``) or a heal log (``<id>.heal-log.json``, ``heal-log``):
    what it is, and what to walk instead, the run's journal and healed copy (named when they are where capture and
    heal put them: ``<data dir>/journal/<id>.jsonl``, the healed copy beside it, the input a heal log names); else
    None. ``value`` is its parsed JSON (None when it does not parse)."""
    name = os.path.basename(path)
    healed_names: tuple[str, ...]
    if is_raw_capture(name, value):
        what, suffix, healed_names = "a capture's raw runner output (the request, the runner's stdout and stderr)", \
            RAW_SIDE_FILE, (HEALED,)
        copy = "healed artifact"
        also: list[Any] = []
        elsewhere = "the <id>.healed.json capture wrote beside this file"
    elif is_heal_log(name, value):
        what, suffix, healed_names = "a heal log (the repairs `replay heal` made)", HEAL_LOG, (HEALED, HEALED_JOURNAL)
        copy = "healed copy"
        also = [value.get("source")] if isinstance(value, dict) else []  # the input heal read
        elsewhere = "the healed copy heal wrote beside this file (<id>.healed.json or <id>.healed.jsonl)"
    else:
        return None
    run_id = value.get("runId") if isinstance(value, dict) else None
    stem = name[:-len(suffix)] if name.endswith(suffix) else None
    run_id = run_id if isinstance(run_id, str) and is_run_id(run_id) else stem if stem and is_run_id(stem) else None
    candidates: list[Any] = []
    if run_id is not None:  # <data dir>/artifacts/<day>/<id>.raw.json -> <data dir>/journal/<id>.jsonl
        data_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(path))))
        candidates.append(journal_of(data_dir, run_id))
    candidates += also
    if stem:
        candidates += [os.path.join(os.path.dirname(path), stem + healed) for healed in healed_names]
    found: list[str] = []
    for f in candidates:
        if isinstance(f, str) and os.path.isfile(f):
            shown = f"`replay walk {shlex.quote(os.path.relpath(f) if not os.path.isabs(path) else f)}`"
            if shown not in found:
                found.append(shown)
    if found:
        return what, f"Walk the run's journal or its {copy} instead: {' or '.join(found)}."
    return what, f"Walk the run's journal instead (`replay walk RUN_ID`: DATA_DIR/journal/RUN_ID.jsonl), or {elsewhere}."


def another_agents_log(path: str, max_line_bytes: int = 64 << 20) -> bool:
    """Is the journal file ``path`` another agent's log (its dialect, as ``journal_dialect`` reads it, is not replay's
    own)? `replay walk` walks one as its canonical journal, mapped and healed (``WALK_LOG``), and so does a walk stage
    of a chain (``WalkRecords.chain_spec``); replay's own journal is walked as its lines (pipeline/specs/walk.toml)."""
    return journal_dialect(path, max_line_bytes) != CANONICAL


def journal_dialect(path: str, max_line_bytes: int = 64 << 20) -> str:
    """The dialect ``dialect = "auto"`` reads a journal file as (``input_dialect``): judged from the records ``read``
    gives of it, a JSON document's (read whole, within ``max_line_bytes``) or its first lines that are JSON objects.
    CANONICAL for replay's own (and for a document too long or not JSON: the walk reports it as ever)."""
    read = _OneRead(path)
    try:
        head, whole = _head(read, max_line_bytes)
        if whole or head_format(head) == DOCUMENT:
            data = whole_written(read.look(keep=False), max_line_bytes)
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
