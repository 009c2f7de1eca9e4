"""`make test` waits for the Debian package locks another apt or dpkg holds, instead of failing.

The lock helper is run for real against a lock file this test holds (fcntl locks, as apt and dpkg take
them): it says it is waiting, stays waiting while the lock is held, and ends as soon as it is freed.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

WAIT = ROOT / "tests" / "tools" / "wait_for_locks.py"


def test_the_helper_waits_while_a_lock_is_held_and_ends_when_it_is_freed(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    lock.write_bytes(b"")
    fd = os.open(lock, os.O_RDWR)
    fcntl.lockf(fd, fcntl.LOCK_EX)  # another apt holding it
    try:
        proc = subprocess.Popen([sys.executable, str(WAIT), "--timeout", "120", str(lock)], stderr=subprocess.PIPE)
        line = proc.stderr.readline()  # printed once it found the lock taken, just before it blocks
        assert line.startswith(b"waiting for ") and str(lock).encode() in line
        assert proc.poll() is None  # still waiting: the lock is held
    finally:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        os.close(fd)
    assert proc.wait(timeout=60) == 0
    proc.stderr.close()


def test_the_helper_gives_up_after_its_timeout(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    lock.write_bytes(b"")
    fd = os.open(lock, os.O_RDWR)
    fcntl.lockf(fd, fcntl.LOCK_EX)
    try:
        done = subprocess.run([sys.executable, str(WAIT), "--timeout", "0.2", str(lock)], capture_output=True,
                              timeout=60, check=False)
    finally:
        os.close(fd)
    assert done.returncode == 1 and b"gave up" in done.stderr


def test_free_or_missing_locks_pass_at_once(tmp_path: Path) -> None:
    (tmp_path / "free").write_bytes(b"")
    done = subprocess.run([sys.executable, str(WAIT), str(tmp_path / "free"), str(tmp_path / "missing")],
                          capture_output=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stderr == b""


def test_make_waits_for_the_locks_before_each_apt_get() -> None:
    recipe = subprocess.run(["make", "-n", "-s", "packages"], cwd=ROOT, capture_output=True, check=True, text=True).stdout
    commands = [part.strip() for part in recipe.replace("\\\n", " ").split("&&")]
    apt = [i for i, c in enumerate(commands) if "apt-get" in c]
    assert apt, recipe
    for i in apt:
        assert "-o DPkg::Lock::Timeout=600" in commands[i], commands[i]
        assert "wait_for_locks.py" in commands[i - 1], (commands[i - 1], commands[i])
    update = next(c for c in commands if "apt-get" in c and " update" in c)
    assert "/var/lib/apt/lists/lock" in commands[commands.index(update) - 1]
