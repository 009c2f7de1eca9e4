"""Start-up: the usual commands load no module only a rarer path needs (each costs every run a few milliseconds)."""

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
import sys
from replay.pipeline.cli.app import main
sys.argv = ["replay", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
sys.stderr.write("\\nMODULES " + " ".join(sorted(sys.modules)) + "\\n")
"""


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
    args = command if stdin is not None else [*command, str(EXAMPLE)]
    done = subprocess.run([sys.executable, "-c", PROBE, *args], input=stdin, capture_output=True, cwd=tmp_path,
                          check=False, timeout=60)
    modules = set(done.stderr.rsplit(b"\nMODULES ", 1)[1].decode().split())
    assert ran in modules  # (the probe ran the command)
    assert [m for m in [*NOT_AT_START_UP, *unused] if m in modules] == []
