"""An interrupt cancels a run whose stages see a channel closed by the cancellation before they see it themselves.

A task that sends and takes batches without waiting (the buffers have room) reaches no checkpoint, and one waiting where
cancellation cannot reach it (a shielded scope) sees none: cancelled meanwhile, it found the channel its consumer closed
on being cancelled (``replay script`` over a large session ended with E_UNHANDLED BrokenResourceError, exit 1, in about
half the runs), or the end of the input its producer closed, which a sink took for the end of its input and published
part of it. Real processes and real signals: the exit code is 128 + the signal's number, nothing on stderr, no output.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import REPLAY, errors_of, stopped
from plugin_support import make_plugin
from test_cli_run_interrupts import HANG_S, plugin_env

SIGNALS = [(signal.SIGINT, 130), (signal.SIGTERM, 143)]
IDS = ["SIGINT", "SIGTERM"]

PLUGIN = '''
import sys

import anyio

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.stage import Option, Sink, Source
from replay.pipeline.io.staging import atomic_output


def ready():
    sys.stderr.write("READY\\n")
    sys.stderr.flush()


class SendsAfterAWait(Source):
    summary = "Sends a batch, waits a second where cancellation cannot reach it, then sends another."

    async def produce(self, out):
        await out.send(Batch.of([{"n": 1}]))
        with anyio.CancelScope(shield=True):
            ready()
            await anyio.sleep(1.0)  # (its consumer is cancelled meanwhile: it closes its channel)
            await out.send(Batch.of([{"n": 2}]))


class SendsThenWaits(Source):
    summary = "Sends a batch, then waits for an hour."

    async def produce(self, out):
        await out.send(Batch.of([{"n": 1}]))
        await anyio.sleep(3600)


class SlowWriter(Sink):
    summary = "Writes each batch to an output after a second's work cancellation cannot reach."
    options = {"path": Option(str, "", "the output")}

    async def consume(self, batches):
        with atomic_output(self.config["path"]) as handle:
            async for batch in batches:
                with anyio.CancelScope(shield=True):
                    ready()
                    await anyio.sleep(1.0)  # (its producer is cancelled meanwhile: it closes its channel)
                handle.write(b"batch\\n")
'''

STAGES = {"sends_late": "replay_upper_plugin:SendsAfterAWait", "sends_waits": "replay_upper_plugin:SendsThenWaits",
          "slow_writer": "replay_upper_plugin:SlowWriter"}


def started(tmp_path: Path, graph: str) -> subprocess.Popen[bytes]:
    """`replay run` of ``graph`` (a TOML config), once its plugin stage said it waits in a worker thread."""
    site = make_plugin(tmp_path / "site", STAGES, module=PLUGIN)
    config = tmp_path / "p.toml"
    config.write_text(graph)
    proc = subprocess.Popen([REPLAY, "run", str(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=plugin_env(site), cwd=tmp_path)
    assert proc.stderr is not None
    line = proc.stderr.readline()  # (a readiness wait: the stage says it before its second's wait)
    if line != b"READY\n":
        proc.kill()
        raise AssertionError(f"the plugin stage never got to its wait: {line + proc.stderr.read()!r}")
    return proc


@pytest.mark.parametrize("number, code", SIGNALS, ids=IDS)
def test_a_stage_sending_after_its_consumer_was_cancelled_ends_with_the_signal_s_code(tmp_path: Path, number: int,
                                                                                     code: int):
    out = tmp_path / "out.jsonl"
    proc = started(tmp_path, f'[stages.src]\ntype = "sends_late"\n\n[stages.write]\ntype = "write"\n'
                             f'inputs = ["src"]\npath = "{out}"\n')
    returncode, _, err = stopped(proc, number, hang_s=HANG_S)
    assert (returncode, err) == (code, b"")  # (not E_UNHANDLED BrokenResourceError, exit 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.toml", "site"]


@pytest.mark.parametrize("number, code", SIGNALS, ids=IDS)
def test_a_sink_whose_producer_was_cancelled_does_not_take_it_for_the_end_of_its_input(tmp_path: Path, number: int,
                                                                                      code: int):
    out = tmp_path / "out.txt"
    proc = started(tmp_path, f'[stages.src]\ntype = "sends_waits"\n\n[stages.sink]\ntype = "slow_writer"\n'
                             f'inputs = ["src"]\npath = "{out}"\n')
    returncode, _, err = stopped(proc, number, hang_s=HANG_S)
    assert (returncode, err) == (code, b"")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.toml", "site"]  # nothing published: it was cut


@pytest.fixture(scope="module")
def large_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ~100 MB session: 200 groups of one 500 kB text chunk and a finish."""
    path = tmp_path_factory.mktemp("large") / "session.jsonl"
    with path.open("w") as f:
        for turn in range(1, 201):
            text = {"type": "assistant/chunk", "turn": turn, "step": 0, "chunk": {"type": "text-delta", "text": "x" * 500_000}}
            finish = {"type": "assistant/chunk", "turn": turn, "step": 0, "chunk": {"type": "finish", "finishReason": "stop"}}
            f.write(json.dumps(text) + "\n" + json.dumps(finish) + "\n")
    return path


@pytest.mark.parametrize("number, code", SIGNALS, ids=IDS)
def test_replay_script_interrupted_over_a_large_session_ends_with_the_signal_s_code(tmp_path: Path, large_session: Path,
                                                                                   number: int, code: int):
    """The report's case (E_UNHANDLED in about half the runs before): a few runs, each interrupted while its stages
    work (the staged output exists, and then some)."""
    out = tmp_path / "o.json"
    for _ in range(3):
        proc = subprocess.Popen([REPLAY, "script", str(large_session), "--out", str(out)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        deadline = time.monotonic() + HANG_S
        while proc.poll() is None and not list(tmp_path.glob(".o.json.*")) and time.monotonic() < deadline:
            time.sleep(0.005)  # (a readiness wait: the write stage staged its output)
        time.sleep(0.2)  # (the stages at work: groups parsed and scripted)
        assert proc.poll() is None, "replay script ended before the signal: make the session larger"
        returncode, _, err = stopped(proc, number, hang_s=HANG_S)
        assert (returncode, errors_of(err)) == (code, []), err
        assert list(tmp_path.iterdir()) == []  # no output, no temp
