"""The echo agent: a small agent loop with a model behind an interface, an echo tool and a JSONL session.

    python examples/echo-agent/agent.py --session session.jsonl < inputs.txt
    python examples/echo-agent/agent.py --replay scenarios/echo/session.jsonl --session again.jsonl < inputs.txt

Each stdin line is one user turn. A turn asks the model for a stream (one call per step, tagged with
the turn and step); a ``tool-call`` chunk runs the echo tool and starts the next step; a turn ends
when a step asks for no tool. stdout is the transcript; every event is appended to the session
journal as one JSON line (``assistant/chunk`` for each streamed chunk, plus ``session/*``,
``turn/*``, ``tool/*`` and ``usage`` lines). By default the model is ``scripted_model.ScriptedModel``;
``--replay SESSION`` uses ``replay``'s ReplayModel to serve the recorded calls instead, and exits 1
when the agent's calls leave the recording.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Protocol

TOOLS = [{"name": "echo", "description": "Repeat the given text.",
          "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]


class Model(Protocol):
    """What the loop needs from a model: one stream of chunks per (turn, step)."""

    def stream(self, turn: int, step: int, *, messages: list[dict[str, Any]],
               tools: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]: ...


def echo_tool(arguments: dict[str, Any]) -> str:
    return str(arguments.get("text", ""))


class SessionJournal:
    """Appends session events to a JSONL file, one line each, flushed as they happen."""

    def __init__(self, path: str | Path) -> None:
        self.handle = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self.session_id = str(uuid.uuid4())

    def write(self, kind: str, **fields: Any) -> None:
        line = {"type": kind, "ts": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"), **fields}
        self.handle.write(json.dumps(line, separators=(",", ":")) + "\n")
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()


async def run_turn(model: Model, journal: SessionJournal, out: IO[str], turn: int, text: str,
                   messages: list[dict[str, Any]], step_timeout: float | None) -> int:
    """One user turn; returns the number of model calls it made."""
    journal.write("turn/start", turn=turn, input=text)
    out.write(f"> {text}\n")
    messages.append({"role": "user", "content": text})
    step = 0
    while True:
        said: list[str] = []
        calls: list[dict[str, Any]] = []
        try:
            async with asyncio.timeout(step_timeout):
                async for chunk in model.stream(turn, step, messages=messages, tools=TOOLS):
                    journal.write("assistant/chunk", turn=turn, step=step, chunk=chunk)
                    if chunk["type"] == "text-delta":
                        said.append(chunk["text"])
                        out.write(chunk["text"])
                    elif chunk["type"] == "tool-call":
                        calls.append(chunk)
                    elif chunk["type"] == "finish":
                        journal.write("usage", turn=turn, step=step, usage=chunk.get("usage", {}))
        except TimeoutError:
            _model_failed(journal, out, turn, step, said, "TimeoutError", f"no answer within {step_timeout}s")
            break
        except Exception as exc:
            _model_failed(journal, out, turn, step, said, type(exc).__name__, str(exc))
            break
        if said:
            out.write("\n")
        messages.append({"role": "assistant", "content": "".join(said), "toolCalls": calls})
        if not calls:
            break
        for call in calls:
            journal.write("tool/call", turn=turn, step=step, toolCallId=call["toolCallId"], toolName=call["toolName"],
                          input=call["input"])
            started = time.perf_counter()
            output = echo_tool(call["input"])
            journal.write("tool/result", turn=turn, step=step, toolCallId=call["toolCallId"], output=output,
                          durationMs=round((time.perf_counter() - started) * 1000, 3))
            out.write(f"[tool {call['toolName']}] {json.dumps(call['input'])} -> {output}\n")
            messages.append({"role": "tool", "toolCallId": call["toolCallId"], "content": output})
        step += 1
    journal.write("turn/end", turn=turn, steps=step + 1)
    return step + 1


def _model_failed(journal: SessionJournal, out: IO[str], turn: int, step: int, said: list[str], name: str,
                  message: str) -> None:
    if said:
        out.write("\n")
    out.write(f"[model error] {name}: {message}\n")
    journal.write("turn/error", turn=turn, step=step, error={"name": name, "message": message})


async def run_session(model: Model, inputs: Iterable[str], journal: SessionJournal, out: IO[str],
                      step_timeout: float | None = None) -> None:
    journal.write("session/start", sessionId=journal.session_id, tools=[t["name"] for t in TOOLS])
    out.write(f"session {journal.session_id} started\n")
    messages: list[dict[str, Any]] = []
    turns = calls = 0
    for text in inputs:
        text = text.rstrip("\n")
        if not text:
            continue
        turns += 1
        calls += await run_turn(model, journal, out, turns, text, messages, step_timeout)
    journal.write("session/end", sessionId=journal.session_id, turns=turns, modelCalls=calls)
    out.write(f"session ended: {turns} turns, {calls} model calls\n")


async def run(model: Model, inputs: Iterable[str], session: str | Path, step_timeout: float | None = None) -> str:
    """One session in-process (for tests): the transcript it printed; the journal goes to ``session``."""
    out = io.StringIO()
    journal = SessionJournal(session)
    try:
        await run_session(model, inputs, journal, out, step_timeout)
    finally:
        journal.close()
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The echo agent (reads one user message per stdin line).")
    parser.add_argument("--session", default="session.jsonl", help="where to write the session journal")
    parser.add_argument("--replay", metavar="SESSION", help="serve the model calls recorded in SESSION (needs replay)")
    parser.add_argument("--override", metavar="FILE", help="with --replay: the override sidecar (default: beside SESSION)")
    parser.add_argument("--step-timeout", type=float, default=None, help="seconds a model call may take")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if args.replay:
        from replay.pipeline.engine.errors import ReplayError
        from replay.pipeline.testing import ReplayModel

        try:
            model: Any = ReplayModel.from_session(args.replay, args.override)
        except ReplayError as exc:
            sys.stderr.buffer.write(exc.to_json())
            return 2
    else:
        from scripted_model import ScriptedModel

        model = ScriptedModel()
    journal = SessionJournal(args.session)
    try:
        asyncio.run(run_session(model, sys.stdin, journal, sys.stdout, args.step_timeout))
    finally:
        journal.close()
    sys.stdout.flush()
    if args.replay:
        try:
            model.check_done()  # calls left over, or a replay error the loop swallowed as a model error
        except ReplayError as exc:
            sys.stderr.buffer.write(exc.to_json())
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
