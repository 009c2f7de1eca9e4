"""WalkRecords: each journal record read as a step of a run: an aligned text line, or {step_id, kind, event, verification, spend}.

Takes raw lines straight from ``read`` (it parses them itself, so the first line that is no record
ends the walk right there) or records parsed upstream (a document's records: the first that is no
object ends the walk too, named by its JSON path). Diagnostics routed in on a side input
(``inputs = ["read", "read.errors"]``) end the walk too: a journal that cannot be read on is
reported as ``E_JOURNAL_READ_FAILED`` with the byte offset of the failing record (or where reading
stopped), and nothing after it is shown.

Before the run (``preflight``) each input file is checked: a first record that is unreadable, or an
``at`` step that appears in no input, is refused (exit 2, nothing printed: when a line could not be read, the
refusal names it, with its line and byte offset, as where the step may be), and a pre-scan finds the
record the walk stops at: that step's terminal record, or the step's last record when it never
terminated, or a line that cannot be read and may be the step's (the walk reads up to it and fails
there). On stdin there is nothing to pre-scan: every record is held until the step shows up (and
those after its latest record until it shows up again, or dropped at the end; shown when the journal
cannot be read on after them, where a file's pre-scan stops too), so a step never seen is refused as a
file's is, ``E_STEP_NOT_FOUND`` (exit 2) with nothing printed, and a first record that cannot be read, nothing
printed yet, is refused as a file's is, whatever the step (``E_JOURNAL_READ_FAILED``, exit 2). What is held goes to a spool
(``HeldRecords``: memory up to a bound, then a temporary file), so a journal larger than memory can be. A record that cannot be read
before the step showed is as in a file the pre-scan read: the records after it are looked through for the
step; found, the walk shows the records before it and fails there (exit 1), else the step is refused.

The pre-scan reads the input files' bytes, so it is made only when the walk's records are those files' lines (taken
from ``read``, or parsed from them one for one): after a stage that makes records of its own (``dialect``, ``heal``: the
walk of another agent's log, ``pipeline/specs/walk-log.toml``) the wiring turns ``prescan`` off, and ``at`` is found as
on stdin.

In a chain (``chain = ["walk"]``) the walk walks what `replay walk` walks (``chain_spec``): over other agents' logs,
walk-log.toml's stages go in front of it; over replay's own journals it takes their lines itself, as before.

Lines are written as their ``raws``: the text line, or the JSON object with the record's own bytes
as ``event``. A line with a key written twice in one object is read (kind, step, state, spend) by the last value of
each, as every reader keeps it: said on the notices port (``E_JSON_DUPLICATE_KEY``, a warning, with its position), as
heal and ``diff`` say it (a document's are said by ``read``, which reads it whole).
"""

from __future__ import annotations

import os
import shlex
import struct
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch, Column
from replay.pipeline.engine.errors import ReplayError, excerpt, how_to_fix, printable, refused
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Stage, Transform
from replay.pipeline.engine.text import utf8
from replay.pipeline.io.journals import BLANK, DEFAULT_MAX_LINE_BYTES, SKIPPED, STDIN, is_url, source_name
from replay.pipeline.model.records import DROPPED_RECORD, RECORD_KEY
from replay.pipeline.model.split_records import joined_span
from replay.pipeline.model.validation import USAGE_NOT_COUNTED
from replay.pipeline.model.walk import (
    SpendLedger,
    StepWatch,
    WalkLine,
    raw_kind_of,
    read_record,
    step_of,
)
from replay.pipeline.model.walk_journal import (
    TOO_LONG,
    WALK_LOG,
    StepEnd,
    another_agents_log,
    line_problem,
    read_failure_advice,
    record_problem,
    scan_journal,
)
from replay.pipeline.report.spool import ByteSpool  # (the report's: its first MiBs in memory, the rest in a file)

