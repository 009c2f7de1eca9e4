"""Ctrl-C, SIGTERM and SIGHUP stop `replay run` even when a plugin stage is stuck where cancellation cannot reach it.

Real processes: the installed `replay` runs a pipeline whose plugin stage blocks in a worker thread (or in the event
loop's own thread), the test sends a real signal, and the process must end with 128 + the signal's number, one
E_STAGE_NOT_STOPPED line naming the stage, and no output file or temp left behind. The test's timeouts bound a hang;
nothing here asserts how fast replay is.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import EXAMPLES, REPLAY, errors_of, stopped
from plugin_support import make_plugin

from replay.pipeline.engine.errors import CATALOGUE

TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"
HANG_S = 15  # the test's bound on a process that should have ended: a hang, not a speed measure

STUCK = '''
import sys
import time

import anyio

from replay.pipeline.engine.stage import AsyncTransform, Option, Sink, Transform
from replay.pipeline.io.staging import atomic_output


def ready():
    sys.stderr.write("STUCK\\n")
    sys.stderr.flush()


def sleep():
    ready()  # (in the worker thread: once this is said, cancellation can no longer keep the thread from blocking)
    time.sleep(3600)


class SleepsInThread(AsyncTransform):
    summary = "Hands each batch to a worker thread that sleeps for an hour (cancellation cannot reach it)."

    async def process(self, batches, out):
        async for batch in batches:
            await anyio.to_thread.run_sync(sleep)
            await out.send(batch)


class ReadsInThread(AsyncTransform):
    summary = "Reads a FIFO nobody writes, in a worker thread: a blocking read."
    options = {"fifo": Option(str, "", "the FIFO")}

    async def process(self, batches, out):
        async for batch in batches:
            def read():
                ready()
                with open(self.config["fifo"], "rb") as fifo:  # (blocks in open: no writer ever comes)
                    return fifo.read()
            await anyio.to_thread.run_sync(read)
            await out.send(batch)


class SleepsInLoop(Transform):
    summary = "Sleeps for an hour in the event loop's own thread."

    def __call__(self, batch):
        ready()
        time.sleep(3600)
        return batch


class WritesThenSleeps(Sink):
    summary = "Writes an output through atomic_output, then blocks in a worker thread before it is complete."
    options = {"path": Option(str, "", "the output")}

    async def consume(self, batches):
        with atomic_output(self.config["path"]) as handle:
            async for batch in batches:
                handle.write(b"partial\\n")
                handle.flush()
                await anyio.to_thread.run_sync(sleep)
'''

STAGES = {"stuck": "replay_upper_plugin:SleepsInThread", "reads": "replay_upper_plugin:ReadsInThread",
          "loop": "replay_upper_plugin:SleepsInLoop", "writer": "replay_upper_plugin:WritesThenSleeps"}


def plugin_env(site: Path) -> dict[str, str]:
    """The environment with the plugin's folder first on PYTHONPATH (and what it held before: the sources under test)."""
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def start(tmp_path: Path, chain: str) -> subprocess.Popen[bytes]:
    """`replay run` of a pipeline ``chain`` over two runs, started once its stuck stage said it is about to block."""
    site = make_plugin(tmp_path / "site", STAGES, module=STUCK)
    config = tmp_path / "p.toml"
    config.write_text(f"chain = {chain}\n")
    proc = subprocess.Popen([REPLAY, "run", str(config), str(TWO_RUNS)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=plugin_env(site), cwd=tmp_path)
    assert proc.stderr is not None
    line = proc.stderr.readline()  # (a readiness wait: the stage prints it where nothing can stop it blocking)
    if line != b"STUCK\n":
        proc.kill()
        raise AssertionError(f"the stuck stage never started: {line + proc.stderr.read()!r}")
    return proc




@pytest.mark.parametrize("number, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)],
                         ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_stage_stuck_in_a_thread_is_named_and_replay_exits_with_the_signal_s_code(tmp_path: Path, number: int,
                                                                                    code: int):
    proc = start(tmp_path, '["stuck"]')
    returncode, _, err = stopped(proc, number, hang_s=HANG_S)
    assert returncode == code, err
    assert b"Traceback" not in err
    [error] = errors_of(err)
    assert error["code"] == "E_STAGE_NOT_STOPPED" and error["stage"] == "stuck"
    assert signal.Signals(number).name in error["message"]
    assert error["howToFix"] == CATALOGUE["E_STAGE_NOT_STOPPED"][1]  # (a plugin's stage: its blocking call to fix)
    assert all(line.startswith(b'{"error"') for line in err.splitlines())  # nothing else on stderr


def test_a_stage_stuck_in_a_blocking_read_is_named(tmp_path: Path):
    fifo = tmp_path / "never-written"
    os.mkfifo(fifo)
    proc = start(tmp_path, f'["parse", {{ type = "reads", fifo = "{fifo}" }}]')
    returncode, _, err = stopped(proc, signal.SIGTERM, hang_s=HANG_S)
    assert returncode == 143, err
    assert [(e["code"], e["stage"]) for e in errors_of(err)] == [("E_STAGE_NOT_STOPPED", "reads")]


def test_a_stage_blocking_the_event_loop_is_the_one_named(tmp_path: Path):
    """The other stages never got to see the cancellation: only the one holding the loop's thread is named."""
    proc = start(tmp_path, '["parse", "loop", "dedupe"]')
    returncode, _, err = stopped(proc, signal.SIGTERM, hang_s=HANG_S)
    assert returncode == 143, err
    [error] = errors_of(err)
    assert error["code"] == "E_STAGE_NOT_STOPPED" and error["stage"] == "loop" and "stages" not in error


def test_a_second_signal_ends_the_grace(tmp_path: Path):
    proc = start(tmp_path, '["stuck"]')
    returncode, _, err = stopped(proc, signal.SIGINT, times=2, hang_s=HANG_S)
    assert returncode == 130, err
    [error] = errors_of(err)
    assert error["code"] == "E_STAGE_NOT_STOPPED" and error["stage"] == "stuck"


@pytest.mark.parametrize("existing", [False, True], ids=["new-file", "existing-file"])
def test_a_stuck_writer_leaves_no_partial_output_and_no_temp(tmp_path: Path, existing: bool):
    """Outputs appear whole or not at all, also when the process is ended hard: the staged temp file goes first."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "result.jsonl"
    if existing:
        target.write_bytes(b"previous\n")
    proc = start(tmp_path, f'["parse", {{ type = "writer", path = "{target}" }}]')
    assert any(name.endswith(".replay.tmp") for name in os.listdir(out_dir))  # staged, not yet published
    returncode, _, err = stopped(proc, signal.SIGTERM, hang_s=HANG_S)
    assert returncode == 143, err
    assert [(e["code"], e["stage"]) for e in errors_of(err)] == [("E_STAGE_NOT_STOPPED", "writer")]
    assert os.listdir(out_dir) == (["result.jsonl"] if existing else [])
    if existing:
        assert target.read_bytes() == b"previous\n"  # untouched



def test_ctrl_c_while_reading_a_terminal_ends_replay_at_once(tmp_path: Path):
    """`replay read -` on a terminal waits for it to be readable (it read it in a worker thread, left blocked in read()
    when cancelled: the process waited for that thread until the user pressed Enter, then for the last resort):
    Ctrl-C ends it as on any input, exit 130 and nothing on stderr."""
    import pty

    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen([REPLAY, "read", "-"], stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.write(controller, TWO_RUNS.read_bytes().splitlines(keepends=True)[1])
        assert proc.stdout is not None and proc.stdout.readline().startswith(b"{")  # (reading: the line went through)
        time.sleep(0.5)  # (a readiness wait: for the next read to begin)
        returncode, _, err = stopped(proc, signal.SIGINT, hang_s=HANG_S)
    finally:
        os.close(controller)
        os.close(terminal)
    assert (returncode, err) == (130, b"")  # (the last resort would have named the read stage: none was stuck)
