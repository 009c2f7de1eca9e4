"""ParseLines: turns raw lines into records; bad lines become diagnostics and the stream goes on."""

from __future__ import annotations

import itertools
from typing import Any

import orjson

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import excerpt
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Transform
from replay.pipeline.model.records import RECORD_KEY, SOURCE_RECORD

_BLANK = b" \t\r"


@register("parse")
class ParseLines(Transform):
    summary = "Parse JSONL lines into records; report invalid, torn and non-object lines with their position."
    options = {
        "torn_tail": Option(str, "error", "a cut-off last line: 'error' (no newline + invalid JSON is E_JSONL_LINE_TORN), "
                            "or 'repair' (a file's invalid last line, newline or not, is dropped and logged on the repairs port)",
                            choices=("error", "repair")),
    }
    ports = ("errors", "repairs")
    accepts_raw = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # In repair mode an invalid line waits here until we know whether it was its file's last line.
        self._suspect: tuple[Batch, int, bytes, orjson.JSONDecodeError] | None = None
        # Per input stream: False (no source records: the usual case, nothing to do), or where the
        # records come from now: (file name, line and offset of its source record in the stream).
        self._origins: dict[str, Any] = {}

    # source records: `replay read a.jsonl b.jsonl | ...` keeps each file its own source ----------------------
    def _starts_with_source(self, batch: Batch, parsed: Batch) -> bool:
        """Decided on a stream's first records: only a stream that opens with a source record has them."""
        if batch.source in self._origins or not parsed.events:
            return False
        first = parsed.events[0]
        self._origins[batch.source] = None if first.get(RECORD_KEY) == SOURCE_RECORD else False
        return self._origins[batch.source] is None

    def _follow_sources(self, batch: Batch) -> Batch | list[Batch]:
        """Relabel records with the file their source record names, lines and offsets counted from it."""
        stream = batch.source
        events = batch.events or []
        cuts = [i for i, e in enumerate(events) if e.get(RECORD_KEY) == SOURCE_RECORD and isinstance(e.get("source"), str)]
        if not cuts:
            return self._relabel(batch, stream)
        parts: list[Batch] = []
        bounds = [0, *cuts, len(events)]
        for a, b in itertools.pairwise(bounds):
            if a == b:
                continue
            if a in cuts:  # a source record: it and what follows belong to the file it names
                line, offset, raw = batch.lines[a], batch.offsets[a], batch.raws[a]
                after = offset + len(raw) + 1 if offset is not None and raw is not None else None
                self._origins[stream] = (events[a]["source"], line, after)
            parts.append(self._relabel(batch.select(range(a, b)), stream))
        return parts if len(parts) > 1 else parts[0]

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
        parsed = self._parse(batch)
        if self._origins.get(batch.source, False) is False and not self._starts_with_source(batch, parsed):
            return parsed
        return self._follow_sources(parsed)

    def _parse(self, batch: Batch) -> Batch:
        if self._suspect is not None and (batch.source != self._suspect[0].source or _has_content(batch)):
            self._settle_suspect(last=batch.source != self._suspect[0].source)
        if batch.events is not None:  # records from a JSON document are parsed already
            if all(type(e) is dict for e in batch.events):
                return batch
            return self._keep_objects(batch)
        loads = orjson.loads
        try:
            events = [loads(raw) for raw in batch.raws]  # type: ignore[arg-type]
        except orjson.JSONDecodeError:
            return self._slow(batch)
        if not all(type(e) is dict for e in events):
            return self._slow(batch)
        batch.events = events
        return batch

    def _slow(self, batch: Batch) -> Batch:
        """Line by line: skip blank lines, report and drop the bad ones, keep the rest in order."""
        events: list[Any] = []
        keep: list[int] = []
        last = len(batch.raws) - 1
        for i, raw in enumerate(batch.raws):
            assert raw is not None
            if not raw.strip(_BLANK):
                continue
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                if batch.tail_open and i == last:
                    self._torn(batch, i, raw)
                elif self.config["torn_tail"] == "repair":
                    if self._suspect is not None:
                        self._settle_suspect(last=False)
                    self._suspect = (batch, i, raw, exc)
                else:
                    self._invalid(batch, i, raw, exc)
                continue
            if self._suspect is not None:
                self._settle_suspect(last=False)
            if type(record) is not dict:
                self.error(
                    "E_EVENT_NOT_OBJECT", f"line {batch.lines[i]} is JSON but not an object",
                    batch, i, expected="object", received=type(record).__name__,
                )
                continue
            events.append(record)
            keep.append(i)
        out = batch.select(keep)
        out.events = events
        return out

    def flush(self) -> None:
        if self._suspect is not None:
            self._settle_suspect(last=True)

    def _settle_suspect(self, last: bool) -> None:
        """An invalid line held back in repair mode: its file's last line is torn, any other is invalid."""
        assert self._suspect is not None
        batch, i, raw, exc = self._suspect
        self._suspect = None
        if last:
            self._torn(batch, i, raw)
        else:
            self._invalid(batch, i, raw, exc)

    def _invalid(self, batch: Batch, i: int, raw: bytes, exc: orjson.JSONDecodeError) -> None:
        column = _byte_column(raw, exc.pos)
        self.error(
            "E_JSONL_LINE_INVALID", f"line {batch.lines[i]} is not valid JSON: {exc.msg} at column {column}",
            batch, i, column=column, received=excerpt(raw),
        )

    def _keep_objects(self, batch: Batch) -> Batch:
        keep = []
        for i, record in enumerate(batch.events or ()):
            if type(record) is dict:
                keep.append(i)
            else:
                self.error("E_EVENT_NOT_OBJECT", f"{batch.pointers[i]} is not an object", batch, i,
                           expected="object", received=type(record).__name__)
        return batch.select(keep)

    def _torn(self, batch: Batch, i: int, raw: bytes) -> None:
        ending = "has no newline and is not" if batch.tail_open and i == len(batch.raws) - 1 else "is not"
        message = f"last line {batch.lines[i]} (byte {batch.offsets[i]}) {ending} valid JSON: the write was cut off"
        if self.config["torn_tail"] == "repair":
            self.emit("repairs", {
                "rule": "drop_torn_line", "action": "dropped", "source": batch.source, "line": batch.lines[i],
                "offset": batch.offsets[i], "original": raw.decode("utf-8", "replace"), "message": message,
            })
        else:
            self.error("E_JSONL_LINE_TORN", message, batch, i, received=excerpt(raw))


def _has_content(batch: Batch) -> bool:
    if batch.events is not None:
        return bool(batch.events)
    return any(raw.strip(_BLANK) for raw in batch.raws if raw is not None)


def _byte_column(raw: bytes, char_pos: int) -> int:
    """1-based byte column of orjson's character position."""
    if raw.isascii():
        return char_pos + 1
    return len(raw.decode("utf-8", "replace")[:char_pos].encode("utf-8")) + 1

