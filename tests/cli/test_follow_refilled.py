"""`replay read --follow` of a journal truncated and written again past where the read had got to between two of its
looks (`> file` and a writer refilling it, copytruncate): the file is no longer shorter than what was read, but the
bytes before that place are not those read there, so it is read again from its start (a `read.truncated` warning),
not resumed mid-line (its first new lines lost, a fragment reported invalid), as `tail -f` resumes it. A real process."""

from __future__ import annotations

import gzip
import queue
import signal
import subprocess
import threading
from pathlib import Path

import orjson
import pytest
from conftest import REPLAY, jsonl


def line(k: int) -> bytes:
    return orjson.dumps({"seq": k, "timestamp": "2026-03-01T12:00:00.000Z", "type": "user_message", "runId": "r1",
                         "payload": {"i": k}}) + b"\n"


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_follow_reads_a_journal_refilled_past_its_offset_again_from_its_start(tmp_path: Path, gz: bool) -> None:
    pack = gzip.compress if gz else bytes
    journal = tmp_path / ("live.jsonl.gz" if gz else "live.jsonl")
    journal.write_bytes(pack(line(1)))
    proc = subprocess.Popen([REPLAY, "read", "--follow", str(journal)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    got: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: [got.put(out) for out in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    try:
        assert got.get(timeout=60) == line(1)
        refill = pack(line(10) + line(11) + line(12))
        assert len(refill) > len(pack(line(1)))  # (longer than what was read: no shorter file tells it)
        journal.write_bytes(refill)  # truncated and written again at once, well within one poll
        assert [got.get(timeout=30) for _ in range(3)] == [line(10), line(11), line(12)]
    finally:
        proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    [notice] = jsonl(proc.stderr.read())  # type: ignore[union-attr]
    assert (notice["event"], notice["code"], notice["source"]) == ("read.truncated", "E_INPUT_TRUNCATED", str(journal))
