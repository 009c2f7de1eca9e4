"""ValidateEvents: checks every event and reserved record of a stream; problems go to the errors port."""

from __future__ import annotations

import re
from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import BYTES_KEPT, Batch, duplicate_key_note
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Transform
from replay.pipeline.model.records import DOCUMENT_RECORD, RECORD_KEY, RUN_RECORD, record_kind
from replay.pipeline.model.validation import (
    MEMBERS,
    SEQ_ORDERS,
    USAGE_FIX,
    USAGE_NOT_COUNTED,
    EventChecker,
    usage_not_counted,
    validate_artifact,
)
from replay.pipeline.report.model import usage_of

_USAGE = b'"usage"'
_USAGE_OBJECT = re.compile(rb'"usage"\s*:\s*\{[^{}]*\}')  # a usage object with no object in it
# In such objects, a value that may be no count a report holds: one that is no number or null (a string, a negative
# number, true), or a number written with an exponent or more digits than a double holds (maybe more than a count has).
_MAYBE_UNCOUNTED = re.compile(rb":\s*(?:[^\s0-9n{]|[0-9.]*[eE]|[0-9.]{18})")


def _all_counted(blob: bytes) -> bool:
    """Does every ``"usage"`` in ``blob`` (valid JSON lines) open a usage object a report counts whole, as it is in the
    usual journal: plain numbers >= 0 or null? Then no line needs parsing for a word about its usage
    (``ValidateEvents._usage``). False when in doubt. (A key spelled with escapes, ``"us\u0061ge"``, is not looked
    for.)"""
    count = blob.count(_USAGE)
    if not count:
        return True
    found = _USAGE_OBJECT.findall(blob)
    return len(found) == count and not _MAYBE_UNCOUNTED.search(b"".join(found))


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
                            "heal), the specific code kept in `cause`; empty: the specific codes"),
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
            self.checker_for(batch.source).skip_runs(batch.clean[0], batch.clean[1], len(batch))
            if self.config["duplicate_keys"]:
                self._duplicates(batch)
            self._usage(batch)
            return batch
        if batch.notes:  # what the stages before saw while changing events (duplicate keys written anew)
            for note in batch.notes:
                self.emit("notices", {**note, "stage": self.id})
            batch.notes = None
        if self.config["duplicate_keys"] and batch.events is not None:
            self._duplicates(batch)
        events = batch.events or []
        if len(events) == 1 and record_kind(events[0]) == DOCUMENT_RECORD:  # a .json file read whole
            document = events[0].get("document")
            for body in validate_artifact(document, seq_order=self.config["seq_order"]):
                self._report(body, batch, 0, source=batch.source)
            if isinstance(document, dict):
                self._usage_of(document, batch, 0, "$", checked=MEMBERS["usage"])
                listed = document.get("events")
                for k, event in enumerate(listed if isinstance(listed, list) else ()):
                    self._usage_of(event, batch, 0, f"$.events[{k}]")
            return batch
        self._usage(batch)
        checker = self.checker_for(batch.source)
        if checker.check_stretch(batch.events or []):
            return batch
        pointers, lines, offsets = batch.pointers, batch.lines, batch.offsets
        said: tuple[Any, set[bytes]] = (None, set())  # the place of the last events' record, and what was said of it
        for i, record in enumerate(batch.events or ()):
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

    def _duplicates(self, batch: Batch) -> None:
        """Lines with a key written twice in one object: kept as they are, and said so."""
        raws, events = batch.raws, batch.events
        for i, raw in enumerate(raws):
            if raw is None:
                continue
            note = duplicate_key_note(raw, events[i] if events is not None else None, batch.position(i), outcome=BYTES_KEPT)
            if note is not None:
                self.emit("notices", {**note, "stage": self.id})

    def _usage(self, batch: Batch) -> None:
        """A notice for each usage object of the batch's records that holds what a report leaves out (``_usage_of``)."""
        raws, events = batch.raws, batch.events
        lines = [raw for raw in raws if raw is not None]
        blob = b"\n".join(lines)
        if _all_counted(blob):  # (the usual batch: nothing to say of any line)
            if len(lines) == len(raws):
                return
            lines = []  # (only the records a stage changed, which have no line, are looked at)
        for i, raw in enumerate(raws):
            if raw is not None and (not lines or _USAGE not in raw):
                continue
            record = events[i] if events is not None else None
            if record is None and raw is not None:  # (a line of a clean run: never parsed)
                try:
                    record = exactjson.loads(raw)
                except ValueError:
                    continue
            if record.__class__ is dict:
                kind = record.get(RECORD_KEY)
                if kind is None or kind == RUN_RECORD:
                    self._usage_of(record, batch, i, batch.pointers[i] or "$",
                                   checked=MEMBERS["usage"] if kind == RUN_RECORD else None)

    def _usage_of(self, record: Any, batch: Batch, i: int, path: str, checked: dict[str, Any] | None = None) -> None:
        """E_USAGE_NOT_COUNTED, a warning, for a usage object of ``record`` (an event's payload's, or with ``checked``,
        the members the schema holds to counts, a run record's or artifact's own) whose counts a report leaves out
        (``usage_of``): a value that is no count (a run record's ``checked`` members are errors already: not said
        again), or a number no count holds. An event's payload may hold anything: that one fails no check."""
        if record.__class__ is not dict:
            return
        payload = record if checked is not None else record.get("payload")
        usage = payload.get("usage") if payload.__class__ is dict else None
        if usage.__class__ is not dict:
            return
        unheld: list[str] = []
        skipped: list[str] = []
        usage_of(usage, unheld, skipped)
        fields = unheld or [field for field in skipped if field.split(" ", 1)[0] not in (checked or {})]
        if not fields:
            return
        where = batch.where(i)
        at = f"line {where['line']}" if "line" in where and path == "$" else f"{path}"
        run_id = record.get("runId")
        self.emit("notices", {
            "code": USAGE_NOT_COUNTED, "action": "reported", **where, **({"runId": run_id} if isinstance(run_id, str) else {}),
            "stage": self.id, "path": f"{path}.usage" if checked is not None else f"{path}.payload.usage",
            "received": ", ".join(fields),
            "message": f"{at}: {usage_not_counted(fields, bool(unheld))}; a report leaves "
                       f"{'this usage object' if unheld else 'it'} out of the run's usage",
            "howToFix": USAGE_FIX,
        })

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
