"""ByteSpool: bytes appended in order to a temporary file (after a first stretch kept in memory, if asked), read
back by offset; the one byte spool under the screen's LineSpool, the report's spools and walk's held records."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import IO

IN_MEMORY = 8 << 20  # the memory a spool that asks for one (``memory=IN_MEMORY``) keeps before the rest goes to the file
READ_BYTES = 1 << 20  # a pass over the spool (``chunks``) reads it this much at a time
WRITE_BUFFER = 1 << 20  # what a spool of many small pieces gathers before a write (``buffer=WRITE_BUFFER``)


class ByteSpool:
    """Bytes appended in order (``append``), read back by position (``read``) or in pieces (``chunks``): the first
    ``memory`` bytes from memory, the rest from a temporary file, made only when first needed. Writes are positioned
    and unbuffered (``os.pwrite``: a write that fails fails in ``append``, not in a later read), or gathered up to
    ``buffer`` bytes first (many small pieces: fewer system calls; a failed write then loses what was gathered).
    Reads are positioned too (no shared file offset): passes may interleave."""

    def __init__(self, memory: int = 0, buffer: int = 0) -> None:
        self.memory, self.buffer = memory, buffer
        self._memory = bytearray()
        self._file: IO[bytes] | None = None  # what comes after the memory's bytes
        self._gathered = bytearray()  # (with ``buffer``) appended, not yet written
        self._written = 0  # the file's bytes
        self.size = 0

    def append(self, data: bytes) -> int:
        """Add ``data``; returns where it starts. OSError when the temporary file could not be made or written (no
        ``$TMPDIR``, a full disk, a file size limit): the file is cut back to what it held, so (unbuffered) what was
        appended before is still read back whole and this ``data`` is not in the spool."""
        start = self.size
        if self._file is None and not self._gathered and start + len(data) <= self.memory:
            self._memory += data
        elif self.buffer:
            if self._file is None:
                self._open()
            self._gathered += data
            if len(self._gathered) >= self.buffer:
                self._flush()
        else:
            self._write(data)
        self.size = start + len(data)
        return start

    def read(self, start: int, end: int) -> bytes:
        """The bytes from ``start`` to ``end`` (within one append, or across several)."""
        held = len(self._memory)
        head = bytes(self._memory[start:min(end, held)]) if start < held else b""
        if end <= held:
            return head
        if end > held + self._written:
            self._flush()
        assert self._file is not None
        at = max(start, held)
        return head + os.pread(self._file.fileno(), end - at, at - held)

    def chunks(self, piece: int = READ_BYTES) -> Iterator[bytes]:
        """Everything appended so far, in order, ``piece`` bytes at a time."""
        end = self.size
        for at in range(0, end, piece):
            yield self.read(at, min(at + piece, end))

    def close(self) -> None:
        self._memory, self._gathered = bytearray(), bytearray()
        if self._file is not None:
            self._file.close()
            self._file = None

    def _flush(self) -> None:
        if self._gathered:
            data, self._gathered = bytes(self._gathered), bytearray()
            self._write(data)

    def _open(self) -> None:
        """Make the temporary file (OSError when it cannot be: no ``$TMPDIR``...)."""
        import tempfile  # here: most commands never spool (its import costs every command ~3 ms of start-up)

        self._file = tempfile.TemporaryFile(buffering=0)  # noqa: SIM115 - closed by close()

    def _write(self, data: bytes) -> None:
        """Write ``data`` after what the file holds, at once; OSError when it could not be, the file cut back."""
        try:
            if self._file is None:
                self._open()
            assert self._file is not None
            fd, view, at = self._file.fileno(), memoryview(data), self._written
            while view:
                n = os.pwrite(fd, view, at)
                view, at = view[n:], at + n
        except OSError:
            if self._file is not None:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._file.fileno(), self._written)
            raise
        self._written = at
