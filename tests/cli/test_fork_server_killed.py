"""A command over many inputs whose fork server is killed (SIGKILL, as the OOM killer would) before its pool's
workers all started: that pool is lost as one whose worker died is, and the tasks run again in a new one (a new fork
server). It ended with exit 130, "interrupted", nothing on stderr and nothing healed: the pool's submit raised
EOFError (the fork server's socket), which click's main takes for an interrupt. Real processes, the real fork server.
Found by a read-only pass."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from conftest import REPLAY
from process_support import children
from scale_support import TOO_LATE, heal_in_dir_killing, two_run_copies

COUNT = 60


def _waiting_for_a_worker(pid: int, server: int) -> bool:
    """Is ``pid``'s main thread reading the pipe the fork server answers a new worker's pid on (its pool's submit), and
    the fork server, still loading replay, has forked no worker yet? Asked three times, 10 ms apart (another pipe read
    is brief: the one of a process it starts)."""
    for k in range(3):
        if k:
            time.sleep(0.01)
        try:
            if Path(f"/proc/{pid}/wchan").read_text() != "anon_pipe_read" or \
                    Path(f"/proc/{server}/task/{server}/children").read_text().split():
                return False
        except OSError:
            return False
    return True


def _heal_killing_the_fork_server(tmp_path: Path, out: str) -> tuple[bool, subprocess.Popen[bytes], bytes, bytes]:
    """`heal --in in --out OUT --workers 2`, its fork server killed while the pool's first submit waits on it; whether
    it was killed then (not later: it had forked workers), the process, its stdout and stderr."""

    def victim(pid: int) -> int | None:
        servers = children(pid, b"forkserver")
        if servers and _waiting_for_a_worker(pid, servers[0]):
            return servers[0]
        if servers and Path(f"/proc/{servers[0]}/task/{servers[0]}/children").read_text().split():
            return TOO_LATE  # (it forked workers)
        return None

    return heal_in_dir_killing(tmp_path, out, victim, REPLAY)


def test_a_fork_server_killed_as_the_pool_starts_is_a_lost_pool_run_again(tmp_path: Path) -> None:
    two_run_copies(tmp_path / "in", COUNT)
    for attempt in range(3):
        killed, proc, out, err = _heal_killing_the_fork_server(tmp_path, f"out{attempt}")
        if killed:
            break
    assert killed, "the fork server was never caught before it forked a worker"
    assert proc.returncode == 0, (proc.returncode, err)
    assert all(line.startswith(b"{") for line in err.splitlines()), err
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == COUNT and len(list((tmp_path / f"out{attempt}").rglob("*.healed.jsonl"))) == COUNT
