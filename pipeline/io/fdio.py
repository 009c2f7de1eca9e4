"""Async byte I/O on file descriptors without worker threads where the kernel allows it.

Pipes and sockets are switched to non-blocking mode and awaited with anyio's ``wait_readable`` /
``wait_writable`` (flags restored afterwards); regular files are read and written directly (the page
cache answers at once); a terminal is left blocking (the shell shares it) and read once it is readable; writes to a
terminal go through a worker thread. Measured: handing every chunk to a
worker thread costs more than parsing it, because the two threads queue for the GIL.
"""

from __future__ import annotations

import os
import select
import stat
import sys
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import Any, BinaryIO

import anyio
import anyio.lowlevel
from anyio import to_thread

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows
    fcntl = None  # type: ignore[assignment]

from replay.pipeline.engine.errors import STDOUT_NAME, PipeClosed, ReplayError, write_failed
from replay.pipeline.engine.knobs import whole_number
from replay.pipeline.engine.preflight import refuse_unwritable_stdout
from replay.pipeline.engine.share import stdout_capture


def fd_kind(fd: int) -> str:
    """'pipe' (FIFOs, sockets), 'tty', or 'file' (regular files, /dev/null and other devices)."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return "pipe"
    if os.isatty(fd):
        return "tty"
    return "file"


PIPE_BYTES = 1 << 20  # Linux's default pipe is 64 KiB: between two replay processes that is a wake-up per chunk


def _widen(fd: int) -> None:
    """Ask for a 1 MiB pipe buffer (Linux, up to /proc/sys/fs/pipe-max-size); elsewhere, or refused, nothing."""
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if setsize is None:
        return
    with suppress(OSError):
        fcntl.fcntl(fd, setsize, PIPE_BYTES)


@asynccontextmanager
async def nonblocking(fd: int, kind: str) -> AsyncIterator[None]:
    """Non-blocking mode on a pipe for the duration, restoring the previous flags."""
    if kind != "pipe":
        yield
        return
    _widen(fd)
    was_blocking = os.get_blocking(fd)
    os.set_blocking(fd, False)
    try:
        yield
    finally:
        with suppress(OSError):
            os.set_blocking(fd, was_blocking)


SEEN_BYTES = 64  # (``FdReader(follow=True)``) the last bytes read of a followed file, kept to tell it was rewritten


class FdReader:
    """``await read(n)``: at most n bytes, b"" at end of input. ``follow``: a file still being written (``read
    --follow``), whose last ``SEEN_BYTES`` read are kept for ``rewind_if_truncated``."""

    def __init__(self, fd: int, kind: str | None = None, follow: bool = False) -> None:
        self.fd = fd
        self.kind = kind or fd_kind(fd)
        self.may_wait = self.kind != "file"
        self.follow = follow
        self.seen = b""  # (follow) the last bytes read, up to SEEN_BYTES, which end where the read has got to

    def rewind_if_truncated(self) -> bool:
        """A regular file now shorter than what was read of it (truncated, as a log is when it starts over), or (with
        ``follow``) whose bytes before where the read has got to are no longer those read there (truncated and written
        again past that place between two looks: resumed there, the read would start mid-line): read it again from its
        start, as ``tail -f`` does (which misses the second). True when it was rewound."""
        if self.kind != "file":
            return False
        try:
            at = os.lseek(self.fd, 0, os.SEEK_CUR)
            if os.fstat(self.fd).st_size >= at and (
                    not self.seen or os.pread(self.fd, len(self.seen), at - len(self.seen)) == self.seen):
                return False
            os.lseek(self.fd, 0, os.SEEK_SET)
        except OSError:
            return False
        self.seen = b""
        return True

    def removed(self) -> bool:
        """A regular file whose last name is gone (unlinked while open): what was opened is still read, and a writer
        that holds it open may still add to it, but no new name ever leads to it again."""
        if self.kind != "file":
            return False
        try:
            return os.fstat(self.fd).st_nlink == 0
        except OSError:
            return False

    async def read(self, n: int) -> bytes:
        if self.kind == "file":
            data = os.read(self.fd, n)
            if self.follow and data:
                self.seen = (self.seen + data)[-SEEN_BYTES:] if len(data) < SEEN_BYTES else data[-SEEN_BYTES:]
            await anyio.lowlevel.checkpoint()
            return data
        if self.kind == "tty":  # (left blocking: the terminal is the shell's too) awaited until a line is typed, so
            await anyio.wait_readable(self.fd)  # Ctrl-C stops the wait; a thread blocked in read() would outlive the run
            return os.read(self.fd, n)
        while True:
            try:
                return os.read(self.fd, n)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)


def file_removed(reader: Any) -> bool:
    """``FdReader.removed`` of the file under ``reader`` (a ``GunzipReader`` or ``PrefixedReader`` over it too)."""
    while reader is not None and not isinstance(reader, FdReader):
        reader = getattr(reader, "inner", None)
    return reader is not None and reader.removed()


def read_to_end(fd: int, *, poll_s: float = 0.1) -> bytes:
    """All of ``fd``, for sync code that runs inside a run (a stage's preflight: capture's prompt on stdin). An interrupt
    does not stop a blocking read there: asyncio's Ctrl-C handler (SIGTERM's and SIGHUP's too, ``interrupt_like_ctrl_c``)
    only cancels the run's task and returns, and the read goes on until the input ends (PEP 475). So the wait is a
    select of ``poll_s`` at most, and a cancelled run ends it at once (CancelledError, as its next await would)."""
    import select

    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([fd], [], [], poll_s)
        if _cancel_pending():
            raise _cancelled()
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _cancel_pending() -> bool:
    """Has the asyncio task running this sync code been cancelled (an interrupt)? False outside an asyncio run (there
    Ctrl-C's KeyboardInterrupt ends a blocking read by itself)."""
    import asyncio

    try:
        task = asyncio.current_task()
    except RuntimeError:
        return False
    return task is not None and task.cancelling() > 0


def _cancelled() -> BaseException:
    import asyncio

    return asyncio.CancelledError()


class FdWriter:
    """``await write(data)``: all of it, waiting on a full pipe without blocking the event loop.
    A write the system refuses (ENOSPC, EIO, ...) is E_OUTPUT_WRITE_FAILED; a reader gone away stays
    a BrokenPipeError (the caller ends quietly)."""

    def __init__(self, fd: int, kind: str | None = None, name: str = STDOUT_NAME) -> None:
        self.fd = fd
        self.kind = kind or fd_kind(fd)
        self.name = name

    async def write(self, data: bytes) -> None:
        try:
            await self._write(data)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise write_failed(self.name, exc) from exc

    async def _write(self, data: bytes) -> None:
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
    """Decompresses a gzip stream (also several concatenated members) read from another reader.

    A stream zlib refuses (a bad byte, a trailer whose check does not match) still gives every byte it inflated before
    the refusal, then fails (E_GZIP_INVALID, naming the compressed byte): where zlib refuses within what one call was
    given, that call's output is not lost, so what comes out does not depend on the size of the chunks read.

    ``follow`` (``read --follow``): the file is still being written, so its end is where its writer has got to, not
    the stream's: a member cut off there is not truncated (its rest comes later), and members appended after it
    (``gzip -c >> log.gz``) are read when they come."""

    def __init__(self, inner: FdReader, source: str, follow: bool = False) -> None:
        self.inner = inner
        self.source = source
        self.follow = follow
        self.inflate = zlib.decompressobj(wbits=31)
        self.tail = b""  # compressed bytes not yet given to ``inflate``
        self.eof = False
        self.started = False  # the current member has begun
        self.may_wait = inner.may_wait
        self.fed = 0  # compressed bytes given to (and taken by) inflaters so far: the offset in the gzip file of ``tail``
        self.pending = b""  # inflated bytes not yet handed out (what came before a refusal, beyond one read's ``n``)
        self.failure: ReplayError | None = None  # the refusal to raise once ``pending`` is handed out
        self.members = 0  # the members that ended whole

    async def read(self, n: int) -> bytes:
        while True:
            if self.pending:
                out, self.pending = self.pending[:n], self.pending[n:]
                return out
            if self.failure is not None:
                raise self.failure
            if self.tail:
                data, self.tail = self.tail, b""
            elif self.eof:
                return b""
            else:
                data = await self.inner.read(1 << 16)
                if not data:
                    if self.follow:
                        return b""  # nothing more for now: the next read looks again
                    self.eof = True
                    if self.started:
                        raise ReplayError("E_GZIP_INVALID", f"{self.source}: gzip stream is truncated",
                                          source=self.source, exit_code=1)
                    return b""
            if self.members and not self.started:  # zeros after a member pad the file: gzip(1) and Python skip them
                padded, data = data, data.lstrip(b"\0")
                self.fed += len(padded) - len(data)
                if not data:
                    continue
            before = self.inflate.copy()
            try:
                out = self.inflate.decompress(data, n)
            except zlib.error:
                self.inflate = before
                self.pending = self._up_to_the_refusal(data)
                continue
            self.started = True
            if self.inflate.eof:  # a member ended; another may follow
                # what came after its end is ``unused_data``, all of it: zlib may leave those bytes in
                # ``unconsumed_tail`` too (a call fed a size-limited call's leftover), and they are to be read once
                self._next_member(len(data), self.inflate.unused_data)
            else:
                self.tail = self.inflate.unconsumed_tail
                self.fed += len(data) - len(self.tail)
            if out:
                return out

    def rewind_if_truncated(self) -> bool:
        """The file underneath truncated (``read --follow``): decompress it again from its start."""
        rewind = getattr(self.inner, "rewind_if_truncated", None)
        if rewind is None or not rewind():
            return False
        self.inflate = zlib.decompressobj(wbits=31)
        self.tail = self.pending = b""
        self.eof = self.started = False
        self.fed = self.members = 0
        self.failure = None
        return True

    def _next_member(self, given: int, rest: bytes) -> None:
        """A member ended in the ``given`` compressed bytes a call had; ``rest``, the bytes of them after its end, are
        the next member's to read."""
        self.members += 1
        self.fed += given - len(rest)
        self.tail = rest
        self.inflate = zlib.decompressobj(wbits=31)
        self.started = False

    def _up_to_the_refusal(self, data: bytes) -> bytes:
        """``data`` given to ``inflate`` a byte at a time: what it inflates before the byte it refuses, whose offset in
        the gzip file ``failure`` names (a member that ends first hands the rest of ``data`` to the next, as ``read``)."""
        out = bytearray()
        for at in range(len(data)):
            try:
                out += self.inflate.decompress(data[at:at + 1])
            except zlib.error as exc:
                offset = self.fed + at
                self.failure = ReplayError("E_GZIP_INVALID", f"{self.source}: {exc} (compressed byte {offset})",
                                           source=self.source, exit_code=1)
                return bytes(out)
            self.started = True
            if self.inflate.eof:
                self._next_member(len(data), data[at + 1:])
                return bytes(out)
        raise AssertionError("zlib refused the chunk whole but took each of its bytes")  # pragma: no cover


class PrefixedReader:
    """Gives back bytes already read (a peeked head) before reading on."""

    def __init__(self, prefix: bytes, inner: FdReader | GunzipReader) -> None:
        self.prefix = prefix
        self.inner = inner
        self.may_wait = inner.may_wait

    async def read(self, n: int) -> bytes:
        if self.prefix:
            data, self.prefix = self.prefix[:n], self.prefix[n:]
            if len(data) < n:  # top the peeked bytes up to a full read, not a 2-byte one
                data += await self.inner.read(n - len(data))
            return data
        return await self.inner.read(n)

    def rewind_if_truncated(self) -> bool:
        """The file underneath truncated: read it again from its start (a gzip stream decompressed again from it)."""
        rewind = getattr(self.inner, "rewind_if_truncated", None)
        if rewind is None or not rewind():
            return False
        self.prefix = b""
        return True


# How long a live writer must be silent for its input to pause (``ready_soon``). A writer that has more but is not
# running yet (`cat` between two writes, on a busy machine) refills its pipe within a scheduler time slice or two
# (3-24 ms on Linux); a writer with nothing to write (an agent thinking, `tail -f` between lines) is silent for far
# longer. 50 ms tells the two apart on a loaded 2-core machine and is well below what a person watching a live
# stream notices: a paused writer's last lines come out that much later.
PAUSE_GRACE_SECONDS = 0.05
PAUSE_GRACE_VARIABLE = "REPLAY_PAUSE_GRACE_MS"  # the environment's say in that (tests of `cat FILE |` on a loaded machine)


def pause_grace() -> float:
    """The seconds a live writer must be silent for a pause: ``PAUSE_GRACE_SECONDS``, or the milliseconds
    ``REPLAY_PAUSE_GRACE_MS`` gives. Read once by each read stage, in its preflight (``stages/read.py``), then handed
    to ``ready_soon``: a value that is no number of milliseconds (E_USAGE_INVALID) is refused before anything is read,
    as a bad ``REPLAY_PIECE_BYTES`` is, and for an input of files too, which never pause (a typo in the environment
    is said at once, not the day the same command reads a pipe)."""
    ms = whole_number(PAUSE_GRACE_VARIABLE, "milliseconds", f"a pause after {PAUSE_GRACE_SECONDS * 1000:.0f} ms", 2000)
    return PAUSE_GRACE_SECONDS if ms is None else ms / 1000


async def ready_soon(reader: Any, grace: float | None = None) -> bool:
    """Does the next read of ``reader`` have something to give within ``grace`` seconds, rather than wait for a writer
    silent that long (a pause)? A file's always; a pipe's, a socket's or a terminal's when there is more to read, its
    writer writes more within ``grace`` (``pause_grace()`` when None) or is gone (its end): awaited, so the other stages
    run meanwhile. Asked of the
    descriptor under a reader that hands on what it reads: a ``PrefixedReader``, a
    ``GunzipReader`` (with nothing inflated or compressed left over, its end not met: `cat log.gz | replay heal` pauses
    as `cat log | replay heal` does; inflating what comes may need more, a wait too short to matter); never said of
    others."""
    while not isinstance(reader, FdReader):
        if isinstance(reader, PrefixedReader):
            pass  # (its prefix is topped up by a read of what is under it: that read's wait is the one)
        elif isinstance(reader, GunzipReader):
            if reader.pending or reader.tail or reader.eof or reader.failure is not None:
                return True
        else:
            return False
        reader = reader.inner
    if reader.kind == "file":
        return True
    if grace is None:
        grace = pause_grace()
    poller = select.poll()
    poller.register(reader.fd, select.POLLIN)
    if poller.poll(0):  # (POLLIN: bytes to read; POLLHUP: the writer is gone, a read gives the end)
        return True
    with anyio.move_on_after(grace):
        await anyio.wait_readable(reader.fd)
        return True
    return False


def silence_stdout() -> None:
    """After the reader of stdout left (or stdout refused a write, already reported), point fd 1 at
    /dev/null so the interpreter's last flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def stdout_reader_gone() -> bool:
    """Has the reader of a stdout that is a pipe or socket gone away (``x | head -1`` after its line)? Asked while
    nothing is written (``read --follow`` waiting on a quiet file), where no write would tell it: a pipe whose read end
    closed reports POLLERR on its write end (Linux), a socket whose peer left POLLHUP. False for a terminal, a file,
    one share of a bigger command (its buffer) and where poll is not had."""
    import select

    if stdout_capture() is not None or not hasattr(select, "poll"):
        return False
    try:
        fd = sys.stdout.fileno()
        if fd_kind(fd) != "pipe":
            return False
        poller = select.poll()
        poller.register(fd, 0)  # (no events asked: POLLERR and POLLHUP are always reported)
        ready = poller.poll(0)
    except (AttributeError, OSError, ValueError):
        return False
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in ready)


class _BufferWriter:
    def __init__(self, buffer: bytearray) -> None:
        self.buffer = buffer

    async def write(self, data: bytes) -> None:
        self.buffer += data
        await anyio.lowlevel.checkpoint()


def write_stdout(data: bytes) -> None:
    """Write (and flush) ``data`` on stdout from synchronous code (into the run's buffer when it is one
    share of a bigger command): a reader gone away is PipeClosed, a closed stdout E_OUTPUT_UNWRITABLE, a
    write the system refuses E_OUTPUT_WRITE_FAILED."""
    buffer = stdout_capture()
    if buffer is not None:
        buffer += data
        return
    refuse_unwritable_stdout()
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # (a stdout with no descriptor: an in-process test's capture)
        fd = None
    with _stdout_failures(os_errors=True):
        if fd is None:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
            return
        # (not ``sys.stdout.buffer.write``: under ``python -u`` (PYTHONUNBUFFERED) it is one system call, which a signal
        # whose handler returns, an interrupt held, ends after part of the bytes, the rest lost without a word)
        sys.stdout.flush()  # (what was written before it, first)
        _write_all(fd, data)


COPY_BYTES = 1 << 20  # a file copied to stdout the slow way goes in chunks this large (memory stays flat)


def _chunks(fd: int, offset: int = 0) -> Iterator[bytes]:
    """The bytes of the open file ``fd`` from ``offset`` on, a chunk at a time (memory stays flat)."""
    while chunk := os.pread(fd, COPY_BYTES, offset):
        yield chunk
        offset += len(chunk)


def copy_file(fd: int, out: BinaryIO) -> None:
    """The bytes of the open file ``fd`` (from its start) written on ``out``."""
    for chunk in _chunks(fd):
        out.write(chunk)


def copy_to_stdout(fd: int) -> None:
    """The bytes of the open file ``fd`` (from its start) on stdout, as ``write_stdout`` writes them: kernel to kernel
    where the system can (``sendfile``: into a file, /dev/null, a pipe), else a chunk at a time through this process."""
    offset = 0
    if stdout_capture() is None:  # (else one share of a bigger command: its buffer, below)
        refuse_unwritable_stdout()
        sys.stdout.buffer.flush()
        size = os.fstat(fd).st_size
        with suppress(OSError):  # (refused: not for this stdout, it would block, or it failed: the rest goes the slow
            while offset < size and (sent := os.sendfile(sys.stdout.fileno(), fd, offset, size - offset)):  # way,
                offset += sent  # whose failures are reported as write_stdout reports them)
    for chunk in _chunks(fd, offset):
        write_stdout(chunk)


@contextmanager
def _stdout_failures(os_errors: bool) -> Iterator[None]:
    """What a write to stdout can end in: a reader gone away is PipeClosed; a failed write (an OSError here, with
    ``os_errors``: E_OUTPUT_WRITE_FAILED) leaves stdout silenced, so the interpreter's last flush does not fail again."""
    try:
        yield
    except BrokenPipeError as exc:
        silence_stdout()
        raise PipeClosed() from exc
    except ReplayError as exc:
        if exc.code == "E_OUTPUT_WRITE_FAILED":
            silence_stdout()
        raise
    except OSError as exc:
        if not os_errors:
            raise
        silence_stdout()
        raise write_failed(STDOUT_NAME, exc) from exc


@asynccontextmanager
async def stdout_writer() -> AsyncIterator[FdWriter | _BufferWriter]:
    """Data to stdout (pipes without blocking the event loop); a reader gone away is PipeClosed."""
    buffer = stdout_capture()
    if buffer is not None:
        yield _BufferWriter(buffer)
        return
    refuse_unwritable_stdout()
    try:
        sys.stdout.flush()
    except OSError as exc:
        silence_stdout()  # the interpreter's last flush must not fail again
        raise write_failed(STDOUT_NAME, exc) from exc
    fd = sys.stdout.fileno()
    writer = FdWriter(fd)
    with _stdout_failures(os_errors=False):  # the caller's own OSErrors (reading its input) are not stdout's
        async with nonblocking(fd, writer.kind):
            yield writer


def file_type(p: Path) -> str:
    """What a path that is neither a regular file nor a folder is, in words (``named pipe``, ``character device``...)."""
    if p.is_fifo():
        return "named pipe"
    if p.is_char_device():
        return "character device"
    if p.is_block_device():
        return "block device"
    if p.is_socket():
        return "socket"
    return "special file"
