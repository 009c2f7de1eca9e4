"""LineSpool: raw lines held in a temporary file instead of memory (a run too long to hold), read back as batches
whose every column is what it was: the lines, their line numbers and byte offsets in their input.

Lines go in a part at a time (stretches ``[a, b)`` of the batches they came in); each part comes back as those
stretches, rebuilt: a batch folded from one block for each stretch of lines that follow each other in the input
(``Batch.folded``: its columns made only if a stage reads them), read back from the file a part at a time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.bytespool import ByteSpool

Pieces = list[tuple[Batch, int, int]]
MAX_BYTES = 1 << 30  # the most a spool holds: a longer run goes the slow way (the disk, or a tmpfs's memory, stays bounded)
STRETCH_BYTES = 256 << 10  # lines that follow each other are read back in batches of about this much at most (a stage
# after passes on a batch of about the size the line cutter sends: bounded channels hold a few of them)


class _Stretch(NamedTuple):
    """Lines that follow each other in the input: the first one's number and offset, how many, and where the lines
    (joined by newlines) are in the spool's bytes."""

    line: int
    offset: int
    size: int  # lines
    start: int
    end: int


class LineSpool:
    """The lines of one input (``source``), spooled a part at a time (``add``), read back a part at a time (``parts``)."""

    def __init__(self, source: str, limit: int = MAX_BYTES) -> None:
        self.source = source
        self.limit = limit
        self._bytes = ByteSpool()  # (unbuffered, no memory: its temporary file made with the first part)
        self._parts: list[list[_Stretch]] = []

    def add(self, pieces: Pieces) -> bool:
        """Spool stretches ``[a, b)`` of batches as one part; False (nothing spooled) when a stretch could not be rebuilt
        as it is: a line without a line number or offset (a stage's), or lines that do not follow each other in the
        input (a line read took out between them); when the temporary file could not be made or written (no
        ``$TMPDIR``, a full disk, a file size limit): the parts spooled before are still read back whole; or when the
        spool would hold more than ``limit`` bytes."""
        places = [_place(batch, a, b) for batch, a, b in pieces if b > a]
        if None in places:
            return False
        stretches: list[_Stretch] = []
        at = self._bytes.size
        for place in places:
            assert place is not None
            line, offset, count, data = place
            last = stretches[-1] if stretches else None
            if last is not None and line == last.line + last.size and offset == last.offset + last.end - last.start + 1 \
                    and at + len(data) - last.start <= STRETCH_BYTES:
                stretches[-1] = last._replace(size=last.size + count, end=at + len(data))
            else:
                stretches.append(_Stretch(line, offset, count, at, at + len(data)))
            at += len(data) + 1
        if at > self.limit:
            return False
        try:  # at once; when it could not be, the spool is as it was
            self._bytes.append(b"\n".join([place[3] for place in places if place is not None]) + b"\n")
        except OSError:
            return False
        self._parts.append(stretches)
        return True

    def parts(self) -> Iterator[Pieces]:
        """Each part spooled, in order, as the stretches it was spooled from, rebuilt (read from the spool as taken): a
        batch for each stretch of lines that follow each other, of at most ``STRETCH_BYTES`` (or one line)."""
        for stretches in self._parts:
            yield [(Batch.folded(self.source, s.size, self._bytes.read(s.start, s.end), s.line, s.offset), 0, s.size)
                   for s in stretches]

    def close(self) -> None:
        self._parts = []
        self._bytes.close()


def _place(batch: Batch, a: int, b: int) -> tuple[int, int, int, bytes] | None:
    """Lines ``a``..``b``-1 of ``batch``: the first one's line number and offset, how many, and the lines joined; None
    unless they follow each other in the input, numbered and placed (each line begins after the newline of the one
    before)."""
    line, last_line = batch.at("lines", a), batch.at("lines", b - 1)
    offset, last_offset = batch.at("offsets", a), batch.at("offsets", b - 1)
    if line.__class__ is not int or last_line.__class__ is not int or last_line - line != b - a - 1:
        return None
    if offset.__class__ is not int or last_offset.__class__ is not int:
        return None
    data = batch.stretch(a, b)
    if last_offset - offset != len(data) - len(batch.at("raws", b - 1)):
        return None
    return line, offset, b - a, data
