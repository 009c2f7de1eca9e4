"""Peak memory stays flat: `replay read` streams a ~200 MB journal in a child process under 150 MB RSS."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import orjson
import pytest
from bench.journal_gen import write_journal
from bench.peak_rss import measured, peak_kib
from conftest import REPLAY

from replay.pipeline.engine.spec import bind, load_spec

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


THE_END = (b'{"seq":1,"timestamp":"2026-01-01T00:00:00.000Z","type":"tool_called","runId":"run_x","payload":{"callId":'
           b'"the_end","toolName":"bash","args":{}}}\n{"seq":2,"timestamp":"2026-01-01T00:00:01.000Z","type":'
           b'"tool_completed","runId":"run_x","payload":{"callId":"the_end","output":{}}}\n')


@pytest.mark.slow
def test_records_a_walk_of_stdin_held_go_on_to_the_write_after_it_in_flat_memory(tmp_path: Path):
    """A walk of stdin holds every record until its `at` step shows (in a spool: a temporary file past a few MiB); when
    the step shows at the end, they go on, a piece at a time, to the write fused after the walk, not all of them
    gathered in memory first. (Only a stage that writes whatever reaches it may follow a walk: its lines are no
    events.)"""
    journal = tmp_path / "stream.jsonl"
    write_journal(journal, 48 << 20)
    with open(journal, "ab") as out:
        out.write(THE_END)
    config = tmp_path / "walk.json"  # `replay walk`'s graph, with `at`
    config.write_bytes(orjson.dumps(bind(load_spec("walk"), set={"walk.at": "the_end"})))
    report, walked = tmp_path / "rss", tmp_path / "walked.txt"
    with open(journal, "rb") as cat, subprocess.Popen(["cat"], stdin=cat, stdout=subprocess.PIPE) as pipe, \
            open(walked, "wb") as sink:
        done = subprocess.run(measured([REPLAY, "run", str(config)], report), stdin=pipe.stdout, stdout=sink,
                              stderr=subprocess.PIPE, timeout=600)
        pipe.stdout.close()
    assert done.returncode == 0, done.stderr
    with open(walked, "rb") as text, open(journal, "rb") as records:
        assert sum(1 for _ in text) == sum(1 for _ in records)  # every record, the held ones first
    assert walked.read_bytes()[-200:].split(b"\n")[-2].startswith(b"tool_completed")
    assert peak_kib(report) < LIMIT_KIB, f"peak RSS {peak_kib(report) / 1024:.0f} MiB"


@pytest.mark.slow
def test_an_html_report_is_written_a_run_at_a_time(tmp_path: Path):
    """An html report of a 100 MB journal (8,901 runs, a 126 MB page) took 420 MiB: the page was built whole in memory
    (the markdown and junit ones too: see test_report_render's pieces test). Now each run's piece is written as it is
    made: a report of 4 times the runs (a page 3 times the size, ~50 MB more) takes no more memory, give or take what
    the summaries' spool holds in memory (8 MiB)."""
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    write_journal(small, 10 << 20)
    write_journal(large, 40 << 20)
    peaks = []
    for journal in (small, large):
        measure, page = tmp_path / f"rss-{journal.stem}", tmp_path / f"report-{journal.stem}.html"
        done = subprocess.run(measured([REPLAY, "report", "--out", str(page), str(journal)], measure),
                              stderr=subprocess.PIPE, timeout=600)
        assert done.returncode == 0, done.stderr
        peaks.append(peak_kib(measure))
    grown = (peaks[1] - peaks[0]) / 1024
    assert grown < 24, f"peak RSS {peaks[0] / 1024:.0f} MiB for a 10 MB journal, {peaks[1] / 1024:.0f} MiB for 40 MB"


def _fat_run(path: Path, lines: int) -> None:
    """One run of ``lines`` events of 1 MB each (an agent that logs whole files in its messages)."""
    text = "y" * 1_000_000
    with open(path, "wb") as out:
        out.write(orjson.dumps({"seq": 1, "timestamp": "2026-01-01T00:00:00Z", "type": "run_started", "runId": "r1",
                                "payload": {}}) + b"\n")
        for seq in range(2, lines + 2):
            out.write(orjson.dumps({"seq": seq, "timestamp": "2026-01-01T00:00:01Z", "type": "assistant_message",
                                    "runId": "r1", "payload": {"text": text}}) + b"\n")
        out.write(orjson.dumps({"seq": lines + 2, "timestamp": "2026-01-01T00:00:02Z", "type": "run_completed",
                                "runId": "r1", "payload": {}}) + b"\n")


def _fat_run_peaks(tmp_path: Path, command: str, untimed: bool = False) -> tuple[float, float]:
    """Peak RSS (MiB) of `replay COMMAND` over a run of 10 lines of 1 MB, and over one of 100 (``untimed``: with no
    timestamp but on its last event)."""
    peaks = []
    for lines in (10, 100):
        journal, measure = tmp_path / f"fat-{lines}.jsonl", tmp_path / f"rss-{lines}"
        _fat_run(journal, lines)
        if untimed:
            journal.write_bytes(journal.read_bytes().replace(b'"timestamp":"2026-01-01T00:00:01Z",', b"").replace(
                b'"timestamp":"2026-01-01T00:00:00Z",', b""))
        with open(os.devnull, "wb") as sink:
            done = subprocess.run(measured([REPLAY, command, str(journal)], measure), stdout=sink,
                                  stderr=subprocess.PIPE, timeout=600)
        assert done.returncode == 0, done.stderr
        peaks.append(peak_kib(measure) / 1024)
        journal.unlink()
    return peaks[0], peaks[1]


@pytest.mark.slow
@pytest.mark.parametrize("command", ["heal", "validate"])
def test_a_run_of_long_lines_is_not_held_whole(command: str, tmp_path: Path):
    """The fast lane holds a run to its end to judge it, up to 4,096 lines: a run of 300 lines of 1 MB each was held
    whole (heal peaked at 617 MiB, validate at 324 MiB, for a 300 MB run: a run larger than memory could not be
    healed). A run whose lines come to more than 4 MiB goes the slow way too: ten times the lines, the same memory."""
    small, large = _fat_run_peaks(tmp_path, command)
    assert large - small < 32, f"peak RSS {small:.0f} MiB for a run of 10 MB, {large:.0f} MiB for 100 MB"


@pytest.mark.slow
def test_a_long_wait_for_a_runs_first_time_is_not_held_whole(tmp_path: Path):
    """fix_timestamp holds a run's first events with no time until its first time comes: 150 events of 1 MB with no
    timestamp were held whole (486 MiB). The wait ends past 8 MiB: ten times the events, the same memory."""
    small, large = _fat_run_peaks(tmp_path, "heal", untimed=True)
    assert large - small < 32, f"peak RSS {small:.0f} MiB for 10 MB, {large:.0f} MiB for 100 MB"
