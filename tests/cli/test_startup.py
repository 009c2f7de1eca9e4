"""Start-up: the usual commands load no module only a rarer path needs (each costs every run a few milliseconds), and
leave the interpreter's teardown nothing to scan for reference cycles."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "journals" / "broken.jsonl"
NOT_AT_START_UP = ["hashlib", "tempfile", "importlib.resources", "shutil", "difflib", "shlex", "bz2", "lzma",
                   "replay.pipeline.io.nats_stream", "replay.pipeline.io.remote.fsspec",
                   "replay.pipeline.io.processes"]  # (runners' and agents' processes: capture, spawn, incident replay)

PROBE = """
import gc
import sys
from replay.pipeline.cli.app import main
sys.argv = ["replay", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
sys.stderr.write(f"\\nGC {gc.get_freeze_count()} {len(gc.get_objects())}")
sys.stderr.write("\\nMODULES " + " ".join(sorted(sys.modules)) + "\\n")
"""


def probe(args: list[str], cwd: Path, stdin: bytes | None = None) -> tuple[set[str], int, int]:
    """The modules loaded by ``replay ARGS`` run by the CLI's entry function in a fresh interpreter, and the objects
    the garbage collector then holds frozen (never scanned again) and not."""
    done = subprocess.run([sys.executable, "-c", PROBE, *args], input=stdin, capture_output=True, cwd=cwd,
                          check=False, timeout=60)
    rest, modules = done.stderr.rsplit(b"\nMODULES ", 1)
    frozen, scanned = rest.rsplit(b"\nGC ", 1)[1].split()
    return set(modules.decode().split()), int(frozen), int(scanned)


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
    modules, _, _ = probe(command if stdin is not None else [*command, str(EXAMPLE)], tmp_path, stdin)
    assert ran in modules  # (the probe ran the command)
    assert [m for m in [*NOT_AT_START_UP, *unused] if m in modules] == []


def test_a_command_leaves_the_teardown_no_objects_to_scan(tmp_path: Path):
    """The interpreter's teardown would scan every object the command made (twice) for cycles the process's end frees
    anyway: the entry function freezes them once the command is done."""
    modules, frozen, scanned = probe(["heal", str(EXAMPLE)], tmp_path)
    assert "replay.stages.screen" in modules  # (the probe ran the command)
    assert frozen > 10_000
    assert scanned < 100
