"""Split records: lines a writer split one record across (pretty-printed, a raw newline in a string) put back on one line.

The rule (``stages/join_split_records.py`` says it in full, and applies it between read and parse): consecutive lines
of one input are joined when none is a record on its own and their join is one JSON object; a newline between tokens
becomes a space, one inside a string ``\\n``; the joined line is at its first piece's line and byte offset, and its
heal-log entry (rule ``join_split_records``, action ``changed``) keeps the pieces as they were. ``SplitJoiner`` is that
rule over lines as they come; walk's pre-scan reads a journal's records by it too (``joined_lines``), so that it sees
the records the walk is given.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.io.journals import BLANK, JSON_SPACE
from replay.pipeline.model.dropped import BLANK_BEFORE, ORIGINAL_BYTES

RULE = "join_split_records"
# A JSON string, to its closing quote or, unterminated, to the end of the text (a record still open).
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*(?:\\\Z)?(?:"|\Z)', re.DOTALL)
_OPEN, _CLOSED = "open", "closed"  # a join that more lines could complete; one no line can
_INVALID = object()


@dataclass(slots=True)
class SplitLine:
    raw: bytes
    line: int | None
    offset: int | None
    valid: bool  # JSON on its own (any value): never the first piece of a join
    record: bool  # an object with a key, on its own: never joined
    tail: bool = False  # its input's last line, with no newline after it
    # a line `replay read` left out, its dropped record in the stream (``MarkedLines``): the record's bytes (what goes on
    # when the line joins nothing) and the line's place in its file (source, line, offset: a join's, when it is first);
    # or a blank line read left out between two such (``gap``: it goes on as nothing); and the blank lines read left
    # out just before it, as they were, when one held blanks (its record's ``blankBefore``; else none)
    mark: bytes | None = None
    place: dict[str, Any] | None = None
    gap: bool = False
    blanks: list[bytes] | None = None


def split_line(raw: bytes, line: int | None, offset: int | None, tail: bool = False) -> SplitLine:
    """One line as the joiner takes it: whether it is JSON alone, and a record alone."""
    value = _value(raw)
    return SplitLine(raw, line, offset, value is not _INVALID, isinstance(value, dict) and bool(value), tail)


# What the joiner hands on: a line as it came, or a joined one (its text, its heal-log entry, its first piece).
Joined = SplitLine | tuple[bytes, dict[str, Any], SplitLine]


class SplitJoiner:
    """The pieces of a record being gathered, over the lines of one input as they come (``process``), and what is
    left of them when the input ends (``flush``)."""

    def __init__(self, max_lines: int, max_bytes: int) -> None:
        self.max_lines, self.max_bytes = max_lines, max_bytes
        self.source: str | None = None
        self.held: list[SplitLine] = []  # the pieces of a record being gathered (none a record alone)
        self.held_bytes = 0

    def process(self, todo: deque[SplitLine], done: list[Joined]) -> None:
        """Each line in turn: out as it is, or held as a piece of a record, or the last piece of one."""
        max_lines, max_bytes = self.max_lines, self.max_bytes
        while todo:
            line = todo.popleft()
            if not self.held:
                if not line.valid and line.raw.lstrip(BLANK)[:1] == b"{" and join_pieces([line])[0] == _OPEN:
                    self.held, self.held_bytes = [line], len(line.raw)
                else:
                    done.append(line)
                continue
            if (line.record or len(self.held) >= max_lines or self.held_bytes + len(line.raw) + 1 > max_bytes
                    or self._after_gap(line)):
                self._give_up(todo, done, then=line)  # a record ends the gathering; it is never a piece
                continue
            self.held.append(line)
            self.held_bytes += len(line.raw) + 1
            n = len(self.held)
            if line.raw.rstrip(BLANK)[-1:] != b"}" and n & (n - 1):
                # Only a piece ending with `}` can end an object; in between, a look at 2, 4, 8, ... pieces
                # finds a join no line can complete (a torn line before another record) in linear time.
                continue
            verdict, value, text = join_pieces(self.held)
            if verdict == _OPEN:
                continue
            if isinstance(value, dict) and len(text) <= max_bytes:  # (each newline escaped in a string is a byte more)
                done.append((*self._joined(value, text), self.held[0]))
                self.held, self.held_bytes = [], 0
            else:
                self._give_up(todo, done)

    def _after_gap(self, line: SplitLine) -> bool:
        """Was a line left out between the last piece held and ``line`` (a gap in their line numbers: one too long for
        ``--max-line-bytes``, which a read skips)? Then no join spans it: what was on that line is not known, and the
        pieces around it joined would be a record never written (a field gone). (A line read left out down a pipe
        shows as its dropped record, ``MarkedLines``; its stand-ins for blank lines have no number: ``gap``.)"""
        if line.line is None:
            return False
        last = next((p.line for p in reversed(self.held) if p.line is not None), None)
        return last is not None and line.line != last + 1

    def flush(self, done: list[Joined]) -> None:
        """The input ended: what is still held makes no record from its first line; look at the rest again."""
        while self.held:
            todo: deque[SplitLine] = deque()
            self._give_up(todo, done)
            self.process(todo, done)

    def _give_up(self, todo: deque[SplitLine], done: list[Joined], then: SplitLine | None = None) -> None:
        """The held lines make no record from their first: it goes out as it is, the rest are looked at again."""
        first, rest = self.held[0], self.held[1:]
        self.held, self.held_bytes = [], 0
        done.append(first)
        todo.extendleft(reversed([*rest, *([then] if then is not None else [])]))

    def _joined(self, value: dict[str, Any], text: bytes) -> tuple[bytes, dict[str, Any]]:
        """The joined record's line, and its heal-log entry."""
        pieces = self.held
        first, last = pieces[0], pieces[-1]
        inside = sum(p.raw.count(b"\r") for p in pieces) + len(pieces) - 1 - text.count(b"\n") - text.count(b"\r")
        raw = text.replace(b"\r", b" ").replace(b"\n", b" ")  # newlines left are between tokens: whitespace
        where = first.place or {k: v for k, v in (("source", self.source), ("line", first.line), ("offset", first.offset))
                                if v is not None}
        lines = [(p.place or {"line": p.line}).get("line") for p in (first, last)]
        span = f"lines {lines[0]}-{lines[1]}" if None not in lines else "lines"
        how = "a newline inside a string, escaped" if inside > 0 else "newlines between its tokens"
        entry: dict[str, Any] = {"rule": RULE, "action": "changed",
                                 "runId": value.get("runId") if isinstance(value.get("runId"), str) else None, **where,
                                 "joined": len(pieces), "original": b"\n".join(p.raw for p in pieces).decode("utf-8", "replace"),
                                 "message": f"{span} ({len(pieces)} lines) were one record split across lines ({how}); "
                                            "joined into one line"}
        return raw, entry


