"""Ctrl-C during a command over many inputs run by worker processes ends it as it ends one graph's run: exit 130,
nothing on stderr (a single graph prints nothing there either), no output folder half made. It printed asyncio's
"Task exception was never retrieved ... KeyboardInterrupt" (a worker's task), or the traceback of the fork server or
of a worker still starting; a second Ctrl-C could hang the command for good."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPLAY, group_gone
from process_support import catching_ctrl_c_under
from scale_support import write_journal

COUNT = 40


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """COUNT journals of 3 MB (copies of one): enough for two workers to take seconds over them."""
    root = tmp_path_factory.mktemp("many")
    one = root / "one.jsonl"
    write_journal(one, 3_000_000)
    inputs = root / "in"
    inputs.mkdir()
    for k in range(COUNT):
        shutil.copyfile(one, inputs / f"j{k:03d}.jsonl")
    return inputs


def _start(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([REPLAY, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def _wait_for(sign: Callable[[], bool], proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while not sign() and time.monotonic() < deadline:
        assert proc.poll() is None, f"the run ended before {what}"
        time.sleep(0.005)
    assert proc.poll() is None, f"the run ended before {what}"


def _ctrl_c(proc: subprocess.Popen[bytes], times: int = 1) -> tuple[bytes, bytes]:
    """Ctrl-C ``times`` (a terminal signals the whole group: the workers too); what it printed."""
    for k in range(times):
        if k:
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError("replay hung after Ctrl-C") from None
    assert group_gone(proc.pid, limit=20)
    return out, err


def test_ctrl_c_while_workers_heal_ends_quietly_and_leaves_no_folder(folder: Path, tmp_path: Path) -> None:
    for attempt in range(3):
        out = tmp_path / f"out{attempt}"
        partial = tmp_path / f".out{attempt}.partial.replay.tmp"
        proc = _start("heal", "--in", str(folder), "--out", str(out), "--workers", "2")
        _wait_for(lambda partial=partial: partial.is_dir() and any(partial.glob("*.healed.jsonl")), proc, "it healed a file")
        _, err = _ctrl_c(proc)
        assert (proc.returncode, err) == (130, b"")
        assert not out.exists() and not partial.exists()


@pytest.mark.parametrize("command", ["heal", "validate"])
def test_ctrl_c_while_the_fork_server_starts_ends_quietly(folder: Path, tmp_path: Path, command: str) -> None:
    """The fork server loads replay's modules as it starts (a worker, as it starts, unpickles what it runs): a
    Ctrl-C then raised KeyboardInterrupt there, its traceback on the command's stderr."""
    for attempt in range(3):
        out = tmp_path / f"out{attempt}"
        args = ["--in", str(folder), "--out", str(out)] if command == "heal" else [str(folder)]
        proc = _start(command, *args, "--workers", "2")
        _wait_for(lambda pid=proc.pid: catching_ctrl_c_under(pid, b"forkserver"), proc, "the fork server started")
        _, err = _ctrl_c(proc)
        assert (proc.returncode, err) == (130, b"")
        assert not out.exists() and not (tmp_path / f".out{attempt}.partial.replay.tmp").exists()


def test_ctrl_c_twice_ends_a_run_with_worker_processes_at_once_and_quietly(folder: Path, tmp_path: Path) -> None:
    """A second Ctrl-C while the command waited for its worker processes to end their tasks stopped the wait halfway:
    the workers waited for a next task forever, and replay (joining them as it exited) with them. And a worker that
    Ctrl-C met between tasks printed multiprocessing's traceback on stderr. Now: no process left, nothing but JSON on
    stderr, and neither the folder nor its partial sibling."""
    for attempt in range(2):
        out = tmp_path / f"out{attempt}"
        partial = tmp_path / f".out{attempt}.partial.replay.tmp"
        proc = _start("heal", "--in", str(folder), "--out", str(out), "--workers", "2")
        _wait_for(lambda partial=partial: partial.is_dir() and any(partial.glob("*.healed.jsonl")), proc, "it healed a file")
        _, err = _ctrl_c(proc, times=2)
        # 130; or ended by the second SIGINT itself when it came as replay's interpreter exited (a shell says 130)
        assert proc.returncode in (130, -signal.SIGINT), (proc.returncode, err)
        assert all(line.startswith(b"{") for line in err.splitlines()), err
        assert not out.exists() and not partial.exists()


def test_ctrl_c_twice_in_a_folder_healed_before_leaves_every_file_whole(folder: Path, tmp_path: Path) -> None:
    """A second Ctrl-C while the first stops the workers: the command ends (it could hang for good, a lock of the
    pool's left taken), exit 130, nothing but JSON on stderr; in a folder that was there before (resumed, no partial
    sibling), every file bears a name of its own only when written whole."""
    (tmp_path / "one").mkdir()
    shutil.copyfile(folder / "j000.jsonl", tmp_path / "one" / "j000.jsonl")
    done = subprocess.run([REPLAY, "heal", "--in", str(tmp_path / "one"), "--out", str(tmp_path / "whole")],
                          capture_output=True, check=True)
    assert done.stderr == b""
    whole = (tmp_path / "whole" / "j000.healed.jsonl").read_bytes()
    for attempt in range(3):
        out = tmp_path / f"out{attempt}"
        out.mkdir()
        proc = _start("heal", "--in", str(folder), "--out", str(out), "--workers", "2")
        _wait_for(lambda out=out: any(out.glob("*.healed.jsonl")), proc, "it healed a file")
        _, err = _ctrl_c(proc, times=2)
        # 130; or ended by the second SIGINT itself when it came as replay's interpreter exited (a shell says 130)
        assert proc.returncode in (130, -signal.SIGINT), (proc.returncode, err)
        assert all(line.startswith(b"{") for line in err.splitlines()), err
        for healed in out.glob("*.healed.jsonl"):
            assert healed.read_bytes() == whole, healed
