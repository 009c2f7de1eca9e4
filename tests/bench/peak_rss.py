"""Peak RSS (and CPU time) of one command, measured by a small launcher so the measuring process's size stays out.

Linux carries a process's peak RSS across exec: a child started straight from a big parent (pytest,
the benchmark) reports at least the parent's size. The launcher is a fresh, small interpreter that
forks the command and reports the command's own peak (KiB; the largest of it and the processes it waited for, as
its pieces) and the CPU seconds it and those took, to a file.
"""

from __future__ import annotations

import sys
from pathlib import Path

LAUNCHER = """
import os, sys
report, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as out:
    out.write(f"{usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}")
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def measured(command: list[str], report: str | Path) -> list[str]:
    """The argv that runs ``command`` and leaves its peak RSS (KiB) in ``report``."""
    return [sys.executable, "-S", "-c", LAUNCHER, str(report), *command]


def peak_kib(report: str | Path) -> int:
    return int(Path(report).read_text().split()[0])


def cpu_seconds(report: str | Path) -> float:
    """User and system CPU time of the command and the processes it waited for."""
    return float(Path(report).read_text().split()[1])