TEXT, JSON = "text", "json"
READ_LAST = "the walk reads only the last value of each (the event shown keeps its bytes)"  # (note_keys_twice)
WALK_ENDS = "; the walk ends there"  # what becomes of a line too long in a walk (read: ``journals.SKIPPED``)
Released = Batch | Iterator[Batch]  # what the walk gives back: held records come back lazily (``HeldRecords.batches``)


@register("walk")
class WalkRecords(Transform):
    summary = "Read each record as a step of a run: an aligned line (kind, step, detail, [state]) or a JSON object; stop after step `at`."
    options = {
        "format": Option(str, TEXT, "'text': kind, step, detail and [state] in aligned columns; 'json': "
                         "{step_id, kind, event, verification, spend} per record", choices=(TEXT, JSON)),
        "at": Option(str, "", "stop after this step's terminal record (inclusive); a step that never terminated "
                     "stops at its last record; empty: walk every record"),
        "max_line_bytes": Option(int, DEFAULT_MAX_LINE_BYTES, "longest line the pre-scan for `at` reads (a longer line "
                                 "is no record, and where the walk stops when it may be the step's end): the "
                                 "max_line_bytes of the read it takes lines from, unless that is none", minimum=1),
        "prescan": Option(bool, True, "read the input files before the run: refuse an unreadable first record or an `at` "
                          "step in none of them, and find where the walk stops; false (set by the wiring) when the walk "
                          "takes records a stage made (dialect, heal), not the files' lines: `at` is then found as on "
                          "stdin, every record held until the step shows"),
    }
    accepts_raw = True
    ports = ("errors", "notices")  # notices: a line with a key written twice (E_JSON_DUPLICATE_KEY, a warning)
    logs_joins = True  # (the joins join_split_records hands on with their lines: said on ``notices`` as they pass)
    screened_lane = "ends"  # (what it sends is its own)
    gives = "walk lines"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.json = self.config["format"] == JSON
        self.ledger = SpendLedger()
        self.watch = StepWatch(self.config["at"]) if self.config["at"] else None
        self.done = False  # past the stop, or the journal could not be read on
        self.held = HeldRecords()  # records after the `at` step's latest one, until it shows again
        self.released: list[Released] = []  # held records let go where no batch could be returned (a side input)
        self.last: tuple[str, int, int, int] | None = None  # the last record read: source, line, offset, length
        self.failure: dict[str, Any] | None = None  # a read failure ahead, at an offset not reached yet
        # (no pre-scan) a record that could not be read before the `at` step showed: reported once the step shows
        # after it (the walk ends there), else with the refusal of the step; the records after it are only looked at
        self.unseen_failure: tuple[str, dict[str, Any]] | None = None
        # Where the walk stops in each input, found by the pre-scan (preflight): with a stop known,
        # nothing is held back. Per source: the stop record's line (JSONL) or index (a document).
        self.stops: dict[str, StepEnd] = {}
        self.counted: dict[str, int] = {}  # records seen per source (a document's stop is an index)
        self.read_from: set[str] = set()  # the inputs a record was read from (a file's first was, before the run)
        self.shown = False  # has a line gone out (or been let go from what was held)?

    @classmethod
    def chain_spec(cls, source: Callable[[], Stage | None]) -> str | None:
        """In a chain over other agents' logs, what `replay walk LOG` walks: ``WALK_LOG``'s stages in front (mapped and
        healed); over replay's own journals (or inputs nothing can be told of before the run: stdin, a URL) the walk
        takes the lines themselves, as `replay walk JOURNAL` does. Both kinds at once are refused: each is walked as
        its command walks it, and one graph cannot."""
        read = source()
        if read is None:  # (a source that cannot be built is refused where the graph builds it)
            return None
        try:
            files = read.input_files()
        except ReplayError:  # (a path not there: the read refuses it before the run, as ever)
            return None
        limit = read.config.get("max_line_bytes", DEFAULT_MAX_LINE_BYTES)
        kinds: dict[bool, str] = {}  # another agent's log? -> the first input of that kind
        for path in files:
            if path == STDIN or is_url(path) or not os.path.isfile(path):
                continue
            try:
                kinds.setdefault(another_agents_log(path, limit), path)
            except OSError:  # (unreadable: the read reports it as it reads it)
                continue
            if len(kinds) == 2:
                raise ReplayError(
                    "E_USAGE_INVALID", f"a walk takes replay's journals or other agents' logs, not both: {kinds[True]!r} "
                    f"is another agent's log (walked mapped and healed, as `replay walk` walks it), {kinds[False]!r} is "
                    "replay's own journal (walked as its lines)", received=[kinds[False], kinds[True]],
                    howToFix="Walk the two kinds in separate runs of the config.")
        return WALK_LOG if kinds.get(True) else None

    def wired(self, feeds: list[Stage]) -> None:
        """The pre-scan's line limit is the read's (the stage whose raw lines the walk takes): a line the read skips as
        too long is one the pre-scan must not take for a record. Set here too, it must be the same. Records a stage
        made (a log mapped and healed) are none of the files': no pre-scan then (``prescan``)."""
        if any(not (stage.emits_raw or stage.accepts_raw) for stage in feeds):  # (parse takes lines: its records are theirs)
            self.given["prescan"] = self.config["prescan"] = False  # records a stage made: the files' bytes say nothing
        limits = {stage.config["max_line_bytes"] for stage in feeds if stage.emits_raw and "max_line_bytes" in stage.options}
        if len(limits) != 1:
            return
        limit = limits.pop()
        given = self.given.get("max_line_bytes", limit)
        if given != limit:
            feed = next(stage for stage in feeds if stage.config.get("max_line_bytes") == limit)
            raise ReplayError("E_CONFIG_OPTION_INVALID",
                              f"stage {self.id!r} has max_line_bytes = {given}, but the stage it reads lines from, "
                              f"{feed.id!r}, has {limit}", path=f"stages.{self.id}.max_line_bytes", received=given,
                              expected=limit, howToFix=f"Leave max_line_bytes out of stage {self.id!r} (it takes "
                                                       f"the limit of {feed.id!r}), or set it on {feed.id!r}.")
        self.given["max_line_bytes"] = self.config["max_line_bytes"] = limit

    def whole_stream(self) -> bool:
        return bool(self.config["at"])  # the walk stops once, in the input the step ends in

    def preflight(self, inputs: list[str]) -> None:
        """Before anything runs: refuse a journal whose first record is unreadable and, with ``at``, a
        step that appears in none of the input files; note where the walk stops in the one it ends in."""
        if not self.config["prescan"]:
            if len(inputs) == 1:  # (an `at` step never seen is refused naming the one input, even when nothing came of it)
                self.held.source = source_name(inputs[0])
            return
        at = self.config["at"] or None
        files = [path for path in inputs if path != STDIN and os.path.isfile(path)]
        unread: tuple[str, dict[str, Any]] | None = None  # (the step not found) the first record no file could be read in
        more = 0  # how many more
        for path in files:
            scan = scan_journal(path, at, self.config["max_line_bytes"])
            if at is not None and scan.end is not None and scan.end.found and not self.stops:
                self.stops[printable(path)] = scan.end
            if scan.unread is not None:
                more += scan.more_unread + (unread is not None)
                unread = unread or (scan.unread[0], {**scan.unread[1], "source": printable(path)})
        if at is not None and inputs and len(files) == len(inputs) and not self.stops:
            where = repr(files[0]) if len(files) == 1 else f"any of {len(files)} journals"
            raise step_not_found(at, where, printable(files[0]) if len(files) == 1 else None, files[0], unread, more)

    def __call__(self, batch: Batch) -> Batch | list[Released] | None:
        if self.done:
            return None
        if batch.port is not None:  # diagnostics routed in: the input cannot be read on
            for record in batch.events or ():
                if self.done or self.unseen_failure is not None:
                    break
                self._read_failed(record)
            return None
        if self.unseen_failure is not None:
            return self._look(batch, 0)
        out: list[Column] = []
        parts = self.released  # what goes out before ``out``, in order
        self.released = []
        look = 0  # (a failure before the step showed) where to look on for it
        events = batch.events
        last = len(batch) - 1
        failure = self.failure
        for i in range(len(batch)):
            if failure is not None and _past(failure, batch, i):
                self._fail_with(failure)
                look = i
                break
            raw = batch.raws[i]
            if events is not None:
                record = events[i]
                bad = record_problem(record, batch.pointers[i])
                if bad is not None:  # a document's record that is no object ends the walk like such a line
                    self._fail_with({**bad, "source": batch.source, "line": batch.lines[i], "offset": batch.offsets[i]})
                    look = i + 1
                    break
            else:
                assert raw is not None
                try:
                    record = exactjson.loads(raw)
                except orjson.JSONDecodeError:
                    record = None
                if type(record) is not dict or record.get(RECORD_KEY) == DROPPED_RECORD:
                    problem = line_problem(raw, batch.lines[i] or 0, batch.offsets[i] or 0,
                                           complete=not (batch.tail_open and i == last))
                    if problem is None:  # a blank line: not a record
                        continue
                    self._fail(problem.message, source=batch.source, line=batch.lines[i], column=problem.column,
                               offset=batch.offsets[i], received=excerpt(raw), cause=problem.cause,
                               **read_failure_advice(problem.cause))
                    look = i + 1
                    break
            self.read_from.add(batch.source)
            joined = batch.rejoined.get(i) if batch.rejoined else None  # (a record its writer split across lines)
            if joined is not None:  # said as heal logs the join (a repair: nothing the walk shows is changed by it),
                self.emit("notices", {k: v for k, v in joined.items() if k != "original"})  # not its text again
            if batch.pointers[i] is None:  # (a line as it was read: a document's are read's)
                self.note_keys_twice(batch, i, record, READ_LAST)
            self._advance(batch, i, raw, joined)
            if self._take(batch, i, record, raw, out, parts):
                break
        if self.unseen_failure is not None:  # (nothing went out: every record is held until the step shows)
            return self._look(batch, look)
        if out:
            if not parts and not self.released:
                return Batch.from_columns(out, source=batch.source)
            parts.append(Batch.from_columns(out, source=batch.source))
        parts.extend(self.released)  # (held records let go, after ``out``, ahead of a failure reported in this batch)
        self.released = []
        return parts or None

    def _look(self, batch: Batch, start: int) -> list[Released] | None:
        """After a record that could not be read before the `at` step showed: does the step show in ``batch`` from
        ``start`` on? Then the walk ends at the failure, the records held (those before it) shown."""
        assert self.watch is not None and self.unseen_failure is not None
        events = batch.events
        for i in range(start, len(batch)):
            if events is not None:
                record = events[i]
            else:
                try:
                    record = exactjson.loads(batch.raws[i] or b"")
                except orjson.JSONDecodeError:
                    continue
            if type(record) is dict and step_of(record) == self.watch.step:
                held = self.held.batches()
                self._report(*self.unseen_failure, release=False)
                return [held]
        return None

    def _not_counted(self, batch: Batch, i: int, step: str | None, paths: list[str]) -> None:
        """A notice (E_USAGE_NOT_COUNTED, a warning) for record ``i`` of ``batch``, whose spend amounts at ``paths``
        are no count (``walk.no_count``): left out of its step's spend so far."""
        where = batch.where(i)
        pointer = where.get("path")  # (a record a document held: where in it, ``$.events[1]``; the amounts below it)
        if isinstance(pointer, str) and pointer.startswith("$"):
            paths = [pointer + path[1:] for path in paths]
        named = ", ".join(paths)
        said = "is not a count" if len(paths) == 1 else "are not counts"
        line = f"line {batch.lines[i]}" if batch.lines[i] is not None else f"record {pointer}" if pointer else "a record"
        self.emit("notices", {
            "code": USAGE_NOT_COUNTED, "action": "reported", **where, "path": paths[0], "step_id": step,
            "stage": self.id, "received": named, "message": f"{line}: spend {named} {said} (a number >= 0); left out "
                                                            "of the step's spend so far, the rest of it counted",
            "howToFix": how_to_fix(USAGE_NOT_COUNTED)})

    def _take(self, batch: Batch, i: int, record: dict[str, Any], raw: bytes | None, out: list[Column],
              parts: list[Released]) -> bool:
        """Render one record into ``out`` (or hold it; held records let go go to ``parts``, ``out`` before them);
        True when the walk ends with it."""
        self.ledger.begin(record, batch.source)  # (a step's spend so far is its run's)
        line = read_record(record, self.ledger, detail=not self.json)
        if self.ledger.left_out and self.json:  # (the spend so far is --json's: the text form shows the record's own)
            self._not_counted(batch, i, line.step_id, self.ledger.left_out)
        event = raw.strip(BLANK) if raw is not None else exactjson.dumps(record)
        rendered = line.json(event) if self.json else utf8(line.text())
        watch = self.watch
        if watch is not None and not self.stops and line.step_id != watch.step:
            # until the step shows (again): it may never, and then nothing is printed
            self.held.append(batch.source, line, event, rendered, batch.lines[i], batch.offsets[i], batch.pointers[i])
            return False
        column: Column = (line.as_dict(record), rendered, batch.lines[i], batch.offsets[i], batch.pointers[i])
        self.shown = True  # (it goes out, with what was held before it)
        if watch is None:
            out.append(column)
            return False
        if self.stops:  # the pre-scan knows where the walk ends: nothing needs holding back
            out.append(column)
            watch.feed(record, line.kind, line.step_id, line.state)
            stop = self.stops.get(batch.source)
            if stop is not None and self._at(stop, batch, i):
                self.done = True
                return True
            return False
        if self.held:
            if out:
                parts.append(Batch.from_columns(out, source=batch.source))
                out.clear()
            parts.append(self.held.batches())
        out.append(column)
        if watch.feed(record, line.kind, line.step_id, line.state):
            self.done = True
            return True
        return False

    def _at(self, stop: StepEnd, batch: Batch, i: int) -> bool:
        """Is record ``i`` the stop record (or past it)?"""
        if stop.index is not None:  # a document's records: counted, the run record first
            seen = self.counted[batch.source] = self.counted.get(batch.source, 0) + 1
            return seen > stop.index
        line = batch.lines[i]
        return line is not None and stop.line is not None and line >= stop.line

    def _advance(self, batch: Batch, i: int, raw: bytes | None, joined: dict[str, Any] | None = None) -> None:
        """Note record ``i`` as the last one read: for one joined from several lines, its last line and their bytes."""
        offset, line = batch.offsets[i], batch.lines[i]
        if offset is not None and raw is not None and line is not None:
            lines, size = joined_span(joined) if joined is not None else (1, len(raw))
            self.last = (batch.source, line + lines - 1, offset, size)

    def _read_failed(self, diagnostic: dict[str, Any]) -> None:
        """A diagnostic from upstream (read, parse): the walk ends where the journal stopped being
        readable: at the diagnostic's offset when it has one (records before it, which may still be
        on their way, are shown), else right here."""
        where = {k: diagnostic[k] for k in ("source", "line", "offset") if diagnostic.get(k) is not None}
        reason = str(diagnostic.get("message", "the journal could not be read"))
        if diagnostic.get("code") == TOO_LONG:  # read skips such a line and goes on; the walk ends at it
            reason = reason.removesuffix(SKIPPED) + WALK_ENDS
        failure = {"reason": reason,
                   "cause": diagnostic.get("code"), "received": diagnostic.get("received"),
                   **read_failure_advice(diagnostic.get("code"))}
        if "offset" in where:
            if self.failure is None or where["offset"] < self.failure["offset"]:
                self.failure = {**failure, **where}
            return
        after: dict[str, Any] = {}  # where the next record would have begun
        if self.last is not None:
            source, line, offset, length = self.last
            after = {"source": source, "line": line + 1, "offset": offset + length + 1}
        self._fail_with({**failure, **after, **{k: v for k, v in where.items() if k == "source"}})

    def _fail_with(self, failure: dict[str, Any]) -> None:
        fields = dict(failure)
        self._fail(fields.pop("reason"), **fields)

    def _fail(self, reason: str, **fields: Any) -> None:
        self.failure = None
        if not self.shown and fields.get("offset") is not None and fields.get("source") not in self.read_from:
            # the first record of an input no pre-scan read (stdin), nothing printed: refused, as a file's is before
            # the run (exit 2), whatever `at` step is asked for
            raise refused("E_JOURNAL_READ_FAILED", f"the journal {_unreadable(reason, fields)}", **fields)
        if self._unseen():  # whether the step is in what follows decides between this failure and its refusal
            self.unseen_failure = (reason, fields)
            return
        self._report(reason, fields)

    def _report(self, reason: str, fields: dict[str, Any], release: bool = True) -> None:
        """The walk ends where the journal could not be read on. Records held after the step's latest one (the
        step showed) come before that place, where a file's pre-scan stops too (what cannot be read may be the
        step's end): they are let go, then the failure reported."""
        if release and self.held and self.watch is not None and self.watch.seen:  # (those before it: read's
            # diagnostic may come in after records that follow the place)
            self.released.append(self.held.batches(before=fields.get("offset")))
        self.error("E_JOURNAL_READ_FAILED", f"the journal {_unreadable(reason, fields)}", refusal="journal_read_failed",
                   **fields)
        self.done = True
        self.held.clear()
        self.failure = None

    def _unseen(self) -> bool:
        """Is there an `at` step the walk has not met yet, with no pre-scan to say where it is (stdin)?"""
        return self.watch is not None and not self.watch.seen and not self.done and not self.stops

    def flush(self) -> Batch | list[Released] | None:
        if self.failure is not None and not self.done:
            self._fail_with(self.failure)
        if self._unseen():  # all of the journal was read (or looked through) and the step never showed: refused
            assert self.watch is not None
            self.held.clear()
            source = self.held.source  # (records held came from it: a file's name when the walk took records a stage
            named = source not in (STDIN, source_name(STDIN))  # made of it, which no pre-scan looked through)
            raise step_not_found(self.watch.step, repr(source) if named else "the journal", source if named else None,
                                 source if named else None, self.unseen_failure)
        self.held.clear()  # an unterminated step: its last record was the stop
        released, self.released = self.released, []
        return released or None


