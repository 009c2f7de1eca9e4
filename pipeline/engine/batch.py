"""Batch: the unit that travels on channels: events with their original bytes and input positions.

A batch is columnar: parallel lists rather than one object per event, so cutting, parsing and
writing a batch stay close to the cost of the raw orjson loop. Column ``i`` of every list belongs to
the same event:

- ``events[i]``: the parsed record (a dict), or None while the batch is still unparsed;
- ``raws[i]``: the original line (bytes, no newline), or None once a stage changed the event, so
  the writer re-serialises it; untouched events are written out as their original bytes;
- ``lines[i]`` / ``offsets[i]``: 1-based line number and byte offset in ``source`` (None for
  records that have no line of their own: invented events, events taken from a JSON document);
- ``pointers[i]``: for events taken from a JSON document, their JSON path (``$.events[3]``).

Events are treated as immutable: a stage that changes one builds a new dict and calls ``replace``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import accumulate, islice
from typing import Any, NamedTuple

from replay.pipeline.engine import exactjson

# One record with everything that travels with it: (record, raw bytes, line, offset, pointer).
Column = tuple[Any, "bytes | None", "int | None", "int | None", "str | None"]


_COLUMNS = frozenset({"raws", "lines", "offsets", "pointers"})
_PLUS_ONE = (1).__add__
_CUT: Any = object()  # in rebuild's inserted columns: the batch is cut in two here


class _Folded(NamedTuple):
    """What a folded batch's columns are made from (``Batch.folded``)."""

    size: int  # lines
    line: int | None
    offset: int
    pieces: list[tuple[Batch, int, int]] | None


def pieces_column(pieces: list[tuple[Batch, int, int]], name: str) -> list[Any]:
    """One column (``raws``, ``lines``, ``offsets``, ``pointers``) of stretches ``[a, b)`` of batches, in order."""
    if len(pieces) == 1:
        part, a, b = pieces[0]
        return getattr(part, name)[a:b]  # type: ignore[no-any-return]
    value: list[Any] = []
    for part, a, b in pieces:
        value += getattr(part, name)[a:b]
    return value


def add_piece(pieces: list[tuple[Batch, int, int]], batch: Batch, a: int, b: int) -> None:
    """Lines ``a``..``b``-1 of ``batch`` after ``pieces``: one stretch with the last when they go on from it."""
    if pieces and pieces[-1][0] is batch and pieces[-1][2] == a:
        pieces[-1] = (batch, pieces[-1][1], b)
    else:
        pieces.append((batch, a, b))


def joins_within(rejoined: dict[int, Any], a: int, b: int) -> dict[int, Any] | None:
    """The log entries of the joined lines (``Batch.rejoined``: by a line's place) among places ``a``..``b``-1, by their
    place in a part cut out there (from 0); None when none is."""
    return {k - a: entry for k, entry in rejoined.items() if a <= k < b} or None


def _line_start(block: bytes, k: int, n: int) -> int:
    """Where line ``k`` of the ``n`` lines joined in ``block`` begins: found from the nearer end, a newline at a time."""
    if k <= n - k:
        pos = -1
        for _ in range(k):
            pos = block.index(b"\n", pos + 1)
        return pos + 1
    pos = len(block)
    for _ in range(n - k):
        pos = block.rindex(b"\n", 0, pos)
    return pos + 1


def _piece_at(pieces: list[tuple[Batch, int, int]], i: int) -> tuple[Batch, int]:
    """The batch that holds line ``i`` of the lines ``pieces`` are stretches of, and where in it."""
    for part, a, b in pieces:
        if i < b - a:
            return part, a + i
        i -= b - a
    raise IndexError(i)  # (the pieces hold fewer lines than the batch says: never)


def _made(batch: Batch, name: str) -> bool:
    """Has ``batch`` its column ``name`` (a folded batch makes its columns on first use)?"""
    try:
        object.__getattribute__(batch, name)
    except AttributeError:
        return False
    return True


WRITTEN_ANEW = "the event was changed and written anew with the last value of each"
BYTES_KEPT = "its bytes are kept, but most JSON readers keep only the last value"
READ_WHOLE = "only the last value of each was read from the document"


