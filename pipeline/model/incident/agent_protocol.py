"""The agent JSONL protocol: run the user's agent process and answer its tool calls, within bounds.

replay -> agent (stdin, one JSON object per line)::

    {"type": "task_start", "task_id": "inc_...", "input": {...the sanitized input...}}
    {"type": "tool_result", "call_id": "<the agent's id>", "ok": true, "result": ..., "error": null}

agent -> replay (stdout)::

    {"type": "tool_call", "call_id": "a1", "name": "lookup_order", "args": {...}}
    {"type": "log", ...}                                   (counted, never kept)
    {"type": "final_output", "output": {...}}  or  {"type": "task_error", "message": "..."}

The agent runs in a process group of its own. It is stopped (the whole group) as soon as a call
cannot be answered from the recording, when it breaks the protocol, and when it runs out of time,
messages or tool calls; after its terminal message its input ends, and it gets ``kill_grace_ms`` to exit, what it
sends meanwhile still read (a call or a second terminal message is kept for the match: a divergence); with exit code 0: one that
exits with another code after a final_output, or is ended by a signal (not replay's, after that grace) after either
terminal message, failed even so, an agent execution error (E_INCIDENT_AGENT_EXITED, naming the exit code or the signal).
After a task_error a non-zero exit code is what a failing process gives: no error. Its lines are read while
replay writes to it (a queue and a task of their own), so a tool_result larger than a pipe never waits on an agent
that is itself writing. When the agent exits, what it wrote is read for ``READER_GRACE_S`` more, then the conversation
is over (E_INCIDENT_AGENT_EXITED) even if a process it started still holds its stdout open. Its stderr is read and
counted but never kept, and no diagnostic quotes what it sent.
"""

from __future__ import annotations

import math
import os
import shlex
import shutil
import signal
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

import anyio
import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import ReplayError, diagnostic
from replay.pipeline.io.journals import describe_kind, path_kind
from replay.pipeline.io.processes import READER_GRACE_S, clear_group, kill_group, open_in_session, signal_name

FINISHED, STOPPED, FAILED = "finished", "stopped", "failed"


@dataclass(frozen=True)
class AgentLimits:
    timeout_ms: int = 60_000
    max_messages: int = 1000
    max_tool_calls: int = 200
    max_line_bytes: int = 1024 * 1024
    kill_grace_ms: int = 2000


@dataclass
class AgentRun:
    """What happened: the agent's protocol messages (logs left out) and how the process ended."""

    status: str = FAILED  # finished (sent a terminal message, then exited 0 (any code after a task_error) or lingered
    #                       past the grace), stopped (a call had no recorded answer), failed (also: a final_output, then a
    #                       non-zero exit; either terminal message, then a signal)
    messages: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None
    message_count: int = 0
    tool_calls: int = 0
    logs: int = 0
    stderr_bytes: int = 0
    exit_code: int | None = None
    signal: str | None = None
    duration_ms: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {"status": self.status, "messages": self.message_count, "tool_calls": self.tool_calls,
                "logs_withheld": self.logs, "stderr_bytes_withheld": self.stderr_bytes, "exit_code": self.exit_code,
                "signal": self.signal, "error": self.error}


class _Stop(Exception):
    """End of the conversation (the outcome is already recorded on the run)."""


def check_command(command: list[str], cwd: str | None = None) -> None:
    """Refuse an agent command that is empty or names a program that is not there or not executable: an invalid
    command (the incident specification's exit 2, nothing runs), whether named on PATH or by its path. What only
    starting it can tell (a program the system cannot execute) is E_INCIDENT_AGENT_START_FAILED, an agent error.
    ``cwd``: the folder the agent starts in, which a relative path to the program is relative to (as starting it
    resolves it: in that folder), not replay's own. Refused at ``command``, the option of ``spawn_agent`` that
    names it, which the stage names as the user gave it (``Stage.as_named``: ``--agent-command``, ``stages.agent.command``)."""
    if not command or not all(isinstance(a, str) and a for a in command):
        raise ReplayError("E_INCIDENT_AGENT_COMMAND_INVALID", "the agent command must be a non-empty list of non-empty strings",
                          path="command", expected='e.g. ["python3", "my_agent.py"]')
    program = command[0]
    at = os.path.join(cwd, program) if cwd and os.sep in program else program  # (join keeps an absolute program)
    if shutil.which(at) is None:  # on PATH, or a path (with a separator): an executable file, or None
        kind = path_kind(at) if os.sep in program else None  # what is there instead
        where = f" (in the agent's folder {cwd!r})" if at != program else ""
        what = ("was not found" if kind is None else "is not executable" if kind == "file"
                else f"is {describe_kind(kind)}, not a program")
        raise ReplayError("E_INCIDENT_AGENT_COMMAND_INVALID", f"the agent program {program!r}{where} {what}",
                          path="command", received=program,
                          howToFix=(f"Make it executable (chmod +x {shlex.quote(program)}) or run it with its interpreter, "
                                    "e.g. [\"python3\", \"my_agent.py\"]." if kind == "file" else
                                    "Name a program on PATH or give its path, e.g. [\"python3\", \"my_agent.py\"]."))



