"""`replay read --follow` of a journal that is removed meanwhile: it goes on following the file it opened, as `tail -f`
does (a writer that holds it open may still add to it, and what it adds comes out), and says once, on stderr, that the
file was removed and how --follow ends (it waited on in silence, as if the file were merely quiet). A real process."""

from __future__ import annotations

import gzip
import queue
import signal
import subprocess
import threading
from pathlib import Path
from typing import IO

import orjson
import pytest
from conftest import REPLAY, jsonl

LINES = [orjson.dumps({"seq": k, "timestamp": f"2026-03-01T12:00:0{k}Z", "type": "user_message", "runId": "r1",
                       "payload": {"text": f"line {k}"}}) + b"\n" for k in (1, 2)]


def pumped(stream: IO[bytes]) -> queue.Queue[bytes | None]:
    """The lines of ``stream`` as they come (None at its end)."""
    lines: queue.Queue[bytes | None] = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_follow_of_a_removed_journal_says_so_once_and_reads_what_its_writer_adds(tmp_path: Path, gz: bool) -> None:
    pack = gzip.compress if gz else bytes
    journal = tmp_path / ("live.jsonl.gz" if gz else "live.jsonl")
    journal.write_bytes(pack(LINES[0]))
    with open(journal, "ab") as writer:  # the agent writing the journal holds it open
        proc = subprocess.Popen([REPLAY, "read", "--follow", str(journal)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, err = pumped(proc.stdout), pumped(proc.stderr)  # type: ignore[arg-type]
            assert out.get(timeout=60) == LINES[0]  # (it has opened the file)
            journal.unlink()
            [notice] = jsonl(err.get(timeout=60) or b"")  # said while it waits, not only once it ends
            assert (notice["event"], notice["level"], notice["code"], notice["source"]) == (
                "read.removed", "warning", "E_INPUT_REMOVED", str(journal))
            assert "was removed" in notice["message"] and "Ctrl-C" in notice["message"]
            writer.write(pack(LINES[1]))
            writer.flush()
            assert out.get(timeout=60) == LINES[1]  # the file it opened is still followed
        finally:
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=60)
    assert code == 130
    assert out.get(timeout=60) is None and err.get(timeout=60) is None  # nothing more: the notice came once
