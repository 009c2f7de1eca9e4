"""ParseLines: turns raw lines into records; bad lines become diagnostics and the stream goes on.

A line that is not a JSON object is reported with its position and left out. Only a last line with
no newline after it, that is not valid JSON, is *torn* (a write cut off): ``E_JSONL_LINE_TORN``, or
with ``torn_tail = "repair"`` (heal) a ``drop_torn_line`` repair; unless the bytes that are there are
wrong whatever would have followed them (no start of a JSON text: a complete value with more after it,
a wrong token or byte before its end, nesting deeper than replay reads): that is what is reported. Any other invalid line, the last one too when a newline ends
it, is ``E_JSONL_LINE_INVALID``.

``replay read`` (``check_lines``, ``mark_dropped``) writes a ``{"$record": "dropped", ...}`` line in
place of each line it left out; a parse further down a pipe reports it again, as the same diagnostic
or repair at the same line and offset, so ``replay read a | replay heal`` logs and fails exactly
like ``replay heal a``.

A line ``join_split_records`` made of several comes with its heal-log entry (``Batch.rejoined``) when this is the stage
its lines reach that logs it (``logs_joins``): logged here, on the ``repairs`` port, as the line passes, so with its run
(the screen before may hold a run to its end); or, when one stage after it logs joins (``cut_runs``, in heal's graphs:
a batch here may hold several runs, the screen's lane off), handed on with its line (``HandsOnJoins``).
"""

from __future__ import annotations

import functools
import itertools
from typing import Any, TypedDict

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import CATALOGUE, PIECE_OF_A_RECORD_FIX, excerpt, invalid_line, piece_of_a_record, torn_message
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import HandsOnJoins, Option
from replay.pipeline.io.journals import BLANK, DEFAULT_MAX_LINE_BYTES, decode_each_line, nested_no_deeper_than_orjson
from replay.pipeline.model.dropped import (
    BLANK_BEFORE,
    NOT_OBJECT,
    ORIGINAL_BYTES,
    BlankLines,
    dropped_lines,
    fitted,
    not_object_message,
)
from replay.pipeline.model.records import (
    DROPPED_RECORD,
    RECORD_KEY,
    SOURCE_RECORD,
    dropped_record,
    has_records,
    is_canonical,
    not_object_fix,
)
from replay.pipeline.model.repairs import DROP_TORN_LINE
from replay.pipeline.model.runs import Input, Inputs
from replay.pipeline.model.validation import json_type

_OWN = (RECORD_KEY, "seq", "runId")  # what a projection keeps of every line (``is_canonical`` reads them)


class _Left(dict):  # type: ignore[type-arg]
    """A line left out (``_slow``), held in its place among the batch's events until the part of the stream it is in
    knows its input (a source record before it names the file it is of): then ``ParseLines._settle`` reports it at its
    line there and takes it out (no stage after parse sees one). ``raw``: the line's bytes; ``exc``: orjson's refusal,
    or None for a line that is JSON but no object, whose value is ``record`` (E_EVENT_NOT_OBJECT); ``torn``: it is its
    input's last line, with no newline after it (``Batch.tail_open``), and only cut off (``exactjson.cut_off``):
    E_JSONL_LINE_TORN, else E_JSONL_LINE_INVALID; ``blank``: the blank lines just before it when one held blanks
    (``mark_dropped``: its dropped record's ``blankBefore``), else None. Empty, so parse's own reads of the events
    around it (``e.get(...)``: source records, run ids) find nothing in it."""

    __slots__ = ("blank", "exc", "raw", "record", "torn")

    def __init__(self, raw: bytes, exc: orjson.JSONDecodeError | None, torn: bool, record: Any = None) -> None:
        super().__init__()
        self.raw, self.exc, self.torn, self.record = raw, exc, torn, record
        self.blank: str | None = None


