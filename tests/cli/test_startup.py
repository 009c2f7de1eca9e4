"""Start-up: the usual commands load no module only a rarer path needs (each costs every run a few milliseconds); the
garbage collector does not scan the command line's objects while they load, nor when the process exits."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "journals" / "broken.jsonl"
NOT_AT_START_UP = ["hashlib", "tempfile", "importlib.resources", "shutil", "difflib", "shlex", "bz2", "lzma",
                   "replay.pipeline.io.nats_stream", "replay.pipeline.io.remote.fsspec",
                   "replay.pipeline.io.processes"]  # (runners' and agents' processes: capture, spawn, incident replay)
ENTRY_POINT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["replay"]  # what `replay` runs

PROBE = """
import gc
import importlib
import sys
module, _, name = sys.argv[1].partition(":")
before = gc.get_stats()[0]["collections"]
main = getattr(importlib.import_module(module), name)
sys.argv = ["replay", *sys.argv[2:]]
try:
    main()
except SystemExit:
    pass
collections = gc.get_stats()[0]["collections"] - before
sys.stderr.write(f"\\nGC {collections} {gc.get_freeze_count()} {len(gc.get_objects())}")
sys.stderr.write("\\nMODULES " + " ".join(sorted(sys.modules)) + "\\n")
"""


class Probed(NamedTuple):
    modules: set[str]  # loaded by the end of the command
    collections: int  # the garbage collector's runs from the entry point's import to the end of the command
    frozen: int  # objects the collector then holds frozen (never scanned again)
    scanned: int  # and objects it would still scan (in the interpreter's teardown)


def probe(args: list[str], cwd: Path, stdin: bytes | None = None) -> Probed:
    """``replay ARGS`` run by the executable's entry point in a fresh interpreter, and what it left behind."""
    done = subprocess.run([sys.executable, "-c", PROBE, ENTRY_POINT, *args], input=stdin, capture_output=True, cwd=cwd,
                          check=False, timeout=60)
    rest, modules = done.stderr.rsplit(b"\nMODULES ", 1)
    collections, frozen, scanned = rest.rsplit(b"\nGC ", 1)[1].split()
    return Probed(set(modules.decode().split()), int(collections), int(frozen), int(scanned))


# The loop of a command over many inputs (`--in DIR`, `--workers`): not loaded to stream one input through one graph.
SCALING_OUT = ["replay.pipeline.cli.scale", "replay.pipeline.engine.parallel", "replay.pipeline.io.dask_backend"]


@pytest.mark.parametrize(("command", "ran", "unused"), [
    (["read"], "replay.stages.check_lines", SCALING_OUT),
    (["validate", "--in"], "replay.stages.screen", []),  # (a file is validated as one input of the loop over many)
    (["validate", "-"], "replay.stages.screen", SCALING_OUT),  # a stream on stdin
    (["heal"], "replay.stages.screen", SCALING_OUT),
    (["report"], "replay.stages.summarize", SCALING_OUT),
])
def test_the_usual_commands_load_only_what_they_use(command: list[str], ran: str, unused: list[str], tmp_path: Path):
    stdin = EXAMPLE.read_bytes() if command[-1] == "-" else None
    modules = probe(command if stdin is not None else [*command, str(EXAMPLE)], tmp_path, stdin).modules
    assert ran in modules  # (the probe ran the command)
    assert [m for m in [*NOT_AT_START_UP, *unused] if m in modules] == []


def test_the_collector_scans_no_module_objects_while_they_load_nor_at_exit(tmp_path: Path):
    """With the interpreter's default thresholds the collector runs ~20 times while the command line's ~300 modules
    load, scanning their objects again and again, and the interpreter's teardown scans every object (twice) for cycles
    the process's end frees anyway: the entry point tunes the collector first (``memory.tune_gc``) and freezes every
    object once the command is done (``memory.spare_teardown``)."""
    probed = probe(["heal", str(EXAMPLE)], tmp_path)
    assert "replay.stages.screen" in probed.modules  # (the probe ran the command)
    assert probed.collections <= 3
    assert probed.frozen > 10_000
    assert probed.scanned < 100
