"""MapDialect: turns the records of another agent's log (Claude Code, Codex, OpenHands, mini-swe-agent) into canonical events.

Each input (source) is one run, unless its dialect's mapper says a record begins another (``starts_run``: a
Codex ``session_meta`` of another session, a mini-swe-agent trajectory in a file of one per line); runs of one
input never share an id (the second named after the file is ``<name>-2``, ...). Its records are mapped by the dialect's table
(``pipeline/model/dialects/<dialect>.py``) into a run record followed by events numbered 1..n, each
keeping its original record under ``$origin``, so nothing is lost and ``undialect`` can write the
dialect back. With ``dialect = "auto"`` each input's dialect is detected from its first records; an
input in replay's own format (or one nobody claims) passes through untouched, byte for byte.

The run record opens the run, so the events wait until the facts it opens with are known (the
user's prompt, which most logs write first; at most ``HOLD_EVENTS`` events). A whole JSON document
(OpenHands, mini-swe-agent) is held to its end, so its run record also says how the run ended; so are its
records piped as lines (``replay read x.traj.json | replay heal``), up to ``hold_bytes`` of them (the size
read takes a document whole up to, ``--max-line-bytes``): held in the same memory as the document read
whole, the run record is the one ``replay heal x.traj.json`` writes. Past it (a document that large is
refused when read whole) the run opens before its end is known, with a warning.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch, Column, duplicate_key_note, invented
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Transform
from replay.pipeline.io.journals import DEFAULT_MAX_LINE_BYTES
from replay.pipeline.model.dialects import AUTO, NAMES, ORIGIN_KEY, Mapper, mapper_for
from replay.pipeline.model.dialects.base import (
    UNKNOWN_TYPE,
    Mapped,
    Part,
)
from replay.pipeline.model.dialects.detect import CANONICAL, LOOKAHEAD, claims
from replay.pipeline.model.dialects.numbering import Numbering
from replay.pipeline.model.events import is_timestamp, run_record
from replay.pipeline.model.records import DROPPED_RECORD, RECORD_KEY, SOURCE_RECORD, is_record
from replay.pipeline.model.runs import Input, Inputs, run_id_from_source

HOLD_EVENTS = 1000  # events held at most while waiting for the facts of the run record


@dataclass
class _Input:
    """One input being read: its dialect (once known), its mapper and what waits for the run record."""

    input: Input  # which input it is (``Inputs``): the same file read again is another, mapped afresh (its own run)
    dialect: str | None = None  # None while undecided; CANONICAL for replay's own records
    mapper: Mapper | None = None
    held: list[Column] = field(default_factory=list)  # columns waiting: undecided records, or events before the run record
    opened: bool = False  # the run record is out
    run_id: str | None = None
    records: int = 0  # records mapped so far (a record's index)
    seq: int = 0
    numbering: Numbering = field(default_factory=Numbering)  # the steps and turns of its run's events
    form: str = "jsonl"  # how the input holds its records: jsonl, array, or object (a trajectory)
    container: dict[str, Any] | None = None  # an object input's other keys, to write it back
    key: str | None = None  # the object's key that holds the records
    whole: list[Any] = field(default_factory=list)  # a document's records, for the facts at its end
    whole_bytes: int = 0  # the size of a document's records that came as lines, held so far
    join: dict[str, Any] | None = None  # the join of the line of a trajectory with no messages: on its run record
    first: dict[str, Any] | None = None  # with a dialect named: where the first record it looked at is (its position)
    foreign: str | None = None  # the dialect of the stretch of another dialect's lines the input is in (reported once)
    run_ids: set[str] = field(default_factory=set)  # the ids of its runs so far: another run never takes one again

    @property
    def source(self) -> str:
        return self.input[0]  # type: ignore[no-any-return]


@register("dialect")
class MapDialect(Transform):
    summary = "Map another agent's log (claude-code, codex, openhands, mini-swe-agent; auto-detected) onto canonical events."
    options = {
        "dialect": Option(str, AUTO, "the log's dialect, or 'auto' to detect it per input (replay's own records pass through)",
                          choices=(AUTO, *NAMES)),
        "hold_bytes": Option(int, DEFAULT_MAX_LINE_BYTES, "a document dialect's records piped as lines (`replay read "
                             "x.traj.json | replay heal`) are held to their end up to this many bytes, as read holds the "
                             "document whole (its --max-line-bytes), so the run record knows how the run ended", minimum=1),
    }

    ports = ("errors", "notices")  # notices: a mapped line with a key written twice (E_JSON_DUPLICATE_KEY, a warning)
    screened_lane: str | None = "passes"  # with dialect = "auto" only: a named dialect maps every line, parsed

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if self.config["dialect"] != AUTO:
            self.screened_lane = None
        self.inputs = Inputs()
        self.input: _Input | None = None
        self._joins: dict[tuple[str, Any], dict[str, Any]] = {}  # the joins of lines still to go out, by input and line
        # (``_Input.join``) by the run record it goes on with: its id, beside the record itself (held: no other object
        # takes that id while the entry waits)
        self._run_joins: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}

    def __call__(self, batch: Batch) -> Batch | list[Batch]:
        out: list[Batch] = []
        state = self.input
        at = self.inputs.at(batch.source)
        if state is not None and state.input == at and state.dialect == CANONICAL:
            # The usual case for replay's own journals: nothing to do, line by line (another copy of one is one too).
            # Another agent's records name no run (`runId`): those that name none, wherever they are in the batch, are
            # looked at (``_own``); replay's own events between them end a stretch of another agent's lines.
            events = batch.events
            if batch.clean is None and events:
                last = -1
                for i in [i for i, event in enumerate(events) if "runId" not in event]:
                    if i > last + 1:
                        state.foreign = None
                    self._foreign(state, batch.column(i))
                    last = i
                if last < len(events) - 1:
                    state.foreign = None
            return batch
        if batch.clean is not None:  # the screen passes only inputs that open with replay's own records
            closing = self._close() if state is not None and state.input != at else None
            if state is None or state.input != at:
                self.input = _Input(at, dialect=CANONICAL)
            elif state.dialect is None and not state.held:  # only read's mark of the input came before: nothing to map
                state.dialect = CANONICAL
            else:
                assert state.dialect == CANONICAL, "the screen took a run of an input still undecided"
            return [closing, batch] if closing is not None else batch
        if state is None or state.input != at:
            closing = self._close()
            if closing is not None:
                out.append(closing)
            state = self.input = _Input(at)
        if batch.rejoined:  # (a line join_split_records made of several: its entry goes on with what it maps to, ``_batch``)
            self._joins.update({(batch.source, batch.lines[k]): entry for k, entry in batch.rejoined.items()})
        cols: list[Column] = []
        events = batch.events
        assert events is not None, "dialect takes parsed records (put it after parse)"
        for i, record in enumerate(events):
            column = batch.column(i)
            if record.get(RECORD_KEY) == SOURCE_RECORD:
                if self.inputs.begins(record, batch.source):  # read's mark: another input of this name begins
                    if state.dialect is not None or state.held:  # the one before ends (the same file read again)
                        if cols:
                            out.append(self._batch(cols, batch.source))
                            cols = []
                        closing = self._close()
                        if closing is not None:
                            out.append(closing)
                    state = self.input = _Input(self.inputs.at(batch.source))
                cols.append(column)  # an input's marker goes first, whatever follows
                continue
            if state.dialect is None:
                if record.get(RECORD_KEY) == DROPPED_RECORD:  # a line read left out says nothing of the input's dialect
                    state.held.append(column)
                    continue
                self._decide(state, column, batch, i)
                if state.dialect is None:
                    continue
                pending, state.held = state.held, []
                for col in pending:
                    self._take(state, col, cols)
                continue
            self._take(state, column, cols)
        mapper = state.mapper
        if (batch.pause and mapper is not None and not mapper.document and state.form == "jsonl" and not state.opened
                and state.held):
            # the input waits (a live writer's pause): the run opens with the facts known so far, not held for more
            cols.extend(self._open(state, ended=False))
        if cols:
            out.append(self._batch(cols, batch.source).ends_as(batch))  # (a run cut here ends after these records)
        return out if len(out) != 1 else out[0]

    def flush(self) -> Batch | None:
        return self._close()

    # deciding the dialect ---------------------------------------------------------------------------
    def _decide(self, state: _Input, column: Column, batch: Batch, i: int) -> None:
        record = column[0]
        wanted = self.config["dialect"]
        found = claims(record)
        state.held.append(column)
        if wanted != AUTO:  # (named: mapped as named, once the log shows what it looks like, or once it can tell no more)
            if state.first is None:
                state.first = batch.position(i)
            if found and wanted not in found:
                state.foreign = found[0] if len(found) == 1 else None  # said here: not again as a line of another
                self._not_named(state, f"looks like {' or '.join(found)}", received=found[0])
            elif not found and len(state.held) < LOOKAHEAD:
                return
            elif not found:
                self._not_named(state, f"looks like no dialect's log (no record of its first {LOOKAHEAD} is another "
                                       "agent's or replay's own)")
            self._named(state)
            return
        elif len(found) == 1:
            state.dialect = found[0]
        elif len(found) > 1:
            self.error("E_DIALECT_AMBIGUOUS", f"{batch.source!r} could be any of {', '.join(found)}; passed through unmapped",
                       batch, i, received=found, howToFix="Name the dialect: --dialect " + found[0])
            state.dialect = CANONICAL
        elif len(state.held) >= LOOKAHEAD:
            state.dialect = CANONICAL
        if state.dialect is not None and state.dialect != CANONICAL:
            state.mapper = mapper_for(state.dialect, state.source)

    def _named(self, state: _Input) -> None:
        """The input is read as the dialect named (``--dialect NAME``)."""
        state.dialect = self.config["dialect"]
        state.mapper = mapper_for(state.dialect, state.source)

    def _not_named(self, state: _Input, looks: str, **fields: Any) -> None:
        """E_DIALECT_MISMATCH (an error) at the input's first record: it ``looks`` like another than the dialect named."""
        wanted = self.config["dialect"]
        self.error("E_DIALECT_MISMATCH", f"{state.source!r} {looks}, not {wanted}; mapped as {wanted} as asked",
                   expected=wanted, **(state.first or {}), **fields)

    # mapping ------------------------------------------------------------------------------------------
    def _take(self, state: _Input, column: Column, cols: list[Column]) -> None:
        """One record of a decided input: as it is (canonical), or mapped into events."""
        if state.dialect == CANONICAL or state.mapper is None:
            self._own(state, column)
            cols.append(column)
            return
        record, raw, line, offset, pointer = column
        if is_record(record):  # a reserved record inside a dialect log is not the dialect's: keep it
            cols.append(column)
            return
        self._foreign(state, column)
        if raw is not None:  # the line is written anew as its events' origin: a key written twice keeps its last value
            note = duplicate_key_note(raw, record, {"source": state.source, "line": line, "offset": offset, "path": pointer})
            if note is not None:  # said on the notices port: heal and read --dialect log it as a warning
                self.emit("notices", {**note, "stage": self.id})
        mapper = state.mapper
        # (object: one a line; a trajectory with no messages is a run all the same, ``_close``)
        if (state.records or state.container is not None) and state.form in ("jsonl", "object") and mapper.starts_run(record):
            cols.extend(self._next_run(state))
            mapper = state.mapper
        expanded = mapper.expand(record) if state.records == 0 else None
        if expanded is not None:
            state.container, state.key, inner = expanded
            state.form = "object"
            if not inner:  # no event has its line: its join goes on with its run record (``_open``)
                state.join = self._joins.pop((state.source, line), None)
            base = pointer or "$"
            for k, item in enumerate(inner):
                self._map(state, item, (line, offset, f"{base}.{state.key}[{k}]"), cols)
        else:
            if pointer is not None and state.records == 0:
                state.form = "array"
            if mapper.document and state.form == "jsonl" and not state.opened:  # held to its end, within hold_bytes
                state.whole_bytes += len(raw) + 1 if raw is not None else len(exactjson.dumps(record)) + 1
            self._map(state, record, (line, offset, pointer), cols)

    def _map(self, state: _Input, record: Any, where: tuple[Any, Any, Any], cols: list[Column]) -> None:
        mapper = state.mapper
        assert mapper is not None
        index = state.records
        state.records += 1
        if state.form != "jsonl" or (mapper.document and not state.opened):
            state.whole.append(record)  # (a document's records piped as lines too: `replay read x.traj.json | ...`)
        # A trajectory's message that is no object still becomes an event: nothing is left out.
        record_map = mapper.map(record) if isinstance(record, dict) else Mapped([Part(UNKNOWN_TYPE, {})])
        if not record_map.parts:  # e.g. a message with no content blocks: it is still an event of its own
            kind = record.get("type") if isinstance(record, dict) else None
            record_map.parts = [Part(kind if isinstance(kind, str) and kind else UNKNOWN_TYPE, {})]
        parts = record_map.parts
        line, offset, pointer = where
        for p, part in enumerate(parts):
            state.seq += 1
            step, turn = state.numbering.of(part.type, part.payload)
            event: dict[str, Any] = {"seq": state.seq}
            if record_map.timestamp is not None:
                event["timestamp"] = record_map.timestamp
            event["type"] = part.type
            event["runId"] = state.run_id
            event["payload"] = part.payload
            if step:
                event["step"] = step
            if turn:
                event["turn"] = turn
            if record_map.id is not None:
                event["id"] = record_map.id
            if record_map.parent_id is not None:
                event["parentId"] = record_map.parent_id
            event.update(record_map.extra)
            origin: dict[str, Any] = {"dialect": mapper.name, "index": index, "part": p, "parts": len(parts)}
            if part.blocks is not None:
                origin["blocks"] = part.blocks
            origin["record"] = record
            event[ORIGIN_KEY] = origin
            column: Column = (event, None, line, offset, pointer)
            if state.opened:
                cols.append(column)
            else:
                state.held.append(column)
        if state.opened or state.form != "jsonl":
            return
        if mapper.document:
            if state.whole_bytes > self.config["hold_bytes"]:
                self._opened_early(state)
                cols.extend(self._open(state, ended=False))
        elif mapper.ready or len(state.held) >= HOLD_EVENTS:
            cols.extend(self._open(state, ended=False))

    def _own(self, state: _Input, column: Column) -> None:
        """A record of replay's own input: one that names its run is the input's own (a stretch of another agent's
        lines ends), any other may be another agent's (``_foreign``)."""
        if "runId" in column[0]:
            state.foreign = None
        else:
            self._foreign(state, column)

    def _foreign(self, state: _Input, column: Column) -> None:
        """A line of an input that is recognisably of another dialect (one claims it, not the input's own; replay's
        own events in a dialect log too) is reported, a warning on the notices port: the first line of each stretch
        of such lines. It is still read as the input's dialect (a dialect log's record mapped, and kept whole under
        ``$origin``; replay's own input passed on as it is): each input is of one dialect, detected from its first
        records."""
        found = claims(column[0])
        if len(found) != 1 or found[0] == state.foreign:
            return
        if found[0] == state.dialect:
            state.foreign = None
            return
        state.foreign = other = found[0]
        dialect = state.dialect
        _record, _raw, line, offset, pointer = column
        where = f"line {line}" if line is not None else f"the record at {pointer}" if pointer is not None else "a record"
        what, more = ("replay's own event", "events of replay's own") if other == CANONICAL else (f"a {other} record", f"{other} records")
        done = ("passed on as it is" if dialect == CANONICAL else
                f"mapped as a {dialect} record all the same (kept whole under $origin)")
        name = "replay's own" if dialect == CANONICAL else dialect
        note: dict[str, Any] = {"code": "E_DIALECT_MISMATCH", "action": "reported", "source": state.source}
        note.update((k, v) for k, v in (("line", line), ("offset", offset), ("path", pointer)) if v is not None)
        note.update(expected=dialect, received=other, stage=self.id,
                    message=f"{where} of {state.source!r} is {what}, but the input is {name} (each input is read as "
                    f"one dialect, found from its first records): {done}; the {more} right after it are not reported again",
                    howToFix="Give each log a file of its own (a log of one agent, or replay's own journal, per input).")
        self.emit("notices", note)

    def _next_run(self, state: _Input) -> list[Column]:
        """Another run begins in the input (``Mapper.starts_run``): the one so far ends here (its run record and
        the events that waited for it go out), and the next is mapped afresh: its own mapper, seq from 1."""
        cols = [] if state.opened else self._open(state, ended=True)
        assert state.dialect is not None
        state.mapper = mapper_for(state.dialect, state.source)
        state.opened, state.run_id, state.seq, state.numbering = False, None, 0, Numbering()
        state.whole, state.whole_bytes = [], 0
        if state.form == "object":  # trajectories one a line: the next is a document of its own, its records from 0
            state.form, state.container, state.key, state.records = "jsonl", None, None, 0
        return cols

    def _opened_early(self, state: _Input) -> None:
        """A document's records piped as lines, more than ``hold_bytes`` of them: the run opens now, before its end."""
        if self.log is not None:
            limit = self.config["hold_bytes"]
            self.log.warning("dialect.opened_early", code="E_DIALECT_OPENED_EARLY", source=state.source, dialect=state.dialect, held=state.whole_bytes,
                             message=f"{state.source}: the {state.dialect} document's records came as lines and pass "
                             f"{limit} bytes; its run record is written before its end, without how the run ended "
                             "(status, response)", howToFix="Heal the document file itself, or raise --max-line-bytes "
                             "above its size.")

    def _open(self, state: _Input, ended: bool) -> list[Column]:
        """The run record, then every event that waited for it (now knowing the run's id); ``ended``: the input
        did, and a document's closing facts are learnt from all its records first (its records piped as lines too,
        when they were no more than ``hold_bytes``)."""
        mapper = state.mapper
        assert mapper is not None
        if state.form != "jsonl" or (ended and mapper.document):
            mapper.conclude(state.whole)
        state.whole = []
        facts = dict(mapper.facts)
        run_id = facts.pop("runId", None) or run_id_from_source(state.source)
        if run_id in state.run_ids:  # (runs of one input named by its file: the second is `<name>-2`, ...)
            run_id = next(f"{run_id}-{k}" for k in itertools.count(len(state.run_ids) + 1)
                          if f"{run_id}-{k}" not in state.run_ids)
        state.run_ids.add(run_id)
        if not is_timestamp(facts.get("timestamp")):
            facts.pop("timestamp", None)
        state.run_id = run_id
        # A document dialect's records that came as lines (`replay read x.json | ...`) were a document's array:
        # written back, they are that document again, not JSONL no reader of the dialect takes.
        form = "array" if mapper.document and state.form == "jsonl" else state.form
        origin: dict[str, Any] = {"dialect": mapper.name, "form": form}
        if state.container is not None:
            origin.update(container=state.container, key=state.key)
        record = run_record(runId=run_id, **facts)
        record[ORIGIN_KEY] = origin
        if state.join is not None:
            self._run_joins[id(record)], state.join = (record, state.join), None
        state.opened = True
        held, state.held = state.held, []
        for event, *_ in held:
            event["runId"] = run_id
        return [invented(record), *held]

    def _close(self) -> Batch | None:
        """The input ended: whatever still waits goes out (a document's run record and all its events)."""
        state = self.input
        self.input = None
        if state is None:
            return None
        taken: list[Column] = []
        if state.dialect is None and state.first is not None:  # named, and too few records to tell: none looked like any
            self._not_named(state, "looks like no dialect's log (no record of it is another agent's or replay's own)")
            self._named(state)
            pending, state.held = state.held, []
            for column in pending:
                self._take(state, column, taken)
        if state.dialect is None:  # too few records to tell: they pass through as they are
            cols = state.held
        elif state.mapper is not None and not state.opened and (state.records or state.container is not None):
            # (a trajectory object with no messages is still a run: its info says how it ended, and it is written back)
            cols = self._open(state, ended=True)
        else:
            cols = state.held
        cols = taken + cols if taken else cols
        return self._batch(cols, state.source) if cols else None

    def _batch(self, cols: list[Column], source: str) -> Batch:
        """A batch of ``cols``, each line's join (``Batch.rejoined``, of a batch that came in) on the first event mapped
        from it (a trajectory with no messages: on its run's run record, ``_Input.join``): the stage that logs joins
        (``cut_runs``) logs it with the run that event is of."""
        out = Batch.from_columns(cols, source)
        if self._joins or self._run_joins:
            joins, runs, rejoined = self._joins, self._run_joins, {}
            for k, (event, line) in enumerate(zip(out, out.lines, strict=True)):
                if (source, line) in joins:  # (a line with no number too: a stream that numbers none)
                    rejoined[k] = joins.pop((source, line))
                elif line is None and runs.get(id(event), (None,))[0] is event:
                    rejoined[k] = runs.pop(id(event))[1]
            out.rejoined = rejoined or None
        return out
