"""An interrupt that comes once `heal --in DIR --out NEW` has renamed its folder into place: the command is done. It
exited 130 with the folder whole but only part of the stdout lines that name its files; now every line comes and the
exit code is the run's. A second interrupt still ends a listing that does not go on (a reader that stopped reading).

Real processes and real signals, no sleep to guess a moment: stdout is a pipe nobody reads until the signal is sent, so
the listing (more than a pipe holds) cannot end before it, and the folder appearing says the rename is done."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import EXAMPLES, REPLAY
from test_interrupted_folder_outputs import LIMIT_S, finish, wait_for

INPUTS = 800  # ~200 bytes of listing each: more than a pipe's 64 KiB, so the listing waits for its reader


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("published-in")
    data = (EXAMPLES / "journals" / "broken.jsonl").read_bytes()
    for i in range(INPUTS):
        (folder / f"journal-{i:04d}.jsonl").write_bytes(data)
    return folder


def start(inputs: Path, out: Path, unbuffered: bool = True) -> subprocess.Popen[bytes]:
    # (Ctrl-C at its default: a command started in the background by a shell would have it ignored)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"} | ({"PYTHONUNBUFFERED": "1"} if unbuffered else {})
    return subprocess.Popen([REPLAY, "heal", "--in", str(inputs), "--out", str(out), "--workers", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


@pytest.mark.parametrize(("number", "unbuffered"), [(signal.SIGINT, False), (signal.SIGINT, True), (signal.SIGTERM, True)],
                         ids=["ctrl-c", "ctrl-c-python-u", "sigterm-python-u"])
def test_an_interrupt_once_the_folder_is_published_lets_the_listing_finish(inputs: Path, tmp_path: Path,
                                                                           number: int, unbuffered: bool) -> None:
    """Under ``python -u`` (PYTHONUNBUFFERED=1) stdout is unbuffered: a write into the full pipe that the held interrupt
    cut short lost the rest of the listing, exit 0 (64 KiB of 150)."""
    out = tmp_path / "healed"
    proc = start(inputs, out, unbuffered)
    wait_for(proc, out.is_dir, "the healed folder in place")
    os.kill(proc.pid, number)
    code, stdout, stderr = finish(proc)
    assert code == 0, stderr
    lines = [json.loads(line) for line in stdout.splitlines()]
    assert len(lines) == INPUTS and len(stdout) > 1 << 16
    assert all(Path(line["healed"]).is_file() and Path(line["log"]).is_file() for line in lines)
    assert (out / ".replay-manifest.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["healed"]  # (no partial folder beside it)


def test_interrupts_again_end_a_listing_nobody_reads(inputs: Path, tmp_path: Path) -> None:
    out = tmp_path / "healed"
    proc = start(inputs, out)
    wait_for(proc, out.is_dir, "the healed folder in place")
    deadline = time.monotonic() + LIMIT_S
    while proc.poll() is None and time.monotonic() < deadline:  # (the first is dropped; the next ends the write)
        os.kill(proc.pid, signal.SIGINT)
        time.sleep(0.2)
    code, _stdout, stderr = finish(proc)
    assert code == 130, stderr
    assert (out / ".replay-manifest.json").is_file()
