"""Pieces of one input run at once in forked processes (``--workers``; where a journal is cut: ``model/run_cuts.py``),
whose results a command uses only when they are exactly what one run over the whole input gives.

``run_pieces`` runs a command's job once per piece, each in a process forked from this one (nothing to import again),
its stdout spooled into a file of a private folder and its stderr watched: the first byte any piece writes there (a
diagnostic, a warning, a crash) ends every piece at once, and the command runs once over the whole file instead (what
it then prints, and in which order, is one run's by construction). A piece's process gets its own process group (the
terminal's Ctrl-C reaches the command only, which ends the pieces) and ends with the command (``PR_SET_PDEATHSIG``).
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
from pathlib import Path
from typing import Any

from replay.pipeline.engine.exactjson import dumps, loads

_PR_SET_PDEATHSIG = 1  # prctl(2)


@dataclass
class Piece:
    """One piece's run: its bytes [start, end) of the file, its stdout (spooled), what its job returned."""

    start: int
    end: int
    stdout: Path
    result: dict[str, Any]


def can_fork() -> bool:
    """Can this process fork its pieces safely? On Linux (``PR_SET_PDEATHSIG``), with no other thread running (a
    fork copies only the thread that forks: a lock another held stays taken in the copy)."""
    return sys.platform == "linux" and threading.active_count() == 1


def run_pieces(cuts: list[int], job: Callable[[int, int], dict[str, Any]], folder: Path) -> list[Piece] | None:
    """``job(start, end)`` once per piece ``[cuts[k], cuts[k + 1])``, each in a forked process whose stdout goes to a
    file in ``folder``; the pieces in order, or None when one wrote on stderr or did not end with its job's result
    (the others are ended then). Ctrl-C (any exception) ends them all and is raised again."""
    import selectors

    sys.stdout.flush()
    sys.stderr.flush()
    pieces = [Piece(start, end, folder / f"{k}.out", {}) for k, (start, end) in enumerate(itertools.pairwise(cuts))]
    children: dict[int, int] = {}  # pid -> piece number
    watched = selectors.DefaultSelector()
    clean = False
    try:
        for k, piece in enumerate(pieces):
            read_end, write_end = os.pipe()
            watched.register(read_end, selectors.EVENT_READ)
            try:
                pid = os.fork()
            except OSError:  # (no process to be had now: one run does it)
                os.close(write_end)
                return None
            if pid == 0:  # pragma: no cover - the piece's process (its coverage is its outputs)
                _piece_process(piece, k, folder, job, write_end)
            os.close(write_end)
            children[pid] = k
        while watched.get_map():
            for key, _ in watched.select():
                if os.read(key.fd, 4096):
                    return None  # a byte on stderr: this run's diagnostics are one run's, printed by that run
                watched.unregister(key.fd)
                os.close(key.fd)
        for pid, k in list(children.items()):
            _, status = os.waitpid(pid, 0)
            del children[pid]
            if os.waitstatus_to_exitcode(status) != 0:
                return None
            pieces[k].result = loads((folder / f"{k}.json").read_bytes())
        clean = True
        return pieces
    finally:
        for key in list(watched.get_map().values()):
            os.close(key.fd)
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


def _piece_process(piece: Piece, k: int, folder: Path, job: Callable[[int, int], dict[str, Any]], stderr: int) -> None:
    """The forked process of one piece: never returns (``os._exit``)."""
    code = 70
    try:
        os.setpgid(0, 0)  # (the terminal's Ctrl-C is the command's: it ends the pieces)
        _die_with_parent()
        out = os.open(piece.stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, 1)
        os.dup2(stderr, 2)
        os.close(out)
        os.close(stderr)
        from replay.pipeline.engine import interrupts

        interrupts.enable()  # (the command's watchdog is the command's: this process has its own)
        result = job(piece.start, piece.end)
        sys.stdout.flush()
        (folder / f"{k}.json").write_bytes(dumps(result))
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
def spool_folder(room: int) -> Iterator[Path | None]:
    """A private folder for the pieces' spooled outputs in the temp folder (``TMPDIR``, as ``sort`` spools there),
    removed with everything in it at the end; None when none can be made there, or fewer than ``room`` bytes are free
    (the command then runs once, spooling nothing)."""
    import shutil
    import tempfile

    try:
        folder = Path(tempfile.mkdtemp(prefix="replay-pieces-"))
    except OSError:
        yield None
        return
    try:
        yield folder if shutil.disk_usage(folder).free >= room else None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
