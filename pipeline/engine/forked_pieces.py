"""Pieces of one input run at once in forked processes (``--workers``; where a journal is cut: ``model/run_cuts.py``),
whose results a command uses only when they are exactly what one run over the whole input gives.

``run_pieces`` runs a command's job once per piece, each in a process forked from this one (nothing to import again),
its stdout spooled into a nameless temp file and its stderr watched: the first byte any piece writes there (a
diagnostic, a warning, a crash) ends every piece at once, and the command runs once over the whole file instead (what
it then prints, and in which order, is one run's by construction). A piece's process is in the command's process
group, as the terminal sees it (Ctrl-Z stops them all, ``fg`` goes on with them all; at Ctrl-C the command ends them),
and ends with the command (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from replay.pipeline.engine.exactjson import dumps, loads

_PR_SET_PDEATHSIG = 1  # prctl(2)


@dataclass
class Piece:
    """One piece's run: its bytes [start, end) of the file, its stdout (spooled in a nameless temp file: nothing to
    remove, whatever ends the command), what its job returned."""

    start: int
    end: int
    stdout: BinaryIO
    result: dict[str, Any]


def can_fork() -> bool:
    """Can this process fork its pieces safely? On Linux (``PR_SET_PDEATHSIG``), with no other thread running (a
    fork copies only the thread that forks: a lock another held stays taken in the copy)."""
    return sys.platform == "linux" and threading.active_count() == 1


Job = Callable[[int, int, int], dict[str, Any]]  # (piece number, start, end) -> its result, in the piece's process


def run_pieces(cuts: list[int], job: Job, spools: list[BinaryIO]) -> tuple[list[Piece] | None, str]:
    """``job(k, start, end)`` once per piece ``k``, ``[cuts[k], cuts[k + 1])``, each in a forked process whose stdout
    goes to ``spools[k]``: (the pieces in order, ""), or (None, why not) when one wrote on stderr, ended otherwise than
    with its job's result (killed: the OOM killer), or no process could be forked (the others are ended then). Ctrl-C
    (any exception) ends them all and is raised again."""
    import selectors

    for stream in (sys.stdout, sys.stderr):  # (None: this process started with that descriptor closed)
        if stream is not None:
            stream.flush()
    pieces = [Piece(start, end, spools[k], {}) for k, (start, end) in enumerate(itertools.pairwise(cuts))]
    children: dict[int, int] = {}  # pid -> piece number
    results = [bytearray() for _ in pieces]
    watched = selectors.DefaultSelector()
    ends: list[int] = []  # the write ends of a piece not forked yet (closed here once it is, or at the end)
    clean = False
    try:
        for k, piece in enumerate(pieces):
            for is_result in (False, True):  # its stderr (any byte there, and one run does it); its job's result
                read_end, write_end = os.pipe()
                watched.register(read_end, selectors.EVENT_READ, (k, is_result))
                ends.append(write_end)
            try:
                pid = os.fork()
            except OSError as exc:
                return None, f"no process could be forked ({exc.strerror})"
            if pid == 0:  # pragma: no cover - the piece's process (its coverage is its outputs)
                _piece_process(k, piece, job, *ends)
            children[pid] = k
            while ends:
                os.close(ends.pop())
        while watched.get_map():
            for key, _ in watched.select():
                k, is_result = key.data
                data = os.read(key.fd, 1 << 16)
                if data and not is_result:
                    return None, "a piece wrote on stderr: one run over the whole file says it"
                if data:
                    results[k] += data
                    continue
                watched.unregister(key.fd)
                os.close(key.fd)
        for pid, k in list(children.items()):
            _, status = os.waitpid(pid, 0)
            del children[pid]
            if os.waitstatus_to_exitcode(status) != 0:
                return None, f"a piece ended with {os.waitstatus_to_exitcode(status)} (killed?)"
            pieces[k].result = loads(bytes(results[k]))
        clean = True
        return pieces, ""
    finally:
        for fd in [*ends, *(key.fd for key in watched.get_map().values())]:
            os.close(fd)
        watched.close()
        if not clean:
            _end(children)


def _end(children: dict[int, int]) -> None:
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for pid in children:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _piece_process(k: int, piece: Piece, job: Job, stderr: int, result: int) -> None:
    """The forked process of piece ``k``: never returns (``os._exit``)."""
    code = 70
    try:
        _die_with_parent()
        os.dup2(piece.stdout.fileno(), 1)
        os.dup2(stderr, 2)
        os.close(stderr)
        from replay.pipeline.engine import interrupts

        interrupts.enable()  # (the command's watchdog is the command's: this process has its own)
        told = dumps(job(k, piece.start, piece.end))
        if sys.stdout is not None:  # (None: the command started with it closed)
            sys.stdout.flush()
        with os.fdopen(result, "wb") as out:
            out.write(told)
        code = 0
    except BaseException:  # (whatever it was, on stderr: the command runs once over the whole file)
        import traceback

        with contextlib.suppress(Exception):
            os.write(2, traceback.format_exc().encode() or b"failed")
    finally:
        os._exit(code)


def _die_with_parent() -> None:
    """This process gets SIGKILL when the command's ends (killed outright too); already gone: end now."""
    import ctypes

    parent = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(70)


@contextlib.contextmanager
def spooled(count: int, room: int) -> Iterator[list[BinaryIO] | None]:
    """``count`` nameless files for the pieces' outputs in the temp folder (``TMPDIR``, as ``sort`` spools there:
    ``tempfile.TemporaryFile``, gone when closed, whatever ends the command), closed at the end; None when they cannot
    be made there, or fewer than ``room`` bytes are free (the command then runs once, spooling nothing)."""
    import shutil
    import tempfile

    with contextlib.ExitStack() as made:
        files: list[BinaryIO] = []
        with contextlib.suppress(OSError):  # (no room, no temp folder: None, and those made are closed)
            if shutil.disk_usage(tempfile.gettempdir()).free >= room:
                files = [made.enter_context(tempfile.TemporaryFile()) for _ in range(count)]
        yield files if len(files) == count else None