def _fail(run: AgentRun, code: str, message: str, **fields: Any) -> _Stop:
    run.status = FAILED
    run.error = diagnostic(code, message, **fields)
    return _Stop()


def _exited_badly(run: AgentRun, code: int | None) -> None:
    """An agent that sent its terminal message, then exited with a code other than 0 (after a final_output) or was ended
    by a signal: an agent execution error (the specification's exit 1), whether or not what it sent matches the recording."""
    how = f"exit code {code}" if code is not None and code >= 0 else f"signal {run.signal}"
    terminal = run.messages[-1]["type"]
    failed = terminal == "task_error"  # (then any exit code is fine: only a signal is an error)
    run.status = FAILED
    run.error = diagnostic("E_INCIDENT_AGENT_EXITED",
                           f"the agent ended ({how}) after its {terminal}, not " + ("by exiting" if failed else "with exit code 0"),
                           expected=("an exit (any code)" if failed else "exit code 0") + f" after the {terminal}",
                           received=f"{how}; stderr withheld ({run.stderr_bytes} bytes)",
                           howToFix=f"Make the agent {'exit' if failed else 'exit with code 0'} once it has sent its {terminal}: a "
                                    "non-zero exit after a final_output, or a signal after either terminal message, is an agent "
                                    "execution error even when what it sent matches the recording. Its stderr (withheld from the "
                                    "artifacts) may say why.")


def _reported_failure(run: AgentRun) -> bool:
    """Did the agent end with a task_error? Then an exit code other than 0 says the same as its message (a failing
    process exits so): no error. A signal still is one (the process crashed, or was killed, whatever it said)."""
    return bool(run.messages) and run.messages[-1].get("type") == "task_error"


PROTOCOL_FIELDS = ("type", "call_id", "name", "args", "output", "message")  # the members a protocol message has


def _protocol_path(path: str) -> str:
    """``path`` (a JSON path the agent's message has) as far as it names the protocol's own members: ``$.args`` for
    ``$.args.<any key the agent wrote>``, ``$`` for a member of the agent's own. A key the agent wrote (an argument's
    name, an output field's) is candidate content, and no diagnostic quotes that."""
    for name in PROTOCOL_FIELDS:
        if path == f"$.{name}" or path.startswith((f"$.{name}.", f"$.{name}[")):
            return f"$.{name}"
    return "$"


def _check_message(run: AgentRun, message: Any, number: int) -> dict[str, Any]:
    """A protocol message the agent may send; anything else ends the run (E_INCIDENT_AGENT_PROTOCOL_INVALID)."""
    kind = message.get("type") if isinstance(message, dict) else None
    problem = None
    if not isinstance(message, dict):
        problem = "is not a JSON object"
    elif kind == "tool_call":
        if not (isinstance(message.get("call_id"), str) and message["call_id"]):
            problem = "is a tool_call without a non-empty string call_id"
        elif not (isinstance(message.get("name"), str) and message["name"]):
            problem = "is a tool_call without a non-empty string name"
        elif not isinstance(message.get("args"), dict):
            problem = "is a tool_call whose args is not an object"
    elif kind == "final_output":
        if not isinstance(message.get("output"), dict):
            problem = "is a final_output whose output is not an object"
    elif kind == "task_error":
        if not isinstance(message.get("message"), str):
            problem = "is a task_error whose message is not a string"
    elif kind != "log":
        problem = "has a type the protocol does not have"
    if problem:
        raise _fail(run, "E_INCIDENT_AGENT_PROTOCOL_INVALID", f"agent message {number} {problem}",
                    expected="tool_call {call_id, name, args}, final_output {output}, task_error {message} or log",
                    received="withheld (candidate output is not copied into replay artifacts)")
    return message  # type: ignore[no-any-return]


