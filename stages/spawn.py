"""SpawnRunner: runs the user's runner for each invocation record and sends the run record and its events.

For each invocation (from ``discover``) the runner starts in a session of its own (its own process
group), gets the request on stdin, and has ``timeout_ms`` to finish; on timeout the whole group gets
SIGTERM, then SIGKILL after ``kill_grace_ms``. When the runner exits, whatever it left running in
its group is killed, so no orphan outlives the capture. stdout is capped at ``max_output_bytes``
(past it the group is killed: E_RUNNER_OUTPUT_TOO_LARGE); stderr keeps its last ``max_stderr_bytes``.
The runner inherits replay's environment (plus PYTHONUNBUFFERED=1 unless set, so a Python runner's
streamed lines are not held in a buffer when it dies).

Out on the main port: a run record (status, response, error, usage, ... from the output object, or
status "error" with the E_RUNNER_* code when the runner failed), then the run's events: streamed lines
keep their original bytes and stdout line numbers, events of the output object their ``$.events[i]``.
Events that name another runId than the one capture gave the runner are given the capture's
(logged on ``repairs`` as rule ``adopt_run_id``). Out on ``raw``, one record per run::

    {"runId", "capture": <the raw capture document>, "run": <run record>, "events": [<events as sent>]}

The first runner failure is also reported on ``errors``.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import orjson

from replay.pipeline.engine.batch import Batch, Column
from replay.pipeline.engine.errors import diagnostic
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import AsyncTransform, Option, Output
from replay.pipeline.model.events import format_timestamp, run_record
from replay.pipeline.model.repairs import log_repair
from replay.pipeline.model.runner_protocol import Reply, read_reply, run_facts

INVOCATION = "invocation"
RAW_CAPTURE = "raw-capture"
SCHEMA_VERSION = "1.0.0"
DEFAULT_TIMEOUT_MS = 120_000
DEFAULT_MAX_OUTPUT_BYTES = 32 * 1024 * 1024
DEFAULT_MAX_STDERR_BYTES = 1024 * 1024
READER_GRACE_S = 5.0  # after the group is gone, how long stdout/stderr may take to reach end of file
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
    too_large: bool = False
    start_error: str | None = None
    stdout: bytearray = field(default_factory=bytearray)
    stdout_bytes: int = 0
    stderr: bytearray = field(default_factory=bytearray)
    stderr_bytes: int = 0
    duration_ms: float = 0.0
    ended_at: datetime | None = None

    def as_record(self) -> dict[str, Any]:
        return {
            "pid": self.pid, "exitCode": self.exit_code, "signal": self.signal, "timedOut": self.timed_out,
            "outputTooLarge": self.too_large, "startError": self.start_error,
            "startedAt": format_timestamp(self.started_at),
            "endedAt": format_timestamp(self.ended_at or self.started_at), "durationMs": round(self.duration_ms, 3),
        }


def _kill_group(pgid: int, sig: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _clear_group(pgid: int, limit_s: float = GROUP_GONE_S) -> None:
    """SIGKILL what is left of the group, and wait (briefly) until the kernel has removed it."""
    _kill_group(pgid, signal.SIGKILL)
    with anyio.move_on_after(limit_s):  # members only a non-reaping init would keep as zombies stop the wait
        while True:
            try:
                os.killpg(pgid, 0)
            except (ProcessLookupError, PermissionError):
                return
            await anyio.sleep(0.01)


async def run_process(command: Sequence[str], stdin: bytes, *, cwd: str | None = None, env: dict[str, str] | None = None,
                      timeout_s: float, max_stdout: int, max_stderr: int, grace_s: float = 2.0) -> ProcessOutcome:
    """Run ``command`` in a new session, feed it ``stdin``, collect its output within the limits."""
    outcome = ProcessOutcome(list(command), datetime.now(UTC))
    clock = time.monotonic()
    try:
        process = await anyio.open_process(list(command), cwd=cwd, env=env, start_new_session=True)
    except OSError as exc:
        outcome.start_error = f"{type(exc).__name__}: {exc.strerror or exc}"
        outcome.ended_at = datetime.now(UTC)
        return outcome
    outcome.pid = pgid = process.pid
    stop = anyio.Event()  # the runner exited, or its stdout went over the cap
    readers_done = anyio.Event()

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
            room = max_stdout - len(outcome.stdout)
            if len(chunk) > room:
                outcome.stdout += chunk[:room]
                outcome.too_large = True
                stop.set()
                return
            outcome.stdout += chunk

    async def pump_stderr() -> None:
        assert process.stderr is not None
        async for chunk in process.stderr:
            outcome.stderr_bytes += len(chunk)
            outcome.stderr += chunk
            if len(outcome.stderr) > max_stderr:
                del outcome.stderr[: len(outcome.stderr) - max_stderr]  # keep the end: that is where crashes speak

    async def read_all(scope: anyio.CancelScope) -> None:
        with scope:
            async with anyio.create_task_group() as readers:
                readers.start_soon(pump_stdout)
                readers.start_soon(pump_stderr)
        readers_done.set()

    async def watch_exit() -> None:
        await process.wait()
        stop.set()

    reader_scope = anyio.CancelScope()
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(feed)
            tasks.start_soon(read_all, reader_scope)
            tasks.start_soon(watch_exit)
            with anyio.move_on_after(timeout_s):
                await stop.wait()
            if process.returncode is None and not stop.is_set():
                outcome.timed_out = True
            if process.returncode is None:
                _kill_group(pgid, signal.SIGTERM)
                with anyio.move_on_after(grace_s):
                    await process.wait()
                _kill_group(pgid, signal.SIGKILL)
                await process.wait()
            await _clear_group(pgid)  # whatever the runner left behind in its group
            with anyio.move_on_after(READER_GRACE_S):
                await readers_done.wait()  # bytes still in the pipes are read to the end
            reader_scope.cancel()  # a descendant that left the group may still hold a pipe open
            tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:  # cancelled (Ctrl-C): the runner must not outlive us
                _kill_group(pgid, signal.SIGKILL)
                await process.wait()
            await _clear_group(pgid)
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    with suppress(Exception):
                        await stream.aclose()
    code = process.returncode
    if code is not None and code < 0:
        outcome.signal = _signal_name(-code)
    outcome.exit_code = code
    outcome.ended_at = datetime.now(UTC)
    outcome.duration_ms = (time.monotonic() - clock) * 1000.0
    return outcome


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _text(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", "replace")


@register("spawn")
class SpawnRunner(AsyncTransform):
    summary = "Run the user's runner per invocation record (timeout kills its process group); send the run record and its events."
    options = {
        "timeout_ms": Option(int, DEFAULT_TIMEOUT_MS, "how long the runner may take before its process group is killed"),
        "max_output_bytes": Option(int, DEFAULT_MAX_OUTPUT_BYTES, "stdout size cap; past it the runner is killed"),
        "max_stderr_bytes": Option(int, DEFAULT_MAX_STDERR_BYTES, "how much of the end of stderr the raw capture keeps"),
        "kill_grace_ms": Option(int, 2000, "after SIGTERM on timeout, how long before SIGKILL"),
        "adopt_run_id": Option(bool, True, "give events that name another runId the capture's runId (logged)"),
    }
    ports = ("errors", "raw", "repairs")

    async def process(self, batches: AsyncIterator[Batch], out: Output) -> None:
        async for batch in batches:
            passing: list[int] = []
            for i, record in enumerate(batch.events or ()):
                if isinstance(record, dict) and record.get("$record") == INVOCATION:
                    if passing:
                        await out.send(batch.select(passing))
                        passing = []
                    await out.send(await self.run(record))
                else:
                    passing.append(i)
            if passing:
                await out.send(batch.select(passing) if len(passing) < len(batch) else batch)

    async def run(self, invocation: dict[str, Any]) -> Batch:
        """Run one invocation; returns the run's batch (and leaves the raw capture and any error on side ports)."""
        runner = invocation["runner"]
        request = invocation["input"]
        run_id = invocation["runId"]
        env = {**os.environ, **runner.get("env", {})}
        env.setdefault("PYTHONUNBUFFERED", "1")  # a Python runner's streamed lines reach us as they are printed
        outcome = await run_process(
            runner["command"], orjson.dumps(request), cwd=runner.get("cwd"), env=env,
            timeout_s=self.config["timeout_ms"] / 1000.0, max_stdout=self.config["max_output_bytes"],
            max_stderr=self.config["max_stderr_bytes"], grace_s=self.config["kill_grace_ms"] / 1000.0,
        )
        reply = read_reply(bytes(outcome.stdout)) if outcome.start_error is None else Reply()
        failure = self._failure(runner["path"], outcome, reply)
        source = f"{runner['path']}:stdout"
        batch = self._run_batch(invocation, outcome, reply, failure, source)
        capture = {
            "schemaVersion": SCHEMA_VERSION, "artifactType": RAW_CAPTURE, "id": run_id, "runId": run_id,
            "timestamp": request.get("timestamp"),
            "runner": {k: runner.get(k) for k in ("path", "foundBy", "kind", "command", "cwd")},
            "input": request, "process": outcome.as_record(),
            "stdout": _text(outcome.stdout), "stdoutBytes": outcome.stdout_bytes,
            "stdoutTruncated": outcome.stdout_bytes > len(outcome.stdout),
            "stderr": _text(outcome.stderr), "stderrBytes": outcome.stderr_bytes,
            "stderrTruncated": outcome.stderr_bytes > len(outcome.stderr),
            "streamedEvents": reply.streamed, "error": failure,
        }
        self.emit("raw", {"runId": run_id, "capture": capture, "run": batch.events[0],  # type: ignore[index]
                          "events": [e for e in batch.events[1:] if isinstance(e, dict)]})  # type: ignore[index]
        if failure is not None:
            self.emit("errors", failure | {"stage": self.id, "runId": run_id})
        return batch

    def _failure(self, path: str, outcome: ProcessOutcome, reply: Reply) -> dict[str, Any] | None:
        """The one error that explains a failed run: process trouble first, then what stdout held."""
        timeout_ms = self.config["timeout_ms"]
        if outcome.start_error is not None:
            return diagnostic("E_RUNNER_START_FAILED", f"runner {path!r} could not be started: {outcome.start_error}",
                              path=path, expected="a runner process that starts", received=outcome.start_error,
                              howToFix="Check the runner's #! line and interpreter, and that the file is a program.")
        if outcome.timed_out:
            return diagnostic("E_RUNNER_TIMEOUT", f"runner {path!r} did not finish within {timeout_ms} ms; its process group was killed",
                              path=path, expected=f"exit within {timeout_ms} ms", received=f"still running after {timeout_ms} ms")
        if outcome.too_large:
            cap = self.config["max_output_bytes"]
            return diagnostic("E_RUNNER_OUTPUT_TOO_LARGE", f"runner {path!r} wrote more than {cap} bytes on stdout; it was killed",
                              path=path, expected=f"at most {cap} bytes on stdout", received=f"more than {cap} bytes")
        if outcome.exit_code != 0:
            how = f"signal {outcome.signal}" if outcome.signal else f"exit code {outcome.exit_code}"
            return diagnostic("E_RUNNER_EXIT_NON_ZERO", f"runner {path!r} ended with {how}", path=path,
                              expected="exit code 0", received=how,
                              howToFix="Read the runner's stderr in the raw capture (*.raw.json); exit 0 and report "
                                       "failures as {\"status\": \"error\", \"error\": {...}} instead.")
        return reply.problem

    def _run_batch(self, invocation: dict[str, Any], outcome: ProcessOutcome, reply: Reply,
                   failure: dict[str, Any] | None, source: str) -> Batch:
        request = invocation["input"]
        run_id = invocation["runId"]
        facts = run_facts(reply.output)
        status = (reply.output or {}).get("status") if failure is None else "error"
        if failure is not None:
            retryable = failure["code"] in ("E_RUNNER_TIMEOUT", "E_RUNNER_START_FAILED")
            facts["error"] = {"code": failure["code"], "message": failure["message"], "retryable": retryable}
        record = run_record(
            runId=run_id, artifactId=run_id, timestamp=request.get("timestamp"), prompt=request.get("prompt"),
            query=request.get("query"), status=status, context=request.get("context"),
            timings={"startedAt": format_timestamp(outcome.started_at),
                     "endedAt": format_timestamp(outcome.ended_at or outcome.started_at),
                     "durationMs": round(outcome.duration_ms, 3)},
            **facts,
        )
        columns: list[Column] = [(record, None, None, None, None)]
        batch = Batch.from_columns(columns + reply.events, source=source)
        if self.config["adopt_run_id"]:
            self._adopt_run_id(batch, run_id)
        return batch

    def _adopt_run_id(self, batch: Batch, run_id: str) -> None:
        for i, event in enumerate(batch.events or ()):
            if i == 0 or not isinstance(event, dict):
                continue
            theirs = event.get("runId")
            if isinstance(theirs, str) and theirs and theirs != run_id:
                batch.replace(i, {**event, "runId": run_id})
                log_repair(self, "adopt_run_id", "changed",
                           f"event named runId {theirs!r}; the capture's run is {run_id!r}", batch, i,
                           run_id=run_id, field="runId", original=theirs, value=run_id, seqBefore=event.get("seq"))
