"""`replay read --follow x | head -1`: once stdout's reader has gone, --follow ends while it waits on a quiet file,
quietly and with exit 0 as a read whose pipe closed ends (`tail -f x | head -1` ends at once), not at the file's next
write, which for a finished journal never comes. A real process; its stdout's reader is this test."""

from __future__ import annotations

import gzip
import subprocess
from pathlib import Path

import orjson
import pytest
from conftest import REPLAY

LINES = [orjson.dumps({"seq": k, "timestamp": f"2026-03-01T12:00:0{k}Z", "type": t, "runId": "r1", "payload": {}})
         + b"\n" for k, t in ((1, "run_started"), (2, "run_failed"))]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_follow_ends_quietly_once_stdouts_reader_has_gone(tmp_path: Path, gz: bool) -> None:
    journal = tmp_path / ("done.jsonl.gz" if gz else "done.jsonl")
    journal.write_bytes((gzip.compress if gz else bytes)(b"".join(LINES)))  # finished: nothing more is ever written
    proc = subprocess.Popen([REPLAY, "read", "--follow", str(journal)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == LINES[0]
        proc.stdout.close()  # `| head -1` has its line and goes
        code = proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stderr is not None
    assert (code, proc.stderr.read()) == (0, b"")
