"""Processes the user runs through replay (runners, agents): each in a session (process group) of its own.

``run_process`` starts a command in a new session, feeds it its stdin, collects stdout (capped; past
the cap the group is killed) and the end of stderr, and kills the whole group on timeout (SIGTERM,
then SIGKILL after a grace period) and after it exits, so nothing it started in its group outlives it. Once it
exited, its pipes are read for ``PIPE_GRACE_S`` at most: a process it started in a session of its own (``setsid``, a
daemon) that holds them open is neither killed nor waited for, and the run's duration ends at the exit. With
``keep_on_interrupt``, Ctrl-C stops the process (its group gets SIGINT, then SIGKILL after the grace
period; a second Ctrl-C makes it SIGKILL at once) and the outcome, marked ``interrupted``, keeps what it
printed, instead of cancelling the caller, whose run then finishes with it (``engine.interrupts.finishing``).
SIGTERM and SIGHUP (``engine.errors.INTERRUPTS``) are interrupts too: the group gets the same signal.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime

import anyio
import anyio.abc

from replay.pipeline.engine import interrupts
from replay.pipeline.engine.errors import INTERRUPTS

READER_GRACE_S = 5.0  # an incident agent's (model.incident.agent_protocol): after it exited, how long its stdout is read
PIPE_GRACE_S = 0.5  # once a runner exited and its group is gone, how long more its stdout/stderr are read when a process
# it left outside its group holds them open (what is in the pipes is read; what that process writes later is not)
INTERRUPTED_READER_GRACE_S = 0.2  # that wait, when an interrupt comes during it: bytes already in the pipes are read
GROUP_GONE_S = 2.0  # how long to wait for killed group members to disappear


@dataclass
class ProcessOutcome:
    """Everything observed about one runner process."""

    command: list[str]
    started_at: datetime
    pid: int | None = None
    exit_code: int | None = None
    signal: str | None = None
    timed_out: bool = False
    interrupted_by: int | None = None  # the interrupt (SIGINT, SIGTERM, SIGHUP) that reached replay while the process ran
    interrupted_after_ms: float = 0.0  # when it came, from the start (the process may take the grace period to stop)
    too_large: bool = False
    start_error: str | None = None
    stdout: bytearray = field(default_factory=bytearray)
    stdout_bytes: int = 0
    stderr: bytearray = field(default_factory=bytearray)
    stderr_bytes: int = 0
    duration_ms: float = 0.0
    ended_at: datetime | None = None

    @property
    def interrupted(self) -> bool:
        """An interrupt (Ctrl-C, SIGTERM, SIGHUP) reached replay while the process ran: it was stopped."""
        return self.interrupted_by is not None


async def open_in_session(command: Sequence[str], *, cwd: str | None, env: dict[str, str] | None) -> anyio.abc.Process:
    """``command`` started in a new session (process group), with stdin, stdout and stderr piped, and with the
    interrupts (``INTERRUPTS``) unblocked. A child gets the signal mask of the thread that starts it, and the workers
    of the Dask cluster replay starts run tasks with them blocked (``io.dask_backend``): a runner or an agent started
    there would never see the SIGTERM of its timeout or the SIGINT of a Ctrl-C. They are unblocked in this thread
    while the process is started (only when they were blocked: then no other thread of the process takes them)."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [])  # (the thread's mask, unchanged)
    held = [number for number in INTERRUPTS if number in blocked]
    if held:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)
    try:
        return await anyio.open_process(list(command), cwd=cwd, env=env, start_new_session=True)
    finally:
        if held:
            signal.pthread_sigmask(signal.SIG_BLOCK, held)