def duplicate_key_note(raw: bytes, value: Any, position: dict[str, Any], *, outcome: str = WRITTEN_ANEW,
                       document: int | None = None) -> dict[str, Any] | None:
    """The notice (E_JSON_DUPLICATE_KEY, a warning) for ``raw`` (``value`` read from it) when it has a key written twice
    in one object, saying ``outcome``: by default a line about to be written anew (changed, or mapped from a dialect),
    since only the last value of each survives that. None when every key is written once.

    ``document``: ``raw`` is a whole JSON document read at once (an artifact, an array of records, a trajectory), which
    starts that many bytes into its input (after a byte order mark); the notice then says where in the input the first
    key written twice is written again: its ``line``, byte ``column`` and the ``offset`` of that line (as a JSON error
    names a place in a document), and the key's JSON ``path``."""
    if document is None:
        keys = exactjson.duplicate_keys(raw, value)
        where: tuple[str, dict[str, int]] | None = None
    else:
        keys, where = exactjson.duplicates(raw, value, document)
    if not keys:
        return None
    if where is not None:
        path, at = where
        position = {**position, **at, "path": path}
    return keys_twice_note(keys, position, outcome)


def keys_twice_note(keys: list[str], position: dict[str, Any], outcome: str) -> dict[str, Any]:
    """The notice (E_JSON_DUPLICATE_KEY, a warning) for a line at ``position`` (its fields that are not None) that
    writes ``keys`` (JSON paths) twice in one object, saying ``outcome``: what came of it."""
    note: dict[str, Any] = {"code": "E_JSON_DUPLICATE_KEY", "action": "reported", "keys": keys}
    note.update((k, v) for k, v in position.items() if v is not None)
    note["message"] = f"line {note.get('line')} has a key written twice in one object ({', '.join(keys)}); {outcome}"
    return note


class JoinedColumn(tuple[Any, "bytes | None", "int | None", "int | None", "str | None"]):
    """The column of a line ``join_split_records`` made of several, with that join's heal-log entry (``join``): the
    entry goes wherever the column goes (``Batch.column`` gives it, ``from_columns`` and ``rebuild_parts`` put it on the
    batch it lands in, at its place), so a line a stage holds back, across batches too, keeps its join."""

    join: dict[str, Any]


def _with_join(column: Column, join: dict[str, Any] | None) -> Column:
    """``column`` carrying ``join`` (its line's join entry), or as it is when there is none."""
    if join is None:
        return column
    joined = JoinedColumn(column)
    joined.join = join
    return joined


def _join_of(column: Column) -> dict[str, Any] | None:
    """The join entry ``column`` carries (``JoinedColumn``), or None."""
    return column.join if type(column) is JoinedColumn else None


def changed(column: Column, record: Any) -> Column:
    """``column`` with ``record`` in place of its own (written anew: no bytes), its position and join kept."""
    return _with_join((record, None, *column[2:]), _join_of(column))


def invented(record: dict[str, Any]) -> Column:
    """The column of a record a stage made up: no original bytes, no input position."""
    return (record, None, None, None, None)


def column_bytes(column: Column) -> int:
    """About what a column held aside weighs: its line's bytes, or its record's as JSON (one changed or invented)."""
    return len(column[1]) if column[1] is not None else len(exactjson.dumps(column[0]))


def column_position(column: Column) -> dict[str, Any]:
    """Where a column taken out of its batch came from, as diagnostic fields: its line, offset and path, those it has."""
    return {key: value for key, value in zip(("line", "offset", "path"), column[2:5], strict=True) if value is not None}


