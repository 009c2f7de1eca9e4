"""WriteJsonl: the sink that writes records as JSONL to stdout, or atomically to a file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import ExitStack
from typing import Any, BinaryIO

import anyio.lowlevel

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.outputs import file_target
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Sink
from replay.pipeline.io.fdio import stdout_writer
from replay.pipeline.io.staging import atomic_output, write_atomic

STDOUT = "-"


@register("write")
class WriteJsonl(Sink):
    summary = "Write records as JSONL: untouched events as their original bytes, to stdout or a file."
    options = {
        "path": Option(str, STDOUT, "output file, written whole or not at all; '-' is stdout"),
        "hold": Option(bool, False, "stdout too is written whole or not at all: held (in memory, then a temporary "
                                    "file) until the input ends, and written then (stdout or the file) only when no "
                                    "error reached the graph's error port (a run stopped, or one error: nothing "
                                    "there); for one document (`replay script`'s output is always held)"),
    }
    accepts_raw = True
    takes_anything = True
    screened_lane = "ends"
    keeps_run_state = False  # (each batch taken on its own)

    def outputs(self) -> list[tuple[str | None, str]]:
        return [("path", self.config["path"])]

    async def consume(self, batches: AsyncIterator[Batch]) -> None:
        path = self.config["path"]
        whole = self.config["hold"] or self.whole_document  # (one document: a script that left a step out is none)
        if path == STDOUT and not whole:
            await _to_stdout(batches)
            return
        if whole and (path == STDOUT or _in_place(path)):  # (a device, a pipe: what it took cannot be taken back)
            await self._held(batches, path)
            return
        try:
            with ExitStack() as stack:
                handle: BinaryIO | None = None  # the file opens with its first bytes: a run that fails before has none
                async for batch in batches:
                    data = batch.to_jsonl()
                    if data:
                        if handle is None:
                            handle = stack.enter_context(atomic_output(path))
                        handle.write(data)  # buffered; the OS write happens per buffer, not per batch
                await anyio.lowlevel.checkpoint()  # a run cancelled meanwhile must not commit the file
                if whole and self.run_failed():
                    raise _NotWhole  # (its staged copy goes: nothing appears at the path, a file there stays)
        except _NotWhole:
            return
        if handle is None:  # nothing to write: an empty file, unless the run fails with nothing written anywhere
            if whole and self.run_failed():
                return
            self.commit_empty(lambda: write_atomic(path, b""))

    async def _held(self, batches: AsyncIterator[Batch], path: str) -> None:
        """Everything, written on stdout (or ``path``, a device or pipe written in place) once the input has ended, when
        no error came before (``hold``, or one document: ``whole_document``); a file is staged as it comes and discarded
        instead (``consume``)."""
        from replay.pipeline.report.spool import ByteSpool

        spool = ByteSpool()
        try:
            async for batch in batches:
                spool.append(batch.to_jsonl())
            await anyio.lowlevel.checkpoint()  # a run cancelled meanwhile writes nothing
            if self.run_failed():
                return
            if path == STDOUT:
                async with stdout_writer() as writer:
                    for chunk in spool.chunks():
                        await writer.write(chunk)
                return
            with atomic_output(path) as handle:  # (in place)
                for chunk in spool.chunks():
                    handle.write(chunk)
        finally:
            spool.close()


def _in_place(path: str) -> bool:
    """Is ``path`` written in place (a device, FIFO or socket, ``/dev/stdout``), not staged and renamed? An unusable
    path says False: its staging reports it."""
    try:
        return file_target(path) is None
    except OSError:
        return False


class _NotWhole(Exception):
    """A whole document's run failed: its staged file is discarded (``atomic_output`` removes it)."""


FLUSH_BYTES = 256 * 1024


async def _to_stdout(batches: AsyncIterator[Batch]) -> None:
    """Gather batches into writes of FLUSH_BYTES, flushing early whenever nothing else is waiting."""
    pending: list[bytes] = []
    size = 0
    async with stdout_writer() as writer:
        async for batch in batches:
            data = batch.to_jsonl()
            pending.append(data)
            size += len(data)
            if size >= FLUSH_BYTES or not _more_waiting(batches):
                await writer.write(b"".join(pending))
                pending, size = [], 0
        if pending:
            await writer.write(b"".join(pending))


def _more_waiting(batches: Any) -> bool:
    stats = getattr(batches, "statistics", None)
    return stats is not None and stats().current_buffer_used > 0
