"""Screen: the fast lane of heal and validate: whole runs that need nothing go on as their bytes, never parsed into dicts.

Each line is decoded once into its top-level fields only (``seq``, ``timestamp``, ``type``, ``runId``,
the payload's call ids; the rest of the line is checked as JSON and skipped, with msgspec), a batch at a
time (in heal, ``join_split_records`` decodes them and hands them on with the batch). Lines are
gathered into runs, cut exactly where the per-run stages cut them (a run record, a new ``runId``,
a new input). A run is *clean* when no heal rule could fire on it and validation has nothing to
say (mode ``heal``), or only the latter (mode ``validate``): it starts with ``run_started``, numbers
its events 1..n, ends with a terminal event, every call has its result, timestamps are RFC 3339 UTC
and in order (and no leap second: rare, judged the slow way), types are canonical, payloads objects, no ids to
dedupe or sidechains to move, ...
In the usual batch (every line an event of a named run) what can be judged of one line alone is
judged once for the whole batch, and its runs on their seq, type and timestamp columns.
A clean run leaves as a batch marked ``clean`` (raw lines, no records); the stages after it pass
such a batch on as it is, after closing the run they were in. A run longer than the screen holds
(``max_run_lines``, ``max_run_bytes``) is judged a part at a time as it comes, what the checks need carried from
part to part (``_Verdict``), and each part judged clean so far waits in a temporary file (``LineSpool``), not
memory: at the run's end it goes on from there as clean batches, or, the run found unclean, the slow way in the
batches it would have gone in had the screen sent each part on as it held it (as with ``fast = false``).
Anything else, or anything in doubt, goes on as raw lines to ``parse`` and the stages exactly as before: the
screen only ever chooses the lane, never what comes out.
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Iterator, Sequence
from operator import attrgetter
from typing import Any

import msgspec
import orjson
from msgspec.structs import astuple

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch, add_piece, pieces_column
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.spool import MAX_BYTES as SPOOL_BYTES
from replay.pipeline.engine.spool import LineSpool
from replay.pipeline.engine.stage import Option, Transform
from replay.pipeline.io.journals import BATCH_EVENTS, BLANK, decode_each_line, nested_no_deeper_than_orjson
from replay.pipeline.model.events import (
    _RFC3339_STRICT,
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_ID_FILLED,
    RUN_STARTED,
    TERMINAL_TYPES,
    is_timestamp,
    same_shape_utc,
    terminal_of_status,
)
from replay.pipeline.model.healing import load_rules
from replay.pipeline.model.records import LOG_FOLLOWS_READS, RUN_RECORD, SOURCE_RECORD
from replay.pipeline.model.repairs import log_repair
from replay.pipeline.model.runs import RecentIds, Run, marks_input, repaired_together, runid_spans
from replay.pipeline.model.toolcalls import CALLED, COMPLETED, FAILED, TOOL_UNANSWERED
from replay.pipeline.model.validation import check_run_record
from replay.stages.alias import AliasEventTypes, resolved_aliases
from replay.stages.ensure_terminal import InsertTerminalEvent
from replay.stages.renumber import RenumberSeq, stretches

UNSET: Any = msgspec.UNSET
# A run held longer than this is judged so far and its lines spooled to a temporary file (``LineSpool``), or, found
# unclean, sent the slow way: memory stays bounded (the screen's options ``max_run_lines`` and ``max_run_bytes``)
MAX_RUN_LINES = 16384
MAX_RUN_BYTES = 4 << 20  # (the bytes of the blocks the lines held were read in)
SLOW_LINES = 4096  # a run goes the slow way in batches of at most this many lines (the rules take a batch at a time)
_CALLED, _UNANSWERED = "tool_called", TOOL_UNANSWERED


class _Object(msgspec.Struct, gc=False):
    """A payload as validate's lane reads it: an object, its keys skipped."""


class _Payload(_Object, gc=False):
    """A payload as heal's lane reads it: the call ids it pairs calls by, and whether it is a sidechain's."""

    callId: Any = UNSET
    toolCallId: Any = UNSET
    id: Any = UNSET
    sidechain: Any = UNSET


class _Line(msgspec.Struct, gc=False):
    """A line's top-level fields as validate's lane reads them, typed as validate wants them: a line where one has
    another type (a string seq, a payload that is no object, ...) fails to decode, and its run goes the slow way."""

    seq: int | msgspec.UnsetType = UNSET
    timestamp: str | msgspec.UnsetType = UNSET
    type: str | msgspec.UnsetType = UNSET
    runId: str | msgspec.UnsetType = UNSET
    payload: _Object | msgspec.UnsetType = UNSET
    step: int | str | msgspec.UnsetType = UNSET
    turn: int | str | msgspec.UnsetType = UNSET
    parentId: str | msgspec.UnsetType | None = UNSET
    synthetic: Any = UNSET
    record: Any = msgspec.field(default=UNSET, name="$record")


class _Head(_Line, gc=False):
    """A line as heal's lane reads it: ``_Line`` and what only heal asks of it (ids to dedupe, ``$origin``, the
    payload's call ids and sidechain). Validate's lane decodes no more than ``_Line`` (~15% less work a batch)."""

    payload: _Payload | msgspec.UnsetType = UNSET
    id: Any = UNSET
    origin: Any = msgspec.field(default=UNSET, name="$origin")


_DECODER = msgspec.json.Decoder(_Head)
_ALIAS, _TERMINAL, _RENUMBER = AliasEventTypes.name, InsertTerminalEvent.name, RenumberSeq.name
_REPAIRED_BY = frozenset({_ALIAS, _TERMINAL, _RENUMBER})  # the rules whose repairs the repair lane makes
_DECODERS: dict[str, msgspec.json.Decoder[Any]] = {"heal": _DECODER, "validate": msgspec.json.Decoder(_Line)}  # by mode


def decode_heads(batch: Batch) -> list[_Head] | None:
    """The head of every raw line of ``batch``, in one msgspec call over the lines joined; None when the decoder
    refuses the batch as a whole: a line that is not JSON or has a field of another type, a blank line, bytes
    that are not UTF-8."""
    return decode_each_line(_DECODER, batch)


# Every timestamp of a run in one match: the pattern is_timestamp uses, once per line of the joined text (its first:
# a leap second, 23:59:60, which is_timestamp takes only after that one fails, never matches, and goes the slow way).
_STAMPS = re.compile(f"(?:{_RFC3339_STRICT.pattern}\n)*{_RFC3339_STRICT.pattern}", re.ASCII)
_JUDGED = frozenset({*CALLED, *COMPLETED, *FAILED, TOOL_UNANSWERED, "assistant_message", *TERMINAL_TYPES})
_STR = {str}
_DAY = operator.itemgetter(slice(0, 10))
# The shapes of a timestamp the quick check knows (each digit written as 0): UTC, no fraction or 1-9 digits of one.
_SHAPES = frozenset({"0000-00-00T00:00:00Z", *(f"0000-00-00T00:00:00.{'0' * k}Z" for k in range(1, 10))})
_DIGITS_AS_ZERO = str.maketrans("123456789", "000000000")
_HOUR = operator.itemgetter(slice(11, 13))
_HOURS = frozenset(f"{h:02}" for h in range(24))
_FIELDS = _Head.__struct_fields__  # (in the order astuple gives them; "$record" and "$origin" as record and origin)
_CALL_ID = attrgetter("payload.callId")
_PAYLOAD_SIDECHAIN = attrgetter("sidechain")
_TOOLS = CALLED | COMPLETED | FAILED
_UNKNOWN = object()  # the event before a run could not be read here (dedupe may know better)