def _list_steps(path: str) -> str:
    return f"Run `replay walk {shlex.quote(path)}` to list the steps, then pick one."


_UNREAD_AT = ("source", "line", "column", "offset", "path", "cause")  # the fields of a record that could not be read
# that an E_STEP_NOT_FOUND carries (its ``received`` is the step)


def step_not_found(step: str, where: str, source: str | None, walked: str | None,
                   unread: tuple[str, dict[str, Any]] | None = None, more: int = 0) -> ReplayError:
    """E_STEP_NOT_FOUND: ``step`` is in none of the records of ``where`` that could be read. When a record could not
    be read (``unread``: its reason and fields; ``more`` others after it), the step may be in it: the refusal says
    so, with that record's line and byte offset (or JSON path), not that the step never appears."""
    if unread is None:
        return refused("E_STEP_NOT_FOUND", f"step {step!r} never appears in {where}", received=step, source=source,
                       **({"howToFix": _list_steps(walked)} if walked is not None else {}))
    reason, fields = unread
    others = f"; {more} more line{'s' if more > 1 else ''} could not be read either" if more else ""
    at = {k: fields[k] for k in _UNREAD_AT if fields.get(k) is not None}
    if at.get("source") in (STDIN, source_name(STDIN)):  # (a journal named so is none: said as the journal)
        del at["source"]
    steps = f"run `replay walk {shlex.quote(walked)}`" if walked is not None else "walk the journal"
    return refused("E_STEP_NOT_FOUND", f"step {step!r} is in none of the records of {where} that could be read, "
                   f"and it may be in one that could not be: the journal {_unreadable(reason, fields)}{others}",
                   received=step, **{"source": source, **at},
                   howToFix=f"The step may be in the record that could not be read: fix or cut it; else {steps} "
                            "to list the steps, then pick one.")


