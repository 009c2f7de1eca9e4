#!/usr/bin/env python3
"""A minimal replay runner in Python: reads the request on stdin, prints the output object on stdout.

Copy it to .replay/runner.py and replace `answer` with a call to your agent. The events show the
canonical types: run_started, user_message, a tool call (called/completed), assistant_message and
run_completed. Logs go to stderr; stdout carries only the output object.
"""

import json
import sys
from datetime import UTC, datetime


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def answer(prompt: str, context: dict) -> tuple[str, dict]:
    """Stand-in for your agent: 'looks up' the prompt and echoes it."""
    lookup = {"query": prompt, "hits": len(prompt.split())}
    return f"Echo: {prompt}", lookup


def main() -> None:
    request = json.load(sys.stdin)
    run_id, prompt = request["runId"], request["prompt"]
    print(f"echo runner: got {prompt!r}", file=sys.stderr)
    events = []

    def event(kind: str, **payload) -> None:
        events.append({"seq": len(events) + 1, "timestamp": now(), "type": kind, "runId": run_id, "payload": payload})

    event("run_started", framework="custom")
    event("user_message", content=prompt)
    event("tool_called", toolName="lookup", callId="call_1", arguments={"query": prompt})
    response, result = answer(prompt, request.get("context") or {})
    event("tool_completed", toolName="lookup", callId="call_1", result=result)
    event("assistant_message", content=response)
    event("run_completed")
    output = {
        "status": "ok",
        "framework": "custom",
        "response": response,
        "events": events,
        "sources": ["lookup"],
        "usage": {"inputTokens": len(prompt.split()), "outputTokens": len(response.split()), "costUsd": 0},
    }
    json.dump(output, sys.stdout)


if __name__ == "__main__":
    main()