def _whole(raw: bytes, marked: bool) -> dict[str, str]:
    """A dropped record's ``original`` for a line left out that is not JSON, or JSON but no object (``mark_dropped``):
    the line in full, so that ``join_split_records`` down the pipe can take it as the piece of a record split across
    lines that it may be (``model.split_records``), as it would from the file; none for a line that is not UTF-8 (no
    piece of a record: its text would not be exact)."""
    if not marked:
        return {}
    try:
        return {"original": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {}


# what a value a path goes into may be besides an object: everything else JSON has (msgspec takes one object type in
# a union; a list is decoded whole), a float aside: msgspec reads a typed float as its nearest double, where parse
# keeps a number a double does not hold exact (``ExactNumber``): a line with one there is refused, and its batch
# decoded whole (such a value is no object a summary reads: rare)
_NOT_AN_OBJECT: Any = str | int | bool | None | list[Any]


@functools.cache
def projection_decoder(fields: tuple[str, ...]) -> Any:
    """A msgspec decoder of JSON objects that keeps only ``fields`` (dotted paths: ``payload.callId`` keeps that key
    of the ``payload`` object; a field named whole keeps its whole value) and ``$record``, ``seq`` and ``runId`` (what
    says whether a line is replay's own: ``is_canonical``). A value that is no object where a path goes into it is
    kept whole, as a full decode gives it (a tool's ``output`` may be a text or an object with an exit code), a float
    there aside; a line that is no object, or not valid JSON, is refused. (Made once per set of fields: a run over many inputs makes a
    parse stage for each.)"""
    import msgspec  # here: only a graph that projects loads it

    def shape(paths: list[list[str]], name: str) -> Any:
        whole = {path[0] for path in paths if len(path) == 1}
        inner: dict[str, list[list[str]]] = {}
        for path in paths:
            if len(path) > 1 and path[0] not in whole:
                inner.setdefault(path[0], []).append(path[1:])
        keys = {key: Any for key in whole} | {key: shape(rest, f"{name}_{key}") | _NOT_AN_OBJECT
                                              for key, rest in inner.items()}
        return TypedDict(name, keys, total=False)  # type: ignore[operator]

    # (every float it keeps, an untyped one, read as parse reads it: 0.1000000000000000000001 stays as written)
    return msgspec.json.Decoder(shape([field.split(".") for field in [*fields, *_OWN]], "Projected"),
                                float_hook=exactjson.exact_float)


class _Payload(TypedDict, total=False):
    payload: Any


@functools.cache
def payload_decoder() -> Any:
    """A msgspec decoder of a JSON object's ``payload`` alone, whole (the rest of the line checked as JSON and skipped):
    what ``whole_types`` keep of their events' lines. Its floats are read as doubles, so it is asked only of lines where
    no number may read as another than written (``exactjson.needs_exact``); it refuses a number beyond a double's
    range, an integer beyond Python's digits and half of a surrogate pair, which the exact path reads (``exactjson.loads``).
    What it reads is then what that path reads."""
    import msgspec  # here: only a graph that projects loads it

    return msgspec.json.Decoder(_Payload)


def values_have(values: list[dict[str, Any]], key: str) -> int:
    """How many of ``values`` (dicts) hold ``key``, by a C-level map."""
    return sum(map(dict.__contains__, values, itertools.repeat(key)))


@register("parse")
class ParseLines(HandsOnJoins):
    summary = "Parse JSONL lines into records; report invalid, torn and non-object lines with their position."
    options = {
        "torn_tail": Option(str, "error", "a last line with no newline that is not valid JSON: 'error' "
                            "(E_JSONL_LINE_TORN), or 'repair' (dropped and logged on the repairs port as drop_torn_line)",
                            choices=("error", "repair")),
        "torn_fix": Option(str, "", "the advice (howToFix) E_JSONL_LINE_TORN gives; empty: the catalogue's, that `replay heal` "
                           "drops the line (for a log heal does not take, such as a session, say what to do instead)"),
        "mark_dropped": Option(bool, False, "write a {\"$record\": \"dropped\"} line in place of each line left out "
                               "(what `replay read` does, so a parse down the pipe reports it again)"),
        "mark_max_bytes": Option(int, DEFAULT_MAX_LINE_BYTES, "the longest line a dropped record may be (`replay read` "
                                 "sets its --max-line-bytes, so a read down the pipe under the same limit takes it): a "
                                 "longer one's `original` is cut (`originalBytes`: how long it was)", minimum=1),
        "fields": Option(list, [], "decode only these fields of each event (`type`, `payload.callId`, ...; and its "
                         "seq and runId; records and other agents' lines whole), for stages that read no others (report "
                         "sets what a summary reads); empty: all"),
        "whole_types": Option(list, [], "with `fields`: the events of these types keep their whole payload (report: "
                              "a tool_called, whose whole payload tells a new call of an id used again from that call "
                              "written again, `OpenCalls.written_again`)"),
        "sources": Option(bool, True, "follow source records: in a stream that opens with a {\"$record\": \"source\"} line "
                          "(`replay read a b`), what follows each is of the file it names, its lines counted from there; "
                          "false: every line is of the input it was read from (a saved stream read as a file of its own)"),
    }
    ports = ("errors", "repairs")
    logs_joins = True  # (the joins join_split_records hands on with their lines: logged as they pass, ``__call__``)
    screened_lane = "passes"
    accepts_raw = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # Per input stream: False (no source records: the usual case, nothing to do), or where the
        # records come from now: (file name, line and offset of its source record in the stream).
        self._origins: dict[str, Any] = {}
        # drop_torn_line repairs wait for the next batch (or the end): a torn line ends its input, so its
        # repair follows the repairs of the events before it, however the input was cut into batches.
        self._torn_repairs: list[dict[str, Any]] = []
        self._left_out = False  # did the batch parsed last leave a line out (``_Left``)?
        # (mark_dropped) the blank lines that ended the last batch ``_slow`` read: (stream, the line after them, the
        # lines), for a line left out at the next batch's start
        self._blanks: tuple[str, int, BlankLines] | None = None
        self._projection = projection_decoder(tuple(self.config["fields"])) if self.config["fields"] else None
        self._whole_types = frozenset(self.config["whole_types"])
        self.inputs = Inputs()  # which input of its name each part of the stream is (source records begin one)
        # Per input: the runId of its last event that named one (a torn line is its input's last run's: its repair
        # carries that run's id, as every heal-log entry carries the id of the run it is of).
        self._last_run: dict[Input, str] = {}

    def flush(self) -> None:
        self._release_torn()

    def _release_torn(self) -> None:
        for entry in self._torn_repairs:
            self.emit("repairs", entry)
        self._torn_repairs = []

    # source records: `replay read a.jsonl b.jsonl | ...` keeps each file its own source ----------------------
    def _starts_with_source(self, batch: Batch, parsed: Batch) -> bool:
        """Decided on a stream's first records: only a stream that opens with a source record has them."""
        first = next((e for e in parsed.events or () if type(e) is not _Left), None)
        if batch.source in self._origins or first is None:
            return False
        self._origins[batch.source] = None if first.get(RECORD_KEY) == SOURCE_RECORD else False
        return self._origins[batch.source] is None

    def _follow_sources(self, batch: Batch) -> list[tuple[Batch, Input]]:
        """Relabel records with the file their source record names, lines and offsets counted from it: the parts of
        ``batch`` cut at source records, each with the input it is of (the marks after it count not)."""
        stream = batch.source
        events = batch.events or []
        cuts = [i for i, e in enumerate(events) if e.get(RECORD_KEY) == SOURCE_RECORD and isinstance(e.get("source"), str)]
        if not cuts:
            part = self._relabel(batch, stream)
            return [(part, self.inputs.at(part.source))]
        parts: list[tuple[Batch, Input]] = []
        # each source record goes on alone, as `read` sends it before a file: the stages after see the input before
        # it end before they see any line of the next (heal counts each input's repairs when its last run ends there)
        bounds = sorted({0, *cuts, *(c + 1 for c in cuts), len(events)})
        for a, b in itertools.pairwise(bounds):
            if a == b:
                continue
            if a in cuts:  # a source record: it and what follows belong to the file it names
                line, offset, raw = batch.lines[a], batch.offsets[a], batch.raws[a]
                after = offset + len(raw) + 1 if offset is not None and raw is not None else None
                name = events[a]["source"]
                self._origins[stream] = (name, line, after)
                self.inputs.begin(name)  # (``cuts`` are its source records)
            part = self._relabel(batch.select(range(a, b)), stream)
            parts.append((part, self.inputs.at(part.source)))
        return parts

    def _relabel(self, part: Batch, stream: str) -> Batch:
        origin = self._origins.get(stream)
        if not origin:
            return part
        name, line, offset = origin
        part.source = name
        if line is not None:
            part.lines = [n - line if n is not None and n > line else None for n in part.lines]
        if offset is not None:
            part.offsets = [o - offset if o is not None and o >= offset else None for o in part.offsets]
        return part

    def __call__(self, batch: Batch) -> Batch | list[Batch]:
        if self._torn_repairs:
            self._release_torn()
        if batch.rejoined and not self.hands_on:  # join_split_records' joins of these lines, logged as they pass here:
            for entry in batch.rejoined.values():  # with their run (or on with their lines, to ``cut_runs``)
                self.emit("repairs", entry)
            batch.rejoined = None
        if batch.clean is not None:  # the screen's lane: whole runs that need nothing, passed on unparsed
            self._origins.setdefault(batch.source, False)
            ids = batch.clean[2]  # (a torn line after them is of their last run, as ``_run_before`` has it)
            if self.config["torn_tail"] == "repair" and ids and isinstance(ids[-1], str):
                self._last_run[self.inputs.at(batch.source)] = ids[-1]
            return batch
        parsed = self._parse(batch)
        if not self.config["sources"] or (self._origins.get(batch.source, False) is False
                                          and not self._starts_with_source(batch, parsed)):
            out = [(parsed, self.inputs.at(parsed.source))]
        else:
            out = self._follow_sources(parsed)
        parts = [self._passed(*part) for part in out[:-1]]
        # a torn line of an input another input follows in this batch: its run closes within the batch,
        # so its heal record must count the torn line now (the last part's waits as usual)
        if parts and self._torn_repairs:
            self._release_torn()
        parts.append(self._passed(*out[-1]))
        if batch.rejoined:  # handed on: the join of a line left out here (read's dropped record, say) is logged here
            on = {id(entry) for part in parts for entry in (part.rejoined or {}).values()}
            for entry in batch.rejoined.values():
                if id(entry) not in on:
                    self.emit("repairs", entry)
        result = parts if len(parts) > 1 else parts[0]
        if batch.closes_run and self._torn_repairs:
            self._release_torn()  # the run ends with this batch: its heal record must count the torn line
        return result

    def _passed(self, part: Batch, of: Input) -> Batch:
        """``part`` (of input ``of``) as it goes on: its bad lines and read's dropped records reported, and the run its
        last event names noted for a torn line after it (``_run_before``)."""
        if self.config["torn_tail"] == "repair" and (run := self._run_before(part, len(part), of)) is not None:
            self._last_run[of] = run
        return self._take_dropped(self._settle(part, of), of)

    def _run_before(self, part: Batch, i: int, of: Input) -> str | None:
        """The runId of the last event before column ``i`` of ``part`` that names one, else of the input's last before
        ``part`` (None: none named one yet). A torn line, which names no run, is of that run."""
        events = part.events or ()
        for k in range(min(i, len(events)) - 1, -1, -1):
            run = events[k].get("runId")
            if isinstance(run, str):
                return run
        return self._last_run.get(of)

    def _parse(self, batch: Batch) -> Batch:
        self._left_out = False  # (``_slow`` sets it when it leaves a line out: ``_settle`` has work only then)
        if batch.events is not None:  # records from a JSON document are parsed already
            if all(type(e) is dict for e in batch.events):
                return batch
            return self._keep_objects(batch)
        if self._projection is not None and (projected := self._projected(batch)) is not None:
            batch.events = projected
            return batch
        loads = orjson.loads
        try:
            events = [loads(raw) for raw in batch.raws]  # type: ignore[arg-type]
        except orjson.JSONDecodeError:
            return self._slow(batch)
        if not all(type(e) is dict for e in events):
            return self._slow(batch)
        batch.events = exactjson.exact_lines(batch.raws, events)  # type: ignore[arg-type]
        return batch

    def _projected(self, batch: Batch) -> list[Any] | None:
        """The events with only ``fields``, every line decoded in one msgspec call over the block (the rest of each
        line is checked as JSON and skipped); records decoded whole, and every line that is no event of replay's
        own (no ``seq`` and ``runId``: another agent's record, which ``dialect`` maps whole, or an event heal would
        have to repair); every event of one of ``whole_types`` with its whole payload (``_whole_payloads``). None when
        the decoder refuses a line: then every line is decoded whole, and the bad ones are reported as usual."""
        values = decode_each_line(self._projection, batch)
        if values is None:
            return None
        has, n = dict.__contains__, len(values)
        if values_have(values, "seq") == n and values_have(values, "runId") == n:  # the usual block: events of replay's own
            records = list(itertools.compress(range(n), map(has, values, itertools.repeat(RECORD_KEY))))
        else:
            records = [i for i, value in enumerate(values) if RECORD_KEY in value or not is_canonical(value)]
        if kinds := self._whole_types:  # (a type that is no text is none of them)
            types = list(map(dict.get, values, itertools.repeat("type")))
            try:
                wanted = list(itertools.compress(range(n), map(kinds.__contains__, types)))
            except TypeError:
                wanted = [i for i, kind in enumerate(types) if kind.__class__ is str and kind in kinds]
            if records and wanted:  # (a record is decoded whole anyway: each line decoded once)
                whole = set(records)
                wanted = [i for i in wanted if i not in whole]
            if wanted and (unread := self._whole_payloads(batch.raws, values, wanted)):  # type: ignore[arg-type]
                records = sorted({*records, *unread})
        if records:  # (decoded in one go: the check for a number orjson may round made once over them all)
            raws = batch.raws
            for i, value in zip(records, exactjson.loads_lines([raws[i] for i in records]), strict=True):  # type: ignore[misc]
                values[i] = value
        return values

    @staticmethod
    def _whole_payloads(raws: list[bytes], values: list[Any], wanted: list[int]) -> list[int]:
        """The events at ``wanted`` (projected ``values`` of ``raws``) with their whole payload, as the exact path
        reads it (``exactjson.loads``): read by ``payload_decoder``, the rest of each line skipped, when no number in
        them may read as another than written. The lines left to the exact path (all of them, or those
        ``payload_decoder`` refuses) are returned, to be decoded whole."""
        lines = [raws[i] for i in wanted]
        if exactjson.needs_exact(b"\n".join(lines)):  # (rare: the check made once over them all)
            return wanted
        import msgspec  # here: only a graph that projects loads it

        decode = payload_decoder().decode
        try:
            payloads = nested_no_deeper_than_orjson(lambda some: list(map(decode, some)), lines)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):  # (one line: the others still read so)
            payloads = []
            for line in lines:
                try:
                    payloads.append(nested_no_deeper_than_orjson(decode, line))
                except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                    payloads.append(None)
        unread = []
        for i, read in zip(wanted, payloads, strict=True):
            if read is None:
                unread.append(i)
            elif read:  # (an event with no payload keeps none)
                values[i]["payload"] = read["payload"]
        return unread

    def _slow(self, batch: Batch) -> Batch:
        """Line by line: skip blank lines, keep the rest in order, each bad one as a ``_Left`` in its place (reported
        by ``_settle`` once the part of the stream it is in is relabeled with the input it is of)."""
        events: list[Any] = []
        keep: list[int] = []
        last = len(batch.raws) - 1
        blanks = self._blanks_before(batch)
        for i, raw in enumerate(batch.raws):
            assert raw is not None
            if not raw.strip(BLANK):
                blanks.add(raw)
                continue
            try:
                record = exactjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                record = _Left(raw, exc, batch.tail_open and i == last and exactjson.cut_off(raw, exc))
                self._left_out = True
            else:
                if type(record) is not dict:
                    record = _Left(raw, None, False, record)
                    self._left_out = True
            if blanks.count:
                if type(record) is _Left:
                    record.blank = blanks.text()
                blanks = BlankLines(blanks.limit)
            events.append(record)
            keep.append(i)
        line = batch.lines[-1] if batch.lines else None
        if self.config["mark_dropped"] and blanks.count and line is not None:
            self._blanks = (batch.source, line + 1, blanks)
        out = batch.select(keep)
        out.events = events
        return out

    def _blanks_before(self, batch: Batch) -> BlankLines:
        """The blank lines just before ``batch``'s first (``mark_dropped``): those that ended the last batch ``_slow``
        read, when ``batch`` goes on from them (a batch read whole in between has a line that is not blank)."""
        held, self._blanks = self._blanks, None
        if held is None or held[0] != batch.source or not batch.lines or held[1] != batch.lines[0]:
            return BlankLines(self.config["mark_max_bytes"])
        return held[2]

    def _settle(self, part: Batch, of: Input) -> Batch:
        """Report the lines of ``part`` left out (``_Left``), at their position in the input ``of`` that the part is
        (after ``_follow_sources``): drop them, or with ``mark_dropped`` put a dropped record in place of each."""
        events = part.events
        if not self._left_out or not events or not any(type(e) is _Left for e in events):
            return part
        keep: list[int] = []
        kept: list[Any] = []
        marks: dict[int, dict[str, Any]] = {}
        marked = self.config["mark_dropped"]
        for i, left in enumerate(events):
            if type(left) is not _Left:
                keep.append(i)
                kept.append(left)
                continue
            if left.exc is None:
                marks[i] = self._report(
                    part, i, NOT_OBJECT, not_object_message(part.lines[i]), of=of,
                    expected="object", received=json_type(left.record),
                    **({"howToFix": PIECE_OF_A_RECORD_FIX} if piece_of_a_record(left.raw) else {}),
                ) | _whole(left.raw, marked)
            elif left.torn:
                marks[i] = self._torn(part, i, left.raw, of)
            else:
                marks[i] = self._invalid(part, i, left.raw, left.exc, of) | _whole(left.raw, marked)
            if marked and left.blank is not None:
                marks[i][BLANK_BEFORE] = left.blank
        if marked:
            return self._with_marks(part, keep, kept, marks)
        out = part.select(keep)
        out.events = kept
        return out

    def _with_marks(self, batch: Batch, keep: list[int], events: list[Any], marks: dict[int, dict[str, Any]]) -> Batch:
        """The kept lines, and a dropped record in place of each line left out."""
        order = sorted([*keep, *marks])
        out = batch.select(order)
        kept = dict(zip(keep, events, strict=True))
        limit = self.config["mark_max_bytes"]
        marks = {i: fitted(mark, limit) for i, mark in marks.items()}
        out.events = [kept[i] if i in kept else marks[i] for i in order]
        out.raws = [batch.raws[i] if i in kept else exactjson.dumps(marks[i]) for i in order]
        out.tail_open = False
        return out

    def _note_dropped(self, of: Input, line: Any, code: str, pointer: Any = None) -> None:
        """A line of input ``of`` (or its document's element at ``pointer``) was left out: noted for the stages after
        (``model.dropped``)."""
        dropped_lines(self.shared).note(*of, line, code, pointer)

    def _report(self, batch: Batch, i: int, code: str, message: str, of: Input | None = None,
                **fields: Any) -> dict[str, Any]:
        """Report line ``i`` (of input ``of``; None: the one ``batch.source`` is of now) and return the dropped record
        that stands for it in a marked stream."""
        self.error(code, message, batch, i, **fields)
        self._note_dropped(of or self.inputs.at(batch.source), batch.lines[i], code, batch.pointers[i])
        return dropped_record(code, message, batch.position(i), **fields)

    def _invalid(self, batch: Batch, i: int, raw: bytes, exc: orjson.JSONDecodeError, of: Input) -> dict[str, Any]:
        """Report a line orjson refused: at the byte that is not UTF-8, as nested too deep, or with orjson's message."""
        fields = invalid_line(raw, exc, batch.lines[i])
        return self._report(batch, i, "E_JSONL_LINE_INVALID", fields.pop("message"), of, **fields)

    def _keep_objects(self, batch: Batch) -> Batch:
        """The records of a JSON document (an array's elements, an artifact's events) that are objects; each other one
        reported, and with ``mark_dropped`` a dropped record in its place (as for a line left out)."""
        keep: list[int] = []
        marks: dict[int, dict[str, Any]] = {}
        events = batch.events or []
        for i, record in enumerate(events):
            if type(record) is dict:
                keep.append(i)
            else:
                marks[i] = self._report(batch, i, NOT_OBJECT, f"{batch.pointers[i]} is not an object",
                                        expected="object", received=json_type(record),
                                        howToFix=not_object_fix(batch.pointers[i]))
        if self.config["mark_dropped"]:
            return self._with_marks(batch, keep, [events[i] for i in keep], marks)
        return batch.select(keep)

    def _torn(self, batch: Batch, i: int, raw: bytes, of: Input) -> dict[str, Any]:
        original = raw.decode("utf-8", "replace")
        message = torn_message(batch.lines[i], batch.offsets[i])
        if self.config["torn_tail"] == "repair":  # (else ``_report`` notes it dropped)
            self._note_dropped(of, batch.lines[i], "E_JSONL_LINE_TORN")
            self._torn_repairs.append({
                "rule": DROP_TORN_LINE, "action": "dropped", "runId": self._run_before(batch, i, of),
                "source": batch.source, "line": batch.lines[i],
                "offset": batch.offsets[i], "original": original, "message": message,
            })
            return dropped_record("E_JSONL_LINE_TORN", message, batch.position(i), received=excerpt(raw), original=original)
        fix = {"howToFix": self.config["torn_fix"]} if self.config["torn_fix"] else {}
        return self._report(batch, i, "E_JSONL_LINE_TORN", message, of, received=excerpt(raw), **fix) | {"original": original}

    # dropped records from a `replay read` up the pipe --------------------------------------------------
    def _take_dropped(self, batch: Batch, of: Input) -> Batch:
        events = batch.events
        # (with ``mark_dropped`` the stream keeps them, its own and those read marked: a parse further down reports them)
        if self.config["mark_dropped"] or not events or not has_records(events):
            return batch
        marks = [i for i, e in enumerate(events) if e.get(RECORD_KEY) == DROPPED_RECORD and isinstance(e.get("code"), str)]
        if not marks:
            return batch
        for i in marks:
            reported = self._again(batch, events[i], of, i)
            # (where the mark stands in this stream, as the lines of the events around it are: the line it names is
            # a position in the stream it was written from)
            self._note_dropped(of, batch.lines[i], reported)
        dropped = set(marks)
        return batch.select([i for i in range(len(events)) if i not in dropped])

    def _again(self, batch: Batch, mark: dict[str, Any], of: Input, i: int) -> str:
        """Report a line an earlier ``replay read`` left out (column ``i`` of ``batch``, of input ``of``), as it reported
        it, at the line and offset it gave; the code it is reported with."""
        fields = {k: v for k, v in mark.items()
                  if k not in (RECORD_KEY, "code", "message", "original", ORIGINAL_BYTES, BLANK_BEFORE)}
        fields["source"] = batch.source
        code, message = mark["code"], str(mark.get("message", ""))
        if code not in CATALOGUE:  # (edited, or another tool's): no line replay left out, and no code replay reports
            self.error("E_EVENT_INVALID", f"a dropped record names a code replay does not report ({excerpt(code)!r}): "
                       "it stands for a line `replay read` left out, with the code that line was reported with",
                       **{**fields, "path": "$.code", "expected": "a code of ERROR_CODES.md, such as \"E_JSONL_LINE_INVALID\"",
                          "received": excerpt(code), "howToFix": "Write it as `replay read` does (`replay schema stream`), "
                          "or delete it: it holds no event."})
            return "E_EVENT_INVALID"
        if code == "E_JSONL_LINE_TORN" and self.config["torn_tail"] == "repair":
            self._torn_repairs.append({"rule": DROP_TORN_LINE, "action": "dropped", "runId": self._run_before(batch, i, of),
                                  "source": batch.source,
                                  "line": fields.get("line"), "offset": fields.get("offset"),
                                  "original": mark.get("original"), "message": message})
            return code
        self.error(code, message, **fields)
        return code
