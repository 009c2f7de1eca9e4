"""An output flag naming an open descriptor (/dev/stdout, /dev/stderr, /dev/fd/N) writes through it, in place: the
file the shell redirected to keeps what else was written there (real processes, a redirected regular file)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import EXAMPLES, REPLAY

JOURNAL = EXAMPLES / "journals" / "two-runs.jsonl"


def _shell(script: str, tmp_path: Path) -> str:
    subprocess.run(["sh", "-c", script], cwd=tmp_path, check=True, timeout=120, env={"R": REPLAY, "J": str(JOURNAL),
                                                                                    "PATH": "/usr/bin:/bin"})
    return (tmp_path / "res.txt").read_text()


@pytest.mark.parametrize("command", ["write --out /dev/stdout", "write --out /dev/fd/1", "report --out /dev/stdout",
                                     "export --otlp --out /dev/stdout"])
def test_out_to_stdout_keeps_the_shells_file(tmp_path: Path, command: str) -> None:
    text = _shell(f'{{ echo header; "$R" {command} "$J" 2>/dev/null; echo "rc=$?"; echo footer; }} > res.txt', tmp_path)
    lines = text.splitlines()
    assert lines[0] == "header" and lines[-1] == "footer" and lines[-2] == "rc=0"
    assert len(lines) > 4  # the command's output is there, between them


def test_log_to_stderr_keeps_the_shells_file(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_bytes(b'{"a":1}\n')
    text = _shell('{ echo before >&2; "$R" heal --log /dev/stderr in.jsonl >/dev/null; echo rc=$? >&2; } 2> res.txt',
                  tmp_path)
    lines = text.splitlines()
    assert lines[0] == "before" and lines[-1] == "rc=1"  # (exit 1: the event has no type, still invalid when healed)
    assert any('"rule"' in line for line in lines)  # the repair log, written on from where the shell was
