"""ValidateSummary: one summary record per input (valid or not, its errors, events and runs) after validate."""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Transform
from replay.pipeline.io.journals import DOCUMENT_SUFFIXES, expand_paths, source_name
from replay.pipeline.model.records import DOCUMENT_RECORD, SOURCE_RECORD, is_record, record_kind
from replay.pipeline.model.runs import Run, marks_input, name_run, of_artifact_run, starts_run
from replay.pipeline.model.validation import is_no_event

ARTIFACT, STREAM = "artifact", "stream"


def _in_an_array(error: dict[str, Any]) -> bool:
    """Is ``error`` about an element of a JSON array (its path ``$[3]``, ``$[3].seq``): of a journal written as one?"""
    path = error.get("path")
    return isinstance(path, str) and path.startswith("$[")


class _Tally:
    def __init__(self, source: str) -> None:
        self.source = source
        # What the input is: a journal (JSONL, or a .json array of records: a stream) or one artifact (a .json holding
        # an object). A .json file is judged by what came of it (``judge``); None while nothing did.
        self.kind: str | None = None if source.endswith(DOCUMENT_SUFFIXES) else STREAM
        self.errors = 0
        self.events = 0
        self.runs = 0
        self.run: Run | None = None
        # Where the input came in the stream (the count of inputs before it there), once a record of it did: its place
        # among the summaries. None while only errors named it (they come on other ports, ahead of or behind the stream).
        self.place: int | None = None

    def judge(self, kind: str, *, surely: bool = True) -> None:
        """What came of the input says it is ``kind``: a record does (``surely``), an error only while nothing did."""
        if surely or self.kind is None:
            self.kind = kind

    def summary(self) -> dict[str, Any]:
        # (a .json file of which nothing came, no record nor error: an empty array, a journal of no records, as an
        # array whose every element was no record is; an empty file or an object is no such thing)
        kind = self.kind or STREAM
        line: dict[str, Any] = {"source": self.source, "kind": kind, "valid": self.errors == 0,
                                "errors": self.errors, "events": self.events}
        if kind == STREAM:
            line["runs"] = self.runs
        return line


@register("validate_summary")
class ValidateSummary(Transform):
    """Takes the validated stream and the ``errors`` ports of the stages before it. The errors are
    counted for the input they name (``source``) and passed on through this stage's own errors port,
    so they are still printed and still make the command fail. At the end: one record per input, in
    the order the inputs came."""

    summary = "Count each input's events, runs and errors (from the errors ports wired in); one summary record per input at the end."
    options = {
        "paths": Option(list, [], "the inputs (empty: the command's PATHs, else stdin): one that held nothing at all still "
                        "gets its summary", bind="args"),
    }
    screened_lane = "ends"  # (what it sends is its own)
    gives = "one summary record per input"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.tallies: dict[str, _Tally] = {}
        self.placed = 0  # the inputs the stream brought so far

    def _tally(self, source: str) -> _Tally:
        tally = self.tallies.get(source)
        if tally is None:
            tally = self.tallies[source] = _Tally(source)
        return tally

    def _in_stream(self, source: str) -> _Tally:
        """The tally of ``source``, whose records the stream brings: placed where they came, if none came before.

        The stream is in input order; the errors ports are not in step with it (an error a stage before validate found
        in one input may come ahead of the stream's records of the inputs before it), so they place nothing."""
        tally = self._tally(source)
        if tally.place is None:
            tally.place = self.placed
            self.placed += 1
        return tally

    def _in_order(self) -> list[_Tally]:
        """The tallies in input order: as the stream brought them; those only errors named (an input of which no record
        came), after them, in the order their errors came."""
        unplaced = self.placed  # (sorted stably: those after the placed keep their order)
        return sorted(self.tallies.values(), key=lambda t: unplaced if t.place is None else t.place)

    def __call__(self, batch: Batch) -> None:
        if batch.port == "errors":
            for record in batch.events or ():
                tally = self._tally(str(record.get("source") or batch.source))
                tally.errors += 1  # (an error at an array's element is of a journal written as one; any other of a
                tally.judge(STREAM if _in_an_array(record) else ARTIFACT, surely=False)  # .json file, of an artifact)
                self.emit("errors", record)
            return None
        if batch.port is not None:
            return None
        if batch.clean is not None:  # whole valid runs, counted by the screen
            tally = self._in_stream(batch.source)
            tally.judge(STREAM)
            tally.runs += batch.clean[0]
            tally.events += batch.clean[1]
            tally.run = None
            return None
        if not batch.events:
            return None
        tally = self._in_stream(batch.source)  # (one input's: a batch is of one source)
        for i, record in enumerate(batch.events):
            kind = record_kind(record)
            if kind == SOURCE_RECORD:
                # Read's mark: an input begins (the same file again, too), and its first event begins a run. A source
                # record naming another input is no input of that name (parse relabelled nothing after it).
                if marks_input(record, batch.source):
                    tally.run = None
                continue
            if kind == DOCUMENT_RECORD:
                tally.judge(ARTIFACT)
                events = record["document"].get("events") if isinstance(record.get("document"), dict) else None
                # (its events that are objects: an element that is none is no event, as in a stream, where parse
                # leaves it out; the report of the artifact counts the same)
                tally.events += sum(type(e) is dict and not is_no_event(e) for e in events) if isinstance(events, list) else 0
                continue
            tally.judge(STREAM)  # (a .json array, or another agent's records read split: a stream of them, no artifact)
            if type(record) is dict and is_no_event(record):
                continue  # (reported by validate's checks; no event, and no run: report and export leave it out so)
            if type(record) is dict and starts_run(record, tally.run, batch.source) \
                    and not of_artifact_run(record, tally.run, batch.pointers[i]):
                tally.run = Run(record.get("runId") if isinstance(record.get("runId"), str) else None, None, batch.source)
                tally.runs += 1
            elif tally.run is not None and type(record) is dict and not is_record(record):
                name_run(tally.run, record)
            if type(record) is not dict or not is_record(record):
                tally.events += 1
        return None

    def flush(self) -> Batch | None:
        if not self.tallies:  # not one record came (an empty file, blank lines): the inputs are valid, and empty
            for path in expand_paths(self.config["paths"], once=False, listed=True):  # (read refused those missing at first)
                self._tally(source_name(path))
        done = [t.summary() for t in self._in_order()]
        return Batch.of(done, "<validate_summary>") if done else None
