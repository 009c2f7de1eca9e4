"""A report holds a run's tool calls compactly (``toolcalls.CallPairing``'s columns): a run of ~100k calls (a long
agent session) is reported under 150 MiB, where a dict of Python objects per call (and a seq per tool event) took
189 MiB. The summary still lists every call (json does), so the state is O(calls), at some 150 bytes a call; the JSON
report encodes those a piece at a time (``render_json.run_pieces``), not the whole run's bytes at once."""

from __future__ import annotations

import gc
import os
import subprocess
import tracemalloc
from pathlib import Path

import pytest
from bench.journal_gen import write_one_run_journal
from bench.peak_rss import measured, peak_kib
from conftest import REPLAY

from replay.pipeline.report.model import RunTally

CALLS = 20_000
BYTES_A_CALL = 400  # (a dict a call, its timestamps as written, and a seq a tool event: ~1,000 bytes)


def _events(first: int, n: int) -> list[dict]:
    """``n`` calls from ``first`` on, each answered at once; every text a new object, as a decoded line gives it."""
    events = []
    for k in range(first, first + n):
        stamp = f"2026-01-01T00:{k // 60 % 60:02d}:{k % 60:02d}.000Z"
        events.append({"seq": 2 * k, "timestamp": stamp, "type": "tool_called", "runId": "r",
                       "payload": {"callId": f"call_{k:08d}", "toolName": "".join(["gr", "ep"])}})
        events.append({"seq": 2 * k + 1, "timestamp": stamp[:-1] + "Z", "type": "tool_completed", "runId": "r",
                       "payload": {"callId": f"call_{k:08d}", "output": {"exitCode": 0}}})
    return events


def test_a_runs_calls_are_held_in_a_few_hundred_bytes_each():
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tally = RunTally(run_id="r", timeline=False)
        for first in range(0, CALLS, 1000):  # (a batch at a time, as summarize feeds it; the events then go)
            tally.add_events(_events(first, 1000))
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    print(f"{held / CALLS:.0f} bytes a call")
    assert held / CALLS < BYTES_A_CALL, f"{held / CALLS:.0f} bytes a call"
    last = tally.summary()["toolCalls"]["calls"][-1]  # (the calls as they were: the summary lists them all)
    assert last == {"toolName": "grep", "status": "ok", "durationMs": 0, "seq": 2 * CALLS - 2, "startMs": last["startMs"],
                    "callId": f"call_{CALLS - 1:08d}"}


@pytest.fixture(scope="module")
def one_long_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    journal = tmp_path_factory.mktemp("long") / "one-run.jsonl"
    events, _ = write_one_run_journal(journal, 100 << 20)
    assert events > 300_000
    return journal


@pytest.mark.slow
# json: its calls encoded a piece at a time (197 MiB whole); junit, markdown: spooled so (286, 272 MiB whole); html:
# its calls and timeline spooled so, the bars chosen in one pass (375 MiB before), the timeline an index a call, not a
# dict (174 MiB with one), the run's calls read as columns, not lists, and the report stage holding no summary while it
# writes (153 MiB when it held the last: about 129 now); json: its errors encoded a piece at a time too (151 MiB when
# they were written whole after the calls, copied on their way: about 120 now, as text)
@pytest.mark.parametrize(("fmt", "mib"), [("text", 150), ("json", 135), ("junit", 150), ("markdown", 150),
                                          ("html", 150)])
def test_a_report_of_one_long_run_stays_under_150_mib(one_long_run: Path, fmt: str, mib: int, tmp_path: Path):
    report = tmp_path / "rss"
    with open(os.devnull, "wb") as sink:
        done = subprocess.run(measured([REPLAY, "report", "--format", fmt, str(one_long_run)], report), stdout=sink,
                              stderr=subprocess.PIPE, timeout=600)
    assert done.returncode == 0, done.stderr
    assert peak_kib(report) < mib * 1024, f"peak RSS {peak_kib(report) / 1024:.0f} MiB"
