"""Async byte I/O on file descriptors without worker threads where the kernel allows it.

Pipes and sockets are switched to non-blocking mode and awaited with anyio's ``wait_readable`` /
``wait_writable`` (flags restored afterwards); regular files are read and written directly (the page
cache answers at once); terminals go through a worker thread. Measured: handing every chunk to a
worker thread costs more than parsing it, because the two threads queue for the GIL.
"""

from __future__ import annotations

import os
import stat
import sys
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import anyio
import anyio.lowlevel
from anyio import to_thread

from replay.pipeline.engine.errors import PipeClosed, ReplayError


def fd_kind(fd: int) -> str:
    """'pipe' (FIFOs, sockets), 'tty', or 'file' (regular files, /dev/null and other devices)."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return "pipe"
    if os.isatty(fd):
        return "tty"
    return "file"


@asynccontextmanager
async def nonblocking(fd: int, kind: str) -> AsyncIterator[None]:
    """Non-blocking mode on a pipe for the duration, restoring the previous flags."""
    if kind != "pipe":
        yield
        return
    was_blocking = os.get_blocking(fd)
    os.set_blocking(fd, False)
    try:
        yield
    finally:
        with suppress(OSError):
            os.set_blocking(fd, was_blocking)


class FdReader:
    """``await read(n)``: at most n bytes, b"" at end of input."""

    def __init__(self, fd: int, kind: str | None = None) -> None:
        self.fd = fd
        self.kind = kind or fd_kind(fd)

    async def read(self, n: int) -> bytes:
        if self.kind == "file":
            data = os.read(self.fd, n)
            await anyio.lowlevel.checkpoint()
            return data
        if self.kind == "tty":
            return await to_thread.run_sync(os.read, self.fd, n, abandon_on_cancel=True)
        while True:
            try:
                return os.read(self.fd, n)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)


class FdWriter:
    """``await write(data)``: all of it, waiting on a full pipe without blocking the event loop."""

    def __init__(self, fd: int, kind: str | None = None) -> None:
        self.fd = fd
        self.kind = kind or fd_kind(fd)

    async def write(self, data: bytes) -> None:
        if self.kind == "tty":
            await to_thread.run_sync(_write_all, self.fd, data, abandon_on_cancel=True)
            return
        view = memoryview(data)
        while view:
            try:
                written = os.write(self.fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self.fd)
                continue
            view = view[written:]
        await anyio.lowlevel.checkpoint()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class GunzipReader:
    """Decompresses a gzip stream (also several concatenated members) read from another reader."""

    def __init__(self, inner: FdReader, source: str) -> None:
        self.inner = inner
        self.source = source
        self.inflate = zlib.decompressobj(wbits=31)
        self.tail = b""  # compressed bytes not yet given to ``inflate``
        self.eof = False
        self.started = False  # the current member has begun

    async def read(self, n: int) -> bytes:
        while True:
            if self.tail:
                data, self.tail = self.tail, b""
            elif self.eof:
                return b""
            else:
                data = await self.inner.read(1 << 16)
                if not data:
                    self.eof = True
                    if self.started:
                        raise ReplayError("E_GZIP_INVALID", f"{self.source}: gzip stream is truncated",
                                          source=self.source, exit_code=1)
                    return b""
            try:
                out = self.inflate.decompress(data, n)
            except zlib.error as exc:
                raise ReplayError("E_GZIP_INVALID", f"{self.source}: {exc}", source=self.source, exit_code=1) from exc
            self.started = True
            self.tail = self.inflate.unconsumed_tail
            if self.inflate.eof:  # a member ended; another may follow
                rest = self.inflate.unused_data + self.tail
                self.inflate = zlib.decompressobj(wbits=31)
                self.started = False
                self.tail = rest
            if out:
                return out


class PrefixedReader:
    """Gives back bytes already read (a peeked head) before reading on."""

    def __init__(self, prefix: bytes, inner: FdReader | GunzipReader) -> None:
        self.prefix = prefix
        self.inner = inner

    async def read(self, n: int) -> bytes:
        if self.prefix:
            data, self.prefix = self.prefix[:n], self.prefix[n:]
            if len(data) < n:  # top the peeked bytes up to a full read, not a 2-byte one
                data += await self.inner.read(n - len(data))
            return data
        return await self.inner.read(n)


def silence_stdout() -> None:
    """After the reader of stdout left, point fd 1 at /dev/null so the interpreter's last flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


@asynccontextmanager
async def stdout_writer() -> AsyncIterator[FdWriter]:
    """Data to stdout (pipes without blocking the event loop); a reader gone away is PipeClosed."""
    sys.stdout.flush()
    fd = sys.stdout.fileno()
    writer = FdWriter(fd)
    try:
        async with nonblocking(fd, writer.kind):
            yield writer
    except BrokenPipeError as exc:
        silence_stdout()
        raise PipeClosed() from exc
