"""Peak memory stays flat: `replay read` streams a ~200 MB journal in a child process under 150 MB RSS."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from bench.journal_gen import write_journal
from conftest import REPLAY

LIMIT_KIB = 150 * 1024
SIZE = 200 * 1024 * 1024


def peak_rss_kib(args: list[str], **popen) -> tuple[int, int]:
    """Run a child to the end; its exit status and its own peak RSS (wait4 reports that child alone)."""
    proc = subprocess.Popen(args, **popen)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss  # KiB on Linux


@pytest.fixture(scope="module")
def big_journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("memory") / "big.jsonl"
    events, size = write_journal(path, SIZE)  # written run by run, never held in memory
    assert size >= SIZE and events > 500_000
    yield path
    path.unlink()


@pytest.mark.slow
def test_read_streams_a_big_journal_in_flat_memory(big_journal: Path):
    with open(os.devnull, "wb") as sink:
        code, peak = peak_rss_kib([REPLAY, "read", str(big_journal)], stdout=sink, stderr=subprocess.PIPE)
    assert code == 0
    assert peak < LIMIT_KIB, f"peak RSS {peak / 1024:.0f} MiB"


@pytest.mark.slow
def test_read_from_a_pipe_streams_in_flat_memory(big_journal: Path):
    cat = subprocess.Popen(["cat", str(big_journal)], stdout=subprocess.PIPE)
    try:
        with open(os.devnull, "wb") as sink:
            code, peak = peak_rss_kib([REPLAY, "read", "-"], stdin=cat.stdout, stdout=sink)
    finally:
        cat.stdout.close()
        cat.wait()
    assert code == 0
    assert peak < LIMIT_KIB, f"peak RSS {peak / 1024:.0f} MiB"
