"""Wait until no other process holds the given lock files (apt and dpkg take fcntl locks on theirs).

    python3 tests/tools/wait_for_locks.py [--timeout SECONDS] LOCKFILE...

`make test` installs Debian's chromium when it is missing; another apt or dpkg running at that moment
(unattended upgrades, a second checkout's `make test`) holds the package locks. `apt-get install`
waits for the dpkg lock itself (`-o DPkg::Lock::Timeout=600`), but `apt-get update` does not wait for
the lists lock: this does, before it. Each lock is taken and released at once. A lock file that does not
exist or cannot be opened is skipped (apt reports its own error then). Exit 0 when every lock was free
or freed, 1 after the timeout.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import signal
import sys


class TimedOut(Exception):
    pass


def wait_for(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            print(f"waiting for {path}: another apt or dpkg holds it", file=sys.stderr, flush=True)
            fcntl.lockf(fd, fcntl.LOCK_EX)  # blocks until it is free (or the timer interrupts)
        fcntl.lockf(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def main() -> int:
    parser = argparse.ArgumentParser(description="Wait until the given lock files are free.")
    parser.add_argument("--timeout", type=float, default=600.0, help="give up after this many seconds")
    parser.add_argument("locks", nargs="+")
    args = parser.parse_args()

    def give_up(_signum: int, _frame: object) -> None:
        raise TimedOut()

    signal.signal(signal.SIGALRM, give_up)
    signal.setitimer(signal.ITIMER_REAL, args.timeout)
    try:
        for path in args.locks:
            wait_for(path)
    except TimedOut:
        print(f"gave up after {args.timeout:g} s: a lock is still held", file=sys.stderr)
        return 1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
