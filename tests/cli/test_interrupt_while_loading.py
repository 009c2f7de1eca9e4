"""Ctrl-C while replay's modules load (before any command runs) ends it at once with 130 and nothing on stderr: not a
KeyboardInterrupt traceback from the middle of an import, not a crash in an extension's module setup."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

# replay's entry point, with the import of the command line's modules held up (a loaded machine) until the test has
# interrupted it: the marker file says the import began
SLOW_LOAD = """
import pathlib, sys, time
marker = pathlib.Path(sys.argv.pop(1))
class HeldUp:
    def find_spec(self, name, path=None, target=None):
        if name == "replay.pipeline.cli.app":
            marker.write_text("loading")
            time.sleep(20)
        return None
sys.meta_path.insert(0, HeldUp())
sys.argv = ["replay", "read", "/dev/null"]
from replay.pipeline.cli.entry import main
main()
"""


def test_ctrl_c_while_the_modules_load_exits_130_quietly(tmp_path: Path):
    marker = tmp_path / "loading"
    proc = subprocess.Popen([sys.executable, "-c", SLOW_LOAD, str(marker)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert marker.exists(), proc.communicate()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err) == (130, b"", b"")
