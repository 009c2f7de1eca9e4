"""An exception Python cannot raise (a ``__del__`` at exit: an event loop a second Ctrl-C stopped half made) is said on
stderr as replay says everything there, a JSON log line (at debug), never Python's "Exception ignored in" text."""

from __future__ import annotations

import subprocess
import sys

import orjson

SCRIPT = """
import atexit, sys
class HalfMade:
    def __del__(self):
        raise AttributeError("'_UnixSelectorEventLoop' object has no attribute '_closed'")
def at_exit():
    made = HalfMade()
    del made
atexit.register(at_exit)
from replay.pipeline.cli.app import main
main(sys.argv[1:])
"""


def _stderr(*args: str) -> bytes:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, *args], capture_output=True, check=False)
    assert proc.returncode == 0
    return proc.stderr


def test_an_unraisable_exception_is_a_json_line_at_debug() -> None:
    assert _stderr("schema", "event") == b""  # (debug: not at the default level)
    lines = [orjson.loads(line) for line in _stderr("--log-level", "debug", "schema", "event").splitlines()]
    said = [line for line in lines if line["event"] == "python.unraisable"]
    assert len(said) == 1 and said[0]["level"] == "debug" and "_closed" in said[0]["error"]
