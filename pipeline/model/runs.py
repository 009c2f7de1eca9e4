"""Runs in a stream: where one run ends and the next begins, and a base for per-run transforms.

A run starts at a run record (``{"$record": "run", ...}``), at the first record of each input
source (file) and at ``read``'s mark before each of several inputs (``{"$record": "source", ...}`` naming the input
its records are read as: the same file read twice is two inputs of one name), and wherever an event names a different ``runId`` than the run it follows. Events without a ``runId`` belong to the
run they sit in (``starts_run`` reads the canonical ``runId``; walk and diff, given ``run_id_named``, a flows
journal's ``run_id`` too). Other reserved records (``$record`` of another kind) travel with their run but are
not events: per-run transforms pass them through untouched.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, ClassVar

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch, Column, first_line, invented
from replay.pipeline.engine.stage import Transform
from replay.pipeline.model.records import RECORD_KEY, RUN_DROPPED, RUN_RECORD, SOURCE_RECORD, has_records, is_record
from replay.pipeline.model.repairs import log_repair

_STR = {str}

Input = tuple[Any, int]  # an input: its name (a batch's ``source``), and how many of read's marks of that name came before it


@dataclass
class Run:
    """What a per-run transform knows about the run it is in."""

    run_id: str | None
    facts: dict[str, Any] | None  # the run record, when the stream has one
    source: str
    events: int = 0  # events seen so far in this run
    state: dict[str, Any] = field(default_factory=dict)  # the stage's own per-run notes
    input: Input | None = None  # the input it is in (``Inputs.at``; the same file read twice is two inputs), when told
    # Where it ends, set as it ends (before ``end_run``): the line of its input the run after it begins at, when known
    # (lines of the run left out lie before it); ``last_of_input``: no run of its input follows (the input ends with it)
    ends_before: int | None = None
    last_of_input: bool = False

    @property
    def declared(self) -> bool:
        return self.facts is not None


def marks_input(record: Any, source: str) -> bool:
    """Is ``record`` (read from ``source``; any JSON value a document held) read's mark before the input it is read as:
    another input of that name begins after it (the same file read again, too)?"""
    return type(record) is dict and record.get(RECORD_KEY) == SOURCE_RECORD and record.get("source") == source


RECENT_RUNS = 4096  # how many runs back a runId that comes again is seen coming back (memory stays bounded)
# The id of every run this process's graphs read, when kept (``keep_every_id``: a piece of a file cut across processes,
# ``engine.forked_pieces``, says which runs it had, so the command can tell none comes back in another piece); None: not kept.
_every_id: set[Any] | None = None


def keep_every_id() -> set[Any]:
    """From now on, every run id ``RecentIds`` sees in this process is kept (unbounded: for a piece's process only)."""
    global _every_id
    _every_id = set()
    return _every_id


class RecentIds:
    """The run ids of the last ``RECENT_RUNS`` runs of an input (at least; at most twice as many), to see one come back
    after another run (runs written interleaved): ``check_run_ids`` warns of it, and the screen sends such a run the
    slow way, where that stage reads it. A run of the same id right after the one before (a run record keeps them
    apart, as heal writes it) comes back after no other run."""

    def __init__(self, size: int = RECENT_RUNS) -> None:
        self.size = size
        self._ids: dict[Any, None] = {}  # (in the order last seen: the oldest first)
        self.last: Any = None  # the id of the run before

    def comes_back(self, run_id: Any) -> bool:
        """Was ``run_id`` the id of a recent run, but not of the run right before?"""
        return run_id in self._ids and run_id != self.last

    def any_come_back(self, run_ids: list[Any]) -> bool:
        """Does one of ``run_ids`` (of runs one after another, the first right after the last run added) come back?
        (Each must be another than the one before it too.)"""
        if not self._ids.keys().isdisjoint(run_ids[1:]) or (run_ids[0] in self._ids and run_ids[0] != self.last):
            return True
        return len(set(run_ids)) != len(run_ids)

    def add(self, run_id: Any) -> None:
        """The run of ``run_id`` ended: the latest seen."""
        ids = self._ids
        ids.pop(run_id, None)
        ids[run_id] = None
        self.last = run_id
        self._trim()
        if _every_id is not None:
            _every_id.add(run_id)

    def add_all(self, run_ids: list[Any]) -> None:
        """Runs of these ids ended, in this order, each another than the one before (``any_come_back`` said no)."""
        if run_ids:
            self._ids.pop(run_ids[0], None)
            self._ids.update(dict.fromkeys(run_ids))
            self.last = run_ids[-1]
            self._trim()
            if _every_id is not None:
                _every_id.update(run_ids)

    def _trim(self) -> None:
        if len(self._ids) > 2 * self.size:  # (the oldest go, a size at a time: C-level, not one by one)
            self._ids = dict.fromkeys(list(self._ids)[-self.size:])


class Inputs:
    """Which input a stream's records come from, as they pass a stage: the one place a stage learns that another input
    begins (``begins``: read's mark, ``marks_input``) and asks which input it is in (``at``). The same file read twice
    is two inputs of one name: the records of a name are of its next input from its mark on."""

    __slots__ = ("_marks",)

    def __init__(self) -> None:
        self._marks: dict[Any, int] = {}  # per name: the marks of it that came

    def at(self, source: Any) -> Input:
        """The input the records of ``source`` are of now."""
        return source, self._marks.get(source, 0)

    def begins(self, record: dict[str, Any], source: str) -> bool:
        """Does another input of ``source`` begin at ``record`` (read's mark before it)? If so, the records of ``source``
        are of that input from here on (``at``)."""
        if marks_input(record, source):
            self.begin(source)
            return True
        return False

    def begin(self, source: str) -> None:
        """Another input of ``source`` begins here (``read`` sends its mark): the records of ``source`` are of it."""
        self._marks[source] = self._marks.get(source, 0) + 1


def of_no_run(record: dict[str, Any]) -> bool:
    """Is ``record`` the heal record of a run heal dropped whole (``runDropped``)? It comes after other runs, with its
    own run's id, and is none of theirs: a stage that gives records to runs gives it to none."""
    return record.get(RUN_DROPPED) is True


def input_ends(record: dict[str, Any], run: Run | None, source: str) -> bool:
    """Does an input end before ``record`` (read from ``source``), given the run the stream is in: is it read's mark of
    the next input (``marks_input``; the same file read again, too), or a record of another source than the run's? The
    run in progress ends there (``starts_run``), as the input's; a mark begins no run of its own."""
    return marks_input(record, source) or (run is not None and run.source != source)


def names_run(rid: Any) -> bool:
    """Does a runId of ``rid`` name a run (a string, not empty)? Any other is none: ``fill_run_id`` names its event."""
    return isinstance(rid, str) and bool(rid)


def run_id_named(record: dict[str, Any]) -> str | None:
    """The run a record names: its ``runId`` (canonical), else its ``run_id`` (flows-style), the first that is a
    non-empty string; else None (a record of the run it sits in). Walk and diff tell the runs of a journal apart by
    it."""
    for key in ("runId", "run_id"):
        rid = record.get(key)
        if names_run(rid):
            return rid
    return None


ARTIFACT_EVENTS = "$.events["  # how the pointer of an artifact's event begins (``artifacts.document_items``)


RunIdReader = Callable[[dict[str, Any]], Any]  # the run an event names (``run_id_named``); None: its canonical runId


def starts_run(record: dict[str, Any], run: Run | None, source: str, run_id: RunIdReader | None = None) -> bool:
    """Does ``record`` (read from ``source``) open a new run, given the run the stream is in? The one rule of where a
    run begins: ``run_id`` reads the run an event names, its canonical ``runId`` unless given (walk and diff give
    ``run_id_named``: a flows journal's ``run_id`` too)."""
    if is_record(record):  # (whatever its kind: ``"$record": null`` is a record too)
        return record.get(RECORD_KEY) == RUN_RECORD or input_ends(record, run, source)
    if run is None or run.source != source:
        return True
    rid = record.get("runId") if run_id is None else run_id(record)
    return names_run(rid) and run.run_id is not None and rid != run.run_id


def of_artifact_run(record: dict[str, Any], run: Run | None, pointer: Any) -> bool:
    """Is ``record`` an event of an artifact (at its pointer ``$.events[3]``) read as a stream, in the run the
    artifact's run record began? It begins no run whatever runId it names: an artifact is one run (validate says so
    of an event naming another)."""
    return run is not None and type(pointer) is str and pointer.startswith(ARTIFACT_EVENTS) and not is_record(record)


def runid_spans(rids: list[Any]) -> list[tuple[int, int]] | None:
    """The stretches of one runId in a batch of events each naming its run: ``(start, end)`` where the runId
    changes (where ``starts_run`` may begin a run); None when an event names none (no non-empty string)."""
    if set(map(type, rids)) != _STR or "" in rids:
        return None
    cuts = itertools.compress(range(1, len(rids)), map(operator.ne, rids, rids[1:]))
    return list(itertools.pairwise([0, *cuts, len(rids)]))


def run_id_from_source(source: str) -> str:
    """A run id for a journal that names none: its file name without suffixes (``session.jsonl`` -> ``session``,
    ``<stdin>`` -> ``stdin``). ``fill_run_id`` names such a run's events so, and the dialects their runs."""
    name = PurePath(source).name.strip("<>") or "stdin"
    for suffix in (".gz", ".jsonl", ".ndjson", ".json", ".traj"):
        name = name.removesuffix(suffix)
    return name or "run"


def run_id_of(run: Run) -> str:
    """The runId an event invented for ``run`` carries: the run's own, else its journal's (as ``fill_run_id`` gives
    the run's other events; a run record without a runId and no events has none to take it from)."""
    return run.run_id if run.run_id is not None else run_id_from_source(run.source)


def name_run(run: Run, event: dict[str, Any], run_id: RunIdReader | None = None) -> None:
    """A run its record left without a runId takes the first non-empty runId one of its events names (and keeps
    it: an event naming another id after that begins another run, ``starts_run``; ``run_id`` reads it as there)."""
    if run.run_id is None:
        rid = event.get("runId") if run_id is None else run_id(event)
        if names_run(rid):
            run.run_id = rid


def prelogged(stage: Transform, batch: Batch) -> None:
    """The log lines the screen made for ``stage``'s rule on a run it repaired, logged as the batch passes."""
    if batch.lane is not None:
        for run in lane_runs(batch):
            for entry in run.lane["repairs"].get(stage.name, ()):  # type: ignore[index]
                stage.emit("repairs", entry)


def lane_runs(batch: Batch) -> list[Batch]:
    """The runs the screen repaired that ``batch`` (its ``lane``) holds, each as the batch the screen made of it: the
    batch itself, or the runs it sent on together (``repaired_together``)."""
    assert batch.lane is not None
    return batch.lane.get("runs") or [batch]


def repaired_together(runs: list[Batch]) -> Batch:
    """Runs the screen repaired (each a batch of its own, with its ``lane``: its repairs counted, not logged) as one
    batch of their lines, to go through the stages as one; ``lane["runs"]`` holds them, for a stage that takes them
    one by one (``heal_summary``: where each lies, its heal record after it), and ``lane["dedupe"]`` the last one's."""
    whole = [(run, 0, len(run)) for run in runs]
    batch = Batch.folded(runs[0].source, sum([count for _, _, count in whole]), pieces=whole)  # (columns made if read)
    batch.clean = (len(runs), sum([run.clean[1] for run in runs if run.clean is not None]),
                   tuple(rid for run in runs if run.clean is not None for rid in run.clean[2]))
    batch.lane = {"runs": runs, "dedupe": runs[-1].lane["dedupe"]}  # type: ignore[index]
    return batch


class RunScoped(Transform):
    """Base for transforms that reason per run.

    Subclasses override ``begin_run``, ``on_event``, ``on_record`` and ``end_run``; from ``on_event`` they may call
    ``insert_before``, ``drop``, ``hold``, ``take_out`` and ``batch.replace``. Records returned by ``end_run`` are
    placed at the run's end: before the next run's first record, or in ``flush`` at end of stream.
    Held events (``hold``) are put back after whatever ``end_run`` adds, or before the run's next event or record.
    Records taken out (``take_out``) wait for the stage itself to put them back (``put_back``), mid-run or at its end.
    While ``end_run`` runs, ``run_follows`` says why the run ends: another run of its input begins right
    after it (True), or it ends with its input, its batch (``closes_run``) or the stream (False).
    Runs stay as the input cut them: when a stage dropped every event of the runs between two runs of one id,
    a run record goes before the second (``_keep_apart``, logged as the stage's repair), or they would touch.
    """

    ports: ClassVar[tuple[str, ...]] = ("errors", "repairs")
    screened_lane: str | None = "passes"
    notice_code: ClassVar[str | None] = None  # the catalogue code of this rule's notices (``notice``), beside its rule

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.run: Run | None = None
        self._before: dict[int, list[Column]] = {}
        self._drop: set[int] = set()
        self._held: list[Column] = []
        self.run_source = "<end>"
        self.run_follows = False
        self.inputs = Inputs()  # which input each run is of (``Run.input``)
        # Runs kept apart: the last run this stage passed an event of (its input and id, or the last line of a
        # clean batch, read only when needed), and the ids of the runs after it that this stage dropped whole.
        self._kept: tuple[str, Any] | Batch | None = None
        self._gone: list[Any] = []
        self._dropped = 0  # events of the run in progress dropped here
        # (column, k, vanished) where a run began on an event of this batch, after the first k columns inserted before
        # it (the end of the run before), and whether every event of the run before was dropped here: where this stage
        # drops that event, or the run before vanished, its output is cut (``_apply``)
        self._starts: list[tuple[int, int, bool]] = []

    # hooks --------------------------------------------------------------------------------
    def begin_run(self, run: Run) -> None:
        """A run begins (its run record, if any, is in ``run.facts``)."""

    def on_event(self, batch: Batch, i: int, event: dict[str, Any]) -> None:
        """One event of the current run."""

    def on_record(self, batch: Batch, i: int, record: dict[str, Any]) -> None:
        """A reserved record that begins no run (a heal record, say), in the run in progress. By default, while events
        are held back (``hold``) it is held after them: it comes back with them, in its place after them (a terminal
        event held for what goes before the run's end, then a heal record of an earlier heal: both after it)."""
        if self._held and record.get(RECORD_KEY) != RUN_RECORD:
            self.hold(batch, i)

    def on_run_record(self, batch: Batch, i: int, record: dict[str, Any]) -> None:
        """The run record that begins the run (``run.facts``), at column ``i`` of ``batch``, right after ``begin_run``:
        a stage may take it out here (``take_out``) and put it back, changed, before the run's first event."""

    def end_run(self, run: Run) -> list[dict[str, Any]]:
        """The run ended: records to add at its end."""
        return []

    def at_pause(self, run: Run) -> list[Column]:
        """The input may wait after the batch in hand (``Batch.pause``: a live writer is silent, `tail -f log |`):
        what the stage holds back looking ahead in ``run`` is decided now, with what has come, as if the run could end
        here (it goes on after), and the columns given back go at the batch's end. A file never pauses. Nothing by
        default."""
        return []

    # tools for subclasses ---------------------------------------------------------------------
    def insert_before(self, i: int, record: dict[str, Any]) -> None:
        self._before.setdefault(i, []).append(invented(record))

    def drop(self, i: int) -> None:
        self._drop.add(i)
        self._dropped += 1

    def hold(self, batch: Batch, i: int) -> None:
        """Take event ``i`` out of the stream for now; it comes back later in the same order."""
        self._held.append(batch.column(i))
        self._drop.add(i)

    def take_out(self, batch: Batch, i: int) -> Column:
        """Take record ``i`` out of the stream, with its bytes, position and join (``Batch.column``), until the stage puts
        it back itself (``put_back``): unlike ``hold``, nothing brings it back on its own, so a stage that takes some out
        must bound what it keeps and put everything back by the run's end (``end_run``)."""
        self._drop.add(i)
        return batch.column(i)

    def put_back(self, columns: list[Column], i: int | None = None) -> None:
        """Put records taken out (``take_out``, or made anew from those) back in the stream: before record ``i`` of the
        batch in hand, or, with no ``i``, as held ones come back (``hold``): before the run's next event or record, or
        at its end after what ``end_run`` adds."""
        if i is None:
            self._held.extend(columns)
        else:
            self._before.setdefault(i, []).extend(columns)

    def repair(self, action: str, message: str, batch: Batch | None = None, i: int | None = None,
               **fields: Any) -> None:
        """Log one repair by this stage's rule, with the run and the input position when known."""
        run = self.run
        source = fields.pop("source", run.source if run else None)
        log_repair(self, self.name, action, message, batch, i, run_id=run.run_id if run else None,
                   source=source, **fields)

    def notice(self, message: str, batch: Batch | None = None, i: int | None = None, **fields: Any) -> None:
        """Log an observation (changed nothing) on the notices port, with the rule's ``notice_code``."""
        if self.notice_code is not None:
            fields["code"] = self.notice_code
        self.repair("reported", message, batch, i, port="notices", **fields)

    # the transform ----------------------------------------------------------------------------
    def on_events(self, batch: Batch, start: int, end: int) -> None:
        """Events ``start``..``end``-1 of the batch, all of the current run and none a record.

        The default calls ``on_event`` for each, with ``run.events`` counting the events before it;
        a rule overrides this to look at a whole stretch at once (comprehensions instead of calls).
        """
        run = self.run
        assert run is not None
        events = batch.events
        assert events is not None
        on_event = self.on_event
        for i in range(start, end):
            if self._held:  # an event held back comes back before the run's next event
                self._before.setdefault(i, []).extend(self._held)
                self._held = []
            on_event(batch, i, events[i])
            run.events += 1

    def __call__(self, batch: Batch) -> Batch | list[Batch]:
        if batch.clean is not None:  # whole runs that need nothing (the screen's lane): the run in progress ends here
            if self.run is not None:
                self._ends(self.run, batch.at("lines", 0) if len(batch) and batch.source == self.run.source else None,
                           batch.source != self.run.source)
            tail = self.close_run()
            prelogged(self, batch)
            self._kept, self._gone = batch, []  # (no run in it needs keeping apart: the screen's ``_near`` sends those slow)
            return [tail, batch] if tail is not None else batch
        if batch.closes_run:  # the run ends with this batch: close it now, not at the next run's first record
            out = self._call(batch)
            if self.run is not None:  # (another run of its input follows: where, when the screen knew it)
                self._ends(self.run, batch.ends_before, False)
            tail = self.close_run()
            if tail is None:
                return out
            tail.ends_as(batch)  # what the run's end adds is still the run's: the next stage closes it after that
            parts: list[Batch] = list(out) if isinstance(out, list) else [out]
            for part in parts:  # (``batch`` itself may be one)
                part.closes_run = False
            return [*parts, tail]
        return self._call(batch)

    def _call(self, batch: Batch) -> Batch | list[Batch]:
        events = batch.events
        assert events is not None
        source = batch.source
        run = self.run
        # The usual batch: plain events, all of the run in progress. Two quick passes decide it.
        if (run is not None and run.run_id is not None and run.source == source and events
                and [e.get("runId") for e in events].count(run.run_id) == len(events)
                and not has_records(events)):
            self._events(batch, 0, len(events))
            return self._apply(batch, self._paused(batch))
        prefix: Batch | None = None
        span = 0  # where the current stretch of plain events began
        for i, record in enumerate(events):
            rid = record.get("runId")
            if (
                RECORD_KEY not in record
                and run is not None
                and run.source == source
                and (rid is None or rid.__class__ is not str or not rid or run.run_id is None or rid == run.run_id)
            ):
                if rid.__class__ is str and rid and run.run_id is None:
                    self._events(batch, span, i)  # a rule may name the run meanwhile (fill_run_id)
                    span = i
                    if run.run_id is None:
                        run.run_id = rid
                    elif run.run_id != rid:  # it did, differently: this event begins another run
                        span = self._new_run(batch, i, record, rid, source)
                        run = self.run
                continue
            # Not a plain event of the current run: a record, or a new run begins here.
            self._events(batch, span, i)
            span = i + 1
            if starts_run(record, run, source):
                if i == 0 and run is not None and run.source != source:
                    # The previous run ended with its file: what it adds keeps that file as its source.
                    self._ends(run, None, True)
                    prefix = self.close_run()
                span = self._new_run(batch, i, record, rid, source)
                run = self.run
            else:
                self.on_record(batch, i, record)
        self._events(batch, span, len(events))
        out = self._apply(batch, self._paused(batch))
        if prefix is None:
            return out
        return [prefix, *out] if isinstance(out, list) else [prefix, out]

    def _paused(self, batch: Batch) -> list[Column]:
        """What ``at_pause`` gives back when the input may wait after ``batch`` inside a run (one the batch closes
        ends anyway)."""
        if not batch.pause or batch.closes_run or self.run is None:
            return []
        return self.at_pause(self.run)

    def _new_run(self, batch: Batch, i: int, record: dict[str, Any], rid: Any, source: str) -> int:
        """Close the run in progress at column ``i`` and open the one ``record`` begins; returns where
        the next stretch of plain events starts."""
        if self.run is not None and self.run.events == 0 and self.run.facts is None:
            self.run = None  # opened by a record that is no run (a file's source record): nothing to close
        before = self.run
        vanished = before is not None and 0 < before.events == self._dropped
        begins = self.inputs.begins(record, source)
        if before is not None:
            self._ends(before, None if begins else first_line(batch.lines, i), begins)
        self._finish_run(i, follows=not begins)
        if begins:  # another input (the same file read again, too): no run of the one before it is kept apart from
            self._kept, self._gone = None, []  # a run of this one (_keep_apart), whatever their names
        if not is_record(record):
            self._starts.append((i, len(self._before.get(i, ())), vanished))
        facts = record if record.get(RECORD_KEY) == RUN_RECORD else None
        self.run = Run(rid if names_run(rid) else None, facts, source, input=self.inputs.at(source))
        self._dropped = 0
        self.begin_run(self.run)
        if facts is not None:  # a run record keeps what follows it apart
            self.on_run_record(batch, i, record)
            self._kept, self._gone = None, []
        elif self._gone and not is_record(record):
            self._keep_apart(batch, i, source)
        return i + 1 if is_record(record) else i

    def _keep_apart(self, batch: Batch, i: int, source: str) -> None:
        """The run that begins at column ``i`` follows runs this stage dropped whole: when the run before those has
        its id, a run record goes first, or the two would touch and be read back as one run."""
        run = self.run
        assert run is not None
        kept = self._kept
        if isinstance(kept, Batch):  # whole runs the screen passed: the id of the last one
            raw = kept.at("raws", -1) if len(kept) else None
            last = exactjson.loads(raw) if raw is not None else {}
            kept = (kept.source, last.get("runId"))
        if run.run_id is None or kept != (source, run.run_id):
            return
        gone = ", ".join(repr(rid) for rid in dict.fromkeys(self._gone))
        self._kept, self._gone = None, []
        self.insert_before(i, {RECORD_KEY: RUN_RECORD, "runId": run.run_id})
        self.repair("inserted", f"a run record keeps run {run.run_id!r} apart from the run of that id before it: every "
                    f"event of the run between them ({gone}) was dropped, and the two would be read back as one run",
                    batch, i, field="$record", value=RUN_RECORD)

    def _ended(self, run: Run, added: int) -> None:
        """Note whether ``run`` is still there after this stage (an event kept or added, or its run record), for
        ``_keep_apart`` (``added``: what its end added)."""
        if run.events > self._dropped or added or run.facts is not None:
            self._kept, self._gone = (run.source, run.run_id), []
        elif run.events:
            self._gone.append(run.run_id)

    def _events(self, batch: Batch, start: int, end: int) -> None:
        if start >= end:
            return
        run = self.run
        assert run is not None
        if self._held:
            self._before.setdefault(start, []).extend(self._held)
            self._held = []
        before = run.events
        self.on_events(batch, start, end)
        run.events = before + (end - start)

    def flush(self) -> Batch | None:
        """At the end of the stream: the run in progress ends."""
        if self.run is not None:
            self._ends(self.run, None, True)
        return self.close_run()

    @staticmethod
    def _ends(run: Run, before: int | None, last_of_input: bool) -> None:
        """Note where ``run`` ends (``Run.ends_before``, ``Run.last_of_input``), as it is about to."""
        run.ends_before, run.last_of_input = before, last_of_input

    def close_run(self) -> Batch | None:
        """The run in progress ends here: what ``end_run`` adds, and the events held back."""
        tail: list[Column] = []
        if self.run is not None and self.run.events == 0 and self.run.facts is None:
            self.run = None  # opened by a record that is no run, and nothing followed
        if self.run is not None:
            self.run_source = self.run.source
            tail = self._ending(self.run)
            self.run = None
        return Batch.from_columns(tail, source=self.run_source) if tail else None

    def _finish_run(self, i: int, follows: bool) -> None:
        """The run in progress ends at column ``i``: ``follows``, another run of its input begins there (a batch holds
        one source), or the next input does (``Inputs.begins``)."""
        if self.run is None:
            return
        self.run_follows = follows
        try:
            cols = self._ending(self.run)
        finally:
            self.run_follows = False
        if cols:
            self._before.setdefault(i, []).extend(cols)

    def _ending(self, run: Run) -> list[Column]:
        """What ``run``'s end adds (``end_run``), then the events held back; whether the run is still there is noted."""
        cols = [invented(r) for r in self.end_run(run)] + self._held
        self._held = []
        self._ended(run, len(cols))
        return cols

    def _apply(self, batch: Batch, after: list[Column]) -> Batch | list[Batch]:
        """The batch with this stage's changes. Where a run began on an event dropped here, or after a run every event
        of which was dropped here, the batch is cut, the part before closing the run before: the stages after this one
        see where runs ended though they never see the run that vanished (else a record after it would join the run
        before it, and the events after a run record that names no run would take that record as theirs)."""
        starts, self._starts = self._starts, []
        if not (self._before or self._drop or after):
            return batch
        drop = self._drop
        parts = batch.rebuild_parts(self._before, drop, after, [(i, k) for i, k, vanished in starts if vanished or i in drop])
        self._before, self._drop = {}, set()
        return parts if len(parts) > 1 else parts[0]