_MARK = b'{"$record":"dropped",'  # how `replay read` begins a dropped record (``records.dropped_record``)
_SOURCE = b'{"$record":"source",'  # and a source record
# the codes of the lines left out that may be a piece of a split record: not JSON (cut off too), JSON but no object
PIECE_CODES = frozenset({"E_JSONL_LINE_INVALID", "E_JSONL_LINE_TORN", "E_EVENT_NOT_OBJECT"})


def has_marks(text: bytes) -> bool:
    """May the lines ``text`` holds have a dropped record of `replay read` among them? A ``$`` is looked for first (one
    memchr: the whole mark, which ends in a byte as common as ``,``, is searched for at a fifth of that speed), the mark
    only where there is one."""
    return b"$" in text and _MARK in text


def opens_with_source(first: bytes | None) -> bool:
    """Is ``first``, a stream's first line, a source record of `replay read` (the stream has them: ``parse``)?"""
    return first is not None and first.startswith(_SOURCE)


class MarkedLines:
    """The lines of a stream as the joiner takes them, where `replay read` put a dropped record in place of each line
    it left out (``check_lines``' ``mark_dropped``): a record that keeps the line whole (``original``, of a code of
    ``PIECE_CODES``) stands for that line, at the place it names in its file, so the pieces of a split record join as
    they would have from the file (`replay read a | replay heal` as `replay heal a`). Read leaves blank lines out: those
    between two such records come back from their places when they were empty, or as the second record holds them
    (``blankBefore``) when they held blanks (JSON's whitespace: a join spans them, as from the file); else what they
    held is not known, and no join spans them (a record in between: ``gap`` and ``record``)."""

    def __init__(self, max_lines: int, takes_marks: bool = True) -> None:
        self.next: tuple[Any, int, int] | None = None  # where the line after the last one a record stood for would be
        self.max_lines = max_lines  # (the joiner's: more empty lines than that between two pieces, no join spans them)
        self.takes_marks = takes_marks  # False: a dropped record is a line as any other (a walk's join)

    def lines(self, raws: list[bytes | None], lines: list[int | None], offsets: list[int | None],
              tail_open: bool, stream: str | None) -> list[SplitLine]:
        """The lines, each dropped record that keeps a line whole as that line. ``stream``: the name a join of them is
        logged under (the stream's: where its lines are, as a parse reports the lines again), None for a stream of
        source records (each record's own, the file the source record before it names)."""
        out: list[SplitLine] = []
        last = len(raws) - 1
        for i, raw in enumerate(raws):
            raw = raw or b""
            piece = _marked(raw, lines[i], offsets[i], stream) if self.takes_marks and raw.startswith(_MARK) else None
            if piece is None:
                line = split_line(raw, lines[i], offsets[i], tail_open and i == last)
                if self.next is not None and not line.record:  # (a line read kept among the pieces: `{}`)
                    self.next = (self.next[0], self.next[1] + 1, self.next[2] + len(raw) + 1)
                else:
                    self.next = None
                out.append(line)
                continue
            assert piece.place is not None
            source, at, offset = piece.place.get("source"), piece.place["line"], piece.place["offset"]
            if self.next is not None and self.next[0] == source:
                blank = at - self.next[1]
                held = piece.blanks if piece.blanks is not None else [b""] * max(blank, 0)
                if (len(held) != blank or sum(map(len, held)) + blank != offset - self.next[2]
                        or blank >= self.max_lines):  # blank lines not as the record says (or more than a join
                    # reaches over: not made one by one): a join ends here
                    out.append(SplitLine(b"", None, None, True, True, gap=True))
                else:  # (each blank line as it was: empty, or as the record holds it)
                    out += [SplitLine(raw, None, None, False, False, gap=True) for raw in held]
            self.next = (source, at + 1, offset + len(piece.raw) + 1)
            out.append(piece)
        return out


