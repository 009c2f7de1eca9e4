"""JoinSplitRecords: rejoins a record its writer split across lines (a raw newline in a string), before parse; each join is logged.

Some writers put a newline into a JSONL line: a tool's multi-line output written into a string
without escaping it (github/copilot-cli#2649 found session logs written so), or a record
pretty-printed. Each piece alone is not JSON, so ``parse`` would report every one of them and lose
the record. This stage sits between ``read`` and ``parse`` (``heal.toml``, ``heal-dir.toml``), on
raw lines, and puts such a record back on one line:

- consecutive lines of one input are joined when **none is a record on its own** and **their join is
  one JSON object**. The first is invalid JSON alone and begins with ``{`` (a blank line may only
  come between two others); a later one may be valid alone if it is no record: a scalar, an array or
  ``{}`` (the last element of a pretty-printed array, ``"y"``, ``2``, ``null``, ``[]``, ``{}``, is
  such a line). A line that is an object with a key on its own is a record, never joined, whatever
  surrounds it (a pretty-printer writes no such line inside a record: it breaks every object that is
  not empty).
- a newline between two tokens of the record is whitespace and stays so (as a space); a newline
  inside a string is the one the writer forgot to escape, and becomes ``\\n`` (``\\r`` likewise).
- the joined record is one line at the first piece's line number and byte offset: the pieces'
  bytes with only those newlines changed. Its heal-log entry (rule ``join_split_records``, action
  ``changed``) says how many lines were joined and keeps the pieces as they were (``original``). It is logged once,
  by one stage, which the graph decides (``streams_into``): when the lines reach one stage that logs joins
  (``Stage.logs_joins``: ``parse``, which in heal's graphs hands them on to ``cut_runs``, where each is logged just
  before its run goes on), the entry goes on with its line (``Batch.rejoined``) and
  that stage logs it as the line passes there: with its run, as the rules log theirs (the screen between them holds
  a run to its end, and sends the runs of one read on together: logged here, as the read came, a block's joins
  would go before the repairs of every run in it, in an order that depends on where the reads fell). Else (no
  such stage after it: ``read -> join_split_records -> write``; or two, on two ways) this stage logs it itself, on
  its ``repairs`` port, as it joins the line.
- the pieces are consecutive lines: no join spans a line read left out (too long for ``--max-line-bytes``: a gap in
  the line numbers), whose bytes are not known; the pieces around it joined would be a record never written (a field
  gone). Its pieces go on as they are, as down a pipe from ``replay read`` (its dropped record is no piece).
- a join reaches over at most ``max_lines`` lines and ``max_bytes`` bytes (it is parsed when its
  last piece ends with ``}``, and at 2, 4, 8, ... pieces to stop early when nothing can complete
  it); pieces that never make a record pass on unchanged, for ``parse`` to report (a file's cut-off
  last line among them).

- down a pipe from ``replay read`` (``read a | heal``), each line read left out is a dropped record that keeps it
  whole (``original``): such a record is taken as the line it stands for, at its place in its file
  (``MarkedLines``), so the pieces join, and are logged, as from the file; one that joins nothing goes on as it
  came, for ``parse`` to report again.

Lines that are all valid, the usual case, pass as the very batch that came in (with each line's head as
the screen decodes it: learning that they are JSON is that decode, which the screen then need not repeat).
"""

from __future__ import annotations

from collections import deque
from itertools import pairwise
from typing import Any

import msgspec
import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch, joins_within
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import HandsOnJoins, Option
from replay.pipeline.io.journals import DEFAULT_MAX_LINE_BYTES, decode_each_line, torn_at_end
from replay.pipeline.model.split_records import (
    RULE,
    Joined,
    MarkedLines,
    SplitJoiner,
    has_marks,
    opens_with_source,
)
from replay.stages.screen import decode_heads

__all__ = ["RULE", "JoinSplitRecords"]


