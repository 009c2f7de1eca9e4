"""An exception Python cannot raise (a ``__del__`` at exit: an event loop a second Ctrl-C stopped half made) is said on
stderr as replay says everything there, a JSON log line (at debug), never Python's "Exception ignored in" text."""

from __future__ import annotations

import subprocess
import sys

import orjson

SCRIPT = """
import atexit, sys
class HalfMadeEventLoop:
    def __del__(self):
        raise (AttributeError if sys.argv[1] == "attribute" else OSError)("'_UnixSelectorEventLoop' object has no "
                                                                          "attribute '_closed'")
def at_exit():
    made = HalfMadeEventLoop()
    del made
atexit.register(at_exit)
from replay.pipeline.cli.app import main
main(sys.argv[2:])
"""


def _stderr(kind: str, *args: str) -> bytes:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, kind, *args], capture_output=True, check=False)
    assert proc.returncode == 0
    return proc.stderr


def test_what_an_interrupt_leaves_is_a_json_line_at_debug() -> None:
    assert _stderr("attribute", "schema", "event") == b""  # (debug: not at the default level)
    lines = [orjson.loads(line) for line in _stderr("attribute", "--log-level", "debug", "schema", "event").splitlines()]
    said = [line for line in lines if line["event"] == "python.unraisable"]
    assert len(said) == 1 and said[0]["level"] == "debug" and "_closed" in said[0]["error"]
    assert said[0]["code"] == "E_PYTHON_UNRAISABLE" and "HalfMadeEventLoop.__del__" in said[0]["object"]


def test_any_other_is_a_json_warning() -> None:
    said = [orjson.loads(line) for line in _stderr("other", "schema", "event").splitlines()]
    assert [(line["event"], line["level"]) for line in said] == [("python.unraisable", "warning")]
    assert said[0]["error"].startswith("OSError") and said[0]["code"] == "E_PYTHON_UNRAISABLE"
