"""Reserved stream records: every ``{"$record": ...}`` kind a stream may carry, named once.

A line of a stream is an event or a reserved record. ``run`` carries a run's facts before its events,
``source`` marks where an input file begins, ``heal`` counts a run's repairs after it, ``invocation``
asks ``spawn`` to run the user's runner, and ``summary`` / ``diagnostics`` carry what ``summarize``
found to ``report``.
"""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.errors import how_to_fix

RECORD_KEY = "$record"
RUN_RECORD = "run"
SOURCE_RECORD = "source"  # {"$record": "source", "source": "a.jsonl"}: the records after it came from that input
HEAL_RECORD = "heal"
RUN_DROPPED = "runDropped"  # in a heal record: true when heal dropped every event of its run (the record follows no run)
RUNS_DROPPED = "runs_dropped"  # what heal tells the command it runs in: how many such heal records it wrote
# what heal's screen tells the command: true when the heal log's order followed where reading cut the input into
# batches (the stream went the slow way at a source record; a run too long to hold that needs repairs went on in parts):
# a piece of one file, read from another place, may log it otherwise, so one run heals the file (``cli/pieces.py``)
LOG_FOLLOWS_READS = "log_follows_reads"
INVOCATION_RECORD = "invocation"
SUMMARY_RECORD = "summary"
DIAGNOSTICS_RECORD = "diagnostics"
# {"$record": "dropped", "code", "message", "source", "line", "offset", ..., "howToFix"}: `replay read` left a line out
# here (reported with that code); a parse down the pipe reports it again at the same place.
DROPPED_RECORD = "dropped"
DOCUMENT_RECORD = "document"  # {"$record": "document", "document": {...}}: a JSON file read whole (validate)
# {"$record": "redaction", ...the audit's counts and warnings}: a `redact` stage redacted the records before it (it
# sends one at the end of the stream; the audit is the one incident-redaction.schema.json describes)
REDACTION_RECORD = "redaction"
STREAM_RECORDS = (RUN_RECORD, HEAL_RECORD, SOURCE_RECORD, DROPPED_RECORD, REDACTION_RECORD)  # the kinds a stream may carry

def is_record(record: dict[str, Any]) -> bool:
    """Is ``record`` (a JSON object) a reserved record, not an event? The ``$record`` key marks one, whatever its value
    (`replay schema stream`; an event has no such key, `replay schema event`): ``{"$record": null, ...}`` is a record of
    a kind replay does not know, as ``{"$record": "other"}`` is. It begins no run and is no event of its run; it goes
    with that run untouched, and validate reports it. Every stage tells events from records by this (a loop over each
    event of a batch may write the same test inline, ``RECORD_KEY in record``; ``has_records`` asks it of a batch)."""
    return RECORD_KEY in record


def has_records(records: list[dict[str, Any]]) -> bool:
    """Is any of ``records`` (JSON objects) a reserved record (``is_record``)? A batch's test in the usual-batch checks
    of validate, report and the heal rules: a comprehension, the fastest measured (16 µs for 1,024 plain events, where
    a map of ``operator.contains`` took 27, Python 3.11)."""
    return bool([1 for record in records if RECORD_KEY in record])


def is_canonical(record: dict[str, Any]) -> bool:
    """Is ``record`` (an object) one of replay's own: a reserved record, or an event with ``seq`` and ``runId``?
    Another agent's records have neither (``pipeline/model/dialects/detect.py``)."""
    return is_record(record) or ("seq" in record and "runId" in record)


STATUSES = ("ok", "error")  # a run's status, in run records, artifacts and runner outputs


def is_run_record(record: Any) -> bool:
    return type(record) is dict and record.get(RECORD_KEY) == RUN_RECORD


def dropped_record(code: str, message: str, where: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """The dropped record that stands in a stream for a line left out (``read``'s and ``parse``'s ``mark_dropped``):
    the code and message it was reported with, where it was (``where``'s fields but None ones), then ``fields``, and
    the ``howToFix`` the report gave (the code's own when ``fields`` has none), so a parse down the pipe that reports
    the line again gives the same advice."""
    mark: dict[str, Any] = {RECORD_KEY: DROPPED_RECORD, "code": code, "message": message}
    mark.update((k, v) for k, v in where.items() if v is not None)
    mark.update(fields)
    if mark.get("howToFix") is None:
        mark["howToFix"] = how_to_fix(code)
    return mark


def not_object_fix(pointer: str | None) -> str:
    """The advice for a record of a JSON document that is no object (E_EVENT_NOT_OBJECT from ``parse``, the cause of
    walk's refusal), at its JSON ``pointer``: an element of an artifact's ``events`` or of an array, not a line."""
    where = pointer or "it"
    whole = "artifact's `events` must be one JSON object (an event)" if (pointer or "").startswith("$.events[") \
        else "array must be one JSON object (a record)"
    return f"Each element of the {whole}: fix or remove {where}."


def record_kind(record: Any) -> str | None:
    """The reserved kind of ``record`` (``run``, ``heal``, ...), None for an event (and for a record whose kind is null:
    ``is_record`` tells the two apart)."""
    return record.get(RECORD_KEY) if type(record) is dict else None
