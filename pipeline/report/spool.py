"""SpooledSummaries: the run summaries of a report kept as JSON lines, so a report's memory stays flat however
many runs it covers: the first few MiB in memory, the rest in a temporary file, read back one at a time."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from typing import IO, Any, overload

from replay.pipeline.engine import exactjson

IN_MEMORY = 8 << 20  # bytes of summaries kept in memory before the rest goes to a temporary file
READ_BYTES = 1 << 20  # a pass over the file reads it this much at a time


class SpooledSummaries(Sequence[dict[str, Any]]):
    def __init__(self) -> None:
        self._memory: list[bytes] = []  # the first summaries, as their JSON
        self._held = 0
        self._file: IO[bytes] | None = None  # the others, one JSON line each
        self._offsets: list[int] = []  # where each summary in the file starts (its end: the next start)
        self._end = 0

    def append(self, summary: dict[str, Any]) -> None:
        data = exactjson.dumps(summary)
        if self._file is None and self._held + len(data) <= IN_MEMORY:
            self._memory.append(data)
            self._held += len(data)
            return
        if self._file is None:
            self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self._file.write(data + b"\n")
        self._offsets.append(self._end)
        self._end += len(data) + 1

    def __len__(self) -> int:
        return len(self._memory) + len(self._offsets)

    def _read(self, k: int) -> dict[str, Any]:
        if k < len(self._memory):
            return exactjson.loads(self._memory[k])  # type: ignore[no-any-return]
        k -= len(self._memory)
        assert self._file is not None
        self._file.flush()
        start = self._offsets[k]
        end = self._offsets[k + 1] if k + 1 < len(self._offsets) else self._end
        return exactjson.loads(os.pread(self._file.fileno(), end - start, start))  # type: ignore[no-any-return]

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
        """Each pass reads at its own place (positioned reads), so passes may interleave; the summaries appended
        before the pass began are the ones it yields."""
        loads = exactjson.loads
        yield from map(loads, self._memory[:])
        if self._file is None:
            return
        self._file.flush()
        fd, end, at = self._file.fileno(), self._end, 0
        rest = b""
        while at < end:
            chunk = os.pread(fd, min(READ_BYTES, end - at), at)
            if not chunk:
                break
            at += len(chunk)
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            yield from map(loads, lines)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
