"""Spools: what a report gathers before it can write (the runs come before the totals that head it), kept so that
its memory stays flat however many runs it covers: the first few MiB in memory, the rest in a temporary file.

``ByteSpool`` holds bytes (a renderer's finished pieces); ``SpooledSummaries`` holds run summaries as JSON lines
in one, read back one at a time."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import IO, Any, overload

from replay.pipeline.engine import exactjson

IN_MEMORY = 8 << 20  # bytes kept in memory before the rest goes to a temporary file
READ_BYTES = 1 << 20  # a pass over the file reads it this much at a time
WRITE_BUFFER = 1 << 20  # the file's write buffer: a run's piece is a few KiB, a write each would be a system call each


class ByteSpool:
    """Bytes appended in order, read back by position or in pieces of at most READ_BYTES, from memory or the file.
    Reads are positioned (no shared file offset): passes may interleave."""

    def __init__(self) -> None:
        self._memory = bytearray()
        self._file: IO[bytes] | None = None  # what comes after the memory's bytes
        self.size = 0

    def append(self, data: bytes) -> int:
        """Add ``data``; returns where it starts."""
        start = self.size
        if self._file is None and start + len(data) <= IN_MEMORY:
            self._memory += data
        else:
            if self._file is None:
                import tempfile  # here: a report that fits in memory never spools (~3 ms of start-up)

                self._file = tempfile.TemporaryFile(buffering=WRITE_BUFFER)  # noqa: SIM115 - closed by close()
            self._file.write(data)
        self.size += len(data)
        return start

    def read(self, start: int, end: int) -> bytes:
        """The bytes from ``start`` to ``end`` (within one append, or across several)."""
        held = len(self._memory)
        head = bytes(self._memory[start:min(end, held)]) if start < held else b""
        if end <= held:
            return head
        assert self._file is not None
        self._file.flush()
        at = max(start, held)
        return head + os.pread(self._file.fileno(), end - at, at - held)

    def chunks(self) -> Iterator[bytes]:
        """Everything appended so far, in order, a piece at a time."""
        end = self.size
        for at in range(0, end, READ_BYTES):
            yield self.read(at, min(at + READ_BYTES, end))

    def close(self) -> None:
        self._memory = bytearray()
        if self._file is not None:
            self._file.close()
            self._file = None


class SpooledSummaries(Sequence[dict[str, Any]]):
    """Run summaries as JSON lines in a ``ByteSpool``; read back one at a time, in order or by index."""

    def __init__(self) -> None:
        self._bytes = ByteSpool()
        self._offsets: list[int] = []  # where each summary starts (it ends where the next one does)

    def append(self, summary: dict[str, Any]) -> None:
        self._offsets.append(self._bytes.append(exactjson.dumps(summary) + b"\n"))

    def __len__(self) -> int:
        return len(self._offsets)

    def _read(self, k: int) -> dict[str, Any]:
        end = self._offsets[k + 1] if k + 1 < len(self._offsets) else self._bytes.size
        return exactjson.loads(self._bytes.read(self._offsets[k], end))  # type: ignore[no-any-return]

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self._read(k) for k in range(len(self))[index]]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._read(index)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The summaries appended before the pass began, in order (read a piece at a time)."""
        loads, rest, count = exactjson.loads, b"", len(self._offsets)
        for chunk in self._bytes.chunks():
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            if len(lines) > count:
                lines = lines[:count]
            count -= len(lines)
            yield from map(loads, lines)
            if not count:
                return

    def close(self) -> None:
        self._bytes.close()
