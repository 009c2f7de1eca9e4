"""engine.interrupts: the last resort that ends a run a stage keeps alive past an interrupt's grace.

Its parts in this process, with the exit and the stderr write replaced: the staged outputs it removes, the stages it
names, the watchdog's clock. tests/cli/test_cli_run_interrupts.py runs the real thing with real signals.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import orjson
import pytest

from replay.pipeline.engine import interrupts
from replay.pipeline.engine.errors import CATALOGUE
from replay.pipeline.io.staging import atomic_output, staged_folder

WAIT_S = 15  # how long a test waits for the watchdog before it calls it a hang (not a speed measure)


class Ended:
    """What the watchdog did instead of ending the process: the exit code and the lines it wrote."""

    def __init__(self) -> None:
        self.codes: list[int] = []
        self.lines: list[bytes] = []
        self.event = threading.Event()

    def exit(self, code: int) -> None:
        self.codes.append(code)
        self.event.set()

    def errors(self) -> list[dict]:
        return [orjson.loads(line)["error"] for line in self.lines]


@pytest.fixture
def ended() -> Iterator[Ended]:
    seen = Ended()
    yield seen
    interrupts.disable()


def arm(ended: Ended, grace: float) -> None:
    interrupts.enable(grace=grace, exit=ended.exit, write=ended.lines.append)


def test_atomic_output_stages_its_temp_until_it_is_published_or_removed(tmp_path: Path):
    target = tmp_path / "out.jsonl"
    with atomic_output(target) as handle:
        handle.write(b"x\n")
        [temp] = interrupts.staged_outputs()
        assert Path(temp).parent == tmp_path and Path(temp).name.endswith(".replay.tmp")
    assert interrupts.staged_outputs() == [] and target.read_bytes() == b"x\n"
    with pytest.raises(RuntimeError), atomic_output(target) as handle:
        assert len(interrupts.staged_outputs()) == 1
        raise RuntimeError("a failure mid-write")
    assert interrupts.staged_outputs() == []


def test_a_staged_folder_is_staged_until_published(tmp_path: Path):
    with staged_folder(tmp_path / "new") as staging:
        assert interrupts.staged_outputs() == [str(staging)]
        (staging / "a.json").write_bytes(b"{}")
    assert interrupts.staged_outputs() == [] and (tmp_path / "new" / "a.json").exists()


def test_remove_staged_removes_the_files_and_folders_staged_now(tmp_path: Path):
    folder = tmp_path / ".out.x.replay.tmp"
    folder.mkdir()
    inside = folder / ".a.json.y.replay.tmp"
    inside.write_bytes(b"partial")
    alone = tmp_path / ".b.jsonl.z.replay.tmp"
    alone.write_bytes(b"partial")
    interrupts.stage_output(folder, folder=True)
    interrupts.stage_output(inside)
    interrupts.stage_output(alone)
    interrupts.stage_output(tmp_path / "gone-already")
    assert sorted(interrupts.remove_staged()) == sorted([str(folder), str(inside), str(alone)])
    assert list(tmp_path.iterdir()) == [] and interrupts.staged_outputs() == []


def test_a_stage_still_running_after_the_grace_is_named_its_outputs_removed_and_the_process_ended(
        tmp_path: Path, ended: Ended):
    arm(ended, grace=0.2)
    temp = tmp_path / ".out.jsonl.q.replay.tmp"
    temp.write_bytes(b"partial")
    interrupts.stage_output(temp)
    with interrupts.watching(), interrupts.running(lambda: "sleepy"):
        interrupts.notice(signal.SIGTERM)
        assert ended.event.wait(WAIT_S)
    assert ended.codes == [143]
    [error] = ended.errors()
    assert error["code"] == "E_STAGE_NOT_STOPPED" and error["stage"] == "sleepy" and "SIGTERM" in error["message"]
    assert error["howToFix"] == CATALOGUE["E_STAGE_NOT_STOPPED"][1]
    assert not temp.exists() and interrupts.staged_outputs() == []
    interrupts.drop_output(temp)


def test_a_run_whose_stages_stopped_is_left_alone(ended: Ended):
    arm(ended, grace=0.1)
    with interrupts.watching():
        with interrupts.running(lambda: "quick"):
            interrupts.notice(signal.SIGINT)
        # the stage stopped by cancellation within the grace
        assert not ended.event.wait(1.0)
    assert ended.codes == [] and ended.lines == []


def test_a_second_interrupt_ends_the_grace(ended: Ended):
    arm(ended, grace=3600)
    with interrupts.watching(), interrupts.running(lambda: "sleepy"):
        interrupts.notice(signal.SIGINT)
        interrupts.notice(signal.SIGINT)
        assert ended.event.wait(WAIT_S)
    assert ended.codes == [130]
    [error] = ended.errors()
    assert error["stage"] == "sleepy" and "second interrupt" in error["message"]


def test_a_finishing_run_is_not_cancelled_by_interrupts_and_ended_only_when_it_outlives_the_grace(ended: Ended):
    """capture took the interrupt itself (it stopped its runner) and writes what it printed: a further interrupt must
    not cancel the run (its files would be lost). It reaches the watchdog alone, whose clock it starts; interrupts
    after it do not cut the grace short (users press Ctrl-C again and again); a run still going when it is over is
    ended hard, as any run."""
    arm(ended, grace=0.5)
    calls = []

    def handler(number, frame):  # (asyncio's cancels the run)
        calls.append(number)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        with interrupts.watching(), interrupts.running(lambda: "emit"):
            interrupts.finishing()
            assert interrupts.finishing_run()
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)
            assert calls == []  # not cancelled
            assert ended.event.wait(WAIT_S)  # still writing when the grace was over: the last resort
        assert ended.codes == [130]
        [error] = ended.errors()
        assert error["stage"] == "emit" and "within 0.5 s of the interrupt" in error["message"]
        assert not interrupts.finishing_run()
        with interrupts.watching():  # the next run is cancelled by Ctrl-C as usual
            assert not interrupts.finishing_run()
            signal.raise_signal(signal.SIGINT)
            assert calls == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, previous)


def test_finishing_is_nothing_unless_the_last_resort_is_armed(ended: Ended):
    """Without the watchdog nothing would end a finishing run that hangs: an interrupt cancels it as usual."""
    with interrupts.watching():
        interrupts.finishing()
        assert not interrupts.finishing_run()


def test_nothing_is_watched_unless_enabled_or_outside_a_run(ended: Ended):
    with interrupts.watching(), interrupts.running(lambda: "sleepy"):
        interrupts.notice(signal.SIGINT)  # not enabled: the CLI's main enables it, a library's run is left alone
    arm(ended, grace=0.1)
    with interrupts.running(lambda: "sleepy"):
        interrupts.notice(signal.SIGINT)  # no run being watched: an interrupt elsewhere is none of its business
        assert not ended.event.wait(1.0)
    assert ended.codes == []


def test_watching_wraps_ctrl_c_s_handler_and_puts_it_back(ended: Ended):
    arm(ended, grace=3600)
    calls = []

    def handler(number, frame):
        calls.append(number)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        with interrupts.watching():
            wrapped = signal.getsignal(signal.SIGINT)
            assert wrapped is not handler and interrupts.unwrapped(wrapped) is handler
            signal.raise_signal(signal.SIGINT)
            assert calls == [signal.SIGINT]
            assert interrupts._active().runs == 1
        assert signal.getsignal(signal.SIGINT) is handler
    finally:
        signal.signal(signal.SIGINT, previous)


def test_the_stage_whose_work_goes_on_in_a_worker_thread_is_named(ended: Ended):
    """The stage's task is gone (its blocking call was abandoned on cancel, or the run even ended) but the thread it
    started still runs: the interpreter would wait for it before exiting; that stage is named."""
    arm(ended, grace=3600)
    release = threading.Event()
    started = threading.Event()

    def blocking() -> None:
        started.set()
        release.wait(WAIT_S)

    async def stage() -> None:
        with interrupts.running(lambda: "threaded"):
            with anyio.move_on_after(0.05):
                await anyio.to_thread.run_sync(blocking, abandon_on_cancel=True)

    try:
        with interrupts.watching():
            anyio.run(stage)
        assert started.wait(WAIT_S)
        assert interrupts.stuck_stages() == ["threaded"]
    finally:
        release.set()


def test_a_stage_holding_the_main_thread_is_named_alone(ended: Ended):
    """A sync stage blocking the event loop's thread: the other stages are waiting on it, not stuck themselves."""
    arm(ended, grace=3600)
    seen: list[list[str]] = []
    look = threading.Event()
    looked = threading.Event()

    def observer() -> None:
        look.wait(WAIT_S)
        seen.append(interrupts.stuck_stages())
        looked.set()

    async def holds_the_thread() -> None:
        with interrupts.running(lambda: "blocking", __import__("sys")._getframe()):
            look.set()
            looked.wait(WAIT_S)  # blocks the loop's thread, as a stage stuck in sync code does

    async def waits() -> None:
        with interrupts.running(lambda: "waiting", __import__("sys")._getframe()):
            await anyio.sleep(0.2)

    async def both() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(waits)
            await anyio.sleep(0.01)
            tg.start_soon(holds_the_thread)

    thread = threading.Thread(target=observer)
    thread.start()
    with interrupts.watching():
        anyio.run(both)
    thread.join(WAIT_S)
    assert seen == [["blocking"]]


