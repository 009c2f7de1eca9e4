"""A Ctrl-C that replay was started ignoring (a background job of a shell without job control: `replay ... &` in a
script, which the terminal's Ctrl-C must not stop) stays ignored, on every engine. With `--engine dask` it did not:
the handler that quiets distributed's loggers was put over the ignored signal, and called Python's own handler, so a
Ctrl-C raised KeyboardInterrupt and ended the run (exit 130). A real process, a real signal."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import REPLAY
from scale_support import make_journals

LIMIT_S = 180.0


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_a_heal_started_with_ctrl_c_ignored_is_not_stopped_by_it(tmp_path: Path, engine: str) -> None:
    if engine == "dask":
        pytest.importorskip("distributed")
    (tmp_path / "in").mkdir()
    journals = make_journals(tmp_path / "in", count=40, size=300_000)
    out = tmp_path / "out"
    proc = subprocess.Popen([REPLAY, "heal", "--in", str(journals), "--out", str(out), "--engine", engine, "--workers", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))  # (as `cmd &` in `sh -c`)
    partial = tmp_path / ".out.partial.replay.tmp"
    deadline = time.monotonic() + LIMIT_S
    while not (partial.is_dir() and any(partial.rglob("*.healed.jsonl"))):  # (it is healing: the handlers are in place)
        assert proc.poll() is None, f"it ended before it could be interrupted: {proc.communicate()[1][-2000:]!r}"
        assert time.monotonic() < deadline, "nothing healed yet"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    assert proc.returncode == 1, err[-2000:]  # healed to the end (every third journal has a bad line: exit 1)
    assert len(list(out.rglob("*.healed.jsonl"))) == 40 and not partial.exists()