class _Verdict:
    """What judging a run's lines so far (``ScreenRuns._judge``) leaves for judging the rest: the next seq number, the
    last timestamp and the timestamps' length, the terminal event seen, the calls open, those answered (of the lines
    held, not of those spooled before them: a call or result of an id answered earlier then sends the run the slow way,
    more often than need be but never wrongly), an assistant message still wanted (the run record has a response)."""

    __slots__ = ("answered", "open", "seq", "size", "stamp", "terminal", "wants_message")

    def __init__(self, record: dict[str, Any] | None) -> None:
        self.seq = 1
        self.stamp: str | None = None
        self.size = 0
        self.terminal: str | None = None
        self.open: set[str] = set()
        self.answered: set[str] = set()
        response = (record or {}).get("response")
        self.wants_message = response.__class__ is str and bool(response)


class _Run:
    __slots__ = ("clean", "count", "events", "fine", "heads", "held", "joined", "pieces", "record", "rejoined", "run_id",
                 "seqs", "size", "spilled", "spool", "spooled", "stamps", "tail_open", "types", "verdict")

    def __init__(self) -> None:
        # its lines: stretches [a, b) of the batches they came in (the lines themselves are cut out only if the run
        # goes on as lines: a run validate finds valid is counted, never cut into lines)
        self.pieces: list[tuple[Batch, int, int]] = []
        self.count = 0  # its lines so far
        self.held = 0  # the bytes of the batches they are in (what holding them keeps in memory)
        self.heads: list[_Head | None] = []
        self.run_id: Any = None
        self.record: dict[str, Any] | None = None
        self.clean = True
        self.events = 0
        self.tail_open = False
        self.spilled = False  # its first lines went on already (the input paused): the rest follows as it comes
        self.joined = False  # a line of it is one join_split_records made of several (a repair logged for a run)
        self.rejoined: dict[int, dict[str, Any]] = {}  # such lines held, by their place among those held: their log entries
        # True while every line came in a batch all of whose lines passed the checks of one line alone (``_fine``):
        # then its seq, type and timestamp columns are kept here, and its timestamps are ``size`` long (heal)
        self.fine = True
        self.seqs: list[Any] = []
        self.types: list[Any] = []
        self.stamps: list[Any] = []
        self.size = 0
        self.verdict: _Verdict | None = None  # (judged so far: ``ScreenRuns._judge``)
        self.spool: LineSpool | None = None  # its lines before those held, judged clean so far and spooled
        self.spooled = 0  # (how many)

    def add(self, batch: Batch, a: int, b: int) -> None:
        """Lines ``a``..``b``-1 of ``batch`` are the run's next."""
        pieces = self.pieces
        if not pieces or pieces[-1][0] is not batch:  # (the first lines of a batch: what holding them keeps)
            self.held += len(batch.joined) if batch.joined is not None else sum(map(len, filter(None, batch.raws)))
        add_piece(pieces, batch, a, b)
        self.count += b - a

    def lines_batches(self, source: str) -> list[Batch]:
        """Its lines held as unparsed batches (``_lines_batches``), each with the log entries of the lines in it that
        join_split_records joined (``Batch.rejoined``: logged with the run's repairs, by ``cut_runs`` in heal's graphs)."""
        batches = _lines_batches(source, self.pieces, self.count, self.tail_open)
        for k, entry in self.rejoined.items():  # (every batch but the last holds SLOW_LINES lines)
            batch = batches[k // SLOW_LINES]
            if batch.rejoined is None:
                batch.rejoined = {}
            batch.rejoined[k % SLOW_LINES] = entry
        return batches

    def let_go(self) -> None:
        """Its lines went on (the slow way): it keeps only what comes after."""
        self.pieces, self.count, self.heads, self.held = [], 0, [], 0
        self.seqs, self.types, self.stamps = [], [], []
        self.rejoined = {}


def _lines_batches(source: str, pieces: list[tuple[Batch, int, int]], count: int, tail_open: bool) -> list[Batch]:
    """The ``count`` lines of ``pieces`` (stretches ``[a, b)`` of the batches they came in) as unparsed batches of at
    most ``SLOW_LINES`` lines each, cut out of those batches when a stage reads them; ``tail_open``: of the last."""
    if count <= SLOW_LINES:
        return [Batch.folded(source, count, pieces=pieces, tail_open=tail_open)]
    batches, part, size = [], [], 0
    for piece, a, b in pieces:
        while a < b:
            take = min(b - a, SLOW_LINES - size)
            part.append((piece, a, a + take))
            a, size = a + take, size + take
            if size == SLOW_LINES:
                batches.append(Batch.folded(source, size, pieces=part))
                part, size = [], 0
    if part:
        batches.append(Batch.folded(source, size, pieces=part))
    batches[-1].tail_open = tail_open
    return batches


def _spooled_slow(spool: LineSpool) -> Iterator[Batch]:
    """A run's spooled lines, found unclean, the slow way: each part as the batches it would have gone in had it been
    sent on when it was spooled (``_spill``), read back a part at a time as they are taken."""
    try:
        for pieces in spool.parts():
            yield from _lines_batches(spool.source, pieces, sum([b - a for _, a, b in pieces]), False)
    finally:
        spool.close()


def _spooled_clean(spool: LineSpool, rid: Any, record: bool) -> Iterator[Batch]:
    """A clean run's spooled lines as clean batches (``LineSpool.parts``: a batch for each stretch of lines), read back
    as they are taken: the first begins the run (``(1, its events, (rid,))``; ``record``: its first line is the run's
    record), each after it goes on with it (``(0, its events, ())``: ``Batch.clean``)."""
    try:
        first = True
        for pieces in spool.parts():
            for batch, _, _ in pieces:
                batch.clean = (1, len(batch) - record, (rid,)) if first else (0, len(batch), ())
                first = False
                yield batch
    finally:
        spool.close()


@register("screen")
class ScreenRuns(Transform):
    summary = "Pass whole runs that need nothing (no heal rule would fire, nothing to report) on unparsed; the rest to parse."
    options = {
        "mode": Option(str, "heal", "what a clean run must not need: 'heal' (no rule fires, valid) or 'validate' (valid)",
                       choices=("heal", "validate")),
        "enabled": Option(bool, True, "false: every line goes on as it came (e.g. with --dialect or --dialect-out)"),
        "fast": Option(bool, True, "false: no run takes the fast lane (every run goes the slow way, cut as with it)"),
        "rules_file": Option(str, "", "the heal rules file heal uses (its eventAliases are not clean types)"),
        "aliases": Option(dict, {}, "extra type aliases heal is given", items=str),
        "repair_log": Option(bool, True, "make the heal-log lines of the runs repaired here; false: only count them "
                                         "for their heal records (nothing reads the heal log)"),
        "max_run_lines": Option(int, MAX_RUN_LINES, "lines of a run held before they are judged and spooled to a "
                                                    "temporary file (or, not clean, sent the slow way)", minimum=1),
        "max_run_bytes": Option(int, MAX_RUN_BYTES, "bytes of a run held (the blocks its lines came in) before the same",
                                minimum=1),
        "max_spool_bytes": Option(int, SPOOL_BYTES, "the most one run's spool holds ($TMPDIR needs that much room); a "
                                                    "longer clean run goes the slow way from there", minimum=1),
        "ends_at_run": Option(bool, False, "the input ends where another run of it begins (a piece of one file cut at a "
                                           "run boundary, not its last): its last run is closed as a run another "
                                           "follows is, its heal log in the same order"),
    }
    accepts_raw = True
    emits_raw = True
    screened_lane = "passes"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.run: _Run | None = None
        self.source: str | None = None
        self.started: set[str] = set()  # streams whose first line has been seen
        self.off: set[str] = set()  # streams that go the slow way to their end
        self.previous: Any = None  # the seq of the last event line before the run, for dedupe
        self._alias_table: dict[str, str] | None = None
        self._terminal = InsertTerminalEvent()
        self._renumber = RenumberSeq()
        self._out: list[Batch | Iterator[Batch]] = []  # (an iterator: a long run's lines read back from its spool)
        self._holds = (self.config["max_run_lines"], self.config["max_run_bytes"])  # (looked at for each line)
        self._clean_pieces: list[tuple[Batch, int, int]] = []
        self._clean_count = 0  # lines
        self._clean_events = 0
        self._clean_ids: list[Any] = []  # their run ids, in order (check_run_ids reads them; how many runs: its length)
        self._recent = RecentIds()  # the ids of the last runs of the stream: a run of one of them comes back, slow
        self._repaired: list[Batch] = []  # runs repaired here, counted only (no heal log), to go on as one batch
        # The ids of the runs the next run would touch if heal dropped every event of the slow runs before it (a
        # run of one of these ids goes the slow way, where ``RunScoped`` keeps it apart with a run record).
        self._near: set[Any] = set()
        # a run went on the slow way in parts, where holding it reached its limits (``_spill``), or one not clean held
        # bytes near the limit (the blocks its lines came in: another reading of the input may cut it in parts)
        self._parted = False

    def opens_lane(self) -> bool:
        return bool(self.config["enabled"] and self.config["fast"])

    def lane_needs(self) -> frozenset[str]:
        """In heal mode the lane carries runs repaired here, whose repairs the alias, ensure_terminal and renumber
        stages log (and heal_summary counts) as they pass: the lane must reach those rules."""
        return _REPAIRED_BY if self.config["mode"] == "heal" else frozenset()

    @property
    def alias_table(self) -> dict[str, str]:
        """The alias rule's table, as heal builds it (built-in aliases, the rules file's, the config's): a dict of its
        own, whose ``get`` maps over a run's types in C (a read-only view's ``get`` is a method call per type)."""
        if self._alias_table is None:
            rules = load_rules(self.config["rules_file"] or None) if self.config["mode"] == "heal" else {}
            extra = {**rules.get("eventAliases", {}), **self.config["aliases"]}  # over the built-in table, as heal does
            self._alias_table = dict(resolved_aliases(True, tuple(extra.items())))
        return self._alias_table

    # the transform -------------------------------------------------------------------------------------
    def __call__(self, batch: Batch) -> Batch | list[Batch | Iterator[Batch]] | None:
        source = batch.source
        if source != self.source:
            self._end_run(closes=False)
            self._close_clean()  # (the runs that ended are the last input's)
            self.source = source
            self._near = set()
            self._recent = RecentIds()  # (each input's runs are its own: check_run_ids judges an input alone)
        if self.config["enabled"] and _names_its_input(batch):  # read's mark before each of several inputs: the last
            self._end_run(closes=False)                         # input's run ends (one of the same name too)
            self._recent = RecentIds()  # (the same file read again is another input: its runs its own)
            return self._take([batch])
        if not self.config["enabled"] or batch.events is not None or source in self.off:
            self._end_run()
            self.off.add(source)
            batch.heads = None  # not looked at: they go no further
            return self._take([batch])
        heads = self._heads(batch)
        if source not in self.started and heads:
            self.started.add(source)
            # dialect decides an input's dialect on its first record: this lane takes replay's own only
            head = heads[0]
            if head is None or (head.record is UNSET and (head.seq is UNSET or head.runId is UNSET)):
                self._go_slow(batch, 0)
                return self._take([])
        # a line join_split_records made of several is a repair logged for its run: that run goes the slow way, where
        # the rules and heal_summary take it (as bytes, no run would be there to count the repair)
        rejoined = set(batch.rejoined) if batch.rejoined else None
        if rejoined is None and self._plain(batch, heads):
            self._paused(batch)
            return self._take([])
        raws = batch.raws
        last = len(raws) - 1
        for i, raw in enumerate(raws):
            head = heads[i]
            run = self.run
            probe = head if head is not None else _probe(raw)  # type: ignore[arg-type]
            # (a record whatever its kind, ``"$record": null`` too: ``is_record``, as the stages after read it)
            if probe is not None and probe.record is not UNSET:
                if probe.record == SOURCE_RECORD:  # parse relabels what follows it: not this lane's
                    self._go_slow(batch, i)
                    return self._take([])
                if probe.record == RUN_RECORD:
                    before = run
                    self._end_run(at=(batch, i))
                    run = self._begin(raw)  # type: ignore[arg-type]
                    if before is not None and before.joined and before.record is None and not before.events:
                        # records before it that no run of the input came before, one of them joined: the join is the
                        # repair of this run, which goes the slow way too (heal_summary counts it in its heal record)
                        run.clean = False
                else:
                    if run is None:
                        run = self._begin(None)
                    run.clean = False  # a heal record, a dropped record, ...: the slow lane knows them
            else:
                rid = probe.runId if probe is not None else None
                if run is not None and rid.__class__ is str and rid and run.run_id is not None and rid != run.run_id:
                    self._end_run(at=(batch, i))
                    run = None
                if run is None:
                    run = self._begin(None)
                if head is None:
                    run.clean = False
                if probe is not None:
                    if run.run_id is None and rid.__class__ is str and rid:
                        run.run_id = rid
                    run.events += 1
            run.fine = False  # a line looked at alone: the run is judged from its heads
            if rejoined is not None and i in rejoined:
                run.clean, run.joined = False, True
                run.rejoined[run.count] = batch.rejoined[i]  # type: ignore[index]
            run.add(batch, i, i + 1)
            run.heads.append(head)
            if i == last and batch.tail_open:
                run.tail_open = True
            self._hold(run)
        self._paused(batch)
        return self._take([])

    def _paused(self, batch: Batch) -> None:
        """The input may wait after this batch (or the run in progress let some lines go already): what the open
        run holds goes on now, the slow way, and the rest of that run follows as it comes. (All it holds may be
        spooled: that goes on as it went when spooled, without the fast lane, and the run is held as it was then.)"""
        run = self.run
        if run is None or not (batch.pause or run.spilled) or not (run.count or run.spool is not None):
            return
        run.spilled = run.spilled or bool(run.count)
        self._spill(run)

    def _hold(self, run: _Run) -> None:
        """The run in progress, when it is longer than the screen holds: what it holds is judged (``_judge``, with what
        its lines before left), and spooled if clean so far; else it goes on now, the slow way (``_spill``), and so does
        the rest of it. Either way it holds nothing now. (A run's lines are let go at the same lines, with the fast lane
        or without it: in the slow lane each part of it comes in the same batches.)"""
        lines, size = self._holds
        if run.count <= lines and run.held <= size:
            return
        if run.clean and self.config["fast"] and not run.tail_open and self._judge(run):
            spool = run.spool if run.spool is not None else LineSpool(self.source or "<stdin>", self.config["max_spool_bytes"])
            if spool.add(run.pieces):
                run.spool = spool
                run.spooled += run.count
                run.verdict.answered.clear()  # type: ignore[union-attr]  # (memory stays flat; see ``_Verdict``)
                self._remember_last(run.heads)  # (as ``_spill`` leaves it)
                run.let_go()
                return
            if run.spool is None:
                spool.close()  # (a spool of its own that took nothing; one that holds parts is read back by ``_spill``)
        self._spill(run)

    def _spill(self, run: _Run) -> None:
        """The run's lines so far go on now, the slow way (it is too long to hold, or the input may wait); the rest
        of it follows as it comes."""
        run.clean = False
        self._parted = True
        self._remember_last(run.heads)
        self._emit_slow(run, closes=False)
        run.let_go()

    def _plain(self, batch: Batch, heads: list[_Head | None]) -> bool:
        """The usual batch: every line an event with a runId, no records: cut into runs a slice at a time. The whole
        runs inside it, when all its lines pass, are judged at once (``_all_clean``)."""
        n = len(heads)
        if not n or None in heads:
            return False
        fields = _fields(heads)
        if fields["record"].count(UNSET) != n:
            return False
        rids = list(fields["runId"])
        spans = runid_spans(rids)
        if spans is None:
            return False
        seqs, types, stamps = _columns(fields)
        size = self._fine(fields, types, stamps)
        columns = (heads, rids, seqs, types, stamps, size)
        inner = spans[1:-1]  # whole runs: the first span may go on with the run in progress, the last in the next batch
        if inner and size and self.config["fast"] and _numbered(seqs, inner):
            self._span(batch, spans[0][0], spans[0][1], *columns)
            self._end_run(at=(batch, spans[0][1]))
            if self._all_clean(inner, heads, rids, types, stamps):
                a, b = inner[0][0], inner[-1][1]
                ids = [rids[start] for start, _ in inner]
                self._add_clean([(batch, a, b)], b - a, ids, b - a)
                self._recent.add_all(ids)  # (a run ended here, by _end_run, adds its own)
                self._near, self.previous = {rids[b - 1]}, seqs[b - 1]  # (as the last of them leaves them)
                spans = spans[-1:]
            else:
                spans = spans[1:]
        for a, b in spans:
            self._span(batch, a, b, *columns)
        if batch.tail_open and self.run is not None:
            self.run.tail_open = True
        return True

    def _span(self, batch: Batch, a: int, b: int, heads: list[Any], rids: list[Any], seqs: list[Any], types: list[Any],
              stamps: list[Any], size: int) -> None:
        """Lines ``a``..``b``-1 of a plain batch, all of one runId, to the run in progress or a run they begin."""
        run = self.run
        if run is None or run.run_id is None or run.run_id != rids[a]:
            if run is not None and run.run_id is None:
                run.clean = False  # a run named only now: the slow lane names it as the rules do
                run.run_id = rids[a]
            else:
                self._end_run(at=(batch, a))
                run = self._begin(None)
                run.run_id = rids[a]
        run.add(batch, a, b)
        run.heads += heads[a:b]
        run.events += b - a
        if run.fine:
            if size and run.size in (0, size):
                run.seqs += seqs[a:b]
                run.types += types[a:b]
                run.stamps += stamps[a:b]
                run.size = size
            else:
                run.fine = False
        self._hold(run)

    def _all_clean(self, runs: list[tuple[int, int]], heads: list[Any], rids: list[Any], types: list[Any],
                   stamps: list[Any]) -> bool:
        """Is each of ``runs`` clean (``_is_clean``)? The whole runs inside a plain batch whose lines all pass and whose
        seq numbers go 1..n, judged at once: for heal, what ``_is_clean`` asks of each run asked of them all, or of
        their columns joined where that says the same or more (all stamps sorted, every call id once). False: judge
        them run by run."""
        a, b = runs[0][0], runs[-1][1]
        kinds = types[a:b]
        starts = [start for start, _ in runs]
        if not self._shaped(kinds, stamps[a:b], list(map(types.__getitem__, starts)),
                            [types[end - 1] for _, end in runs]):
            return False
        if self._recent.any_come_back(list(map(rids.__getitem__, starts))):
            return False  # (a run id that comes back after another run: check_run_ids reads it, the slow way)
        if self.config["mode"] != "heal":
            return True  # (validate: nothing to say of their shape, check_runs and check_order neither)
        if rids[a] in self._near or self.previous is _UNKNOWN or self.previous == 1 \
                or 1 in [end - start for start, end in runs[:-1]]:
            return False  # (the first may touch an earlier run of its id; dedupe may compare a first event with a seq 1)
        if _UNANSWERED in kinds:
            return False
        tools = _tool_events(kinds)
        if not _calls_answered(heads[a:b], kinds, tools):
            return False
        called = list(itertools.compress(rids[a:b], tools))
        return called[0::2] == called[1::2]  # (no call answered in the next run)

    def _add_clean(self, pieces: list[tuple[Batch, int, int]], lines: int, ids: list[Any], events: int) -> None:
        """Clean runs (their lines: stretches of the batches they came in; their run ids) go on as bytes, in the next
        clean batch."""
        self._close_repaired()
        for piece in pieces:  # (one stretch where the runs follow each other in a batch)
            add_piece(self._clean_pieces, *piece)
        self._clean_count += lines
        self._clean_ids += ids
        self._clean_events += events
        if self._clean_count >= BATCH_EVENTS:  # (a batch of clean runs holds as many lines as a batch read)
            self._close_clean()

    def _fine(self, fields: dict[str, tuple[Any, ...]], types: list[Any], stamps: list[Any]) -> int:
        """Do all lines of a plain batch pass the checks ``_is_clean`` makes of one line alone (``_lines_pass``), with
        no ``synthetic`` at all for heal (the repair lane takes none)? The stamps' length if so, else 0: the runs are
        judged from their heads."""
        heal = self.config["mode"] == "heal"
        return _lines_pass(fields, types, stamps, heal=heal, synthetic_true=not heal)

    def flush(self) -> Batch | list[Batch | Iterator[Batch]] | None:
        run = self.run
        if self.config["ends_at_run"] and not self.off and run is not None and run.pieces:
            last, _, end = run.pieces[-1]  # (the input's last line, held: the next run's first comes right after it)
            self._end_run(at=last.at("lines", end - 1) + 1)
        self._end_run(closes=False)
        if self.off or self._parted:  # (the rules cut its runs, or a run went on in parts: as its reads cut them)
            self.publish(LOG_FOLLOWS_READS, True)
        self._close_clean()
        out = self._out
        self._out = []
        return out or None

    # decoding ------------------------------------------------------------------------------------------
    def _heads(self, batch: Batch) -> list[_Head | None]:
        """Each line's head: those a stage before decoded (``join_split_records``), else one decode of the whole
        batch (``_Head`` for heal, ``_Line`` for validate), else line by line (None for a line the decoder refuses)."""
        heads: list[_Head | None] | None = batch.heads
        mode = self.config["mode"]
        if heads is not None:
            batch.heads = None
            if mode == "heal":  # (join_split_records decodes heal's heads: a validate lane after one decodes its own,
                return heads    # or a run would hold heads of two kinds)
        decoder = _DECODERS[mode]
        heads = decode_each_line(decoder, batch)
        if heads is not None:
            return heads
        out: list[_Head | None] = []
        for raw in batch.raws:
            assert raw is not None
            if not raw.strip(BLANK) or (not raw.isascii() and not _utf8(raw)):
                out.append(None)
                continue
            try:
                out.append(nested_no_deeper_than_orjson(decoder.decode, raw))
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                out.append(None)
        return out

    # runs ----------------------------------------------------------------------------------------------
    def _begin(self, record_raw: bytes | None) -> _Run:
        run = self.run = _Run()
        if record_raw is not None:
            try:
                record = exactjson.loads(record_raw)
            except exactjson.JSONDecodeError:
                run.clean = False
                return run
            run.record = record
            rid = record.get("runId")
            run.run_id = rid if rid.__class__ is str and rid else None
            if run.run_id is None or RUN_ID_FILLED in record or check_run_record(record):
                run.clean = False  # (a runId read from an artifact's events or id: fill_run_id logs it, the slow way)
        return run

    def _end_run(self, closes: bool = True, at: tuple[Batch, int] | int | None = None) -> None:
        """The run in progress ends: it goes on as bytes, repaired here, or the slow way; ``closes``: the stages after
        are to close it with its batch (another run of its input follows), ``at`` (a batch and a column, or a line
        number) where that run begins, when known. An input's last run ends with the input, where they close it anyway, after its
        cut-off last line (parse logs that once the rules logged the rest)."""
        run = self.run
        if run is None:
            return
        self.run = None
        slow = False
        if run.record is None and run.run_id in self._near and self.config["mode"] == "heal":
            run.clean = False  # it may come to touch an earlier run of its id: kept apart the slow way
        if self._recent.comes_back(run.run_id):
            run.clean = False  # its id comes back after another run: check_run_ids reads it, the slow way
        clean = run.clean and self.config["fast"] and self._is_clean(run)
        if not clean and run.held > self._holds[1] // 2:  # (held: whole blocks, so how a read cut them decides whether a
            self._parted = True                           # run this near the most held went on in parts or whole)
        if clean:
            if run.spool is not None:  # its lines before those held, as clean batches, then what it holds
                self._close_clean()
                self._out.append(_spooled_clean(run.spool, run.run_id, run.record is not None))
                self._add_clean(run.pieces, run.count, [], run.events - (run.spooled - (run.record is not None)))
            else:
                self._add_clean(run.pieces, run.count, [run.run_id], run.events)
        elif closes and run.clean and self.config["fast"] and self.config["mode"] == "heal" and (repaired := self._repair(run)):
            # (an input's last run is repaired by the rules: they log its lines, then its end, as the input ends)
            self._add_repaired(repaired)
        else:
            self._emit_slow(run, closes=closes, at=at)
            slow = True
        if slow and run.record is None:
            self._near.add(run.run_id)  # it may vanish (every event dropped): the runs before it stay near
        else:
            self._near = {run.run_id}  # it stays, or its run record does: it alone is near now
        if run.run_id is not None:
            self._recent.add(run.run_id)
        self._remember_last(run.heads)

    def _remember_last(self, heads: list[_Head | None]) -> None:
        """The seq of the last event line so far, for dedupe's look at the event before the next run."""
        for head in reversed(heads):
            if head is None:
                self.previous = _UNKNOWN
                return
            if head.record is UNSET:
                self.previous = head.seq
                return

    def _emit_slow(self, run: _Run, closes: bool = True, at: tuple[Batch, int] | int | None = None) -> None:
        """A run (or a piece of a long one) for the slow lane, as batches of up to ``SLOW_LINES``; ``closes``: the run ends with it,
        so the per-run stages close it right after it, whatever the next run is (their logs and heal records
        go run by run, however the input was cut into batches); ``at``: where the next run begins (its line goes
        with the batch, ``Batch.ends_before``: lines of the run a stage takes out of the stream lie before it)."""
        if run.spool is not None:  # its lines spooled, each part as it would have gone when it was spooled
            self._parted = True
            self._close_clean()
            self._out.append(_spooled_slow(run.spool))
            run.spool, run.spooled = None, 0
        if not run.count:
            return
        self._close_clean()
        batches = run.lines_batches(self.source or "<stdin>")
        batch = batches[-1]
        batch.closes_run = closes
        if closes and at is not None:
            batch.ends_before = at if isinstance(at, int) else at[0].at("lines", at[1])
        self._out += batches

    def _add_repaired(self, batch: Batch) -> None:
        """A run repaired here (``_repair``) goes on after the clean runs before it: alone when its heal-log lines go
        with it (each rule logs them as the batch passes, run by run as in the slow lane), else in one batch with the
        runs repaired right after it (``_close_repaired``): one batch fewer for each stage after to pass."""
        if self._clean_count:
            self._close_clean()
        if self.config["repair_log"]:
            self._out.append(batch)
        else:
            self._repaired.append(batch)

    def _close_repaired(self) -> None:
        """The runs repaired here that wait go on, as one batch (``repaired_together``)."""
        parts, self._repaired = self._repaired, []
        if parts:
            self._out.append(parts[0] if len(parts) == 1 else repaired_together(parts))

    def _close_clean(self) -> None:
        """What waits goes on: the runs repaired here (``_close_repaired``), or the clean runs, as one batch."""
        self._close_repaired()
        if not self._clean_count:
            return
        batch = Batch.folded(self.source or "<stdin>", self._clean_count, pieces=self._clean_pieces)
        batch.clean = (len(self._clean_ids), self._clean_events, tuple(self._clean_ids))
        self._out.append(batch)
        self._clean_pieces, self._clean_count = [], 0
        self._clean_events, self._clean_ids = 0, []

    def _take(self, extra: list[Batch]) -> Batch | list[Batch | Iterator[Batch]] | None:
        self._close_clean()
        out = [*self._out, *extra]
        self._out = []
        if not out:
            return None
        return out if len(out) > 1 or type(out[0]) is not Batch else out[0]  # (lines read back from a spool: in a list)

    def _go_slow(self, batch: Batch, i: int) -> None:
        """The rest of this stream goes the slow way, from line ``i`` of ``batch`` (with the run in progress)."""
        run = self.run
        self.run = None
        self.off.add(batch.source)
        if run is not None:  # a source record is no run boundary for the stages after: the run goes on there
            run.clean = False
            self._emit_slow(run, closes=False)
        self._close_clean()
        self._out.append(batch.select(range(i, len(batch.raws))))  # (with the log entries of its joined lines)

    # what a clean run is ---------------------------------------------------------------------------------
    def _is_clean(self, run: _Run) -> bool:
        """Does the run need nothing: its lines (``_judge``: those held, after those spooled), and how it ends: with a
        terminal event (its record's status says no other), no call left open, no assistant message still wanted?"""
        if not self._judge(run):
            return False
        verdict = run.verdict
        assert verdict is not None
        if verdict.seq == 1 or run.tail_open or verdict.terminal is None:
            return False
        status = run.record.get("status") if run.record is not None else None
        if terminal_of_status(status) not in (None, verdict.terminal):
            return False  # (its end and its record's status disagree: check_runs says so)
        return self.config["mode"] != "heal" or not (verdict.open or verdict.wants_message)

    def _judge(self, run: _Run) -> bool:
        """What a clean run asks of its lines, asked of those the run holds, after what its lines before them left
        (``run.verdict``; what only its end can say: ``_is_clean``): column by column (C-level maps and list operations;
        no Python step per event)."""
        verdict = run.verdict
        if verdict is None:
            verdict = run.verdict = _Verdict(run.record)
        heads: list[Any] = run.heads if run.record is None or run.spool is not None else run.heads[1:]
        rid = run.run_id
        if rid is None or (run.record is not None and run.record.get("runId") != rid):
            return False
        n = len(heads)
        if not n:
            return True  # (a run record alone so far)
        columns = self._judged(run, heads, synthetic_true=True)
        if columns is None:
            return False
        seqs, types, stamps, size = columns
        first = verdict.seq
        if seqs != list(range(first, first + n)) or verdict.size not in (0, size) or verdict.terminal is not None:
            return False  # (seq numbers not 1..n; stamps of two lengths; an event after the run's end)
        if verdict.stamp is not None and stamps[0] < verdict.stamp:
            return False
        if not self._shaped(types, stamps, types[:1] if first == 1 else [], types[-1:] if types[-1] in TERMINAL_TYPES else []):
            return False
        if self.config["mode"] == "heal":
            # no other heal rule fires: drop_resume_duplicates / order_sidechains (ids, sidechains), dedupe (the event
            # before the run; a run record in between resets it), pair_tool_calls, ...
            if first == 1 and run.record is None and (self.previous is _UNKNOWN or self.previous == 1):
                return False
            if not self._paired(heads, types, verdict):
                return False
        verdict.seq, verdict.stamp, verdict.size = first + n, stamps[-1], size
        if types[-1] in TERMINAL_TYPES:
            verdict.terminal = types[-1]
        return True

    def _shaped(self, kinds: list[Any], stamps: list[Any], firsts: list[Any], lasts: list[Any]) -> bool:
        """Are runs (their types ``kinds`` and timestamps ``stamps``, joined; ``firsts``: the first type of each that
        begins in them, ``lasts``: the last type of each that ends in them) shaped so that check_runs has nothing to say,
        nor alias, ensure_run_started and ensure_terminal: no type an alias renames, each begins with run_started, its
        only one, and has one terminal event, its last; and check_order nothing (its quick test: the stamps of one
        shape, sorted as text)?"""
        return self.alias_table.keys().isdisjoint(kinds) and sorted(stamps) == stamps \
            and firsts.count(RUN_STARTED) == len(firsts) == kinds.count(RUN_STARTED) and set(lasts) <= TERMINAL_TYPES \
            and kinds.count(RUN_COMPLETED) + kinds.count(RUN_FAILED) == len(lasts)

    def _judged(self, run: _Run, heads: list[Any], *, synthetic_true: bool) -> tuple[list[Any], list[Any], list[Any], int] | None:
        """The seq, type and timestamp columns of the lines the run holds, and the stamps' length, when every line
        passes the checks of one line alone (``_lines_pass``): judged batch by batch as they came (``run.fine``), else
        now, from its heads. None if not."""
        if run.fine:  # each line passed in its batch (``_fine``, which takes no ``synthetic`` in heal); all of this runId
            return run.seqs, run.types, run.stamps, run.size
        fields = _run_fields(heads, run.run_id)
        if fields is None:
            return None
        seqs, types, stamps = _columns(fields)
        size = _lines_pass(fields, types, stamps, heal=self.config["mode"] == "heal", synthetic_true=synthetic_true)
        return (seqs, types, stamps, size) if size else None

    def _paired(self, heads: list[Any], types: list[Any], verdict: _Verdict) -> bool:
        """pair_tool_calls finds nothing in the lines held: each result has its call; synthesize_assistant_message
        and ensure_terminal find an assistant message and a terminal event (no call open then). The usual lines
        judged with list operations (each call answered by the next tool event, ``_calls_answered``), any other
        by the exact walk (``_calls_paired``)."""
        if not verdict.open and _UNANSWERED not in types and _calls_answered(heads, types):
            if "assistant_message" in types:
                verdict.wants_message = False
            return True
        return self._calls_paired([h for h in heads if h.type in _JUDGED], verdict) \
            and len(verdict.open) <= self._holds[0]  # (open calls held: bounded too)

    # the repair lane: runs whose only faults are aliased types, wrong seq numbers and a missing end -------
    def _repair(self, run: _Run) -> Batch | None:
        """A run the alias, ensure_terminal and renumber rules fix alone (and nothing else would touch): its
        lines as heal writes them, and the log lines those three rules write, made here by the rules' own
        code (``log_repair``, ``InsertTerminalEvent.end_run``, renumber's ``stretches`` over the seq numbers only).
        The batch goes on marked clean; each of the three stages logs its own lines when it passes, and
        ``heal_summary`` adds the heal record. None: the run goes the slow way. A run of more than ``SLOW_LINES``
        lines goes the slow way too: there its rules log a piece of ``SLOW_LINES`` lines at a time (alias's lines of
        the first piece, renumber's stretches that end in it, then the next piece's), where this lane logs each rule's
        lines for the whole run at once: another order of the same log."""
        heads: list[Any] = run.heads
        n = len(heads)
        rid = run.run_id
        if run.record is not None or run.tail_open or not n or rid is None or n > SLOW_LINES or run.spool is not None:
            return None
        columns = self._judged(run, heads, synthetic_true=False)
        if columns is None:
            return None
        seqs, types, stamps, _ = columns
        if UNSET in seqs or True in map(operator.eq, seqs, seqs[1:]) or sorted(stamps) != stamps:
            return None
        if self.previous is _UNKNOWN or self.previous == seqs[0]:
            return None  # dedupe could compare the first event with the one before the run
        resolved = list(map(self.alias_table.get, types, types))
        if resolved[0] != "run_started" or _UNANSWERED in resolved:
            return None
        terminals = resolved.count("run_completed") + resolved.count("run_failed")
        if terminals > 1 or (terminals == 1 and resolved[-1] not in TERMINAL_TYPES):
            return None
        if not _calls_answered(heads, resolved):  # type: ignore[arg-type]
            return None
        source = self.source or "<stdin>"
        pieces = run.pieces
        run_raws: list[bytes] = pieces_column(pieces, "raws")
        repairs: dict[str, list[dict[str, Any]]] = {}  # each rule's heal-log lines, which it logs as the run passes
        counts: dict[str, int] = {}  # or (no heal log is written) only how many, which heal_summary takes
        logged = self.config["repair_log"]
        aliased = list(itertools.compress(range(n), map(operator.is_not, resolved, types)))  # (no type is its own alias)
        where = Batch.folded(source, n, pieces=pieces) if logged else None  # (where its lines were, for the log)
        if where is not None:
            log = _Log()
            for i in aliased:
                log_repair(log, _ALIAS, "changed", f"type {types[i]!r} is an alias of {resolved[i]!r}",  # type: ignore[arg-type]
                           where, i, run_id=rid, field="type", original=types[i], value=resolved[i], seqBefore=seqs[i])
            repairs[_ALIAS] = log.take("repairs")
        elif aliased:
            counts[_ALIAS] = len(aliased)
        invented: list[dict[str, Any]] = []
        if not terminals:
            facts = Run(rid, None, source)
            facts.state.update(terminal=False, last=stamps[-1])
            self._terminal.run = facts
            invented = self._terminal.end_run(facts)
            self._terminal.run = None
            ended = self._terminal.take("repairs")  # (one line: cheap to make, counted when no log is written)
            if logged:
                repairs[_TERMINAL] = ended
            elif ended:
                counts[_TERMINAL] = len(ended)
        # renumber, on the seq numbers alone (the rule's own ``stretches``): the invented end is numbered, no repair
        numbers = [*seqs, *(e["seq"] for e in invented)]
        wrong, shifted, left = stretches(numbers, 1, None, n.__le__, _nowhere if where is None else where.position)
        if left is not None:
            shifted.append(left)  # (the run ends here)
        if logged:
            renumber = self._renumber
            renumber.run = Run(rid, None, source)
            for stretch in shifted:
                renumber.log_stretch(stretch)
            renumber.run = None
            repairs[_RENUMBER] = renumber.take("repairs")
        elif shifted:
            counts[_RENUMBER] = len(shifted)
        if not any(repairs.values()) and not counts:
            return None
        raws: list[bytes | None] = list(run_raws)
        last: dict[str, Any] | None = None
        retyped = set(aliased)
        renumbered = {k for k in wrong if k < n}
        changed = sorted(retyped | renumbered)
        lines = [run_raws[i] for i in changed]
        # orjson's reading of each, no search for a number it rounded in every line: a line ``dumps`` writes back as it
        # is holds none (it would be written back as the double it became), so only one written back otherwise is
        # read again, exactly, below
        events = exactjson.loads_lines(lines, exact=False)
        as_read = _written_back(events, lines)  # (then each line is: no line need be written back alone)
        for i, event in zip(changed, events, strict=True):
            raw = run_raws[i]
            if not as_read and exactjson.dumps(event) != raw:
                event = exactjson.loads(raw)  # (orjson's reading may have rounded a number: read exactly)
                if exactjson.duplicate_keys(raw, event):
                    return None  # the slow lane says so (E_JSON_DUPLICATE_KEY) when it writes the event anew
            # (changed in place, each key where it was: the event was read here, for this alone)
            if i in retyped:
                event["type"] = resolved[i]
                if i == n - 1:
                    last = event if i not in renumbered else {**event}
            if i in renumbered:
                event["seq"] = i + 1
            raws[i] = exactjson.dumps(event)
        if invented:  # (numbered on after the run; no place in the input)
            end: list[bytes | None] = [exactjson.dumps({**e, "seq": k}) for k, e in enumerate(invented, n + 1)]
            raws += end
            pieces = [*pieces, (Batch(source, None, end, [None] * len(end), [None] * len(end)), 0, len(end))]
        # its lines, and their line numbers (heal_summary places the run by them); the rest of where each was (offsets)
        # is made of the run's only if a stage reads it: the heal log's positions
        batch = Batch.folded(source, len(raws), pieces=pieces, raws=raws)
        batch.lines = [*pieces_column(run.pieces, "lines"), *[None] * len(invented)]
        batch.clean = (1, len(raws), (rid,))
        # dedupe saw the run's last event after alias and before renumber: the one after the run is compared with it
        # (its line as it came when alias left it: dedupe decodes it only if events follow)
        batch.lane = {"repairs": repairs, "counts": counts, "run": rid, "dedupe": last if last is not None else run_raws[-1]}
        return batch

    @staticmethod
    def _calls_paired(heads: list[Any], verdict: _Verdict) -> bool:
        """pair_tool_calls finds nothing: every result has its call, no call is open at a terminal event, nor an
        assistant message still wanted; the calls open and answered after ``heads`` are left in ``verdict``."""
        open_calls, answered = verdict.open, verdict.answered
        for head in heads:  # only the events that matter: calls, results, messages, terminal events
            etype = head.type
            if etype in TERMINAL_TYPES:
                if open_calls or verdict.wants_message:
                    return False
                continue
            if etype == "assistant_message":
                verdict.wants_message = False
                continue
            payload = head.payload
            cid = next((v for v in (payload.callId, payload.toolCallId, payload.id) if v.__class__ is str and v), None)
            if cid is None:
                return False  # (a call or result without an id is paired by its tool name: pair_tool_calls judges it)
            if etype == _CALLED:
                if cid in answered:  # (the call written again, or a new call of the id: pair_tool_calls' call_print tells)
                    return False
                open_calls.add(cid)
            elif etype == _UNANSWERED or cid in open_calls:
                open_calls.discard(cid)
                answered.add(cid)
            elif cid not in answered:
                return False
        return True


def _numbered(seqs: list[Any], runs: list[tuple[int, int]]) -> bool:
    """Are the seq numbers of each of ``runs`` (lines ``[a, b)``, one after the other) 1..n? One comparison for all."""
    return seqs[runs[0][0]:runs[-1][1]] == list(itertools.chain.from_iterable([range(1, b - a + 1) for a, b in runs]))


def _tool_events(types: Sequence[str]) -> list[bool]:
    """Which of ``types`` are a tool call's or result's (a mask for ``itertools.compress``)."""
    return list(map(_TOOLS.__contains__, types))


def _calls_answered(heads: list[Any], types: Sequence[str], tools: list[bool] | None = None) -> bool:
    """pair_tool_calls finds nothing, the simple way: each call named by a ``callId`` and answered by the next
    tool event with the same id (``types`` with aliases resolved; ``tools``: their ``_tool_events`` when known)."""
    mask = _tool_events(types) if tools is None else tools
    tool_types = list(itertools.compress(types, mask))
    if not tool_types:
        return True
    half = len(tool_types) // 2
    if len(tool_types) % 2 or tool_types[0::2].count(_CALLED) != half or _CALLED in tool_types[1::2]:
        return False
    cids = list(map(_CALL_ID, itertools.compress(heads, mask)))  # the tool events' only
    calls = cids[0::2]
    if calls != cids[1::2] or set(map(type, calls)) != _STR or "" in calls:
        return False
    return len(set(calls)) == half


def _written_back(events: list[Any], raws: list[bytes]) -> bool:
    """Does orjson write each of ``events`` back as the line of ``raws`` it was read from? Asked of them all at once, in
    one ``dumps`` of the list: its text is the texts of the events joined by commas, in brackets, as the lines joined
    so are when each is its event's (each line is one JSON value: the same text is the same values, cut at the same
    places). False also when orjson does not write them (nested too deep in the list, an exact number, ...)."""
    try:
        return orjson.dumps(events) == b"[" + b",".join(raws) + b"]"
    except orjson.JSONEncodeError:
        return False


def _nowhere(k: int) -> dict[str, Any]:
    """No input position: a repair only counted, never logged."""
    return {}


class _Log:
    """Collects what ``log_repair`` emits (the screen logs for the alias rule, which logs it when the run passes)."""

    def __init__(self) -> None:
        self._side: dict[str, list[dict[str, Any]]] = {}

    def emit(self, port: str, record: dict[str, Any]) -> None:
        self._side.setdefault(port, []).append(record)

    def take(self, port: str) -> list[dict[str, Any]]:
        return self._side.pop(port, [])


def _run_fields(heads: list[Any], rid: str) -> dict[str, tuple[Any, ...]] | None:
    """The fields of a run judged from its heads (not batch by batch), a column each (``_fields``): None when a line
    could not be decoded, names another run, or is a record."""
    n = len(heads)
    if None in heads:
        return None
    fields = _fields(heads)
    if fields["runId"].count(rid) != n or fields["record"].count(UNSET) != n:
        return None
    return fields


def _fields(heads: list[Any]) -> dict[str, tuple[Any, ...]]:
    """Every field of ``heads`` (decoded lines, none None, all of one type: ``_Head`` or ``_Line``) as a column, by
    field name: one C-level ``astuple`` per head and one transposition, about half the instructions of a C-level
    attrgetter map per field."""
    if not heads:
        return dict.fromkeys(_FIELDS, ())
    return dict(zip(heads[0].__struct_fields__, zip(*map(astuple, heads), strict=True), strict=True))


def _lines_pass(fields: dict[str, tuple[Any, ...]], types: list[Any], stamps: list[Any], *, heal: bool,
                synthetic_true: bool) -> int:
    """The one definition of what a clean run asks of each of its lines alone: a non-empty type, a timestamp and
    a payload object; no ``synthetic`` (``"synthetic": true`` too when ``synthetic_true``); for heal no id, no
    ``$origin``, no sidechain; each timestamp valid and no leap second, and all of one shape (UTC, with ``T``, one length:
    then text order is time order). 0 when a line fails; else the stamps' length."""
    payloads = fields["payload"]
    if UNSET in types or "" in types or UNSET in payloads:
        return 0
    try:
        text = "\n".join(stamps)
    except TypeError:  # a line without a timestamp (the decoder gives a str or UNSET)
        return 0
    n = len(types)
    synthetic = fields["synthetic"]
    if synthetic.count(UNSET) != n and not (synthetic_true and all(v is UNSET or v is True for v in synthetic)):
        return 0
    if heal and (fields["id"].count(UNSET) != n or fields["origin"].count(UNSET) != n):
        return 0
    if heal and True in map(_PAYLOAD_SIDECHAIN, payloads):
        return 0
    shape = _stamps_shape(text, stamps)
    if shape is None:
        return 0
    if shape:  # (every shape of _SHAPES is in UTC, ``T`` at 10: text order is time order)
        return len(shape)
    return len(stamps[0]) if same_shape_utc(stamps, text) else 0


def _columns(fields: dict[str, tuple[Any, ...]]) -> tuple[list[Any], list[Any], list[Any]]:
    """The seq numbers, types and timestamps of ``fields`` (``_fields``), a list each."""
    return list(fields["seq"]), list(fields["type"]), list(fields["timestamp"])


def _stamps_shape(joined: str, stamps: Sequence[str]) -> str | None:
    """None unless is_timestamp for each (``joined``: the stamps joined by newlines) and none is a leap second
    (23:59:60: rare, and its run goes the slow way, where the stages judge it); else their one shape of
    ``_SHAPES`` (digits as 0), or "" for any other mix. The usual run's stamps are all of one shape
    (``2026-01-01T00:00:00.000Z``, digits aside): then checked with a handful of C-level string operations (the
    shape of all of them at once; the hours, minutes and seconds in range, so no second 60; each day once through
    the calendar); any other run with the pattern is_timestamp uses first, once per line of the joined text."""
    n = len(stamps)
    shape = stamps[0].translate(_DIGITS_AS_ZERO)
    if shape in _SHAPES and joined.translate(_DIGITS_AS_ZERO) == "\n".join([shape] * n):
        step = len(shape) + 1  # each stamp of that shape (a newline in one would make the text longer)
        if joined[14::step].strip("012345") or joined[17::step].strip("012345"):  # tens of minutes, of seconds
            return None
        if joined[11::step].strip("01") and not set(map(_HOUR, stamps)) <= _HOURS:
            return None
        day = stamps[0][:10]
        if joined.count(day) == n:  # all of one day (in this shape a day can only match where a stamp starts)
            return shape if is_timestamp(day + "T00:00:00Z") else None
    else:
        shape = ""
        if joined.count("\n") != n - 1 or _STAMPS.fullmatch(joined) is None:  # a newline inside a stamp is no stamp
            return None
    return shape if all(is_timestamp(day + "T00:00:00Z") for day in set(map(_DAY, stamps))) else None


def _names_its_input(batch: Batch) -> bool:
    """Is ``batch`` the source record ``read`` sends before each input when it reads several, naming that input?
    It changes no line's source (``parse`` relabels nothing after it), so the input's runs may take the fast lane."""
    events = batch.events
    return events is not None and len(events) == 1 and marks_input(events[0], batch.source)


def _probe(raw: bytes) -> _Head | None:
    """What the slow lane will see of a line the fast decoder refused: its record kind and runId, when it is
    a JSON object at all (a line parse drops is no run boundary)."""
    try:
        value = exactjson.loads(raw)
    except exactjson.JSONDecodeError:
        return None
    if type(value) is not dict:
        return None
    return _Head(runId=value.get("runId", UNSET), record=value.get("$record", UNSET))


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
