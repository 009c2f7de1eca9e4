"""A command over many inputs killed outright (SIGKILL: no Ctrl-C, no shutdown) takes its worker processes with it:
they watch a pipe only the command writes to, read EOF when it is gone and end, and so do the fork server and
multiprocessing's resource tracker. They stayed, reparented to PID 1, for good."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path

import pytest
from conftest import REPLAY, group_gone
from scale_support import make_journals

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find the workers")


def _group(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that still run (not zombies), from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()  # (after the command name, which may hold spaces)
        if fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(int(entry))
    return found


def test_workers_end_when_the_command_is_killed(tmp_path: Path):
    (tmp_path / "runs").mkdir()
    runs = make_journals(tmp_path / "runs", count=400, size=20_000)
    proc = subprocess.Popen([REPLAY, "heal", "--in", str(runs), "--out", str(tmp_path / "healed"), "--workers", "2",
                             "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(_group(proc.pid)) < 4 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # (the command, its fork server, the resource tracker and a worker at least)
        assert proc.poll() is None and len(_group(proc.pid)) >= 4, "the run ended before its workers could be seen"
        os.kill(proc.pid, signal.SIGKILL)  # the command alone, as the OOM killer picks it
        proc.wait(timeout=30)
        assert group_gone(proc.pid, limit=60), [Path(f"/proc/{p}/cmdline").read_bytes() for p in _group(proc.pid)]
        assert proc.stderr is not None
        assert all(line.startswith(b"{") for line in proc.stderr.read().splitlines())  # (no tracker's warning)
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