def _unreadable(reason: str, fields: dict[str, Any]) -> str:
    """"could not be read at byte N: REASON", where the journal stopped being readable."""
    offset = fields.get("offset")
    return f"could not be read{f' at byte {offset}' if offset is not None else ''}: {reason}"


def _past(failure: dict[str, Any], batch: Batch, i: int) -> bool:
    """Is record ``i`` at or after the failure (or from another input, or without a position)?"""
    offset = batch.offsets[i]
    return batch.source != failure.get("source", batch.source) or offset is None or offset >= failure["offset"]


_SIZES = struct.Struct("<III")  # a held record's lengths: its line's fields (JSON), its event's bytes, its rendered line


class HeldRecords:
    """Records the walk holds back (on stdin, until the `at` step shows again), in a ``ByteSpool``: the first MiBs
    in memory, the rest in a temporary file, so a journal larger than memory can be held. Each comes back out as
    the column it would have been: its rendered line, positions and ``{step_id, kind, event, ...}`` as they were."""

    def __init__(self) -> None:
        self._spool = ByteSpool()
        self.count = 0
        self.source = STDIN  # where they were read (one input: with no pre-scan, the walk reads stdin)

    def __bool__(self) -> bool:
        return self.count > 0

    def append(self, source: str, line: WalkLine, event: bytes, rendered: bytes, number: int | None,
               offset: int | None, pointer: str | None) -> None:
        fields = exactjson.dumps([line.kind, line.step_id, line.state, line.verification, line.spend, number, offset,
                                  pointer])
        self.source = source
        self._spool.append(b"".join((_SIZES.pack(len(fields), len(event), len(rendered)), fields, event, rendered)))
        self.count += 1

    def batches(self, before: int | None = None) -> Iterator[Batch]:
        """Every record held (with ``before``: that begins before that byte offset), as batches, in order, read back
        from the spool a piece at a time as they are taken (a stage returns the iterator in its list: the engine
        takes it lazily, so they need not all be in memory at once); from now on none is held."""
        spool, source = self._spool, self.source
        self._spool, self.count = ByteSpool(), 0
        return _read_back(spool, source, before)

    def clear(self) -> None:
        if self.count:
            self._spool.close()
            self._spool = ByteSpool()
            self.count = 0


def _read_back(spool: ByteSpool, source: str, before: int | None) -> Iterator[Batch]:
    """The records of a ``HeldRecords``' spool (closed after) as batches, as many columns at a time as it reads back
    in one piece; with ``before``, those that begin before that byte offset."""
    loads, size = exactjson.loads, _SIZES.size
    rest = b""
    try:
        for chunk in spool.chunks():
            data = rest + chunk if rest else chunk
            at = 0
            columns: list[Column] = []
            while len(data) - at >= size:
                a, b, c = _SIZES.unpack_from(data, at)
                end = at + size + a + b + c
                if end > len(data):
                    break
                start = at + size
                kind, step, state, verification, spend, number, offset, pointer = loads(data[start:start + a])
                if before is not None and offset is not None and offset >= before:
                    if columns:
                        yield Batch.from_columns(columns, source=source)
                    return
                record = loads(data[start + a:start + a + b])
                line = WalkLine(kind, step, state, "", verification, spend, raw_kind_of(record))
                columns.append((line.as_dict(record), data[start + a + b:end], number, offset, pointer))
                at = end
            rest = data[at:]
            if columns:
                yield Batch.from_columns(columns, source=source)
    finally:
        spool.close()
