"""multiprocessing's resource tracker, started (and started again, should it die) with its standard streams on the null
device: what it writes is never on the command's stderr.

The tracker is the process that unlinks the named semaphores of a pool of worker processes should their owners die
first. All it writes is Python's text: its warning of the semaphores it cleans up after a command killed outright,
and, when it was itself killed (SIGKILL, the OOM killer) and multiprocessing started it again on its next use (inside
a pool's ``submit``, or as the pool's semaphores are let go), a raw ``KeyError`` traceback for each semaphore the dead
one had been told of, as their owners tell the new one they are gone. Each went to the command's stderr, which carries
JSON diagnostics and structlog lines only. ``quiet()`` takes over the tracker's start in this process (its
``ensure_running``, which every use of the tracker calls first): as multiprocessing starts it, but with stdin, stdout
and stderr on the null device, and without unblocking the interrupts in the calling thread. That it died and was started
again stays said, as multiprocessing's own warning (a log line: ``log_warnings``); the work goes on, as it did.
"""

from __future__ import annotations

import os
import signal
import warnings
from contextlib import suppress
from typing import Any

# what multiprocessing's tracker process blocks while it starts, until its handlers are set (bpo-33613)
_STARTING_BLOCKED = {signal.SIGINT, signal.SIGTERM}
_DIED = "resource_tracker: process died unexpectedly, relaunching.  Some resources might leak."  # (multiprocessing's)


def quiet() -> None:
    """Start the tracker (if it is not running) with its standard streams on the null device, and have multiprocessing
    start it so again whenever it finds it dead."""
    from multiprocessing import resource_tracker  # (here: a run in one process never loads multiprocessing)

    tracker: Any = resource_tracker._resource_tracker
    if not takes_over(tracker):  # (another Python's tracker, not built as this one knows: started its own way, without
        _started_hushed(tracker)  # its warning of leaked semaphores at least)
        return
    if not isinstance(tracker.__dict__.get("ensure_running"), _Start):
        tracker.ensure_running = _Start(tracker)  # (what its register, unregister and getfd call)
        resource_tracker.ensure_running = tracker.ensure_running  # (what the fork server calls)
    tracker.ensure_running()


_KNOWN = ("_lock", "_fd", "_pid", "_check_alive", "_reentrant_call_error")  # what ``_Start`` reads of the tracker
# A tracker that starts itself again elsewhere than in ``ensure_running`` (Python 3.14's register and unregister go
# through this, which relaunches a dead tracker its own way): taking over ``ensure_running`` would quiet its first
# start only.
_RESTARTS_ELSEWHERE = "_ensure_running_and_write"


def takes_over(tracker: Any) -> bool:
    """Is ``tracker`` built as ``_Start`` knows it (multiprocessing's of Python 3.11.7+ to 3.13: every start, the first
    and each after it died, through ``ensure_running``)? Its start is taken over only then; a tracker of another make
    starts as multiprocessing starts it (``_started_hushed``)."""
    return all(hasattr(tracker, name) for name in _KNOWN) and not hasattr(tracker, _RESTARTS_ELSEWHERE)


def _started_hushed(tracker: Any) -> None:
    """Start the tracker multiprocessing's way (its streams the command's), but without its warning of the semaphores
    it cleans up after a command killed outright: its interpreter takes the -W options of ``sys.warnoptions``."""
    import sys

    hush = "ignore:resource_tracker:UserWarning"
    sys.warnoptions.append(hush)
    try:
        tracker.ensure_running()
    finally:
        sys.warnoptions.remove(hush)


class _Start:
    """The tracker's ``ensure_running``: multiprocessing's, but that the process it starts puts its standard streams on
    the null device before it runs the tracker (a command line of ours, started as multiprocessing starts it)."""

    def __init__(self, tracker: Any) -> None:
        self.tracker = tracker

    def __call__(self) -> Any:
        tracker = self.tracker
        with tracker._lock:
            counted = getattr(tracker._lock, "_recursion_count", None)
            if counted is not None and counted() > 1:  # (a finalizer that runs while it starts: multiprocessing's error)
                return tracker._reentrant_call_error()
            if tracker._fd is not None:
                if tracker._check_alive():
                    return None
                os.close(tracker._fd)  # dead: reaped, and started again
                tracker._fd = None
                if tracker._pid is not None:
                    with suppress(ChildProcessError):
                        os.waitpid(tracker._pid, 0)
                tracker._pid = None
                warnings.warn(_DIED, UserWarning, stacklevel=2)
            tracker._fd, tracker._pid = _launch()
            if hasattr(tracker, "_exitcode"):  # (Python 3.13: what its _stop found)
                tracker._exitcode = None
        return None


def _launch() -> tuple[int, int]:
    """Start a tracker process: the write end of the pipe it reads, and its pid."""
    from multiprocessing import spawn, util

    read, write = os.pipe()
    try:
        flags: list[str] = util._args_from_interpreter_flags()  # type: ignore[attr-defined]  # (multiprocessing's own)
        command = [spawn.get_executable(), *flags, "-c", _QUIET_MAIN.format(read)]
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STARTING_BLOCKED)
        try:
            pid = util.spawnv_passfds(os.fsencode(command[0]), command, [read])
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    except BaseException:
        os.close(write)
        raise
    finally:
        os.close(read)
    return write, pid


# the tracker's command line: its standard streams on the null device, then multiprocessing's tracker on the pipe
_QUIET_MAIN = ("import os; null = os.open(os.devnull, os.O_RDWR); [os.dup2(null, fd) for fd in (0, 1, 2)]; os.close(null); "
               "from multiprocessing.resource_tracker import main; main({})")