def _marked(raw: bytes, line: int | None, offset: int | None, stream: str | None) -> SplitLine | None:
    """The line a dropped record of `replay read` stands for, as a line the joiner takes (``MarkedLines``); None for a
    record that keeps no line whole (a line too long, a failed read; its ``original`` cut to fit: ``originalBytes``)."""
    mark = _value(raw)
    if type(mark) is not dict:
        return None
    original, at, where = mark.get("original"), mark.get("line"), mark.get("offset")
    code = mark.get("code")
    if (type(code) is not str or code not in PIECE_CODES or type(original) is not str or ORIGINAL_BYTES in mark
            or type(at) is not int or type(where) is not int):
        return None
    piece = split_line(original.encode("utf-8", "surrogatepass"), line, offset)
    piece.mark = raw
    blanks = mark.get(BLANK_BEFORE)
    if type(blanks) is str and blanks.isascii() and not blanks.encode().strip(JSON_SPACE):  # (only blank lines: as read wrote it)
        piece.blanks = blanks.encode().split(b"\n")
    source = mark.get("source") if stream is None else stream
    piece.place = {"source": source, "line": at, "offset": where} if type(source) is str else {"line": at, "offset": where}
    return piece


def joined_span(entry: dict[str, Any]) -> tuple[int, int]:
    """How many lines a joined line was made of, and how many bytes they took (newlines between them counted, the
    last one's not): from its heal-log entry (its ``original`` is the pieces' text, valid UTF-8 since they joined)."""
    return entry["joined"], len(entry["original"].encode("utf-8", "surrogateescape"))


@dataclass(frozen=True, slots=True)
class ReadLine:
    """A line of a journal as its records are read, split records joined: ``raw`` None for a line too long to read."""

    raw: bytes | None
    line: int  # its (first piece's) line number
    offset: int  # its (first piece's) byte offset
    end: int  # the byte offset just past it (past its newline, when it has one)
    complete: bool  # it ends in a newline (a last line without one may have been cut off)
    head: bytes = b""  # a line too long: its first bytes


