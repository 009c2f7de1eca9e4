"""`golden check` says its mismatch on stderr when stdout cannot take its line, as `replay diff` says its verdict."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import EXAMPLES, REPLAY, errors_of

SESSION = str(EXAMPLES / "echo-agent" / "scenarios" / "echo" / "session.jsonl")
VERDICT = {"golden": "E_GOLDEN_MISMATCH", "diff": "E_RUNS_DIFFER"}


def _changed(tmp_path: Path) -> str:
    changed = tmp_path / "changed.jsonl"
    changed.write_bytes(b'{"type":"session/start","sessionId":"x"}\n')
    return str(changed)


def _args(command: str, new: str) -> list[str]:
    return [REPLAY, "golden", "check", SESSION, new] if command == "golden" else [REPLAY, "diff", SESSION, new]


def test_a_full_disk_on_stdout_leaves_the_mismatch_said(tmp_path: Path):
    """stdout on /dev/full: golden check said only E_OUTPUT_WRITE_FAILED (the mismatch unsaid anywhere), where diff
    says both; now golden says both too, and both exit 1 (a difference; a write failed once running)."""
    new = _changed(tmp_path)
    said = {}
    for command in VERDICT:
        fd = os.open("/dev/full", os.O_WRONLY)
        try:
            done = subprocess.run(_args(command, new), stdin=subprocess.DEVNULL, stdout=fd, stderr=subprocess.PIPE,
                                  timeout=120, check=False)
        finally:
            os.close(fd)
        codes = [e["code"] for e in errors_of(done.stderr)]
        assert b"Traceback" not in done.stderr
        assert sorted(codes) == sorted(["E_OUTPUT_WRITE_FAILED", VERDICT[command]]), (command, done.stderr)
        said[command] = done.returncode
    assert said == {"golden": 1, "diff": 1}


@pytest.mark.parametrize("command", list(VERDICT))
def test_a_reader_gone_away_leaves_the_mismatch_said(tmp_path: Path, command: str):
    """stdout a pipe whose reader is gone: both end as such a run ends (quietly, with the verdict so far: the
    difference found, exit 1), saying the verdict on stderr."""
    proc = subprocess.Popen(_args(command, _changed(tmp_path)), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    stderr = proc.stderr.read()
    proc.wait(timeout=120)
    assert [e["code"] for e in errors_of(stderr)] == [VERDICT[command]], stderr
    assert proc.returncode == 1  # (`| head` ends a run quietly, with its verdict so far; diff and golden alike)
