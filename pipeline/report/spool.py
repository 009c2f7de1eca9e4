"""SpooledSummaries: the run summaries of a report kept as JSON lines in a spooled file, so a report's memory
stays flat however many runs it covers (a few MiB in memory, the rest on disk), read back one at a time."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from typing import Any, overload

from replay.pipeline.engine import exactjson

IN_MEMORY = 8 << 20  # bytes of summaries kept in memory before the spool moves to a temporary file


class SpooledSummaries(Sequence[dict[str, Any]]):
    def __init__(self) -> None:
        self._file = tempfile.SpooledTemporaryFile(max_size=IN_MEMORY)  # noqa: SIM115 - closed by close()
        self._offsets: list[int] = []
        self._end = 0

    def append(self, summary: dict[str, Any]) -> None:
        data = exactjson.dumps(summary) + b"\n"
        self._file.seek(self._end)
        self._file.write(data)
        self._offsets.append(self._end)
        self._end += len(data)

    def __len__(self) -> int:
        return len(self._offsets)

    def _read(self, offset: int) -> dict[str, Any]:
        self._file.seek(offset)
        return exactjson.loads(self._file.readline())  # type: ignore[no-any-return]

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self._read(o) for o in self._offsets[index]]
        return self._read(self._offsets[index])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for offset in list(self._offsets):  # each pass reads at its own place: passes may interleave
            yield self._read(offset)

    def close(self) -> None:
        self._file.close()