def joined_lines(chunks: Iterable[bytes], max_line_bytes: int) -> Iterator[ReadLine]:
    """The non-blank lines of JSONL bytes, in order, each record its writer split across lines joined back on one line
    (pieces of at most ``max_line_bytes`` together, as walk's ``join.max_bytes``); a line longer than
    ``max_line_bytes`` as soon as it is (``raw`` None), never held whole."""
    joiner = SplitJoiner(10_000, max_line_bytes)
    todo: deque[SplitLine] = deque()
    done: list[Joined] = []
    ends: dict[int, int] = {}  # a line's offset -> the offset past it
    for raw, line, offset, end, complete, head in _lines(chunks, max_line_bytes):
        if raw is None:  # too long: ends a gathering (read skips it: what is on either side is not one record)
            joiner.flush(done)
            yield from _out(done, ends)
            yield ReadLine(None, line, offset, end, complete, head)
            continue
        ends[offset] = end
        todo.append(split_line(raw, line, offset, tail=not complete))
        joiner.process(todo, done)
        yield from _out(done, ends)
    joiner.flush(done)
    yield from _out(done, ends)


def _out(done: list[Joined], ends: dict[int, int]) -> Iterator[ReadLine]:
    """What the joiner gave, as lines read (blank ones left out: no record)."""
    for item in done:
        if isinstance(item, tuple):
            raw, entry, first = item
            assert first.line is not None and first.offset is not None
            yield ReadLine(raw, first.line, first.offset, _past(ends, first.offset, first.offset + joined_span(entry)[1]), True)
        else:
            assert item.line is not None and item.offset is not None
            end = ends.pop(item.offset)
            if item.raw.strip(BLANK):
                yield ReadLine(item.raw, item.line, item.offset, end, not item.tail)
    done.clear()


def _past(ends: dict[int, int], offset: int, end: int) -> int:
    """The offset past a joined line's last piece (its newline), the pieces' own ends forgotten."""
    past = end
    for at in [at for at in ends if offset <= at < end]:
        past = max(past, ends.pop(at))
    return past


def _lines(chunks: Iterable[bytes], max_line_bytes: int) -> Iterator[tuple[bytes | None, int, int, int, bool, bytes]]:
    """Each line of JSONL bytes (blank ones too: a join may span them): (raw, line, offset, end, complete, head); ``raw``
    None for one longer than ``max_line_bytes`` (``head``: its first bytes), said as soon as it is."""
    tail = b""
    base, line = 0, 1  # the offset of ``data`` in the input; the line number at ``at``
    skipping: list[int] | None = None  # inside a line too long, already said: its line and offset
    for chunk in chunks:
        data = tail + chunk if tail else chunk
        at = 0
        while True:
            cut = data.find(b"\n", at)
            if skipping is not None:
                if cut < 0:
                    break
                at, line, skipping = cut + 1, line + 1, None
                continue
            stop = cut if cut >= 0 else len(data)
            if stop - at > max_line_bytes:
                yield None, line, base + at, base + stop + (cut >= 0), cut >= 0, data[at:min(stop, at + 120)]
                skipping = [line, base + at]
                continue
            if cut < 0:
                break
            yield data[at:cut], line, base + at, base + cut + 1, True, b""
            at, line = cut + 1, line + 1
        tail = b"" if skipping is not None else data[at:]
        base += len(data) if skipping is not None else at
    if tail:
        yield tail, line, base, base + len(tail), False, b""


def join_pieces(pieces: list[SplitLine]) -> tuple[str, Any, bytes]:
    """The pieces joined, a newline inside a string escaped: (verdict, value, text). The verdict is
    ``_OPEN`` while the text is a JSON prefix only (more lines may complete it), else ``_CLOSED``
    with the value it parses to (``_INVALID`` when nothing appended could make it JSON)."""
    text = b"\n".join(p.raw for p in pieces)
    if b'"' in text:
        text = _STRING.sub(_escape_newlines, text)
    try:
        return _CLOSED, exactjson.loads(text), text  # (what parse reads: half a surrogate pair, a number beyond a double)
    except orjson.JSONDecodeError as exc:
        chars = len(text) if text.isascii() else len(text.decode("utf-8", "replace"))
        # orjson reports where it stopped: at the end, the text is a prefix of a JSON value
        return (_OPEN if exc.pos >= chars else _CLOSED), _INVALID, text


def _escape_newlines(match: re.Match[bytes]) -> bytes:
    return match.group().replace(b"\r", b"\\r").replace(b"\n", b"\\n")


def _value(raw: bytes) -> Any:
    try:
        return exactjson.loads(raw)  # what parse reads (a number beyond a double is JSON too)
    except orjson.JSONDecodeError:
        return _INVALID
