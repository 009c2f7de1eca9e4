"""Run `replay` and SIGKILL it at its N-th write step under a folder (a Python audit hook: no mock).

    python kill_at.py FOLDER N LOG replay-args...

A write step is an audit event that creates, opens for writing, renames, links, removes or changes a
path under FOLDER (``open`` with a write mode or flags, ``os.mkdir``, ``os.rename`` (also os.replace),
``os.link``, ``os.remove``, ``os.rmdir``, ``os.chmod``, ``tempfile.mkstemp``, ``tempfile.mkdtemp``,
``shutil.rmtree``). The hook runs before the step happens, so the kill at step N leaves everything
steps 1..N-1 did and nothing of step N. Each step is appended to LOG as ``N EVENT PATH``; N = 0 only
logs (the reference run). The process is the real `replay`, started the way its console script is.
"""

from __future__ import annotations

import os
import signal
import sys

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
EVENTS = {"open", "os.mkdir", "os.rename", "os.link", "os.remove", "os.rmdir", "os.chmod",
          "tempfile.mkstemp", "tempfile.mkdtemp", "shutil.rmtree"}


def main() -> None:
    folder = os.path.realpath(sys.argv[1]) + os.sep
    nth = int(sys.argv[2])
    log_fd = os.open(sys.argv[3], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)  # opened before the hook
    args = sys.argv[4:]
    count = 0

    def under(value: object) -> str | None:
        if isinstance(value, bytes):
            value = os.fsdecode(value)
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if not isinstance(value, str):
            return None
        path = os.path.abspath(value)
        return path if (path + os.sep).startswith(folder) else None

    def is_write(event: str, hook_args: tuple) -> bool:
        if event != "open":
            return True
        _path, mode, flags = hook_args
        if isinstance(mode, str) and any(ch in mode for ch in "wax+"):
            return True
        return isinstance(flags, int) and bool(flags & WRITE_FLAGS)

    def hook(event: str, hook_args: tuple) -> None:
        nonlocal count
        if event not in EVENTS or not is_write(event, hook_args):
            return
        paths = [p for p in map(under, hook_args) if p is not None]
        if not paths:
            return
        count += 1
        os.write(log_fd, f"{count} {event} {' '.join(paths)}\n".encode())
        if count == nth:
            os.kill(os.getpid(), signal.SIGKILL)

    sys.addaudithook(hook)
    from replay.pipeline.cli.app import main as replay_main

    sys.argv = ["replay", *args]
    replay_main()


if __name__ == "__main__":
    main()
