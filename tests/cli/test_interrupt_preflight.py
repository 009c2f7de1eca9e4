"""Ctrl-C, SIGTERM and SIGHUP end a graph's preflight at once, and `replay script` does not open a FIFO beside a session.

A preflight runs in the event loop's thread before any task: the first interrupt only asked for a cancellation that
nothing there could see, so a preflight blocked opening a FIFO no one writes (the sidecar found beside a session) went
on until a second interrupt, and no last resort ended it (no stage was running). Real processes and real signals.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import REPLAY, errors_of, stopped
from plugin_support import make_plugin
from test_cli_run_interrupts import HANG_S, plugin_env

SESSION = b'{"type":"assistant/chunk","turn":1,"step":0,"chunk":{"type":"finish","finishReason":"stop"}}\n'

PLUGIN = '''
import sys

from replay.pipeline.engine.stage import Option, Transform


class OpensInPreflight(Transform):
    summary = "Opens a FIFO in its preflight (blocks: no one writes it)."
    options = {"fifo": Option(str, "", "the FIFO")}

    def preflight(self, inputs):
        sys.stderr.write("READY\\n")
        sys.stderr.flush()
        with open(self.config["fifo"], "rb") as fifo:
            fifo.read()

    def __call__(self, batch):
        return batch
'''


@pytest.mark.parametrize("number, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)],
                         ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_an_interrupt_ends_a_preflight_blocked_opening_a_fifo_at_once(tmp_path: Path, number: int, code: int):
    fifo = tmp_path / "never-written"
    os.mkfifo(fifo)
    session = tmp_path / "s.jsonl"
    session.write_bytes(SESSION)
    site = make_plugin(tmp_path / "site", {"opens": "replay_upper_plugin:OpensInPreflight"}, module=PLUGIN)
    config = tmp_path / "p.toml"
    config.write_text(f'chain = ["parse", {{ type = "opens", fifo = "{fifo}" }}]\n')
    proc = subprocess.Popen([REPLAY, "run", str(config), str(session)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=plugin_env(site), cwd=tmp_path)
    assert proc.stderr is not None
    line = proc.stderr.readline()  # (a readiness wait: said just before the open)
    if line != b"READY\n":
        proc.kill()
        raise AssertionError(f"the preflight never began: {line + proc.stderr.read()!r}")
    returncode, out, err = stopped(proc, number, hang_s=HANG_S)  # (one signal: it stayed blocked till a second one)
    assert (returncode, out, err) == (code, b"", b"")


def test_a_fifo_beside_the_session_is_refused_not_opened(tmp_path: Path):
    session = tmp_path / "session.jsonl"
    session.write_bytes(SESSION)
    os.mkfifo(tmp_path / "replay.override.json")
    try:
        done = subprocess.run([REPLAY, "script", str(session)], capture_output=True, timeout=HANG_S, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        raise AssertionError("replay script waited for a writer of the FIFO beside the session") from None
    assert (done.returncode, done.stdout) == (2, b"")
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_INPUT_NOT_FILE_OR_DIR" and error["received"] == "named pipe"
    assert error["path"] == str(tmp_path / "replay.override.json")
    assert "--override" in error["howToFix"] and "--no-override" in error["howToFix"]


def test_a_fifo_named_with_override_is_read(tmp_path: Path):
    """Named, it is meant: read as a file is (a process substitution's pipe works)."""
    session = tmp_path / "session.jsonl"
    session.write_bytes(SESSION)
    fifo = tmp_path / "o.fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen([REPLAY, "script", str(session), "--override", str(fifo)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp_path)
    with open(fifo, "wb") as writer:  # (waits for replay to open it)
        writer.write(b'{"overrides": []}')
    out, err = proc.communicate(timeout=HANG_S)
    assert (proc.returncode, err) == (0, b"")
    assert b'"override":' in out.splitlines()[0]
