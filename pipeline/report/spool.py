"""Spools: what a report gathers before it can write (the runs come before the totals that head it), kept so that
its memory stays flat however many runs it covers: the first few MiB in memory, the rest in a temporary file.

``ByteSpool`` holds bytes (a renderer's finished pieces); ``SpooledSummaries`` holds run summaries as JSON lines
in one, read back one at a time; a run of many tool calls has them in lines of their own after its line, read back
a piece at a time as they are used (``SpooledCalls``: a long run's calls are never all decoded at once)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any, overload

from replay.pipeline.engine import bytespool, exactjson

IN_MEMORY = bytespool.IN_MEMORY  # bytes kept in memory before the rest goes to a temporary file
READ_BYTES = bytespool.READ_BYTES  # a pass over the file reads it this much at a time (a test makes it small)
WRITE_BUFFER = bytespool.WRITE_BUFFER  # the file's write buffer: a run's piece is a few KiB, a write each would be a
# system call each
CALLS_A_PIECE = 2048  # a run's tool calls written (encoded, spooled) this many at a time when it has more


class ByteSpool(bytespool.ByteSpool):
    """The report's byte spool (``bytespool.ByteSpool``): its first IN_MEMORY bytes in memory, its writes to the
    file gathered WRITE_BUFFER at a time, read back in pieces of at most READ_BYTES."""

    def __init__(self) -> None:
        super().__init__(memory=IN_MEMORY, buffer=WRITE_BUFFER)

    def chunks(self, piece: int | None = None) -> Iterator[bytes]:
        return super().chunks(piece or READ_BYTES)


class _Records(Sequence[dict[str, Any]]):
    """Records read back from a spool as they are asked for: an index or a slice (``_at``, ``_slice``), checked once
    here for both spooled sequences."""

    def _at(self, index: int) -> dict[str, Any]:
        raise NotImplementedError

    def _slice(self, index: slice) -> list[dict[str, Any]]:
        return [self._at(k) for k in range(len(self))[index]]

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return self._slice(index)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._at(index)


class SpooledCalls(_Records):
    """A run's tool calls, spooled as JSON lines of CALLS_A_PIECE calls each: decoded a line at a time when iterated,
    only the lines they cover when sliced or indexed."""

    def __init__(self, spool: ByteSpool, bounds: list[tuple[int, int]], count: int) -> None:
        self._spool, self._bounds, self._count = spool, bounds, count

    def __len__(self) -> int:
        return self._count

    def _piece(self, p: int) -> list[dict[str, Any]]:
        return exactjson.loads(self._spool.read(*self._bounds[p]))  # type: ignore[no-any-return]

    def _slice(self, index: slice) -> list[dict[str, Any]]:
        start, stop, step = index.indices(self._count)
        if step != 1:
            return super()._slice(index)
        if start >= stop:
            return []
        first = start // CALLS_A_PIECE
        held = [c for p in range(first, (stop - 1) // CALLS_A_PIECE + 1) for c in self._piece(p)]
        return held[start - first * CALLS_A_PIECE:stop - first * CALLS_A_PIECE]

    def _at(self, index: int) -> dict[str, Any]:
        return self._piece(index // CALLS_A_PIECE)[index % CALLS_A_PIECE]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for p in range(len(self._bounds)):
            yield from self._piece(p)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and len(other) == self._count and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


LONG_LISTS = ("toolCalls", "timeline")  # the members whose ``calls`` list grows with a run's calls (spooled apart)


def listed_calls(member: Any) -> list[Any] | None:
    """The ``calls`` a summary's member (``toolCalls``, ...) lists, when it is an object listing them; else None."""
    calls = member.get("calls") if isinstance(member, dict) else None
    return calls if type(calls) is list else None


def _long_lists(summary: dict[str, Any]) -> list[str]:
    """The members of ``summary`` (of LONG_LISTS) whose ``calls`` is a list of more than CALLS_A_PIECE."""
    return [key for key in LONG_LISTS if len(listed_calls(summary.get(key)) or ()) > CALLS_A_PIECE]


class SpooledSummaries(_Records):
    """Run summaries as JSON lines in a ``ByteSpool``; read back one at a time, in order or by index. A summary with
    more than CALLS_A_PIECE tool calls is written without them (``calls`` of its ``toolCalls`` and of its ``timeline``:
    ``[]``), they in lines of their own after it, and read back as ``SpooledCalls``."""

    def __init__(self) -> None:
        self._bytes = ByteSpool()
        self._offsets: list[int] = []  # where each summary starts (it ends where the next one does, or its calls)
        # a summary's calls, when they follow it: by member, their lines' bounds and how many
        self._calls: dict[int, list[tuple[str, list[tuple[int, int]], int]]] = {}

    def append(self, summary: dict[str, Any]) -> None:
        longer = _long_lists(summary)
        if not longer:
            self._offsets.append(self._bytes.append(exactjson.dumps(summary) + b"\n"))
            return
        k = len(self._offsets)
        self._offsets.append(self._bytes.append(
            exactjson.dumps(summary | {key: {**summary[key], "calls": []} for key in longer}) + b"\n"))
        self._calls[k] = []
        for key in longer:
            calls, bounds = summary[key]["calls"], []
            for at in range(0, len(calls), CALLS_A_PIECE):
                start = self._bytes.append(exactjson.dumps(calls[at:at + CALLS_A_PIECE]) + b"\n")
                bounds.append((start, self._bytes.size))
            self._calls[k].append((key, bounds, len(calls)))

    def __len__(self) -> int:
        return len(self._offsets)

    def _end(self, k: int) -> int:
        if k in self._calls:  # (where its first calls line starts)
            return self._calls[k][0][1][0][0]
        return self._offsets[k + 1] if k + 1 < len(self._offsets) else self._bytes.size

    def _at(self, k: int) -> dict[str, Any]:
        summary = exactjson.loads(self._bytes.read(self._offsets[k], self._end(k)))
        for key, bounds, count in self._calls.get(k, ()):
            summary[key]["calls"] = SpooledCalls(self._bytes, bounds, count)
        return summary

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The summaries appended before the pass began, in order (read a piece at a time; the lines of a run's
        calls skipped, read as they are used)."""
        count = len(self._offsets)
        if not count:
            return
        if self._calls:  # (a long run's calls are lines of their own: each summary read by its bounds)
            yield from map(self._at, range(count))
            return
        yield from islice(map(exactjson.loads, self._lines()), count)

    def _lines(self) -> Iterator[bytes]:
        rest = b""
        for chunk in self._bytes.chunks():
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            yield from lines

    def close(self) -> None:
        self._bytes.close()