def test_the_line_names_every_stage_still_running():
    line = interrupts.not_stopped_line(signal.SIGHUP, ["a", "b"], 2.0)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    error = orjson.loads(line)["error"]
    assert list(error)[:2] == ["code", "message"]
    assert (error["code"], error["stage"], error["stages"]) == ("E_STAGE_NOT_STOPPED", "a", ["a", "b"])
    assert "SIGHUP" in error["message"] and "'b'" in error["message"]


def test_a_built_in_stage_not_stopping_is_called_replay_s_bug_not_a_plugin_s_blocking_call():
    plugin = orjson.loads(interrupts.not_stopped_line(signal.SIGINT, ["emit"], 2.0))["error"]
    assert plugin["howToFix"] == CATALOGUE["E_STAGE_NOT_STOPPED"][1]
    error = orjson.loads(interrupts.not_stopped_line(signal.SIGINT, ["emit"], 2.0, built_in=True))["error"]
    assert error["stage"] == "emit" and error["howToFix"] == interrupts.BUILT_IN_NOT_STOPPED
    assert "bug in replay" in error["howToFix"] and "report" in error["howToFix"]


def test_the_watchdog_tells_a_built_in_stage_from_a_plugin_s(ended: Ended):
    arm(ended, grace=0.1)
    with interrupts.watching(), interrupts.running(lambda: "own", built_in=lambda: True):
        assert interrupts.stuck() == [("own", True)]
        interrupts.notice(signal.SIGINT)
        assert ended.event.wait(WAIT_S)
    [error] = ended.errors()
    assert error["stage"] == "own" and error["howToFix"] == interrupts.BUILT_IN_NOT_STOPPED