@register("join_split_records")
class JoinSplitRecords(HandsOnJoins):  # (the joins go on with their lines to the one stage that logs them: ``parse``, ``walk``)
    summary = ("Rejoin a record written across several lines (the first invalid JSON alone, none a record alone, their "
               "join one object; a raw newline in a string is escaped); each join logged. Put it between read and parse.")
    options = {
        "max_lines": Option(int, 10_000, "most lines one record may have been split into", minimum=1),
        "max_bytes": Option(int, DEFAULT_MAX_LINE_BYTES, "most bytes one split record may have (the pieces together)", minimum=1),
        "marks": Option(bool, True, "a dropped record of a `replay read` up the pipe that keeps its line whole "
                                    "(`original`) is that line, a piece a join may take; false: a record as any other "
                                    "(a walk of a saved stream ends at it, as its --at pre-scan does)"),
    }
    # (``repairs``: the joins, when no stage after it logs them: ``streams_into``)
    ports = ("errors", "repairs")
    accepts_raw = True
    screened_lane = "passes"
    emits_raw = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.source: str | None = None
        self.joiner = SplitJoiner(self.config["max_lines"], self.config["max_bytes"])  # the pieces being gathered
        # the lines `replay read` up the pipe left out, its dropped records keep (``marks``)
        self.marked = MarkedLines(self.config["max_lines"], self.config["marks"])
        self.sourced: dict[str, bool] = {}  # per stream: does it open with a source record?

    def __call__(self, batch: Batch) -> Batch | list[Batch] | None:
        out: list[Batch] = []
        if self.joiner.held and batch.source != self.source:
            self._flush_into(out)
        self.source = self.joiner.source = batch.source
        if batch.source not in self.sourced:  # (its first lines: a stream of `replay read a b` opens with a source record)
            self.sourced[batch.source] = batch.events is None and len(batch) > 0 and opens_with_source(batch.at("raws", 0))
        if batch.events is not None:  # parsed already (a JSON document's records, a source record)
            self._flush_into(out)
            out.append(batch)
            return _one(out)
        if not self.joiner.held and not (self.marked.takes_marks and has_marks(batch.text())) and _all_json(batch):
            self.marked.next = None  # (nothing held: no join spans these lines)
            out.append(batch)  # every line is JSON on its own: nothing to join, the batch as it came
            return _one(out)
        stream = None if self.sourced.get(batch.source) else batch.source
        lines = deque(self.marked.lines(batch.raws, batch.lines, batch.offsets, batch.tail_open, stream))
        done: list[Joined] = []
        self.joiner.process(lines, done)
        out += self._batches(done) if done else []
        if out and batch.pause:
            out[-1].pause = True  # the input may wait here: what follows read must not wait for more
        return _one(out)

    def flush(self) -> Batch | list[Batch] | None:
        out: list[Batch] = []
        self._flush_into(out)
        return _one(out)

    def _flush_into(self, out: list[Batch]) -> None:
        """The input ended: what is still held makes no record from its first line; look at the rest again."""
        done: list[Joined] = []
        self.joiner.flush(done)
        if done:
            out += self._batches(done)

    def _batches(self, done: list[Joined]) -> list[Batch]:
        """Lines out as batches; an input's open last line, when it is torn (``torn_at_end``), in a batch of its own,
        as read sends it (a whole one goes with the lines before it)."""
        raws: list[bytes | None] = []
        lines: list[int | None] = []
        offsets: list[int | None] = []
        rejoined: dict[int, dict[str, Any]] = {}
        tail = alone = False
        for item in done:
            if isinstance(item, tuple):
                raw, entry, first = item
                rejoined[len(raws)] = entry
                raws.append(raw)
                lines.append(first.line)
                offsets.append(first.offset)
                tail = alone = False
            elif not item.gap:  # (a dropped record that joined nothing goes on as it came)
                raws.append(item.raw if item.mark is None else item.mark)
                lines.append(item.line)
                offsets.append(item.offset)
                tail = item.tail
                alone = tail and torn_at_end(item.raw)
        assert self.source is not None
        if not raws:  # (only blank lines read left out, put back between pieces that joined nothing)
            return []
        # (a joined line is never the open last line); a join's line after a source record of `replay read a b` in a
        # batch after it: the stage that logs the join logs it before the batch's lines, so after the record
        cuts = {len(raws) - 1} if alone and len(raws) > 1 else set()
        if rejoined and self.hands_on:
            cuts.update(k + 1 for k, raw in enumerate(raws) if opens_with_source(raw))
        bounds = sorted({0, *cuts, len(raws)})
        out = [Batch(self.source, None, raws[a:b], lines[a:b], offsets[a:b], None, tail and b == len(raws))
               for a, b in pairwise(bounds)]
        if self.hands_on:  # each joined line's log entry: the screen sends their runs the slow way, where it is logged
            for part, (a, b) in zip(out, pairwise(bounds), strict=True):
                part.rejoined = joins_within(rejoined, a, b)
        else:
            for entry in rejoined.values():
                self.emit("repairs", entry)
        return out


_ANY = msgspec.json.Decoder(msgspec.Raw)


def _all_json(batch: Batch) -> bool:
    """Is every line JSON on its own? The screen's decode of the lines' heads tells (one msgspec call over the
    batch), and the heads go on with the batch for the screen; a batch it refuses is checked with one msgspec
    call that builds nothing (what it skips it does not check as UTF-8: a batch that is not ASCII is decoded
    first), and one that refuses too, or one with a blank line, line by line with orjson as before."""
    heads = decode_heads(batch)
    if heads is not None:
        batch.heads = heads  # type: ignore[assignment]
        return True
    if decode_each_line(_ANY, batch) is not None:
        return True
    try:
        for raw in batch.raws:
            exactjson.loads(raw)  # type: ignore[arg-type]
    except orjson.JSONDecodeError:
        return False
    return True


def _one(out: list[Batch]) -> Batch | list[Batch] | None:
    if not out:
        return None
    return out[0] if len(out) == 1 else out