class Batch:
    """What flows between stages: records of one ``source`` (a file, stdin) as parallel columns (see the module
    docstring): ``events``, ``raws``, ``lines``, ``offsets``, ``pointers``. ``Batch.of([...])`` makes one from plain
    dicts (a test of a transform); ``replace(i, event)`` puts a changed copy of an event in its place (an event
    itself is never changed), ``select(keep)`` is a batch of some of its records."""

    __slots__ = ("_folded", "clean", "closes_run", "ends_before", "events", "heads", "joined", "lane", "lines", "notes", "offsets", "pause",
                 "pointers", "port", "raws", "rejoined", "source", "tail_open")

    def __init__(
        self,
        source: str,
        events: list[Any] | None,
        raws: list[bytes | None],
        lines: list[int | None],
        offsets: list[int | None],
        pointers: list[str | None] | None = None,
        tail_open: bool = False,
    ) -> None:
        if pointers is None:
            pointers = [None] * len(raws)
        self._folded: _Folded | None = None
        self.source = source
        self.events = events
        self.raws = raws
        self.lines = lines
        self.offsets = offsets
        self.pointers = pointers
        # True when the last line had no newline at the end of its input (a possibly torn write).
        self.tail_open = tail_open
        # None on a main stream; the side port's name ("errors", "repairs") on side-record batches.
        self.port: str | None = None
        # Observations made while changing events (``replace`` of a line with duplicate keys), taken
        # and reported by the ``validate`` stage that checks the stream after the changes.
        self.notes: list[dict[str, Any]] | None = None
        # (runs, events, run ids) when the ``screen`` stage found these lines to be runs that need nothing: raw lines
        # only; each stage after it passes such a batch on untouched, closing the run it was in. ``runs`` and the ids
        # are of the runs that begin in it: a run too long to send in one batch goes on in the clean batches right
        # after it, each ``(0, its events, ())`` (and maybe other whole runs after its end): no stage has a run in
        # progress after a clean batch, so none needs to tell them apart.
        self.clean: tuple[int, int, tuple[Any, ...]] | None = None  # the screen's lane: (runs, events, their run ids)
        # True when a run ends with this batch (the screen cuts runs): per-run stages close it at its end.
        self.closes_run = False
        # With ``closes_run``: the line the next run of the input begins at, when the screen knew it as it cut the run
        # (lines of the run that a stage took out of the stream, such as a dropped record, lie before it); else None.
        self.ends_before: int | None = None
        # A run the screen repaired itself: {"repairs": {rule: [log lines]}, "counts": {rule: n}, "run": runId, "dedupe":
        # last event}; each rule logs its own lines as the batch passes it (the same order as the slow lane's). Or runs it
        # repaired, sent on together: {"runs": [each one's batch], "dedupe": ...} (``model.runs.repaired_together``).
        self.lane: dict[str, Any] | None = None
        # True on the last batch ``read`` sends before it may wait for more input (a pipe or socket read came
        # back short): a stage holding lines back (the screen) lets them go now, so a live stream flows. (With no
        # batch of records to carry it, an empty one does: ``pause_mark``.)
        self.pause = False
        # Two things a stage worked out about the raw lines, for a later stage to reuse instead of doing it again.
        # Only the batch they were set on has them: a stage that builds a new batch (``select``, ``copy``, ...)
        # does not carry them, and a change of a line (``replace``, ``insert``) drops them.
        # ``joined``: the raw lines joined by newlines (``b"\n".join(raws)``), when the line cutter had them
        # as one block already; the screen decodes it whole.
        self.joined: bytes | None = None
        # ``heads``: each line's top-level fields as the screen decodes them (one per line, none None), set by
        # ``join_split_records``, which decodes them to learn that every line is JSON; taken by the screen.
        self.heads: list[Any] | None = None
        # ``rejoined``: the lines ``join_split_records`` put back together from several, each column with its heal-log
        # entry, on the batch it made of them: the screen sends the runs they are in the slow way, with their entries
        # on the batches it makes of them, and ``parse`` logs each as its line passes (with its run, as the rules do).
        # A column taken out of the batch (``column``) carries its line's entry with it (``JoinedColumn``).
        self.rejoined: dict[int, dict[str, Any]] | None = None

    # construction ---------------------------------------------------------------------------
    @classmethod
    def folded(cls, source: str, count: int, joined: bytes | None = None, line: int | None = None, offset: int = 0,
               pieces: list[tuple[Batch, int, int]] | None = None, tail_open: bool = False,
               raws: list[bytes | None] | None = None) -> Batch:
        """An unparsed batch of ``count`` raw lines whose columns (``raws``, ``lines``, ``offsets``, ``pointers``) are
        made only when a stage first reads one: from ``joined`` (the lines as one block, numbered from ``line``, the
        first at byte ``offset``), or from ``pieces`` (stretches ``[a, b)`` of other batches' columns, in order). A
        stage that needs only the block (a writer of the lines as they came) never joins the lines again.
        ``raws``: the lines themselves, when the maker has them (the line cutter cuts every block it reads: decoders
        take each line alone), or when they are not the pieces' (a stage changed some): the pieces then give only
        where each line was (a column made is the batch's own, whatever its pieces hold)."""
        batch = cls.__new__(cls)
        batch._folded = _Folded(count, line, offset, pieces)
        batch.source, batch.events, batch.tail_open, batch.joined = source, None, tail_open, joined
        batch.port = batch.notes = batch.clean = batch.lane = batch.heads = batch.rejoined = None
        batch.closes_run = batch.pause = False
        batch.ends_before = None
        if raws is not None:
            batch.raws = raws
        return batch

    def __getattr__(self, name: str) -> Any:
        """A column of a folded batch, made on first use (``folded``); then it is a plain attribute."""
        if name not in _COLUMNS or self._folded is None:
            raise AttributeError(name)
        folded = self._folded
        if folded.pieces is not None:
            value = pieces_column(folded.pieces, name)
        elif name == "raws":
            assert self.joined is not None
            value = self.joined.split(b"\n")
        elif name == "offsets":
            value = list(accumulate(map(_PLUS_ONE, map(len, self.raws[:-1])), initial=folded.offset))  # type: ignore[arg-type]
        elif name == "lines" and folded.line is not None:
            value = list(range(folded.line, folded.line + folded.size))
        else:
            value = [None] * folded.size
        setattr(self, name, value)
        return value

    def _unfold(self) -> None:
        """Every column made: the batch is an ordinary one (before a change of its lines)."""
        for name in _COLUMNS:
            getattr(self, name)
        self._folded = None

    @classmethod
    def of(cls, events: Iterable[dict[str, Any]], source: str = "<memory>") -> Batch:
        """A parsed batch from plain dicts (tests, invented records, side ports)."""
        evs = list(events)
        n = len(evs)
        return cls(source, evs, [None] * n, [None] * n, [None] * n, [None] * n)

    @classmethod
    def from_columns(cls, columns: list[Column], source: str = "<memory>") -> Batch:
        """A parsed batch from whole columns (records moved with their bytes, positions and joins: ``JoinedColumn``)."""
        ev, raws, lines, offsets, pointers = (list(c) for c in zip(*columns, strict=True)) if columns else ([], [], [], [], [])
        out = cls(source, ev, raws, lines, offsets, pointers)  # type: ignore[arg-type]
        out.rejoined = {k: col.join for k, col in enumerate(columns) if type(col) is JoinedColumn} or None
        return out

    @classmethod
    def pause_mark(cls, source: str, raw: bool) -> Batch:
        """No records, only ``pause``: the input of ``source`` may wait here (a live writer is silent), and no batch of
        records came to carry that (a stage held or dropped all it was given, or a read gave only diagnostics): a stage
        after it that holds lines looking ahead still decides with what came (``RunScoped.at_pause``), and a writer
        writes nothing of it. ``raw``: unparsed, as read's lines (``events`` None), for a stage that takes raw lines."""
        batch = cls(source, None if raw else [], [], [], [])
        batch.pause = True
        return batch

    @classmethod
    def side(cls, records: list[dict[str, Any]], port: str, source: str) -> Batch:
        """A batch of side-port records (diagnostics, repairs) tagged with the port's name."""
        batch = cls.of(records, source)
        batch.port = port
        return batch

    @classmethod
    def from_lines(cls, lines: Iterable[bytes], source: str = "<memory>") -> Batch:
        """An unparsed batch from raw lines, numbered from line 1 / offset 0."""
        raws = list(lines)
        offsets: list[int | None] = []
        pos = 0
        for raw in raws:
            offsets.append(pos)
            pos += len(raw) + 1
        return cls(source, None, list[bytes | None](raws), list(range(1, len(raws) + 1)), offsets)

    # inspection -----------------------------------------------------------------------------
    def goes_on(self) -> bool:
        """Does the batch go on to the next stage: it has records, or, with none, it still says something to a stage
        after (it ends a run, ``closes_run``; carries ``notes`` for the check after; marks a ``pause``)?"""
        return bool(len(self) or self.closes_run or self.notes or self.pause)

    def __len__(self) -> int:
        folded = self._folded
        return len(self.raws) if folded is None else folded.size

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.events or ())

    def __repr__(self) -> str:
        return f"Batch({self.source!r}, {len(self)} records)"

    def position(self, i: int) -> dict[str, Any]:
        """Where record ``i`` came from, as diagnostic fields."""
        pos: dict[str, Any] = {"source": self.source, "line": self.lines[i], "offset": self.offsets[i]}
        if self.pointers[i] is not None:
            pos["path"] = self.pointers[i]
        return pos

    def where(self, i: int) -> dict[str, Any]:
        """The position of record ``i`` without its None fields (an invented record's line and offset): the fields
        a record written about it (a repair, a notice) carries."""
        return {key: value for key, value in self.position(i).items() if value is not None}

    # changes ------------------------------------------------------------------------------
    def replace(self, i: int, event: dict[str, Any]) -> None:
        """Put a changed copy of event ``i`` in place; it will be re-serialised on output."""
        assert self.events is not None
        if self._folded is not None:
            self._unfold()
        raw = self.raws[i]
        if raw is not None:
            note = duplicate_key_note(raw, self.events[i], self.position(i))
            if note is not None:
                self.notes = [*(self.notes or ()), note]
        self.events[i] = event
        self.raws[i] = None
        self.joined = self.heads = None

    def insert(self, i: int, event: dict[str, Any]) -> None:
        """Insert an invented record (no input position) before column ``i``."""
        assert self.events is not None
        if self._folded is not None:
            self._unfold()
        self.joined = self.heads = None
        self.events.insert(i, event)
        self.raws.insert(i, None)
        self.lines.insert(i, None)
        self.offsets.insert(i, None)
        self.pointers.insert(i, None)

    def text(self) -> bytes:
        """The raw lines joined by newlines: the block the line cutter cut them from when it kept it, else joined
        once here (kept until a line changes): from the blocks of the batches a folded batch's pieces are stretches
        of, where those were never cut into lines, else from the lines."""
        if self.joined is None:
            folded = self._folded
            if folded is not None and folded.pieces is not None and not _made(self, "raws"):
                self.joined = b"\n".join([part._stretch_view(a, b) for part, a, b in folded.pieces])
            else:
                self.joined = b"\n".join(self.raws)  # type: ignore[arg-type]
        return self.joined

    def at(self, name: str, i: int) -> Any:
        """Column ``name`` (``raws``, ``lines``, ...) of record ``i`` (from the end when negative), without making a
        folded batch's columns: a raw line cut out of the block, a line number counted from the first, or asked of
        the batch the line was folded from."""
        i = self._index(i)
        folded = self._folded
        if folded is None or _made(self, name):
            return getattr(self, name)[i]
        if folded.pieces is not None:
            part, j = _piece_at(folded.pieces, i)
            return part.at(name, j)
        if name == "raws":
            return self.stretch(i, i + 1)
        if name == "lines":
            return None if folded.line is None else folded.line + i
        if name == "offsets" and self.joined is not None:  # (where it begins in the block, not every line's offset)
            return folded.offset + _line_start(self.joined, i, folded.size)
        return getattr(self, name)[i]  # (pointers: the column is made)

    def _index(self, i: int) -> int:
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return i

    def stretch(self, a: int, b: int) -> bytes:
        """Raw lines ``a``..``b``-1 joined by newlines; cut out of the cutter's block (not cut into lines) when kept."""
        view = self._stretch_view(a, b)
        return view if type(view) is bytes else bytes(view)

    def _stretch_view(self, a: int, b: int) -> bytes | memoryview:
        """``stretch``, as a view of the cutter's block where it is cut out of one: to be joined with others (the
        join copies it once)."""
        n = len(self)
        if a == 0 and b == n:
            return self.text()
        if self.joined is None or _made(self, "raws"):
            return b"\n".join(self.raws[a:b])  # type: ignore[arg-type]
        block = self.joined
        return memoryview(block)[_line_start(block, a, n):_line_start(block, b, n) - 1 if b < n else len(block)]

    def append_line(self, raw: bytes) -> None:
        """Append a line a stage wrote (no input position) to an unparsed batch; a batch folded from pieces stays folded
        (one piece more: the columns no stage read are still not made)."""
        assert self.events is None
        folded = self._folded
        if folded is not None and folded.pieces is not None:
            line = Batch(self.source, None, [raw], [None], [None])
            self._folded = _Folded(folded.size + 1, folded.line, folded.offset, [*folded.pieces, (line, 0, 1)])
            self.joined = self.heads = None
            for name in _COLUMNS:
                if _made(self, name):
                    getattr(self, name).append(raw if name == "raws" else None)
            return
        if folded is not None:
            self._unfold()
        self.joined = self.heads = None
        self.raws.append(raw)
        self.lines.append(None)
        self.offsets.append(None)
        self.pointers.append(None)

    def select(self, keep: Iterable[int]) -> Batch:
        """A batch of only the given columns, in the given order."""
        idx = list(keep)
        ev = self.events
        out = Batch(
            self.source,
            None if ev is None else [ev[i] for i in idx],
            [self.raws[i] for i in idx],
            [self.lines[i] for i in idx],
            [self.offsets[i] for i in idx],
            [self.pointers[i] for i in idx],
            self.tail_open and bool(idx) and idx[-1] == len(self.raws) - 1,
        )
        out.port = self.port
        out.notes = self.notes
        if self.rejoined:  # (the log entries of the joined lines kept go on with them, at their new places)
            at = {old: new for new, old in enumerate(idx)}
            out.rejoined = {at[k]: entry for k, entry in self.rejoined.items() if k in at} or None
        return out.ends_as(self)

    def ends_as(self, other: Batch) -> Batch:
        """This batch ends its run as ``other`` does (``closes_run``, ``ends_before``): what a stage that remakes a
        batch keeps of it. Returns this batch."""
        self.closes_run, self.ends_before = other.closes_run, other.ends_before
        return self

    def column(self, i: int) -> Column:
        """Everything about record ``i``, to move it elsewhere (see ``rebuild``): with its line's join entry, when
        ``join_split_records`` made it of several (``JoinedColumn``)."""
        assert self.events is not None
        column = (self.events[i], self.raws[i], self.lines[i], self.offsets[i], self.pointers[i])
        joins = self.rejoined
        return column if not joins or i not in joins else _with_join(column, joins[i])

    def rebuild(self, before: dict[int, list[Column]], drop: set[int], after: list[Column]) -> Batch:
        """A new batch with columns inserted before given indexes, some dropped, some appended."""
        return self.rebuild_parts(before, drop, after)[0]

    def rebuild_parts(self, before: dict[int, list[Column]], drop: set[int], after: list[Column],
                      cuts: Iterable[tuple[int, int]] = ()) -> list[Batch]:
        """``rebuild``, cut in parts: at each of ``cuts``, (index, k), after the first ``k`` columns inserted before
        that index. Each part but the last closes its run, ending before the line the next run begins at (``ends_before``:
        the line of the column at the cut, kept or dropped, or the first line after it). The log entries of joined lines
        (``rejoined``) go on with their lines, at their new places, on the part each is in (as ``select`` carries them):
        each column carries its own (``JoinedColumn``, from ``column``): a line kept, and one a stage took out of this
        batch or of an earlier one (``RunScoped.hold``, ``take_out``) and puts back here; the entry of a line dropped for
        good goes with it (a stage that logs joins and leaves a line out logs its join itself: ``parse``)."""
        assert self.events is not None
        moved: dict[int, dict[str, Any]] = {}  # the entries of the joined lines, by their place in the columns rebuilt
        ev: list[Any] = []
        raws: list[bytes | None] = []
        lines: list[int | None] = []
        offs: list[int | None] = []
        ptrs: list[str | None] = []
        cols: tuple[list[Any], ...] = (ev, raws, lines, offs, ptrs)

        def put(col: Column) -> None:
            if type(col) is JoinedColumn:
                moved[len(ev)] = col.join
            for target, value in zip(cols, col, strict=True):
                target.append(value)

        for i, k in cuts:
            before = {**before, i: [*before.get(i, ())[:k], _CUT, *before.get(i, ())[k:]]}
        ends: list[int] = []  # where each part but the last ends
        begins: list[int | None] = []  # the input line the next run begins at, after each of them (when known)
        for i in range(len(self.raws)):
            for col in before.get(i, ()):
                if col is _CUT:
                    ends.append(len(ev))
                    begins.append(first_line(self.lines, i))
                else:
                    put(col)
            if i not in drop:
                put(self.column(i))
        for col in after:
            put(col)
        if not ends:
            return [self._rebuilt(ev, raws, lines, offs, ptrs, self.tail_open and not after, self.closes_run, self.notes,
                                  self.ends_before, moved or None)]
        bounds = list(zip([0, *ends], [*ends, len(ev)], strict=True))
        return [self._rebuilt(ev[a:b], raws[a:b], lines[a:b], offs[a:b], ptrs[a:b], k == len(ends) and self.tail_open and not after,
                              self.closes_run if k == len(ends) else True, self.notes if k == 0 else None,
                              self.ends_before if k == len(ends) else begins[k],
                              joins_within(moved, a, b))
                for k, (a, b) in enumerate(bounds)]

    def _rebuilt(self, ev: list[Any], raws: list[bytes | None], lines: list[int | None], offs: list[int | None],
                 ptrs: list[str | None], tail_open: bool, closes_run: bool, notes: list[dict[str, Any]] | None,
                 ends_before: int | None, rejoined: dict[int, dict[str, Any]] | None) -> Batch:
        out = Batch(self.source, ev, raws, lines, offs, ptrs, tail_open)
        out.port = self.port
        out.notes = notes
        out.rejoined = rejoined
        out.closes_run, out.ends_before = closes_run, ends_before
        return out

    def copy(self) -> Batch:
        """Shallow copy of the columns (fan-out hands each consumer its own lists)."""
        out = Batch(
            self.source,
            None if self.events is None else list(self.events),
            list(self.raws),
            list(self.lines),
            list(self.offsets),
            list(self.pointers),
            self.tail_open,
        )
        out.port = self.port
        out.notes = self.notes
        out.clean = self.clean
        out.rejoined = dict(self.rejoined) if self.rejoined else None  # (on every way: only the one stage that logs them takes them, ``streams_into``)
        out.pause = self.pause  # (each way learns the input may wait here)
        return out.ends_as(self)

    # output -------------------------------------------------------------------------------
    def to_jsonl(self) -> bytes:
        """The batch as JSONL: original bytes where untouched, orjson for changed records."""
        folded = self._folded
        if folded is not None and not _made(self, "raws"):  # the lines as they came, never cut apart
            if not folded.size:
                return b""
            if self.joined is None and folded.pieces is not None:  # (joined once, the last newline with them)
                return b"\n".join([*[part._stretch_view(a, b) for part, a, b in folded.pieces], b""])
            return self.text() + b"\n"
        raws = self.raws
        if not raws:
            return b""
        if None in raws:
            dumps = exactjson.dumps
            events = self.events
            assert events is not None
            lines = [raw if raw is not None else dumps(events[i]) for i, raw in enumerate(raws)]
            lines.append(b"")  # (the last newline joined with them: the lines copied once, not again to add it)
            return b"\n".join(lines)
        return self.text() + b"\n"  # no None left: every line as it was read (the cutter's block, when kept)


def first_line(lines: list[int | None], i: int = 0) -> int | None:
    """The first input line at or after column ``i`` of a batch's ``lines`` (columns a stage invented have none)."""
    return next(filter(None, islice(lines, i, None)), None)
