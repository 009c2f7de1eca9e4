"""Start-up: the usual commands load no module only a rarer path needs (each costs every run a few milliseconds)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "journals" / "broken.jsonl"
NOT_AT_START_UP = ["hashlib", "tempfile", "importlib.resources", "shutil", "difflib", "shlex", "bz2", "lzma",
                   "replay.pipeline.io.nats_stream", "replay.pipeline.io.remote.fsspec"]

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


@pytest.mark.parametrize(("command", "ran"), [(["read"], "replay.stages.check_lines"), (["validate", "--in"], "replay.stages.screen"),
                                             (["heal"], "replay.stages.screen"), (["report"], "replay.stages.summarize")])
def test_the_usual_commands_load_only_what_they_use(command: list[str], ran: str, tmp_path: Path):
    done = subprocess.run([sys.executable, "-c", PROBE, *command, str(EXAMPLE)], capture_output=True, cwd=tmp_path,
                          check=False, timeout=60)
    modules = set(done.stderr.rsplit(b"\nMODULES ", 1)[1].decode().split())
    assert ran in modules  # (the probe ran the command)
    assert [m for m in NOT_AT_START_UP if m in modules] == []
