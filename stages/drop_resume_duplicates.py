"""DropResumeDuplicates: drops a record written again later in its run (as a resumed session does), logging what was dropped.

``dedupe`` drops exact neighbours; a resumed session writes records it already holds further down
the file. An event is judged when it can be told apart from a look-alike: it has an ``id`` (the
record's own id, e.g. Claude Code's ``uuid``), or an original record (``$origin``) with a timestamp.
It is dropped when an earlier event of the run has the same id (and part of its record) and the
same content; the same id with other content is a notice, and both are kept. Events with neither
(replay's own, or records with no time such as mini-swe-agent messages) are never judged: repeats
there are ordinary.
"""

from __future__ import annotations

from typing import Any

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.model.dialects import ORIGIN_KEY
from replay.pipeline.model.runs import Run, RunScoped


def _written(value: Any) -> bytes:
    return exactjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _hash(written: bytes) -> bytes:
    import hashlib  # here: a heal of a journal without ids or original records never takes a digest (~3 ms of start-up)

    return hashlib.blake2b(written, digest_size=16).digest()


def _digest(value: Any) -> bytes:
    return _hash(_written(value))


def judged(event: dict[str, Any]) -> tuple[tuple[Any, ...], bytes] | None:
    """What makes an event the same record as another (its id and part, or its dated original record), and its
    ``content``; None for an event never judged. A dated record is written once for both."""
    origin = event.get(ORIGIN_KEY)
    part = origin.get("part") if isinstance(origin, dict) else None
    eid = event.get("id")
    if isinstance(eid, str) and eid:
        return ("id", eid, part), content(event)
    record = origin.get("record") if isinstance(origin, dict) else None
    if isinstance(record, dict) and record.get("timestamp") is not None:
        written = _written(record)
        return ("record", _hash(written), part), _record_content(written, part)
    return None


def content(event: dict[str, Any]) -> bytes:
    """The content compared: the original record when there is one (``_record_content``), else the event without its
    seq."""
    origin = event.get(ORIGIN_KEY)
    if isinstance(origin, dict) and "record" in origin:
        return _record_content(_written(origin["record"]), origin.get("part"))
    return _digest({k: v for k, v in event.items() if k != "seq"})


def _record_content(written: bytes, part: Any) -> bytes:
    """The content of an original record (``written``) and the part of it an event is: ``[record, part]`` written."""
    return _hash(b"[" + written + b"," + _written(part) + b"]")


@register("drop_resume_duplicates")
class DropResumeDuplicates(RunScoped):
    summary = "Drop a record written again later in its run (same id or dated original record, same content), as after a resume."
    ports = ("errors", "repairs", "notices")  # type: ignore[assignment]
    notice_code = "E_RECORD_ID_REUSED"

    def begin_run(self, run: Run) -> None:
        run.state["seen"] = {}

    def on_events(self, batch: Batch, start: int, end: int) -> None:
        events = batch.events
        assert events is not None and self.run is not None
        seen: dict[tuple[Any, ...], tuple[bytes, dict[str, Any]]] = self.run.state["seen"]
        for i in [i for i in range(start, end) if "id" in events[i] or ORIGIN_KEY in events[i]]:
            event = events[i]
            found = judged(event)
            if found is None:
                continue
            key, digest = found
            first = seen.get(key)
            if first is None:
                seen[key] = (digest, batch.where(i))
            elif first[0] == digest:
                self.drop(i)
                where = ", ".join(f"{k} {v}" for k, v in first[1].items() if k in ("line", "path")) or "earlier"
                self.repair("dropped", f"the same record as {where} ({_name(key)}), written again as a resumed session "
                            "does", batch, i, seqBefore=event.get("seq"), original=event)
            else:
                self.notice(f"{_name(key)} is used again with other content; both kept", batch, i, seqBefore=event.get("seq"))


def _name(key: tuple[Any, ...]) -> str:
    return f"id {key[1]!r}" if key[0] == "id" else "an identical dated record"
