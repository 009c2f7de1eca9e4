"""ValidateEvents: checks every event and reserved record of a stream; problems go to the errors port."""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import BYTES_KEPT, Batch
from replay.pipeline.engine.errors import CATALOGUE
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Transform
from replay.pipeline.model.dropped import NOT_OBJECT, dropped_lines, place
from replay.pipeline.model.records import DOCUMENT_RECORD, record_kind
from replay.pipeline.model.validation import SEQ_ORDERS, EventChecker, validate_artifact


@register("validate")
class ValidateEvents(Transform):
    summary = "Check events (type, seq order, RFC 3339 timestamp, runId, payload) and run records; pass the stream on unchanged."
    options = {
        "seq_order": Option(str, "contiguous", "what seq must do inside a run: go 1..n, only go up, or anything",
                            choices=SEQ_ORDERS),
        "duplicate_keys": Option(bool, False, "also report lines with a key written twice in one object (E_JSON_DUPLICATE_KEY, "
                                 "a warning on the notices port: the bytes are kept, the run does not fail); it costs a "
                                 "full parse of every line, so `replay validate` leaves it off"),
        "report_as": Option(str, "", "report every problem under this one code (e.g. E_HEALED_ARTIFACT_INVALID after "
                            "heal), the specific code kept in `cause`; empty: the specific codes",
                            choices=("", *CATALOGUE), choices_named="a code of ERROR_CODES.md, or empty"),
    }

    ports = ("errors", "notices")
    screened_lane = "passes"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # One checker per input source: each file is a stream of its own, with its own runs.
        self.checkers: dict[str, EventChecker] = {}
        self._source: str | None = None
        self._checker: EventChecker | None = None

    def checker_for(self, source: str) -> EventChecker:
        if source != self._source or self._checker is None:
            self._source = source
            self._checker = self.checkers.get(source)
            if self._checker is None:
                self._checker = self.checkers[source] = EventChecker(self.config["seq_order"], source)
        return self._checker

    def __call__(self, batch: Batch) -> Batch:
        if batch.port is not None:  # side records (repairs, diagnostics) are not stream records
            return batch
        if batch.clean is not None:  # whole runs the screen found valid: counted, and the run in progress ends
            checker = self.checker_for(batch.source)
            checker.skip_runs(batch.clean[0], batch.clean[1], len(batch))
            # (their lines are checked: a record left out before them took its place there, not in a run after them)
            checker.place = self._place(checker, batch, len(batch.lines) - 1) or checker.place
            if self.config["duplicate_keys"]:
                self._duplicates(batch)
            return batch
        if batch.notes:  # what the stages before saw while changing events (duplicate keys written anew)
            for note in batch.notes:
                self.emit("notices", {**note, "stage": self.id})
            batch.notes = None
        if self.config["duplicate_keys"] and batch.events is not None:
            self._duplicates(batch)
        events = batch.events or []
        if len(events) == 1 and record_kind(events[0]) == DOCUMENT_RECORD:  # a .json file read whole
            for body in validate_artifact(events[0].get("document"), seq_order=self.config["seq_order"]):
                self._report(body, batch, 0, source=batch.source)
            return batch
        checker = self.checker_for(batch.source)
        pointers, lines, offsets = batch.pointers, batch.lines, batch.offsets
        if not self._left_out(checker, batch) and checker.check_stretch(batch.events or []):
            checker.place = self._place(checker, batch, len(lines) - 1) or checker.place
            return batch
        said: tuple[Any, set[bytes]] = (None, set())  # the place of the last events' record, and what was said of it
        for i, record in enumerate(batch.events or ()):
            if (at := self._place(checker, batch, i)) is not None:
                if (last := checker.place) is None or last[0] != at[0]:
                    last = (at[0], 0)
                if at[1] > last[1] + 1:  # (elements that are no object parse left out: each takes its place)
                    checker.left_out(dropped_lines(self.shared).count_between(at[0], last[1], at[1] - 1, NOT_OBJECT))
                checker.place = at
            bodies = checker.check(record, pointers[i] or "$")
            if not bodies:
                continue
            where = (lines[i], offsets[i], pointers[i])
            if where != said[0] or where == (None, None, None):
                said = (where, set())
            for body in bodies:
                # another agent's record mapped into several events (text and a tool call of one message): a fault
                # of the record they share (its time, say) is said once, at its place
                key = exactjson.dumps(body, default=str)
                if key not in said[1]:
                    said[1].add(key)
                    self._report(body, batch, i)
        return batch

    def _place(self, checker: EventChecker, batch: Batch, i: int) -> tuple[Any, int] | None:
        """``dropped.place`` of record ``i`` of ``batch``, in the input its checker reads now."""
        return place((batch.source, checker.marks), batch.lines[i], batch.pointers[i]) if i >= 0 else None

    def _left_out(self, checker: EventChecker, batch: Batch) -> bool:
        """Were records that are no object left out of ``batch``'s input before its last record, since the last record
        checked (so it is checked record by record, each left out in its place)?"""
        end = self._place(checker, batch, len(batch.lines) - 1)
        if end is None:
            return False
        last = checker.place if checker.place is not None and checker.place[0] == end[0] else (end[0], 0)
        return dropped_lines(self.shared).count_between(end[0], last[1], end[1], NOT_OBJECT) > 0

    def _duplicates(self, batch: Batch) -> None:
        """Lines with a key written twice in one object: kept as they are, and said so."""
        events = batch.events
        for i in range(len(batch.raws)):
            self.note_keys_twice(batch, i, events[i] if events is not None else None, BYTES_KEPT)

    def _report(self, body: dict[str, Any], batch: Batch, i: int, **fields: Any) -> None:
        code, message = body.pop("code"), body.pop("message")
        report_as = self.config["report_as"]
        if report_as:
            body["cause"] = code
            message = f"still invalid after healing: {message}"
            code = report_as
        self.error(code, message, batch, i, **fields, **body)

    # totals over every input checked so far --------------------------------------------------
    @property
    def events(self) -> int:
        return sum(c.events for c in self.checkers.values())

    @property
    def runs(self) -> int:
        return sum(c.runs for c in self.checkers.values())
