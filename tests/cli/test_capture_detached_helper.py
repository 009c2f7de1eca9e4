"""A runner that exits but leaves a helper holding its stdout or stderr open: capture ends at the runner's exit."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from conftest import REPLAY, alive, jsonl

from replay.pipeline.io import processes
from replay.stages.discover import DiscoverRunner
from replay.stages.spawn import SpawnRunner

LATE_S = 8  # when the detached helper writes on the pipe it holds (it holds it 30 s): after the run ended
pytestmark = pytest.mark.skipif(shutil.which("setsid") is None, reason="needs setsid (util-linux)")


def helper_runner(tmp_path: Path, stream: str) -> Path:
    """A shell runner that answers and exits, leaving two helpers behind: `sleep 30` in its process group (replay kills
    it when the runner exits), and in a session of its own (setsid) a shell that holds the runner's ``stream`` open for
    30 s and writes `late` on it after LATE_S. Their pids go to `grouped` and `detached`, the runner's to `runner`."""
    fd, other = (1, 2) if stream == "stdout" else (2, 1)
    script = tmp_path / "runner.sh"
    script.write_text(f"""#!/bin/sh
cat > /dev/null
sleep 30 &
echo $! > '{tmp_path}/grouped'
setsid sh -c 'echo $$ > "$0"; sleep {LATE_S}; echo late >&{fd}; exec sleep {30 - LATE_S}' '{tmp_path}/detached' {other}>/dev/null &
while [ ! -s '{tmp_path}/detached' ]; do sleep 0.05; done
echo '{{"status": "ok", "response": "done", "events": []}}'
echo $$ > '{tmp_path}/runner'
""")
    script.chmod(0o755)
    return script


def pid_in(path: Path) -> int | None:
    text = path.read_text().strip() if path.exists() else ""
    return int(text) if text else None


@contextlib.contextmanager
def helpers_ended(tmp_path: Path) -> Iterator[None]:
    """Kill what the runner left (the detached helper's whole group) so no `sleep` outlives the test."""
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError, TypeError):
            os.killpg(pid_in(tmp_path / "detached"), signal.SIGKILL)  # type: ignore[arg-type]
        with contextlib.suppress(ProcessLookupError, PermissionError, TypeError):
            os.kill(pid_in(tmp_path / "grouped"), signal.SIGKILL)  # type: ignore[arg-type]


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_capture_ends_at_the_runners_exit_not_when_a_detached_helper_lets_go_of_its_pipe(tmp_path, stream):
    """The helper that left the runner's group holds the pipe 30 s: capture reads what is there, stops after its short
    grace, records the run as the runner ended it (ok, its duration to its exit: before the helper's write, which is
    not read), and leaves the helper alone; the helper in the runner's group is killed, as always."""
    runner = helper_runner(tmp_path, stream)
    with helpers_ended(tmp_path):
        done = subprocess.run([REPLAY, "capture", "--runner", str(runner), "--out", str(tmp_path / "out"), "p"],
                              stdin=subprocess.DEVNULL, capture_output=True, cwd=tmp_path,
                              env={**os.environ, "REPLAY_RUNNER": ""}, timeout=25)  # (not 30 s: the helper's life)
        detached, grouped = pid_in(tmp_path / "detached"), pid_in(tmp_path / "grouped")
        assert detached is not None and grouped is not None
        assert alive(detached) and not alive(grouped)
    assert done.returncode == 0, done.stderr
    [summary] = jsonl(done.stdout)
    assert summary["status"] == "ok" and "error" not in summary
    raw = json.loads((tmp_path / summary["files"]["raw"]).read_text())
    assert json.loads(raw["stdout"])["response"] == "done" and "late" not in raw[stream]
    assert raw["process"]["exitCode"] == 0 and raw["error"] is None
    assert raw["process"]["durationMs"] < LATE_S * 1000  # the run ended before the helper wrote (an order, not a speed)


@pytest.mark.anyio
async def test_ctrl_c_once_the_runner_exited_keeps_its_run_ok(tmp_path, monkeypatch, ctrl_c_caught):
    """The runner answered and exited; a helper it detached holds its stdout. Ctrl-C while capture still reads that
    pipe (its grace is made 10 minutes here, so only the Ctrl-C ends it) stops nothing: the run stays ok, with no
    E_CAPTURE_INTERRUPTED, and the stage publishes no interrupt (the command exits 0)."""
    monkeypatch.setattr(processes, "PIPE_GRACE_S", 600.0)
    runner = helper_runner(tmp_path, "stdout")
    stage = SpawnRunner()
    invocation = DiscoverRunner(prompt="p", runner=str(runner), cwd=str(tmp_path), run_id="run_cap").invocation()
    batches = []

    async def capture() -> None:
        batches.append(await stage.run(invocation))

    with helpers_ended(tmp_path):
        with anyio.fail_after(60):  # (a hang: the Ctrl-C did not end the wait for the helper's pipe)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(capture)
                while (pid := pid_in(tmp_path / "runner")) is None or alive(pid):  # noqa: ASYNC110 - another process
                    await anyio.sleep(0.01)
                # (capture took in the exit, its status known, once it killed what the runner left in its group)
                while (pid := pid_in(tmp_path / "grouped")) is None or alive(pid):  # noqa: ASYNC110 - another process
                    await anyio.sleep(0.01)
                os.kill(os.getpid(), signal.SIGINT)
    [batch] = batches
    record = batch.events[0]
    assert record["status"] == "ok" and record["response"] == "done" and "error" not in record
    assert stage.take("errors") == [] and "interrupted" not in stage.facts
    [raw] = stage.take("raw")
    assert raw["capture"]["process"]["interrupted"] is False and raw["capture"]["process"]["exitCode"] == 0
    assert ctrl_c_caught == []  # the Ctrl-C was capture's
