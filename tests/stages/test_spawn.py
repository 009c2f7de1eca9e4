"""Spawning runners: real processes, timeouts that kill the whole process group, output caps, the run batch."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import anyio
import orjson
import pytest
from conftest import EXAMPLES, FIXTURES, alive

from replay.pipeline.engine.batch import Batch
from replay.pipeline.io.processes import run_process, straddled
from replay.stages.discover import DiscoverRunner
from replay.stages.spawn import SpawnRunner

RUNNERS = FIXTURES / "runners"
pytestmark = pytest.mark.anyio




def request(**context) -> bytes:
    return orjson.dumps({"prompt": "p", "query": "p", "runId": "run_t", "timestamp": "2026-03-01T12:00:00.000Z",
                         "context": context})


async def run_fixture(name: str, *, timeout_s: float = 60, max_stdout: int = 1 << 20, max_stderr: int = 1 << 20,
                      **context):
    return await run_process([sys.executable, str(RUNNERS / name)], request(**context), timeout_s=timeout_s,
                             max_stdout=max_stdout, max_stderr=max_stderr, grace_s=2)


async def test_timeout_kills_the_runner_and_its_grandchild(tmp_path):
    pid_file = tmp_path / "pids"
    outcome = await run_fixture("sleeper_with_grandchild.py", timeout_s=1, pidFile=str(pid_file))
    assert outcome.timed_out and outcome.signal == "SIGTERM"
    runner, grandchild = map(int, pid_file.read_text().split())
    assert runner == outcome.pid
    assert not alive(runner) and not alive(grandchild)
    assert b'"type": "run_started"' in outcome.stdout  # what it printed before the timeout is kept


async def test_cancelling_the_capture_kills_the_runner(tmp_path):
    pid_file = tmp_path / "pids"
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: run_fixture("sleeper_with_grandchild.py", timeout_s=600, pidFile=str(pid_file)))
        while not pid_file.exists():  # noqa: ASYNC110 - another process writes it: poll, then cancel the capture
            await anyio.sleep(0.01)
        tg.cancel_scope.cancel()
    runner, grandchild = map(int, pid_file.read_text().split())
    assert not alive(runner) and not alive(grandchild)


async def test_children_left_behind_are_killed_when_the_runner_exits(tmp_path):
    pid_file = tmp_path / "pid"
    outcome = await run_fixture("leaves_background_child.py", pidFile=str(pid_file))
    assert outcome.exit_code == 0 and not outcome.timed_out
    assert json.loads(outcome.stdout)["response"] == "done"
    assert not alive(int(pid_file.read_text()))


async def test_stdout_over_the_cap_kills_the_runner():
    outcome = await run_fixture("flood_stdout.py", max_stdout=10_000)
    assert outcome.too_large and not outcome.timed_out
    assert len(outcome.stdout) == 10_000 and outcome.stdout_bytes > 10_000
    assert outcome.exit_code != 0


async def test_stderr_keeps_its_end():
    outcome = await run_fixture("say.py", max_stderr=100, stderr="a" * 5000 + "END", stdout="{}")
    assert outcome.stderr_bytes == 5003 and len(outcome.stderr) == 100 and outcome.stderr.endswith(b"aEND")


@pytest.mark.parametrize("max_stderr", [5, 6, 7, 8, 9, 10])
async def test_stderr_kept_from_a_character_of_three_or_four_bytes(max_stderr):
    text = "x" + "\u20ac\U0001f600" * 50  # 3 and 4 bytes: every cut falls somewhere in a character
    outcome = await run_fixture("say.py", max_stderr=max_stderr, stderr=text, stdout="{}")
    kept = outcome.stderr.decode("utf-8")  # (no character cut in two)
    assert text.endswith(kept) and len(outcome.stderr) > max_stderr - 4


def test_straddled_leaves_bytes_that_are_no_utf8_as_they_are():
    assert straddled(b"ab\x80\x80c", 2) is None  # continuation bytes after no lead byte: cut where asked
    assert straddled(b"a\xc3\xa9", 2) == (1, 3) and straddled(b"a\xc3\xa9", 1) is None
    assert straddled(b"\xe2\x82", 1) == (0, 3)  # (its end past the bytes there are)


async def test_a_runner_that_never_reads_its_request():
    big = request(blob="x" * 2_000_000)
    outcome = await run_process([sys.executable, str(RUNNERS / "ignores_stdin.py")], big, timeout_s=60,
                                max_stdout=1 << 20, max_stderr=1 << 20)
    assert outcome.exit_code == 0 and b"did not read the request" in outcome.stdout


async def test_start_failure_is_recorded():
    outcome = await run_process(["/nonexistent/runner"], b"{}", timeout_s=5, max_stdout=100, max_stderr=100)
    assert outcome.pid is None and "No such file" in outcome.start_error


DEAF_RUNNER = """
import json, os, signal, sys, time
context = json.load(sys.stdin)["context"]
def hear(number, frame):  # heard, and ignored: only SIGKILL stops it
    open(context["heard"], "a").write(signal.Signals(number).name + "\\n")
