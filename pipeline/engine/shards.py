"""One large journal file cut at run boundaries into pieces run at once in forked processes (``--workers``), whose
results a command uses only when they are exactly what one run over the whole file gives.

``plan`` finds the cuts: a piece begins at a line whose runId differs from the line before it, both lines plain
events of replay's own (a JSON object with ``seq`` and a string ``runId``, no ``$record``), so every run lies whole in
one piece and every piece reads as replay's own stream, as the whole file does. Only a regular local file of JSON lines
is cut (no stdin, URL, gzip or JSON document), whose first line is such an event or a run record.

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
import selectors
import shutil
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.exactjson import dumps, loads
from replay.pipeline.model.records import RECORD_KEY, RUN_RECORD

PIECE_MIN_BYTES = 16 << 20  # a smaller piece costs more (a fork, a spool, a merge) than it saves
PIECE_BYTES_VARIABLE = "REPLAY_PIECE_BYTES"  # the environment's say in that (tests cut small journals)
SCAN_BYTES = 1 << 20  # how far past a planned cut a run boundary is looked for
COPY_BYTES = 1 << 20  # a piece's spooled stdout is copied on in chunks this large (memory stays flat)
_PR_SET_PDEATHSIG = 1  # prctl(2)


@dataclass
class Piece:
    """One piece's run: its bytes [start, end) of the file, its stdout (spooled), what its job returned."""

    start: int
    end: int
    stdout: Path
    result: dict[str, Any]


def plan(path: str, parts: int, limit: int) -> list[int]:
    """The offsets ``[0, c1, ..., size]`` that cut ``path`` into at most ``parts`` pieces of at least
    ``piece_bytes()``; ``[]`` when it is not cut (too small, not a file of JSON lines, no run boundary found near the
    planned cuts). ``limit``: the line limit."""
    from replay.pipeline.io.line_start import offset_refusal

    if parts < 2:
        return []
    try:
        st = os.stat(path)
    except OSError:
        return []
    if not stat.S_ISREG(st.st_mode):  # (a folder, a pipe, a device: read as they are, never cut)
        return []
    size = st.st_size
    parts = min(parts, size // piece_bytes())
    if parts < 2:
        return []
    cuts = [0]
    with open(path, "rb") as f:
        if not _opens_as_replay(f.read(min(limit, SCAN_BYTES) + 1)):
            return []
        for k in range(1, parts):
            at = _boundary(f, size * k // parts, limit)
            if at is not None and at > cuts[-1] and at < size:
                cuts.append(at)
    if len(cuts) < 2 or offset_refusal(path, cuts[1], limit) is not None:  # (regular, no gzip, no document: as read reads)
        return []
    return [*cuts, size]


def piece_bytes() -> int:
    """The smallest piece: ``PIECE_MIN_BYTES``, or the number of bytes ``REPLAY_PIECE_BYTES`` gives."""
    raw = os.environ.get(PIECE_BYTES_VARIABLE)
    if raw is None:
        return PIECE_MIN_BYTES
    value = int(raw) if raw.strip().isdigit() else 0
    if value < 1:
        raise ReplayError("E_USAGE_INVALID", f"{PIECE_BYTES_VARIABLE} must be a whole number of bytes, at least 1",
                          path=PIECE_BYTES_VARIABLE, received=raw, expected="a number of bytes, at least 1",
                          howToFix=f"Unset it (pieces of at least {PIECE_MIN_BYTES >> 20} MiB) or give a number.",
                          example=f"{PIECE_BYTES_VARIABLE}={64 << 20}")
    return value


def _opens_as_replay(head: bytes) -> bool:
    """Does the file open with a line the ``dialect`` stage takes for replay's own stream and ``parse`` for no source
    record: an event (``_event``) or a run record, no byte order mark?"""
    line, newline, _ = head.partition(b"\n")
    if not newline:
        return False
    record = _object(line)
    return record is not None and (_event(record) or record.get(RECORD_KEY) == RUN_RECORD)


def _object(line: bytes) -> dict[str, Any] | None:
    if not line.startswith(b"{"):  # (a byte order mark, blanks, anything else: not cut here)
        return None
    try:
        record = loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _event(record: dict[str, Any]) -> bool:
    return RECORD_KEY not in record and "seq" in record and isinstance(record.get("runId"), str)


def _boundary(f: Any, near: int, limit: int) -> int | None:
    """The offset of the first line from ``near`` on (within ``SCAN_BYTES``) that begins another run: it and the line
    before it are events (``_event``) of different runIds, each no longer than ``limit``."""
    f.seek(near)
    window = f.read(SCAN_BYTES)
    first = window.find(b"\n")
    if first < 0:
        return None
    at = near + first + 1
    lines = window[first + 1:].split(b"\n")[:-1]  # (whole lines only)
    before: dict[str, Any] | None = None
    for line in lines:
        record = _object(line) if len(line) <= limit else None
        event = record if record is not None and _event(record) else None
        if event is not None and before is not None and event["runId"] != before["runId"]:
            return at
        before = event
        at += len(line) + 1
    return None


def can_fork() -> bool:
    """Can this process fork its pieces safely? On Linux (``PR_SET_PDEATHSIG``), with no other thread running (a
    fork copies only the thread that forks: a lock another held stays taken in the copy)."""
    return sys.platform == "linux" and threading.active_count() == 1


def run_pieces(cuts: list[int], job: Callable[[int, int], dict[str, Any]], folder: Path) -> list[Piece] | None:
    """``job(start, end)`` once per piece ``[cuts[k], cuts[k + 1])``, each in a forked process whose stdout goes to a
    file in ``folder``; the pieces in order, or None when one wrote on stderr or did not end with its job's result
    (the others are ended then). Ctrl-C (any exception) ends them all and is raised again."""
    sys.stdout.flush()
    sys.stderr.flush()
    pieces = [Piece(start, end, folder / f"{k}.out", {}) for k, (start, end) in enumerate(itertools.pairwise(cuts))]
    children: dict[int, int] = {}  # pid -> piece number
    watched = selectors.DefaultSelector()
    clean = False
    try:
        for k, piece in enumerate(pieces):
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the piece's process (its coverage is its outputs)
                _piece_process(piece, k, folder, job, write_end)
            os.close(write_end)
            children[pid] = k
            watched.register(read_end, selectors.EVENT_READ)
        while watched.get_map():
            for key, _ in watched.select():
                if os.read(key.fd, 4096):
                    return None  # a byte on stderr: this run's diagnostics are one run's, printed by that run
                watched.unregister(key.fd)
                os.close(key.fd)
        while children:
            pid, status = os.wait()
            k = children.pop(pid)
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
def spool_folder() -> Iterator[Path]:
    """A private folder for the pieces' spooled outputs, removed with everything in it at the end."""
    folder = Path(tempfile.mkdtemp(prefix="replay-pieces-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def copy_out(pieces: list[Piece], write: Callable[[bytes], None]) -> None:
    """The pieces' stdout, in order, through ``write`` a chunk at a time."""
    for piece in pieces:
        with piece.stdout.open("rb") as f:
            while chunk := f.read(COPY_BYTES):
                write(chunk)
