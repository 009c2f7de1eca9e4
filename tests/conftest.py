"""Shared test helpers: run the real `replay` executable, read its JSON errors, pick async backends."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "corpus"  # copies of ../shared/corpus/real, licences in SOURCES.md
FIXTURES = ROOT / "tests" / "fixtures"
EXAMPLES = ROOT / "examples"
REPLAY = str(Path(sys.executable).parent / "replay")


def run_replay(*args: str, input: bytes | None = None, cwd: str | Path | None = None,
               env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    """Run the installed `replay` console script as a real process."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([REPLAY, *args], input=input, capture_output=True, cwd=cwd, env=full_env, timeout=timeout)


def errors_of(stderr: bytes) -> list[dict]:
    """The `{"error": ...}` bodies printed on stderr (log lines are skipped)."""
    bodies = []
    for line in stderr.splitlines():
        if line.startswith(b'{"error"'):
            bodies.append(orjson.loads(line)["error"])
    return bodies


def jsonl(data: bytes) -> list[dict]:
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


def alive(pid: int) -> bool:
    """Is ``pid`` a live process? (A zombie waiting for its reaper is not.)"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param
