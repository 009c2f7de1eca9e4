"""When stdout's reader goes first (`| head -1`, `| true`), a command exits with its verdict so far: 1 when an error was
reported before the pipe closed, else 0. `replay validate bad.jsonl | head` exited 0, and a CI step under
`set -o pipefail` passed on an invalid journal (found by a tester)."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path

import pytest
from conftest import REPLAY

BAD = b"this line is a log message that leaked into the journal\n"


def _journal(path: Path, events: int, bad: bool) -> Path:
    line = (b'{"seq":%d,"timestamp":"2026-03-01T12:00:00.000Z","type":"user_message","runId":"r","payload":{"text":"'
            + b"x" * 200 + b'"}}\n')
    path.write_bytes((BAD if bad else b"") + b"".join(line % k for k in range(1, events + 1)))
    return path


def _closed_from_the_start(*args: str) -> tuple[int, bytes]:
    """`replay ARGS` with a stdout pipe nobody ever reads: its exit code and stderr."""
    proc = subprocess.Popen([REPLAY, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


def _closed_after_an_error(*args: str) -> tuple[int, list[bytes]]:
    """`replay ARGS` streaming into a pipe nobody reads (it fills and blocks), closed once an error is on stderr."""
    proc = subprocess.Popen([REPLAY, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    lines: queue.Queue[bytes] = queue.Queue()
    stderr = proc.stderr

    def pump() -> None:
        for line in stderr:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    seen = []
    while not any(b'"error"' in line for line in seen):
        seen.append(lines.get(timeout=60))
    proc.stdout.close()
    return proc.wait(timeout=120), seen


@pytest.mark.parametrize("command", ["read", "heal"])
def test_a_stream_whose_reader_goes_after_an_error_exits_1(tmp_path: Path, command: str):
    journal = _journal(tmp_path / "bad.jsonl", 40_000, bad=True)  # (~9 MB: more than a pipe holds)
    code, seen = _closed_after_an_error(command, str(journal))
    assert code == 1
    assert json.loads(seen[-1])["error"]["code"] == "E_JSONL_LINE_INVALID"


@pytest.mark.parametrize("command", ["validate", "report"])
def test_a_verdict_printed_to_a_gone_reader_still_exits_1(tmp_path: Path, command: str):
    """validate's summary line and report's text come at the end, after every error of the input was counted."""
    code, _ = _closed_from_the_start(command, str(_journal(tmp_path / "bad.jsonl", 3, bad=True)))
    assert code == 1
    clean, err = _closed_from_the_start(command, str(_journal(tmp_path / "good.jsonl", 3, bad=False)))
    assert clean == 0 and b'"error"' not in err


@pytest.mark.parametrize("command", ["validate", "report"])
def test_several_inputs_count_the_errors_before_the_reader_went(tmp_path: Path, command: str):
    """`replay validate bad.jsonl good.jsonl | head -1`: the first line says valid:false; the command exits 1. (report
    over several inputs renders once they are all summed up.)"""
    bad, good = _journal(tmp_path / "bad.jsonl", 3, bad=True), _journal(tmp_path / "good.jsonl", 3, bad=False)
    assert _closed_from_the_start(command, str(bad), str(good))[0] == 1
    assert _closed_from_the_start(command, str(good), str(good))[0] == 0