async def run_agent(command: list[str], task_start: dict[str, Any], answer: Callable[[dict[str, Any]], dict[str, Any] | None],
                    limits: AgentLimits | None = None, *, cwd: str | None = None, env: dict[str, str] | None = None) -> AgentRun:
    """Run one conversation. ``answer`` gets each tool_call and returns the tool_result to send, or None
    to stop the agent there (the call has no recorded answer)."""
    limits = limits or AgentLimits()
    run = AgentRun()
    started = time.monotonic()
    environment = {**os.environ, **(env or {})}
    environment.setdefault("PYTHONUNBUFFERED", "1")
    try:
        process = await open_in_session(command, cwd=cwd, env=environment)
    except OSError as exc:
        run.error = diagnostic("E_INCIDENT_AGENT_START_FAILED", f"the agent command could not be started: {exc.strerror or exc}",
                               path="command", received=command[0] if command else None)  # (the option: named by the stage)
        return run
    pgid = process.pid
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    stdin, stdout, stderr = process.stdin, process.stdout, process.stderr

    # What replay sends goes through a queue its own task writes: a reply larger than the pipe holds is written while
    # the agent's lines are still read (an agent that logs before reading its tool_result would otherwise fill its
    # stdout while replay waits for it to read its stdin: both stuck until the timeout).
    outbox, queued = anyio.create_memory_object_stream[bytes](max_buffer_size=math.inf)

    def send(message: dict[str, Any]) -> None:
        outbox.send_nowait(exactjson.dumps(message) + b"\n")

    writer = anyio.CancelScope()  # cancelled when the conversation is over: what is still queued no longer matters

    async def write_stdin() -> None:
        with writer, suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            async for data in queued:
                await stdin.send(data)

    async def drain_stderr() -> None:
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            async for chunk in stderr:
                run.stderr_bytes += len(chunk)  # counted, never kept

    def parse(line: bytes) -> dict[str, Any]:
        """One message the agent sent (a line not blank): counted and checked, each alike, whether it came before its
        terminal message or after; one that is no protocol message (not JSON, a key written twice, one too many, not
        of the protocol) ends the run (E_INCIDENT_AGENT_PROTOCOL_INVALID, E_INCIDENT_AGENT_LIMIT_EXCEEDED)."""
        run.message_count += 1
        if run.message_count > limits.max_messages:
            raise _fail(run, "E_INCIDENT_AGENT_LIMIT_EXCEEDED", f"the agent sent more than {limits.max_messages} messages",
                        path="--max-messages", expected=f"at most {limits.max_messages}")
        try:
            parsed = exactjson.loads(line)
        except orjson.JSONDecodeError as exc:
            if exactjson.too_deep(exc):  # it may well be JSON: replay reads no deeper
                raise _fail(run, "E_INCIDENT_AGENT_PROTOCOL_INVALID", f"agent message {run.message_count} is nested deeper "
                            f"than {exactjson.MAX_DEPTH} levels, the most replay reads",
                            expected=f"one JSON object per line on stdout, at most {exactjson.MAX_DEPTH} levels deep",
                            received=f"more than {exactjson.MAX_DEPTH} levels ({len(line)} bytes)",
                            howToFix=f"Flatten what the agent sends to at most {exactjson.MAX_DEPTH} levels of arrays "
                                     "and objects.") from None
            raise _fail(run, "E_INCIDENT_AGENT_PROTOCOL_INVALID", f"agent message {run.message_count} is not valid JSON",
                        expected="one JSON object per line on stdout (logs go to stderr)",
                        received=f"withheld ({len(line)} bytes)") from None
        twice = exactjson.duplicate_keys(line, parsed)
        if twice:  # (only the last value would be compared with the recording: a call could match that does not)
            where = _protocol_path(twice[0])
            what = (f"writes its {where[2:]} key twice" if where == twice[0] else
                    "writes a key twice in one object" + (f" inside its {where[2:]}" if where != "$" else ""))
            raise _fail(run, "E_INCIDENT_AGENT_PROTOCOL_INVALID", f"agent message {run.message_count} {what}",
                        path=where, expected="each key once in an object",
                        received=f"{len(twice)} key(s) written twice; the message is withheld",
                        howToFix="Send each key once: a JSON reader keeps one of two values without a word.")
        return _check_message(run, parsed, run.message_count)

    async def handle(line: bytes) -> None:
        if not line.strip():
            return
        message = parse(line)
        kind = message["type"]
        if kind == "log":
            run.logs += 1
            return
        run.messages.append(message)
        if run.status == FINISHED:
            # sent after its terminal message, in the grace it has to exit (a tool_call, a second terminal message):
            # kept for the match to find (an extra call after the answer is a divergence, as any extra call is), and
            # the reading ends
            raise _Stop()
        if kind in ("final_output", "task_error"):
            run.status = FINISHED  # (what it sends in the grace it has to exit is still read and checked: ``handle``)
            writer.cancel()
            with suppress(Exception):
                await stdin.aclose()  # nothing more is sent: its input ends
            reading.deadline = anyio.current_time() + limits.kill_grace_ms / 1000.0
            return
        run.tool_calls += 1
        if run.tool_calls > limits.max_tool_calls:
            raise _fail(run, "E_INCIDENT_AGENT_LIMIT_EXCEEDED", f"the agent made more than {limits.max_tool_calls} tool calls",
                        path="--max-tool-calls", expected=f"at most {limits.max_tool_calls}")
        reply = answer(message)
        if reply is None:
            run.status = STOPPED
            raise _Stop()
        send({"type": "tool_result", "call_id": message["call_id"], **reply})

    def too_long() -> _Stop:
        return _fail(run, "E_INCIDENT_AGENT_LIMIT_EXCEEDED", f"an agent message is longer than {limits.max_line_bytes} bytes",
                     expected=f"at most {limits.max_line_bytes} bytes per line", received=f"more than {limits.max_line_bytes} bytes",
                     howToFix="Send each protocol message as one JSON line of at most that size; a config raises the limit "
                              "with the spawn_agent stage's max_line_bytes.")

    reading = anyio.CancelScope()  # cancelled READER_GRACE_S after the agent exited: a process it left holds its stdout

    async def watch_exit() -> None:
        await process.wait()
        await anyio.sleep(READER_GRACE_S)  # what it wrote before it exited is still read to the end
        reading.cancel()

    async def converse() -> None:
        send(task_start)
        pending = bytearray()
        marked = None  # does the agent's output start with a byte order mark (a .NET agent's)? skipped, as read skips one
        with reading:
            try:
                async for chunk in stdout:
                    pending += chunk
                    if marked is None and (len(pending) >= len(exactjson.UTF8_BOM) or b"\n" in pending):
                        marked = pending.startswith(exactjson.UTF8_BOM)
                        if marked:
                            del pending[:len(exactjson.UTF8_BOM)]
                    while True:
                        cut = pending.find(b"\n")
                        if cut < 0:
                            break
                        if cut > limits.max_line_bytes:  # a whole line that came in with its newline is held to the limit too
                            raise too_long()
                        line = bytes(pending[:cut])
                        del pending[: cut + 1]
                        await handle(line)
                    if len(pending) > limits.max_line_bytes:
                        raise too_long()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
        if pending.strip():
            await handle(bytes(pending))
        if run.status == FINISHED:
            raise _Stop()
        with anyio.move_on_after(limits.kill_grace_ms / 1000.0):
            await process.wait()
        code = process.returncode
        how = "still running" if code is None else f"exit code {code}" if code >= 0 else f"signal {signal_name(-code)}"
        what = "closed its output (still running)" if code is None else f"ended ({how})"
        raise _fail(run, "E_INCIDENT_AGENT_EXITED", f"the agent {what} before a final_output or task_error",
                    expected="a final_output or task_error message", received=f"{how}; stderr withheld ({run.stderr_bytes} bytes)")

    exited = False  # the agent ended on its own after its terminal message
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(drain_stderr)
            tasks.start_soon(write_stdin)
            tasks.start_soon(watch_exit)
            with anyio.move_on_after(limits.timeout_ms / 1000.0) as deadline:
                with suppress(_Stop):
                    await converse()
            if deadline.cancelled_caught and run.status != FINISHED:  # (not in the grace after its terminal message)
                run.status = FAILED
                run.error = diagnostic("E_INCIDENT_AGENT_TIMEOUT", f"the agent did not finish within {limits.timeout_ms} ms; it was stopped",
                                       path="--timeout-ms", expected=f"a terminal message within {limits.timeout_ms} ms")
            writer.cancel()
            with suppress(Exception):
                await stdin.aclose()
            if run.status == FINISHED:
                with anyio.move_on_after(limits.kill_grace_ms / 1000.0):
                    await process.wait()
                exited = process.returncode is not None  # on its own: not the SIGKILL below, past the grace
            else:
                kill_group(pgid, signal.SIGTERM)
                with anyio.move_on_after(limits.kill_grace_ms / 1000.0):
                    await process.wait()
            kill_group(pgid, signal.SIGKILL)
            await process.wait()
            tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                kill_group(pgid, signal.SIGKILL)
                await process.wait()
            await clear_group(pgid)  # whatever the agent left running in its group: killed, and gone before replay goes on
            with suppress(Exception):
                await process.aclose()  # its streams and their pipes (closing a stream alone leaves the pipe open)
    code = process.returncode
    run.exit_code = code
    if code is not None and code < 0:
        run.signal = signal_name(-code)
    if run.status == FINISHED and exited and code != 0 and not (code is not None and code > 0 and _reported_failure(run)):
        _exited_badly(run, code)
    run.duration_ms = (time.monotonic() - started) * 1000.0
    return run


