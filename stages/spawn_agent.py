"""SpawnAgent: runs the user's agent against each incident record, answering its tool calls from the recording only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import AsyncTransform, Option, Output
from replay.pipeline.io.journals import describe_kind, path_kind
from replay.pipeline.model.incident import records
from replay.pipeline.model.incident.agent_protocol import AgentLimits, check_command, run_agent
from replay.pipeline.model.incident.matching import Cursor, recorded_calls

DEFAULTS = AgentLimits()


@register("spawn_agent")
class SpawnAgent(AsyncTransform):
    summary = ("Run the agent command per incident (JSONL protocol: task_start, tool_call/tool_result, final_output or "
               "task_error). A call is answered only with the next recorded result when name and args match exactly; "
               "otherwise the agent is stopped. Sends the incident, then agent_message records and one agent_exit.")
    options = {
        "command": Option(list, [], "the agent command as an argument list, e.g. [\"python\", \"agent.py\"]", required=True),
        "cwd": Option(str, "", "working directory of the agent (empty: replay's)"),
        "timeout_ms": Option(int, DEFAULTS.timeout_ms, "the whole run's time limit; past it the agent's process group is killed", minimum=1),
        "max_messages": Option(int, DEFAULTS.max_messages, "most protocol messages the agent may send", minimum=1),
        "max_tool_calls": Option(int, DEFAULTS.max_tool_calls, "most tool calls the agent may make", minimum=1),
        "max_line_bytes": Option(int, DEFAULTS.max_line_bytes, "longest message line", minimum=1),
        "kill_grace_ms": Option(int, DEFAULTS.kill_grace_ms, "after a terminal message or SIGTERM, how long before SIGKILL", minimum=0),
    }

    def preflight(self, inputs: list[str]) -> None:
        cwd = self.config["cwd"] or None
        kind = path_kind(cwd) if cwd is not None else "directory"
        if kind != "directory":
            what = "does not exist" if kind is None else f"is {describe_kind(kind)}, not a folder"
            raise ReplayError("E_CONFIG_OPTION_INVALID", f"stage {self.id!r}: the agent's folder {cwd!r} {what}",
                              path=f"stages.{self.id}.cwd", expected="an existing folder", received=cwd,
                              howToFix="Give the folder the agent is to start in, or leave `cwd` out (replay's own).")
        check_command(self.config["command"], cwd)  # a program that is not there is refused before anything runs

    async def process(self, batches: AsyncIterator[Batch], out: Output) -> None:
        async for batch in batches:
            for record in batch.events or ():
                await out.send(Batch.of([record], source=batch.source))
                if records.kind_of(record) == records.INCIDENT:
                    await out.send(await self.replay(record, batch.source))

    async def replay(self, record: dict[str, Any], source: str) -> Batch:
        c = self.config
        limits = AgentLimits(c["timeout_ms"], c["max_messages"], c["max_tool_calls"], c["max_line_bytes"], c["kill_grace_ms"])
        cursor = Cursor(recorded_calls(record))

        def answer(message: dict[str, Any]) -> dict[str, Any] | None:
            call = cursor.answer(message["name"], message["args"])
            return None if call is None else {"ok": call.ok, "result": call.result, "error": call.error}

        task_start = {"type": "task_start", "task_id": record["incident_id"], "input": record["input"]}
        run = await run_agent(list(c["command"]), task_start, answer, limits, cwd=c["cwd"] or None)
        if run.error is not None:
            named = {"path": self.named("command")[1]} if run.error.get("path") == "command" else {}
            self.emit("errors", run.error | named | {"stage": self.id, "source": source})  # (--agent-command, or the key)
        out = [records.as_record(records.AGENT_MESSAGE, {"message": m}) for m in run.messages]
        out.append(records.as_record(records.AGENT_EXIT, run.summary() | {"duration_ms": round(run.duration_ms, 3)}))
        return Batch.of(out, source=f"<{self.id}>")
