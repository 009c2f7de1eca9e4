"""CheckLines: parse's checks on every line, passing the lines on unparsed (for graphs that only copy bytes)."""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import msgspec

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option
from replay.pipeline.io.journals import decode_each_line
from replay.pipeline.model.records import RECORD_KEY
from replay.stages.parse import ParseLines


@register("check_lines")
class CheckLines(ParseLines):
    """Reports exactly what ``parse`` reports, but lets each parsed record go at once.

    A record that is freed right after it is parsed leaves its memory hot for the next line; keeping
    a batch of records alive until the writer is done costs ~15% of a `replay read`. Its output may be
    raw lines, so only stages that accept raw lines (``write``) can take it. Each line it leaves out
    is replaced by a ``{"$record": "dropped"}`` line (``mark_dropped``), so a pipe loses nothing.
    """

    summary = "Check that each JSONL line is a JSON object (reported like parse) and pass the lines on unparsed."
    options = {
        **ParseLines.options,
        "mark_dropped": Option(bool, True, "write a {\"$record\": \"dropped\"} line in place of each line left out, "
                               "so a parse down the pipe reports it again"),
    }
    emits_raw = True

    def __call__(self, batch: Batch) -> Batch | list[Batch]:
        raw = batch.events is None
        stream = batch.source
        if self.config["sources"] and self._origins.get(stream) is not False:
            # a stream that opens with a source record (or its first batch, that says whether it does): a batch of
            # plain event lines (no record among them: no source record to follow, no dropped one to report) is
            # checked at once as below, and keeps to the file the last source record named; any other is checked as
            # parse checks it, so a line left out is reported at its line in the file a source record names
            if raw and stream in self._origins and _objects_no_record(batch):
                return self._relabel(batch, stream)
            out = super().__call__(batch)
            return [self._unparsed(part, raw) for part in out] if isinstance(out, list) else self._unparsed(out, raw)
        # every line one JSON object, in one msgspec call that builds nothing; a batch it refuses goes line by line,
        # where orjson decides: what is accepted is what parse accepts, only cheaper when all is well
        if raw and decode_each_line(_OBJECTS, batch) is not None:
            return batch
        return self._unparsed(self._settle(self._parse(batch), self.inputs.at(stream)), raw)

    @staticmethod
    def _unparsed(out: Batch, raw: bool) -> Batch:
        if raw:
            out.events = None  # every kept line is untouched (or a dropped record): its bytes are its output
        return out


class _Object(msgspec.Struct):
    """Any JSON object (its members are checked as JSON and skipped); anything else fails to decode."""


_OBJECTS = msgspec.json.Decoder(_Object)


class _Recorded(msgspec.Struct, gc=False):
    """A JSON object's ``$record`` (a key as a decoder reads it: ``"\\u0024record"`` is that key too; UNSET: none),
    the rest checked as JSON and skipped."""

    record: Any = msgspec.field(default=msgspec.UNSET, name=RECORD_KEY)


_RECORDED = msgspec.json.Decoder(_Recorded)
_RECORD_OF = attrgetter("record")


def _objects_no_record(batch: Batch) -> bool:
    """Is every line of ``batch`` a JSON object, and none a record (``$record``)? A batch with no ``$`` and no
    backslash has no key that spells it (one memchr each: a search for the whole key took a fifth of a `replay read a
    b`, and one for ``\\u`` 4% of it): one msgspec call that builds nothing; any other, one that reads each line's
    ``$record`` as parse reads it, as cheap (a ``$`` in a string is no record; a key written with escapes,
    ``"\\u0024record"``, is one)."""
    text = batch.text()
    if b"$" not in text and b"\\" not in text:
        return decode_each_line(_OBJECTS, batch) is not None
    values = decode_each_line(_RECORDED, batch)
    return values is not None and list(map(_RECORD_OF, values)).count(msgspec.UNSET) == len(values)
