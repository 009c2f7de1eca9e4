"""Peak memory stays flat: `replay read` streams a ~200 MB journal in a child process under 150 MB RSS."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from bench.journal_gen import write_journal
from bench.peak_rss import measured, peak_kib
from conftest import REPLAY

LIMIT_KIB = 150 * 1024
SIZE = 200 * 1024 * 1024


@pytest.fixture(scope="module")
def big_journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("memory") / "big.jsonl"
    events, size = write_journal(path, SIZE)  # written run by run, never held in memory
    assert size >= SIZE and events > 500_000
    yield path
    path.unlink()


@pytest.mark.slow
def test_read_streams_a_big_journal_in_flat_memory(big_journal: Path, tmp_path: Path):
    report = tmp_path / "rss"
    with open(os.devnull, "wb") as sink:
        done = subprocess.run(measured([REPLAY, "read", str(big_journal)], report), stdout=sink,
                              stderr=subprocess.PIPE, timeout=600)
    assert done.returncode == 0, done.stderr
    assert peak_kib(report) < LIMIT_KIB, f"peak RSS {peak_kib(report) / 1024:.0f} MiB"


@pytest.mark.slow
def test_read_from_a_pipe_streams_in_flat_memory(big_journal: Path, tmp_path: Path):
    report = tmp_path / "rss"
    cat = subprocess.Popen(["cat", str(big_journal)], stdout=subprocess.PIPE)
    try:
        with open(os.devnull, "wb") as sink:
            done = subprocess.run(measured([REPLAY, "read", "-"], report), stdin=cat.stdout, stdout=sink, timeout=600)
    finally:
        cat.stdout.close()
        cat.wait()
    assert done.returncode == 0
    assert peak_kib(report) < LIMIT_KIB, f"peak RSS {peak_kib(report) / 1024:.0f} MiB"


def test_the_measure_sees_a_command_that_grows(tmp_path: Path):
    """The launcher reports the command's own peak, not the (large) test process's."""
    report = tmp_path / "rss"
    grow = "import sys; block = bytearray(int(sys.argv[1]) << 20); block[::4096] = b'x' * len(block[::4096])"
    subprocess.run(measured(["python3", "-c", grow, "80"], report), check=True, timeout=120)
    big = peak_kib(report)
    subprocess.run(measured(["true"], report), check=True, timeout=120)
    assert big > 80 * 1024 > peak_kib(report)
