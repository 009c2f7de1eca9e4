"""SpawnRunner: runs the user's runner for each invocation record and sends the run record and its events.

For each invocation (from ``discover``) the runner starts in a session of its own (its own process
group), gets the request on stdin, and has ``timeout_ms`` to finish; on timeout the whole group gets
SIGTERM, then SIGKILL after ``kill_grace_ms``. When the runner exits, whatever it left running in
its group is killed, so no orphan outlives the capture; its pipes are read for ``processes.PIPE_GRACE_S`` more at most
(a process it started in a session of its own may hold them: it is left alone), and the run's ``durationMs`` ends at
the exit. stdout is capped at ``max_output_bytes``
(past it the group is killed: E_RUNNER_OUTPUT_TOO_LARGE); stderr keeps its last ``max_stderr_bytes``. Either is
cut between UTF-8 characters (``processes.straddled``): a runner that wrote only UTF-8 has none of its text in base64.
The runner inherits replay's environment (plus PYTHONUNBUFFERED=1 unless set, so a Python runner's
streamed lines are not held in a buffer when it dies).

Out on the main port: a run record (status, response, error, usage, ... from the output object, or
status "error" with the E_RUNNER_* code when the runner failed; a runner that reported a failed run with its
own ``error`` and then exited non-zero keeps that error: ``reported_error``), then the run's events: streamed lines
keep their original bytes and stdout line numbers, events of the output object their ``$.events[i]``.
Events that name another runId than the one capture gave the runner are given the capture's
(logged on ``repairs`` as rule ``adopt_run_id``); the raw port's ``events`` keep the runner's (``<id>.artifact.json``
is the run as the runner reported it). An event field of another type than the event schema's that heal cannot repair (``"step": {}``, ``"synthetic": 0``), or a ``$record`` key, is left out of the event and said on ``notices`` (``runner_events``). A run fact of the output object (``error``, ``framework``,
``sources``, ``usage``, ``response``) in another type than the contract's is kept in its normal form where it
has one (a bare error message, one source name; a repair) or else left out of the run record and said on
``notices`` (rule ``check_runner_output``, with the value and how to fix the runner). A last stdout line cut off
mid-write (the runner died), or a document over several lines stdout ends inside, is a ``drop_torn_line`` repair (as
heal's parse logs a torn line; ``Reply.tear``), whatever ended the runner. With ``repairs_as_notices`` (a
capture without heal, whose heal log is not written) each repair goes on ``notices`` instead, a warning on stderr: no
change capture makes to what the runner said goes unsaid. Out on ``raw``, one record per run::

    {"runId", "capture": <the raw capture document>, "run": <run record>, "events": [<events as the runner gave them>]}

The first runner failure is also reported on ``errors``, and so is each line, document or listed item of stdout left out
of the run (no event, no JSON, or what follows the output object: ``Reply.left_out``) that is not that failure, whatever
ended the runner (a crash or a timeout is the run's error, and what stdout held said after it), which is a notice for the
heal log too. Ctrl-C while the runner runs stops it (SIGINT to
its group, SIGKILL after ``kill_grace_ms``, or at once on a second Ctrl-C) and the run goes on as a failed one,
E_CAPTURE_INTERRUPTED, with every event it had streamed; the stage publishes ``interrupted`` (the signal's number)
so the command exits 130. SIGTERM and SIGHUP do the same (the group gets that signal; exit 143, 129). Further
interrupts do not cancel the run that writes it (``engine.interrupts.finishing``). An interrupt that comes once the
runner exited stops nothing: the run is as the runner ended it (no ``interrupted``; it cuts the read of its pipes short).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch, Column
from replay.pipeline.engine.errors import diagnostic
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import AsyncTransform, Option, Output
from replay.pipeline.io.processes import ProcessOutcome, run_process, signal_name
from replay.pipeline.io.run_files import RAW_CAPTURE
from replay.pipeline.model.events import RUN_COMPLETED, TERMINAL_TYPES, format_timestamp, run_record
from replay.pipeline.model.records import INVOCATION_RECORD
from replay.pipeline.model.repairs import DROP_TORN_LINE, REPORTED, log_repair
from replay.pipeline.model.runner_events import left_out
from replay.pipeline.model.runner_facts import RUNNER_EVENTS_RULE, RUNNER_FIELD_RULE, RunFacts, run_facts
from replay.pipeline.model.runner_protocol import Reply, read_reply

SCHEMA_VERSION = "1.0.0"
DEFAULT_TIMEOUT_MS = 120_000
DEFAULT_MAX_OUTPUT_BYTES = 32 * 1024 * 1024
DEFAULT_MAX_STDERR_BYTES = 1024 * 1024
EXIT_NON_ZERO = "E_RUNNER_EXIT_NON_ZERO"


def reported_error(reply: Reply, given: RunFacts) -> bool:
    """Did the runner answer in full that the run failed, and say why (an output object that holds, status "error", an
    `error` the run record keeps: ``given``, the reply's ``run_facts``)? Then that error is the run's, as the runner
    reported it, also when the runner then exits non-zero: E_RUNNER_EXIT_NON_ZERO is the capture's error (on ``errors``,
    and the raw capture's), not the run's."""
    output = reply.output
    return (reply.problem is None and output is not None and output.get("status") == "error"
            and "error" in given.facts)


def process_record(outcome: ProcessOutcome) -> dict[str, Any]:
    """What the raw capture says about the runner process."""
    return {
        "pid": outcome.pid, "exitCode": outcome.exit_code, "signal": outcome.signal, "timedOut": outcome.timed_out,
        "interrupted": outcome.interrupted, "outputTooLarge": outcome.too_large, "startError": outcome.start_error,
        "startedAt": format_timestamp(outcome.started_at),
        "endedAt": format_timestamp(outcome.ended_at or outcome.started_at), "durationMs": round(outcome.duration_ms, 3),
    }


def _kept(name: str, data: bytes | bytearray) -> dict[str, str]:
    """A stream of the runner as the raw capture keeps it: its text; when it is not UTF-8, that text with U+FFFD for
    the bytes that are not, and the bytes themselves too, exactly, in base64 (``<name>Base64``)."""
    raw = bytes(data)
    try:
        return {name: raw.decode("utf-8")}
    except UnicodeDecodeError:
        import base64

        return {name: raw.decode("utf-8", "replace"), f"{name}Base64": base64.b64encode(raw).decode("ascii")}


@register("spawn")
class SpawnRunner(AsyncTransform):
    summary = "Run the user's runner per invocation record (timeout kills its process group); send the run record and its events."
    options = {
        "timeout_ms": Option(int, DEFAULT_TIMEOUT_MS, "how long the runner may take before its process group is killed", minimum=1),
        "max_output_bytes": Option(int, DEFAULT_MAX_OUTPUT_BYTES, "stdout size cap; past it the runner is killed", minimum=1),
        "max_stderr_bytes": Option(int, DEFAULT_MAX_STDERR_BYTES, "how much of the end of stderr the raw capture keeps", minimum=0),
        "kill_grace_ms": Option(int, 2000, "after SIGTERM on timeout, how long before SIGKILL", minimum=0),
        "adopt_run_id": Option(bool, True, "give events that name another runId the capture's runId (logged)"),
        "repairs_as_notices": Option(bool, False, "send each repair on notices (warnings on stderr, unless a stage takes "
                                     "them), not on repairs: for a capture without heal, which writes no heal log"),
        "keep_on_interrupt": Option(bool, True, "on Ctrl-C (or SIGTERM, SIGHUP), stop the runner (that signal to its "
                                    "group, SIGKILL after kill_grace_ms or at a second interrupt) and send what it "
                                    "printed as a failed run marked interrupted, instead of cancelling the whole graph"),
    }
    ports = ("errors", "raw", "repairs", "notices")

    async def process(self, batches: AsyncIterator[Batch], out: Output) -> None:
        async for batch in batches:
            passing: list[int] = []
            for i, record in enumerate(batch.events or ()):
                if isinstance(record, dict) and record.get("$record") == INVOCATION_RECORD:
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
            runner["command"], exactjson.dumps(request), cwd=runner.get("cwd"), env=env,
            timeout_s=self.config["timeout_ms"] / 1000.0, max_stdout=self.config["max_output_bytes"],
            max_stderr=self.config["max_stderr_bytes"], grace_s=self.config["kill_grace_ms"] / 1000.0,
            keep_on_interrupt=self.config["keep_on_interrupt"],
        )
        if outcome.interrupted:
            self.publish("interrupted", outcome.interrupted_by)  # the command exits 128 + it once the files are written
        reply = read_reply(bytes(outcome.stdout)) if outcome.start_error is None else Reply()
        given = run_facts(reply.output)  # worked out once: the failure, the run record and its notes all read it
        own_error = reported_error(reply, given)
        failure = self._failure(runner["path"], outcome, reply, own_error)
        source = f"{runner['path']}:stdout"
        batch = self._run_batch(invocation, outcome, reply, given, failure, own_error, source)
        reported = [e for e in batch.events[1:] if isinstance(e, dict)]  # type: ignore[index]  # (the runner's events)
        self._leave_out_invalid_fields(batch, run_id)
        if self.config["adopt_run_id"]:
            self._adopt_run_id(batch, run_id)
        capture = {
            "schemaVersion": SCHEMA_VERSION, "artifactType": RAW_CAPTURE, "id": run_id, "runId": run_id,
            "timestamp": request.get("timestamp"),
            "runner": {k: runner.get(k) for k in ("path", "foundBy", "kind", "command", "cwd")},
            "input": request, "process": process_record(outcome),
            **_kept("stdout", outcome.stdout), "stdoutBytes": outcome.stdout_bytes,
            "stdoutTruncated": outcome.stdout_bytes > len(outcome.stdout),
            **_kept("stderr", outcome.stderr), "stderrBytes": outcome.stderr_bytes,
            "stderrTruncated": outcome.stderr_bytes > len(outcome.stderr),
            "streamedEvents": reply.streamed, "error": failure,
        }
        self.emit("raw", {"runId": run_id, "capture": capture, "run": batch.events[0],  # type: ignore[index]
                          "events": reported})
        if failure is not None:
            self.emit("errors", failure | {"stage": self.id, "runId": run_id})
        self._say_left_out(reply, failure, run_id, source)
        return batch

    def _say_left_out(self, reply: Reply, failure: dict[str, Any] | None, run_id: str, source: str) -> None:
        """Each line or listed item left out of the run (``Reply.left_out``) but the one that is the run's failure: an
        error on ``errors`` as the failure is (``--max-errors`` bounds them: E_ERRORS_SUPPRESSED), and a notice for the
        heal log (not with ``repairs_as_notices``, no heal log: its notices are warnings on stderr, the error said it)."""
        for problem in reply.left_out:
            if problem is failure:
                continue
            self.emit("errors", problem | {"stage": self.id, "runId": run_id})
            if not self.config["repairs_as_notices"]:
                log_repair(self, RUNNER_FIELD_RULE, REPORTED, problem["message"], run_id=run_id, source=source,
                           port="notices", **{k: v for k, v in problem.items() if k != "message"})

    def _failure(self, path: str, outcome: ProcessOutcome, reply: Reply, own_error: bool) -> dict[str, Any] | None:
        """The one error that explains a failed run: process trouble first, then what stdout held (``own_error``: the
        reply's ``reported_error``)."""
        timeout_ms = self.config["timeout_ms"]
        if outcome.interrupted_by is not None:
            name = signal_name(outcome.interrupted_by)
            return diagnostic("E_CAPTURE_INTERRUPTED", f"capture interrupted ({'Ctrl-C' if name == 'SIGINT' else name}) while "
                              f"runner {path!r} ran; it was stopped and what it had printed is kept", path=path,
                              expected="the runner to finish", received=f"{name} after {round(outcome.interrupted_after_ms)} ms")
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
            own = " after its output object reported the run failed (that error stays the run's)" if own_error else ""
            return diagnostic(EXIT_NON_ZERO, f"runner {path!r} ended with {how}{own}", path=path,
                              expected="exit code 0", received=how,
                              howToFix="Read the runner's stderr in the raw capture (*.raw.json); exit 0 and report "
                                       "failures as {\"status\": \"error\", \"error\": {...}} instead.")
        return reply.problem

    def _run_batch(self, invocation: dict[str, Any], outcome: ProcessOutcome, reply: Reply, given: RunFacts,
                   failure: dict[str, Any] | None, own_error: bool, source: str) -> Batch:
        """The run record (from ``given``, the reply's ``run_facts``, whose ``facts`` it takes over) and its events;
        ``own_error``: the reply's ``reported_error``."""
        request = invocation["input"]
        run_id = invocation["runId"]
        facts = given.facts
        status = (reply.output or {}).get("status") if failure is None else "error"
        own = failure is not None and failure["code"] == EXIT_NON_ZERO and own_error
        if failure is not None and not own:  # (a failed run's own error, as it reported it, stays: reported_error)
            retryable = failure["code"] in ("E_RUNNER_TIMEOUT", "E_RUNNER_START_FAILED", "E_CAPTURE_INTERRUPTED")
            facts["error"] = {"code": failure["code"], "message": failure["message"], "retryable": retryable}
        elif own and failure is not None and not isinstance(facts["error"].get("code"), str):  # (its own error says no code: the exit's, so the
            facts["error"] = {"code": failure["code"], **facts["error"]}  # summary line and a report name one)
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
        for note in given.notes:
            if note.field == "error" and failure is not None and not own:
                continue  # the run's error is the failure's
            log_repair(self, note.rule, "changed" if note.kept else REPORTED, note.message, run_id=run_id,
                       source=source, port=self.repairs_port if note.kept else "notices", **note.entry())
        for twice in reply.duplicates:  # every event is written anew in the artifacts: only the last value survives
            log_repair(self, RUNNER_FIELD_RULE, REPORTED,
                       f"stdout line {twice['line']} writes a key twice in one object ({', '.join(twice['keys'])}); only "
                       "the last value of each is kept", run_id=run_id, source=source, port="notices",
                       code="E_JSON_DUPLICATE_KEY", **twice, howToFix="Write each key once in the runner's output; "
                       "the raw capture (*.raw.json) keeps stdout as it was.")
        self._note_failed_though_completed(reply, failure, own, run_id, source)
        if reply.listed_again:  # every event streamed, then listed again in the output object: each kept once
            log_repair(self, RUNNER_EVENTS_RULE, "dropped",
                       f"the output object's `events` list the {reply.listed_again} events streamed before it again (and "
                       "then what is new, kept); each is kept once (a streaming runner's output object lists only what "
                       "it did not stream, or has \"events\": [])", run_id=run_id,
                       source=source, port=self.repairs_port, field="events", count=reply.listed_again)
        if reply.torn is not None:  # the runner died mid-write: what it was cut off in is no event (as heal drops a line)
            log_repair(self, DROP_TORN_LINE, "dropped", reply.torn_said, run_id=run_id, source=source,
                       port=self.repairs_port, **reply.torn)
        return batch

    def _note_failed_though_completed(self, reply: Reply, failure: dict[str, Any] | None, own: bool, run_id: str,
                                      source: str) -> None:
        """A run capture failed (``failure``, not the runner's ``own`` error) whose events, as the runner gave them, end
        with run_completed: the record's status "error" is capture's, not the runner's, and a notice says why (the
        events are kept; validate warns that the two disagree)."""
        if failure is None or own:
            return
        ended = next((e.get("type") for e, *_ in reply.events if isinstance(e, dict) and e.get("type") in TERMINAL_TYPES), None)
        if ended != RUN_COMPLETED:
            return
        said = (reply.output or {}).get("status")
        log_repair(self, RUNNER_FIELD_RULE, REPORTED,
                   f"the runner's events end with run_completed{f' and it answered status {said!r}' if said else ''}, "
                   f"but capture failed the run ({failure['code']}: {failure['message']}): the run record says status "
                   "\"error\"; the events are kept as the runner gave them", run_id=run_id, source=source,
                   port="notices", code=failure["code"], field="status", value="error",
                   **({"original": said} if said else {}))

    @property
    def repairs_port(self) -> str:
        return "notices" if self.config["repairs_as_notices"] else "repairs"

    def _leave_out_invalid_fields(self, batch: Batch, run_id: str) -> None:
        """Leave out of each event the fields of another type than the event schema's that heal does not repair, and a
        ``$record`` key (``runner_events``): each a notice, so the healed artifact and the journal validate."""
        for i, event in enumerate(batch.events or ()):
            if i == 0 or not isinstance(event, dict):
                continue
            kept, notes = left_out(event)
            if not notes:
                continue
            batch.replace(i, kept)
            for note in notes:
                log_repair(self, RUNNER_FIELD_RULE, REPORTED, note.message, batch, i, run_id=run_id, port="notices",
                           seqBefore=event.get("seq"), **note.entry())

    def _adopt_run_id(self, batch: Batch, run_id: str) -> None:
        for i, event in enumerate(batch.events or ()):
            if i == 0 or not isinstance(event, dict):
                continue
            theirs = event.get("runId")
            if isinstance(theirs, str) and theirs and theirs != run_id:
                batch.replace(i, {**event, "runId": run_id})
                log_repair(self, "adopt_run_id", "changed",
                           f"event named runId {theirs!r}; the capture's run is {run_id!r}", batch, i,
                           run_id=run_id, port=self.repairs_port, field="runId", original=theirs, value=run_id,
                           seqBefore=event.get("seq"))
