"""Readiness signs of a running `replay` process for signal tests: what it catches, what it has read, waited for."""

from __future__ import annotations

import array
import fcntl
import signal
import termios
import time
from pathlib import Path


def catches(pid: int, number: int) -> bool:
    """Does process ``pid`` catch signal ``number`` now (a handler set: the SigCgt bit in its /proc status)?"""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:")).split()[1]
    return bool(int(caught, 16) & (1 << (number - 1)))


def catching_ctrl_c_under(pid: int, name: bytes) -> bool:
    """Does a process under ``pid`` whose command line holds ``name`` catch Ctrl-C now (its interpreter set Python's
    handler: it started, and it is not yet at the point where it ignores Ctrl-C)?"""
    todo = [pid]
    while todo:
        parent = todo.pop()
        if any(catches(kid, signal.SIGINT) for kid in children(parent, name)):
            return True
        todo += children(parent, b"")
    return False


def children(pid: int, named: bytes) -> list[int]:
    """The children of ``pid`` (of any of its threads) whose command line holds ``named`` (``forkserver``,
    ``resource_tracker``): read from /proc, as a test that kills one of them finds it."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids = [int(k) for k in (task / "children").read_text().split()]
        except OSError:
            continue
        for kid in kids:
            try:
                if named in Path(f"/proc/{kid}/cmdline").read_bytes():
                    found.append(kid)
            except OSError:
                continue
    return found


def unread(pipe) -> int:
    """How many bytes written to ``pipe`` (our write end) the process at the other end has not read yet (FIONREAD on a
    pipe counts what it holds, at either end)."""
    held = array.array("i", [0])
    fcntl.ioctl(pipe.fileno(), termios.FIONREAD, held)
    return held[0]


def wait_until_read(pipe, timeout: float = 60) -> None:
    """Until the process at the other end of ``pipe`` (our write end) has read every byte written to it: it is running
    and reading, so a signal now finds it waiting for more."""
    deadline = time.monotonic() + timeout
    while held := unread(pipe):
        assert time.monotonic() < deadline, f"{held} bytes still unread after {timeout}s"
        time.sleep(0.02)
