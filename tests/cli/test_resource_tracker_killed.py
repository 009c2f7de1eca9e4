"""A command over many inputs whose multiprocessing resource tracker is killed (SIGKILL, as the OOM killer would) while
it runs: multiprocessing starts the tracker again on its next use (a pool's submit, or as the pool's semaphores are let
go), and the new one printed a raw `KeyError` traceback on the command's stderr for each semaphore the dead one had been
told of. stderr carries JSON lines only: the tracker's streams are on the null device now, and the command goes on,
saying that the tracker died and was started again (a warning log line). Real processes, the real tracker."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from conftest import REPLAY
from process_support import children
from scale_support import heal_in_dir_killing, two_run_copies

COUNT = 60


def _heal_killing_the_tracker(tmp_path: Path, out: str) -> tuple[bool, subprocess.Popen[bytes], bytes, bytes]:
    """`heal --in in --out OUT --workers 2`, its resource tracker killed once the pool's workers run (the pool's
    semaphores, made before them, are the dead tracker's); whether it was killed so, the process, its stdout and
    stderr."""

    def victim(pid: int) -> int | None:
        trackers, servers = children(pid, b"resource_tracker"), children(pid, b"forkserver")
        return trackers[0] if trackers and servers and children(servers[0], b"forkserver") else None  # (workers run)

    return heal_in_dir_killing(tmp_path, out, victim, REPLAY)


def test_a_killed_resource_tracker_is_started_again_quietly_and_the_command_goes_on(tmp_path: Path) -> None:
    two_run_copies(tmp_path / "in", COUNT)
    for attempt in range(3):
        killed, proc, out, err = _heal_killing_the_tracker(tmp_path, f"out{attempt}")
        if killed and b"relaunching" in err:
            break
    assert killed and b"relaunching" in err, ("the tracker was never killed while the command still used it", err)
    assert proc.returncode == 0, (proc.returncode, err)
    assert all(line.startswith(b"{") for line in err.splitlines()), err
    [said] = [json.loads(line) for line in err.splitlines() if b"relaunching" in line]
    assert said["level"] == "warning" and said["code"] == "E_PYTHON_WARNING"
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == COUNT and len(list((tmp_path / f"out{attempt}").rglob("*.healed.jsonl"))) == COUNT


PROBE = """
import os, signal, sys, time
from multiprocessing import get_context, resource_tracker
from replay.pipeline.engine import tracker

def streams(pid):  # once its interpreter put them on the null device, else as they are after 30 s
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and os.readlink(f"/proc/{pid}/fd/2") != os.devnull:
        time.sleep(0.01)
    return [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in (0, 1, 2)]
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
tracker.quiet()
first = resource_tracker._resource_tracker._pid
print(first, *streams(first), flush=True)
os.kill(first, signal.SIGKILL)
os.waitpid(first, 0)
lock = get_context("forkserver").Lock()  # (registers its semaphore: the tracker is found dead and started again)
again = resource_tracker._resource_tracker._pid
print(again, *streams(again), flush=True)
print(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, ()))
"""


def test_the_tracker_is_started_and_started_again_on_the_null_device_leaving_the_callers_signal_mask() -> None:
    """Its streams on the null device, at first and once started again after it was killed; the caller's blocked
    Ctrl-C still blocked (multiprocessing's own start unblocked it); its death said as a warning (here, Python's text:
    in a command, a log line)."""
    import sys

    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    first, again, masked = done.stdout.decode().splitlines()
    assert first.split()[1:] == again.split()[1:] == [os.devnull] * 3 and first.split()[0] != again.split()[0]
    assert masked == "True"
    assert b"relaunching" in done.stderr and b"Traceback" not in done.stderr


def test_a_tracker_of_another_make_is_started_its_own_way():
    """The take-over reads multiprocessing's tracker internals (Python 3.11-3.13); a tracker built otherwise (another
    Python) is not taken over, and ``quiet`` starts it as multiprocessing does, not failing the command."""
    import sys
    from multiprocessing import resource_tracker

    from replay.pipeline.engine import tracker

    class Other:  # (a tracker of another make: only the public start)
        started: list[list[str]] = []

        def ensure_running(self) -> None:
            self.started.append(list(sys.warnoptions))  # (what its interpreter would be started with)

    real, other = resource_tracker._resource_tracker, Other()
    assert tracker.takes_over(real)  # (this Python's: taken over)
    resource_tracker._resource_tracker = other  # type: ignore[assignment]
    try:
        tracker.quiet()
    finally:
        resource_tracker._resource_tracker = real
    assert not tracker.takes_over(other) and len(other.started) == 1
    assert "ignore:resource_tracker:UserWarning" in other.started[0]  # (its warning of leaked semaphores hushed)
    assert "ignore:resource_tracker:UserWarning" not in sys.warnoptions


def test_a_tracker_that_restarts_itself_elsewhere_is_not_taken_over():
    """Python 3.14's tracker starts itself again in ``_ensure_running_and_write`` (register, unregister), not through
    ``ensure_running``: a take-over of that would quiet its first start only. Such a tracker is started its own way."""
    from multiprocessing import resource_tracker

    from replay.pipeline.engine import tracker

    real = resource_tracker._resource_tracker

    class Newer(type(real)):  # type: ignore[misc]  # (this Python's tracker, with 3.14's other way to start again)
        def _ensure_running_and_write(self, msg: bytes) -> None:
            raise AssertionError("not called here")

    assert tracker.takes_over(real) and not tracker.takes_over(Newer())