def test_work_handed_to_asyncio_s_executor_names_its_stage_too(ended: Ended):
    """asyncio.to_thread runs the work as functools.partial(context.run, ...) in its executor's thread."""
    import asyncio

    arm(ended, grace=3600)
    seen: list[list[str]] = []
    started = threading.Event()

    def look() -> None:
        seen.append([stage() for stage in interrupts.threaded_stages()])  # (from a third thread: it skips its own)

    def blocking() -> None:
        started.set()
        observer = threading.Thread(target=look)
        observer.start()
        observer.join(WAIT_S)

    async def stage() -> None:
        with interrupts.running(lambda: "executor"):
            await asyncio.to_thread(blocking)

    with interrupts.watching():
        asyncio.run(stage())
    assert started.is_set() and seen == [["executor"]]


def test_an_interrupt_another_thread_receives_still_cancels_the_run(ended: Ended):
    """The kernel may give the signal to any thread: one given to a worker thread left the main thread asleep in the
    event loop's select, its handler (which cancels the run) never run, and the run went on as if nothing came. The
    signal's byte reaches the watchdog through the wakeup fd, and it wakes the loop."""
    arm(ended, grace=3600)
    cancelled = threading.Event()
    in_time: list[bool] = []

    def blocking() -> None:
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # to this worker thread, not the main one
        in_time.append(cancelled.wait(WAIT_S))  # (without the wake-up: until this gives up, the loop sleeps on)

    async def run() -> None:
        with interrupts.watching():
            try:
                await anyio.to_thread.run_sync(blocking)
            finally:
                cancelled.set()  # (the run was cancelled: the handler ran)

    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # (so asyncio's Runner installs its own)
    with pytest.raises(KeyboardInterrupt):
        anyio.run(run)
    deadline = time.monotonic() + WAIT_S
    while not in_time and time.monotonic() < deadline:  # (the worker thread saw the cancellation, or gave up)
        time.sleep(0.01)
    assert in_time == [True]