signal.signal(signal.SIGINT, hear)
signal.signal(signal.SIGTERM, hear)
print(json.dumps({"type": "user_message", "payload": {}}), flush=True)
open(context["pidFile"], "w").write(str(os.getpid()))
while True:
    time.sleep(1)
"""


async def wait_for_text(path: Path) -> None:
    while not (path.exists() and path.read_text()):  # noqa: ASYNC110, ASYNC240 - another process writes it: poll
        await anyio.sleep(0.01)


async def test_a_second_ctrl_c_ends_the_grace_at_once(tmp_path, ctrl_c_caught):
    """keep_on_interrupt: the first Ctrl-C sends the runner's group SIGINT and gives it the grace to stop; a second
    Ctrl-C (the runner ignores the first) ends the grace: SIGKILL at once, and what the runner printed is kept. The
    grace is an hour here: only the second Ctrl-C can end it (it went to replay's own handler instead)."""
    runner, pid_file, heard = tmp_path / "deaf.py", tmp_path / "pid", tmp_path / "heard"
    runner.write_text(DEAF_RUNNER)
    outcomes = []

    async def capture() -> None:
        outcomes.append(await run_process([sys.executable, str(runner)], request(pidFile=str(pid_file), heard=str(heard)),
                                          timeout_s=600, max_stdout=1 << 20, max_stderr=1 << 20, grace_s=3600,
                                          keep_on_interrupt=True))

    with anyio.fail_after(60):  # (a hang: the second Ctrl-C did not end the grace)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(capture)
            await wait_for_text(pid_file)  # (the runner runs: run_process listens for interrupts)
            os.kill(os.getpid(), signal.SIGINT)
            await wait_for_text(heard)  # the runner heard it and goes on: the grace runs
            os.kill(os.getpid(), signal.SIGINT)
    [outcome] = outcomes
    assert outcome.interrupted_by == signal.SIGINT and outcome.signal == "SIGKILL"
    assert json.loads(outcome.stdout)["type"] == "user_message"
    assert heard.read_text().split() == ["SIGINT"] and not alive(outcome.pid)
    assert ctrl_c_caught == []  # both were run_process's


# the stage ------------------------------------------------------------------------------------
def invocation(tmp_path: Path, runner: Path, **context) -> dict:
    return DiscoverRunner(prompt="What are my top holdings?", runner=str(runner), context=context,
                          cwd=str(tmp_path), run_id="run_cap").invocation()


async def test_crash_halfway_keeps_the_streamed_events(tmp_path):
    stage = SpawnRunner()
    batch = await stage.run(invocation(tmp_path, EXAMPLES / "runners" / "streaming_crash_runner.py"))
    record, *events = batch.events
    assert record["$record"] == "run" and record["status"] == "error"
    assert record["error"]["code"] == "E_RUNNER_EXIT_NON_ZERO"
    assert [e["type"] for e in events] == ["run_started", "user_message", "tool_called"]
    assert all(raw is not None for raw in batch.raws[1:])  # streamed lines travel as their own bytes
    assert batch.lines[1:] == [1, 2, 3]
    raw = stage.take("raw")[0]
    assert raw["capture"]["streamedEvents"] == 3 and "RuntimeError" in raw["capture"]["stderr"]
    assert raw["capture"]["process"]["exitCode"] == 1
    assert raw["events"] == events
    [error] = stage.take("errors")
    assert error["code"] == "E_RUNNER_EXIT_NON_ZERO" and error["runId"] == "run_cap"


async def test_streaming_runner_that_finishes(tmp_path):
    stage = SpawnRunner()
    batch = await stage.run(invocation(tmp_path, EXAMPLES / "runners" / "streaming_crash_runner.py", crash=False))
    record, *events = batch.events
    assert record["status"] == "ok" and record["response"].startswith("Found 3 results")
    assert [e["type"] for e in events][-1] == "run_completed"
    assert stage.take("errors") == []


async def test_output_facts_go_into_the_run_record(tmp_path):
    stage = SpawnRunner()
    batch = await stage.run(invocation(tmp_path, EXAMPLES / "runners" / "echo_runner.py"))
    record = batch.events[0]
    assert record["status"] == "ok" and record["response"] == "Echo: What are my top holdings?"
    assert record["framework"] == "custom" and record["sources"] == ["lookup"] and "inputTokens" in record["usage"]
    assert record["prompt"] == record["query"] == "What are my top holdings?"
    assert batch.pointers[1] == "$.events[0]" and batch.raws[1] is None
    assert stage.take("errors") == []


async def test_events_naming_another_run_are_adopted_and_logged(tmp_path):
    output = {"status": "ok", "response": "r", "events": [
        {"seq": 1, "type": "run_started", "runId": "theirs", "payload": {}},
        {"seq": 2, "type": "run_completed", "runId": "run_cap", "payload": {}},
        {"seq": 3, "type": "note", "payload": {}},
    ]}
    stage = SpawnRunner()
    batch = await stage.run(invocation(tmp_path, RUNNERS / "say.py", stdout=output))
    assert [e.get("runId") for e in batch.events[1:]] == ["run_cap", "run_cap", None]
    [repair] = stage.take("repairs")
    assert repair["rule"] == "adopt_run_id" and repair["original"] == "theirs" and repair["value"] == "run_cap"
    assert repair["path"] == "$.events[0]"


async def test_runner_reported_failure_is_not_a_capture_error(tmp_path):
    output = {"status": "error", "error": {"code": "RUNNER_TOOL_TIMEOUT", "message": "slow", "retryable": True},
              "events": []}
    stage = SpawnRunner()
    batch = await stage.run(invocation(tmp_path, RUNNERS / "say.py", stdout=output))
    assert batch.events[0]["status"] == "error" and batch.events[0]["error"]["code"] == "RUNNER_TOOL_TIMEOUT"
    assert stage.take("errors") == []


async def test_a_reported_failure_then_a_non_zero_exit_keeps_the_runners_error_and_its_notes(tmp_path):
    """The reply's run facts decide three things (the capture error's wording, the run record's error, which notes are
    logged); they are worked out once and must agree: a bare message, kept as the run's error with the exit's code."""
    output = {"status": "error", "error": "database connection refused", "events": []}
    stage = SpawnRunner()
    batch = await stage.run(invocation(tmp_path, RUNNERS / "say.py", stdout=output, exit=2))
    assert batch.events[0]["error"] == {"code": "E_RUNNER_EXIT_NON_ZERO", "message": "database connection refused"}
    [error] = stage.take("errors")
    assert error["code"] == "E_RUNNER_EXIT_NON_ZERO" and "that error stays the run's" in error["message"]
    [repair] = stage.take("repairs")
    assert repair["rule"] == "normalize_runner_error" and repair["value"] == {"message": "database connection refused"}
    assert stage.take("notices") == []


async def test_an_error_with_no_normal_form_then_a_non_zero_exit_is_the_exits_without_a_notice(tmp_path):
    """An `error` the run record cannot keep (a number) is no reported failure: the exit's error is the run's, and the
    notice about the runner's `error` is not logged (the run's error is the failure's)."""
    output = {"status": "error", "error": 5, "events": []}
    stage = SpawnRunner()
    batch = await stage.run(invocation(tmp_path, RUNNERS / "say.py", stdout=output, exit=2))
    record = batch.events[0]
    assert record["error"]["code"] == "E_RUNNER_EXIT_NON_ZERO" and record["error"]["retryable"] is False
    [error] = stage.take("errors")
    assert "that error stays the run's" not in error["message"]
    assert stage.take("repairs") == [] and stage.take("notices") == []


async def test_process_passes_other_records_through(tmp_path):
    stage = SpawnRunner()
    send, receive = anyio.create_memory_object_stream[Batch](4)
    sent: list[Batch] = []

    async def collect(batch: Batch) -> None:
        sent.append(batch)

    async def nothing() -> None:
        pass

    from replay.pipeline.engine.stage import Output

    other = {"$record": "note", "text": "kept"}
    async with send:
        await send.send(Batch.of([other, invocation(tmp_path, RUNNERS / "say.py", stdout={
            "status": "ok", "response": "r", "events": []})]))
    await stage.process(receive, Output(collect, nothing))
    assert sent[0].events == [other]
    assert sent[1].events[0]["$record"] == "run"