def kill_group(pgid: int, sig: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def clear_group(pgid: int, limit_s: float = GROUP_GONE_S) -> None:
    """SIGKILL what is left of the group, and wait (briefly) until none of it runs any more.

    A member whose parent died is reaped by init; in a container whose init never reaps, it stays a
    zombie (dead, holding only its process table entry) and keeps the group in existence: once only
    zombies are left, the wait is over."""
    kill_group(pgid, signal.SIGKILL)
    with anyio.move_on_after(limit_s):
        for k in range(1_000_000):
            try:
                os.killpg(pgid, 0)
            except (ProcessLookupError, PermissionError):
                return
            if k % 5 == 4 and only_zombies_left(pgid):
                return
            await anyio.sleep(0.01)


def only_zombies_left(pgid: int) -> bool:
    """True when every process of group ``pgid`` is a zombie (Linux /proc; False where it cannot tell)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return False
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # after the command name: state, ppid, pgrp, ...
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return False
    return True


async def run_process(command: Sequence[str], stdin: bytes, *, cwd: str | None = None, env: dict[str, str] | None = None,
                      timeout_s: float, max_stdout: int, max_stderr: int, grace_s: float = 2.0,
                      keep_on_interrupt: bool = False) -> ProcessOutcome:
    """Run ``command`` in a new session, feed it ``stdin``, collect its output within the limits.

    With ``keep_on_interrupt``, Ctrl-C (SIGINT) while the process runs does not cancel the run: the
    process group gets the SIGINT it would have had in the foreground (then SIGKILL after
    ``grace_s``), and the outcome, marked ``interrupted``, keeps everything it printed until then.
    SIGTERM and SIGHUP do the same (the group gets that signal); ``interrupted_by`` says which came.
    A second interrupt (users press Ctrl-C twice) ends the grace: the group gets SIGKILL at once, and the
    outcome is the same. An interrupt that comes once the process exited (its exit status known) has nothing to stop:
    the outcome is not marked, only the wait for its pipes (``PIPE_GRACE_S``) is cut to ``INTERRUPTED_READER_GRACE_S``.
    When it stops listening for interrupts (at the second, or when it returns), an interrupted run_process makes the
    caller's run ``interrupts.finishing``: a further interrupt does not cancel it (which would lose what was kept); it
    goes to the last resort, which ends the process only when the run does not end in time. ``duration_ms`` and
    ``ended_at`` are the process's exit, not the end of its pipes."""
    outcome = ProcessOutcome(list(command), datetime.now(UTC))
    clock = time.monotonic()
    try:
        process = await open_in_session(command, cwd=cwd, env=env)
    except OSError as exc:
        outcome.start_error = f"{type(exc).__name__}: {exc.strerror or exc}"
        outcome.ended_at = datetime.now(UTC)
        return outcome
    outcome.pid = pgid = process.pid
    stop = anyio.Event()  # the runner exited, or its stdout went over the cap
    readers_done = anyio.Event()
    draining = anyio.CancelScope()  # the wait for stdout/stderr to end once the group is gone (a child that left the
    # group may hold them open): PIPE_GRACE_S, cut short by an interrupt that comes after the runner exited
    grace = anyio.CancelScope()  # the wait for the group to stop after its interrupt or timeout signal, before SIGKILL:
    # grace_s, ended by a second interrupt

    def mark_exit() -> None:
        """The process is gone: its run ends here (not when a process it left stops holding its pipes)."""
        if outcome.ended_at is None:
            outcome.ended_at = datetime.now(UTC)
            outcome.duration_ms = (time.monotonic() - clock) * 1000.0

    async def feed() -> None:
        assert process.stdin is not None
        try:
            await process.stdin.send(stdin)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass  # the runner did not read its input; what it printed still counts
        finally:
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await process.stdin.aclose()

    async def pump_stdout() -> None:
        assert process.stdout is not None
        async for chunk in process.stdout:
            outcome.stdout_bytes += len(chunk)
            outcome.stdout += chunk
            if len(outcome.stdout) > max_stdout:
                cut = straddled(outcome.stdout, max_stdout)  # (a character the cap cuts in two is left out whole)
                del outcome.stdout[cut[0] if cut else max_stdout:]
                outcome.too_large = True
                stop.set()
                return

    async def pump_stderr() -> None:
        assert process.stderr is not None
        async for chunk in process.stderr:
            outcome.stderr_bytes += len(chunk)
            outcome.stderr += chunk
            if len(outcome.stderr) > max_stderr:  # keep the end: that is where crashes speak
                at = len(outcome.stderr) - max_stderr
                cut = straddled(outcome.stderr, at)  # (a character the cut would halve is left out whole)
                del outcome.stderr[: cut[1] if cut else at]

    async def read_all(scope: anyio.CancelScope) -> None:
        with scope:
            async with anyio.create_task_group() as readers:
                readers.start_soon(pump_stdout)
                readers.start_soon(pump_stderr)
        readers_done.set()

    async def watch_exit() -> None:
        await process.wait()
        mark_exit()
        stop.set()

    async def watch_interrupt() -> None:
        try:
            # an ignored one stays ignored (Ctrl-C in a background job, SIGHUP under nohup)
            previous = {number: signal.getsignal(number) for number in INTERRUPTS if signal.getsignal(number) != signal.SIG_IGN}
            if not previous:
                return
            receiver = anyio.open_signal_receiver(*previous)
        except (ValueError, RuntimeError, NotImplementedError):  # not the main thread: Ctrl-C cancels as usual
            return
        try:
            with receiver as signals:
                async for number in signals:
                    if outcome.interrupted_by is not None:  # a second interrupt: no more grace, SIGKILL now
                        grace.cancel()
                        return
                    if process.returncode is not None:  # it exited: its run is over as it ended, nothing to stop; only
                        # the wait for its pipes goes on (a process it left holds them): cut short, what is in them read
                        draining.deadline = min(draining.deadline, anyio.current_time() + INTERRUPTED_READER_GRACE_S)
                        continue
                    outcome.interrupted_by = number
                    outcome.interrupted_after_ms = (time.monotonic() - clock) * 1000.0
                    stop.set()
        except (ValueError, RuntimeError, NotImplementedError):
            return
        finally:
            if outcome.interrupted_by is not None:
                interrupts.finishing()  # (first: once the handlers are back, a further interrupt must not cancel the run)
            for number, handler in previous.items():
                with suppress(ValueError, TypeError):
                    signal.signal(number, handler)  # further interrupts: the run's (the last resort's, once finishing)
            interrupts.watch_again()  # (the receiver took the wakeup fd: an interrupt another thread gets must reach it)

    reader_scope = anyio.CancelScope()
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(feed)
            tasks.start_soon(read_all, reader_scope)
            tasks.start_soon(watch_exit)
            if keep_on_interrupt:
                tasks.start_soon(watch_interrupt)
            with anyio.move_on_after(timeout_s):
                await stop.wait()
            if process.returncode is None and not stop.is_set():
                outcome.timed_out = True
            if process.returncode is None:
                kill_group(pgid, outcome.interrupted_by or signal.SIGTERM)  # an interrupt: the one replay got
                grace.deadline = anyio.current_time() + grace_s
                with grace:  # (cancelled already when a second interrupt came first: then not a moment of it)
                    await process.wait()
                kill_group(pgid, signal.SIGKILL)
                await process.wait()
            mark_exit()
            await clear_group(pgid)  # whatever the runner left behind in its group
            draining.deadline = min(draining.deadline, anyio.current_time() + PIPE_GRACE_S)
            with draining:
                await readers_done.wait()  # bytes still in the pipes are read to the end
            reader_scope.cancel()  # a descendant that left the group may still hold a pipe open
            tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:  # cancelled (Ctrl-C): the runner must not outlive us
                kill_group(pgid, signal.SIGKILL)
                await process.wait()
            mark_exit()
            await clear_group(pgid)
            with suppress(Exception):
                await process.aclose()  # its streams and their pipes (closing a stream alone leaves the pipe open)
    code = process.returncode
    if code is not None and code < 0:
        outcome.signal = signal_name(-code)
    outcome.exit_code = code
    return outcome


def straddled(data: bytes | bytearray, at: int) -> tuple[int, int] | None:
    """The UTF-8 character of ``data`` that a cut at byte ``at`` would halve, as (its first byte, the byte after it;
    that may be past the end of ``data`` when the character is cut off there); None when ``at`` is between characters
    (or the bytes around it are no UTF-8 character). A process's output kept up to (or from) a limit is cut at a
    character's edge, so the text of a process that wrote only UTF-8 stays UTF-8."""
    if not 0 < at < len(data) or data[at] & 0xC0 != 0x80:
        return None
    for start in range(at - 1, max(at - 4, -1), -1):
        lead = data[start]
        if lead & 0xC0 == 0x80:
            continue  # another continuation byte: the character begins further back
        size = 2 if lead & 0xE0 == 0xC0 else 3 if lead & 0xF0 == 0xE0 else 4 if lead & 0xF8 == 0xF0 else 0
        end = start + size
        if at < end and all(b & 0xC0 == 0x80 for b in data[start + 1:min(end, len(data))]):
            return start, end
        return None
    return None


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