def test_an_interrupt_another_thread_gets_after_capture_stopped_listening_still_reaches_the_watchdog(ended: Ended):
    """capture's runner listens for interrupts itself (a signal receiver of the run's own), and asyncio drops the
    wakeup fd with it when it closes. An interrupt the kernel then gives a worker thread (emit writes its files in one)
    reached no one: its C handler wrote no byte, the main thread slept on in its select, so the handler that tells the
    watchdog never ran, and a write that hung was never ended (replay hung; tests/cli/test_capture_cli.py's hanging
    write, now and then under load). The watchdog's pipe is the wakeup fd again once the receiver closed."""
    import sys

    from replay.pipeline.io.processes import run_process

    arm(ended, grace=0.2)
    calls = []

    def handler(number, frame):  # (asyncio's would cancel the run)
        calls.append(number)

    def worker() -> bool:  # a stage's work in a thread: the interrupt comes to this thread, not the main one
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        return ended.event.wait(WAIT_S)

    async def run() -> bool:
        with interrupts.watching(), interrupts.running(lambda: "emit"):
            await run_process([sys.executable, "-c", "pass"], b"", timeout_s=60, max_stdout=1 << 10,
                              max_stderr=1 << 10, grace_s=1, keep_on_interrupt=True)
            return await anyio.to_thread.run_sync(worker)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        assert anyio.run(run), "the watchdog never heard of the interrupt"
    finally:
        signal.signal(signal.SIGINT, previous)
    assert ended.codes == [130] and ended.errors()[0]["stage"] == "emit"


CUT_LOOP = """
import os, signal, socket, sys
from replay.pipeline.engine import interrupts

made = socket.socketpair

def cut(*args, **kwargs):  # a Ctrl-C just as the event loop makes its self-pipe
    os.kill(os.getpid(), signal.SIGINT)
    return made(*args, **kwargs)

socket.socketpair = cut

async def nothing():
    return None

try:
    (interrupts.run_async if sys.argv[1] == "whole" else __import__("anyio").run)(nothing)
except KeyboardInterrupt:
    print("interrupted")
"""


@pytest.mark.parametrize("how", ["whole", "anyio"])
def test_a_ctrl_c_as_a_run_s_event_loop_is_made_prints_nothing_but_the_interrupt(how: str) -> None:
    """A Ctrl-C inside the event loop's making (a worker taking its next task as the command is interrupted) still
    interrupts, and the loop is made whole first: one cut halfway printed Python's "Exception ignored ... no attribute
    '_ssock'" on stderr. (``anyio``: what ``anyio.run`` alone does, to show the test makes the cut it means to.)"""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", CUT_LOOP, how], capture_output=True, timeout=60)
    assert done.stdout == b"interrupted\n"
    if how == "whole":
        assert done.stderr == b""
    else:
        assert b"_ssock" in done.stderr
