"""Goldens: compare a new journal or transcript with a recorded one, line by line, after normalising what always differs.

What always differs between two runs of the same agent, and is normalised on both sides (the keys
``replay diff`` leaves out: ``replay.pipeline.model.varying_fields``):

- values under time keys (``ts``, ``timestamp``, ``time``, ``createdAt`` ...) become ``"<time>"``;
- values under id keys (``id``, ``sessionId``, ``runId`` ...) become ``"<id:N>"``, numbered per file
  in order of first appearance, so the same id stays the same and two different ids stay different;
- values under duration keys (``durationMs``, ``elapsedMs``, ``latencyMs`` ...) become ``"<ignored>"``;
- inside every string (and every line that is not JSON: a stdout transcript), RFC 3339 timestamps
  become ``<time>`` and UUIDs ``<id:N>`` (numbered with the ids above).

A line that is a JSON object or array is compared as its normalised value re-serialised compactly
with its keys in their original order (JSON's blank around it, and a byte order mark before it, are not its value);
any other line as normalised text. ``Normalisation.extended``
adds keys (``replay golden check --time-key/--id-key/--ignore-key`` on the command line).

A value is what a JSON reader reads: ``100`` is an integer and ``1e2`` or ``100.0`` a float (to Python, and to any
typed reader of the session), so ``{"a":1e2}`` and ``{"a":100}`` differ (the difference says that is all they differ
in), while ``1e2`` and ``100.0`` are one value. So are numbers exactly: ``0.1`` and ``0.10000000000000001`` differ, though
a reader of doubles reads one double (the difference says so, and where). A key written twice in one object (``{"a":"x","a":"y"}``) is kept
twice: readers keep one of its values (the last, or the first), so a line that writes it twice is not the same as one
that writes it once, and each such line is said (``on_duplicate``: E_JSON_DUPLICATE_KEY, a warning, from the command).
Files are read gunzipped when their bytes are gzip (as ``replay read`` and ``replay script`` read them).

Compared as session journals (``first_difference(..., journal=True)``: ``replay golden check`` when the recorded
golden's name is a journal's, ``is_jsonl_name``), a line that is not blank and no JSON cannot be compared: it raises
``UnreadableLines`` with what ``replay read`` reports of it (E_JSONL_LINE_TORN for a last line with no newline, cut
off; else E_JSONL_LINE_INVALID), rather than be compared as text: a golden cut off, or a new run's journal, that
matches byte for byte still is no session. A transcript's lines are text, any of them. A byte order mark at a line's
start leaves it readable (``without_mark``: as ``replay read`` leaves it out) but, on one side only, is a difference,
said as one (a mark on both sides is none).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import line_refusal
from replay.pipeline.io.journals import (
    BLANK,
    DEFAULT_MAX_LINE_BYTES,
    JSON_SPACE,
    LINES_SUFFIXES,
    Gunzipping,
    without_mark,
)
from replay.pipeline.model.varying_fields import DURATION_KEYS, ID_KEYS, TIME_KEYS

TIMESTAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")
UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
TIME, IGNORED = "<time>", "<ignored>"
@dataclass(frozen=True)
class Normalisation:
    """Which keys and patterns are normalised (see the module docstring)."""

    time_keys: frozenset[str] = frozenset(TIME_KEYS)
    id_keys: frozenset[str] = frozenset(ID_KEYS)
    ignore_keys: frozenset[str] = frozenset(DURATION_KEYS)

    def extended(self, *, time_keys: Iterable[str] = (), id_keys: Iterable[str] = (),
                 ignore_keys: Iterable[str] = ()) -> Normalisation:
        return replace(self, time_keys=self.time_keys | set(time_keys), id_keys=self.id_keys | set(id_keys),
                       ignore_keys=self.ignore_keys | set(ignore_keys))

    def for_file(self) -> LineNormaliser:
        return LineNormaliser(self)


@dataclass
class LineNormaliser:
    """Normalises the lines of one file (ids are numbered per file)."""

    rules: Normalisation
    ids: dict[str, int] = field(default_factory=dict)
    duplicates: list[str] = field(default_factory=list)  # the keys the last line normalised writes twice (JSON paths)
    pairs: bytes | None = None  # that line normalised with each key written twice kept twice (``line`` keeps the last)
    parsed: bool = False  # was the last line normalised read as JSON?
    marked: int = 0  # the bytes of the byte order mark the last line normalised begins with (``without_mark``), or 0

    def line(self, raw: bytes) -> bytes:
        body, skipped = without_mark(raw)  # (a JSON line is its value: a mark before it, or blank around it, is not)
        self.duplicates, self.pairs, self.parsed, self.marked = [], None, False, skipped
        if body.lstrip(JSON_SPACE)[:1] in (b"{", b"["):
            try:
                value = exactjson.loads(body)
            except orjson.JSONDecodeError:
                pass
            else:
                self.parsed = True
                self.duplicates, tree = exactjson.keys_written_twice(body, value)
                with exactjson.deep():  # (normalising recurses twice a level: as deep as a line is read, 1024 levels)
                    normalised = exactjson.dumps(self.value(value))
                    if tree is not None:
                        # its ids numbered on from this file's without changing them: the lines after it are numbered
                        # as though it wrote each key once
                        self.pairs = _dumps_pairs(LineNormaliser(self.rules, dict(self.ids)).value(tree))
                return normalised
        body = raw  # (a text line counts byte for byte, its mark too)
        # bytes that are not UTF-8 stay themselves (surrogateescape): two lines that differ only there still differ
        return self.text(body.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")

    def value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self._field(k, v) for k, v in value.items()}
        if type(value) is exactjson.KeyPairs:
            return exactjson.KeyPairs((k, self._field(k, v)) for k, v in value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value

    def _field(self, key: str, value: Any) -> Any:
        if value is None or isinstance(value, dict | list):
            return self.value(value)
        if key in self.rules.time_keys:
            return TIME
        if key in self.rules.id_keys:
            return self._id(str(value))
        if key in self.rules.ignore_keys:
            return IGNORED
        return self.value(value)

    def text(self, text: str) -> str:
        if "-" not in text:
            return text  # neither a timestamp nor a UUID can be in it
        text = UUID.sub(lambda m: self._id(m.group(0).lower()), text)
        return TIMESTAMP.sub(TIME, text)

    def _id(self, value: str) -> str:
        n = self.ids.get(value)
        if n is None:
            n = self.ids[value] = len(self.ids) + 1
        return f"<id:{n}>"


def _dumps_pairs(value: Any) -> bytes:
    """JSON text of a value with objects as ``KeyPairs``: a key written twice is written twice."""
    if type(value) is exactjson.KeyPairs:
        return b"{" + b",".join(exactjson.dumps(k) + b":" + _dumps_pairs(v) for k, v in value) + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(map(_dumps_pairs, value)) + b"]"
    return exactjson.dumps(value)


@dataclass(frozen=True)
class Difference:
    """The first line where two files differ after normalisation (None on the side that ended)."""

    line: int
    recorded: bytes | None
    new: bytes | None
    recorded_normalised: bytes | None
    new_normalised: bytes | None
    note: str = ""

    def describe(self) -> str:
        if self.note:
            return f"line {self.line}: {self.note}"
        if self.new is None:
            return f"line {self.line}: the new file ends here; the recorded one goes on"
        if self.recorded is None:
            return f"line {self.line}: the recorded file ends here; the new one goes on"
        return f"line {self.line} differs after normalisation"


class LineTooLong(Exception):
    """A line longer than the limit ``bounded_lines`` was given: its number and the byte offset where it starts."""

    def __init__(self, line: int, offset: int) -> None:
        super().__init__(f"line {line} (byte {offset}) is too long")
        self.line, self.offset = line, offset


def bounded_lines(handle: BinaryIO, limit: int) -> Iterator[bytes]:
    """The lines of ``handle``, split on ``\\n`` only, each with its ``\\n`` when it had one; one longer than ``limit``
    bytes (its ``\\n`` aside) raises LineTooLong, read no further than that (a line of gigabytes, `/dev/zero`, was held
    whole: MemoryError). A handle whose bytes are gzip is read gunzipped (``gunzipped``); one corrupt or cut off raises
    GzipUnreadable."""
    reading = Gunzipping(handle, lambda stream: stream.readline(limit + 1))
    for line in reading:
        if len(line) > limit and not line.endswith(b"\n"):
            raise LineTooLong(reading.line, reading.offset)
        yield line


def file_lines(path: str | Path, limit: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[bytes]:
    """``bounded_lines`` of the file at ``path``."""
    with open(path, "rb") as handle:
        yield from bounded_lines(handle, limit)


def is_jsonl_name(path: str) -> bool:
    """Is ``path`` named as a file of JSON lines (a session journal), not a transcript of text lines?"""
    return path.lower().endswith(LINES_SUFFIXES)  # (a .json file may be one document over many lines)


@dataclass(frozen=True)
class Unreadable:
    """A line of a journal that is no JSON: its ``side`` ("recorded" or "new"), ``code`` and the error's fields
    (``message``, ``line``, ``offset``, ``column``, ``received``, ``howToFix``: as ``replay read`` reports it)."""

    side: str
    code: str
    fields: dict[str, Any]


class UnreadableLines(Exception):
    """Journals compared line by line reached a line (on one side or both) that is no JSON: nothing to compare."""

    def __init__(self, problems: list[Unreadable]) -> None:
        super().__init__("; ".join(f"the {p.side} file's {p.fields['message']}" for p in problems))
        self.problems = problems


def unreadable(raw: bytes, line: int, offset: int) -> tuple[str, dict[str, Any]] | None:
    """Why journal line ``line`` (``raw``, with its newline when it has one; it starts at byte ``offset``) is no JSON,
    as ``replay read`` says it (a code and the error's fields); None when it is JSON, or blank."""
    body, skipped = without_mark(raw.rstrip(b"\n"))  # (at any line's start, as ``replay read`` leaves one out)
    if not body.strip(BLANK):
        return None
    offset += skipped  # (a line after a byte order mark starts after it, as ``replay read`` counts)
    try:
        exactjson.loads(body)
    except orjson.JSONDecodeError as exc:
        return line_refusal(body, exc, line, offset, last=not raw.endswith(b"\n"))
    return None


def first_difference(recorded: Iterable[bytes], new: Iterable[bytes], rules: Normalisation | None = None,
                     on_duplicate: Callable[[str, int, int, list[str]], None] | None = None,
                     journal: bool = False) -> tuple[Difference | None, int]:
    """Compare two line streams (lines may end with ``\\n``); the first difference and the lines compared.
    ``on_duplicate(side, line, offset, keys)``: called for each line compared (``side``: "recorded" or "new") that
    writes a key twice in one object, with the byte offset where the line starts (after a byte order mark, as ``replay
    read`` counts) and the keys' JSON paths. ``journal``: the streams are session journals, and a line that is no JSON
    (``unreadable``), met before any difference, raises UnreadableLines."""
    rules = rules or Normalisation()
    left, right = rules.for_file(), rules.for_file()
    a, b = iter(recorded), iter(new)
    n = 0
    offsets = [0, 0]
    while True:
        ra, rb = next(a, None), next(b, None)
        if ra is None and rb is None:
            return None, n
        n += 1
        na = left.line(ra.rstrip(b"\n")) if ra is not None else None
        nb = right.line(rb.rstrip(b"\n")) if rb is not None else None
        sides = (("recorded", left, ra), ("new", right, rb))
        if journal:
            _refuse_unreadable(n, offsets, sides)
        for i, (side, normaliser, raw) in enumerate(sides):
            if raw is None:
                continue
            if on_duplicate is not None and normaliser.duplicates:
                on_duplicate(side, n, offsets[i] + normaliser.marked, normaliser.duplicates)
            offsets[i] += len(raw)
        if ra is None or rb is None:
            return Difference(n, _strip(ra), _strip(rb), na, nb), n
        twice = left.duplicates, right.duplicates
        if na != nb or bool(left.marked) != bool(right.marked):  # (a mark before a JSON line on one side only: a difference)
            note = _only_bytes_around(n, ra, rb, left, right) or _only_number_spellings(na, nb, ra, rb)
            return Difference(n, _strip(ra), _strip(rb), na, nb, note=note), n
        if twice[0] or twice[1]:
            pa, pb = left.pairs or na, right.pairs or nb  # (a line that writes every key once: as ``line`` has it)
            if pa != pb:
                return Difference(n, _strip(ra), _strip(rb), pa, pb, note=_only_keys_twice(*twice)), n
        if ra.endswith(b"\n") != rb.endswith(b"\n"):
            side = "recorded" if not ra.endswith(b"\n") else "new"
            return Difference(n, _strip(ra), _strip(rb), na, nb, note=f"the {side} file has no newline at its end"), n


def _refuse_unreadable(n: int, offsets: list[int], sides: Iterable[tuple[str, LineNormaliser, bytes | None]]) -> None:
    """Raise UnreadableLines when line ``n`` of either side (starting at its side's byte ``offsets``) is no JSON."""
    problems = []
    for i, (side, normaliser, raw) in enumerate(sides):
        if raw is None:
            continue
        found = None if normaliser.parsed else unreadable(raw, n, offsets[i])
        if found is not None:
            problems.append(Unreadable(side, *found))
    if problems:
        raise UnreadableLines(problems)


def _only_bytes_around(n: int, recorded: bytes, new: bytes, left: LineNormaliser, right: LineNormaliser) -> str:
    """Why line ``n`` differs, when the lines are the same but for a carriage return before the newline (CRLF line
    endings) or a byte order mark opening the line (a file's, or one of files joined): which side has which (they
    count: a golden is compared byte for byte, but for what is normalised); "" when the lines differ otherwise.
    (Normalises the lines once more, after the first difference: nothing is compared after it.)"""
    lines: list[bytes] = []
    found: list[tuple[bool, bool]] = []  # (a mark, a CR) on each side
    for raw in (recorded, new):
        body, skipped = without_mark(raw.rstrip(b"\n"))
        crlf = body.endswith(b"\r")
        lines.append(body[:-1] if crlf else body)
        found.append((skipped > 0, crlf))
    # (a mark on both sides is none of the difference: said, it read "the recorded file begins with a byte order mark
    # and the new file begins with a byte order mark")
    marks = []
    for side, mine, theirs in (("recorded", found[0], found[1]), ("new", found[1], found[0])):
        (mark, crlf), (other_mark, other_crlf) = mine, theirs
        if mark and not other_mark:
            marks.append(f"the {side} {'file' if n == 1 else 'line'} begins with a byte order mark")
        if crlf and not other_crlf:
            marks.append(f"the {side} line ends with a carriage return (CRLF)")
    if not marks or left.line(lines[0]) != right.line(lines[1]):
        return ""
    return "the lines differ only in that " + " and ".join(marks)


def _only_keys_twice(recorded: list[str], new: list[str]) -> str:
    """Why two lines that read as the same value differ: a key written twice, whose other value a reader may keep."""
    said = [f"the {side} line writes {', '.join(keys)} twice" for side, keys in (("recorded", recorded), ("new", new))
            if keys]
    return ("the lines differ only where a key is written twice in one object (" + " and ".join(said) + "): a reader "
            "keeps one of its values, the last or the first")


def _only_number_spellings(recorded: bytes | None, new: bytes | None, raw_recorded: bytes, raw_new: bytes) -> str:
    """Why two normalised JSON lines differ, when all they differ in is how numbers are written: one value written as
    an integer on one side and as a float (a fraction or an exponent: ``1e2``, ``100.0``) on the other, or two floats
    that read as one double written with other digits (``0.1`` and ``0.10000000000000001``, or a number a double does
    not hold and its nearest double): the first such number, its path and how each line writes it (quoted from the
    ``raw_`` lines, as read: normalising writes ``1e2`` again as ``100.0``); "" when they differ otherwise."""
    if recorded is None or new is None or recorded[:1] not in (b"{", b"["):
        return ""
    try:
        a, b = exactjson.loads(recorded), exactjson.loads(new)
    except orjson.JSONDecodeError:
        return ""
    if exactjson.first_unequal(a, b, numbers_by_value=True, doubles=True, key_order=True) is not None:
        return ""
    found = exactjson.first_unequal(a, b, key_order=True)  # (one value but for how numbers are written: a number)
    if found is None:
        return ""
    path, x, y = found
    which = (f"{path}: {_as_written(raw_recorded, path, x)} in the recorded line, {_as_written(raw_new, path, y)} in "
             "the new one")
    if isinstance(x, int) is not isinstance(y, int):
        return (f"the lines differ only in how a number is written ({which}: an integer in one line, a float in the "
                "other): to a JSON reader such as Python's or a typed one, 100 and 1e2 (or 100.0) are different values")
    double = repr(float(x)) if math.isfinite(x) else "an infinity"
    return (f"the lines differ only in how a number is written ({which}: digits beyond what a double holds): a reader "
            f"of doubles reads both as {double}, but they are two numbers as written, and a golden compares numbers "
            "exactly")


def _as_written(raw: bytes, path: str, value: Any) -> str:
    """The number at ``path`` as the line ``raw`` writes it (past a byte order mark, before a CR and the newline); as
    ``value`` is written again where it cannot be found there."""
    body = without_mark(raw.rstrip(b"\n"))[0].removesuffix(b"\r")
    return exactjson.written_number(body, path) or exactjson.dumps(value).decode()


def normalise_lines(lines: Iterable[bytes], rules: Normalisation | None = None) -> list[bytes]:
    """Every line normalised (handy to look at what a golden compares)."""
    normaliser = (rules or Normalisation()).for_file()
    return [normaliser.line(line.rstrip(b"\n")) for line in lines]


def _strip(line: bytes | None) -> bytes | None:
    return None if line is None else line.rstrip(b"\n")
