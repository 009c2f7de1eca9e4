"""An output flag naming /dev/fd/N writes in place only through a descriptor the process was given (0-2, or one its
parent left open: ``3> res.txt``); a descriptor replay opened itself (the event loop's socket pair, fds 6 and 7) is
opened as any other path, and its failure reported: before, ``--out /dev/fd/7`` wrote into replay's own socket and
exited 0 with nothing written anywhere."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import EXAMPLES, REPLAY

JOURNAL = EXAMPLES / "journals" / "two-runs.jsonl"


def test_a_descriptor_replay_opened_itself_is_no_output(tmp_path: Path) -> None:
    done = subprocess.run([REPLAY, "write", str(JOURNAL), "--out", "/dev/fd/7"], cwd=tmp_path, capture_output=True,
                          timeout=120, close_fds=True)
    assert done.returncode != 0 and done.stdout == b""
    error = json.loads(done.stderr.decode().strip().splitlines()[-1])["error"]
    assert error["code"].startswith("E_OUTPUT_") and error["path"] == "/dev/fd/7"


def test_a_descriptor_the_shell_gave_is_written_in_place(tmp_path: Path) -> None:
    script = 'echo header >&3; "$R" write "$J" --out /dev/fd/3 3>&3; echo "rc=$?" >&3'
    subprocess.run(["sh", "-c", f"{{ {script}; }} 3> res.txt"], cwd=tmp_path, check=True, timeout=120,
                   env={"R": REPLAY, "J": str(JOURNAL), "PATH": "/usr/bin:/bin"})
    lines = (tmp_path / "res.txt").read_text().splitlines()
    assert lines[0] == "header" and lines[-1] == "rc=0"
    assert lines[1:-1] == JOURNAL.read_text().splitlines()
