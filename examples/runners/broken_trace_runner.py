#!/usr/bin/env python3
"""A runner whose trace is broken on purpose, to show what `replay` heals.

Its events have: no run_started, an alias type (`tool_end` for tool_completed, `llm_message` for
assistant_message), an exact duplicate line, a seq that goes backwards and one that is a string,
a payload that is a string instead of an object, and no terminal event. The output object itself
is valid, so capture succeeds and the healed artifact and heal log show every repair.
"""

import json
import sys
from datetime import UTC, datetime, timedelta


def main() -> None:
    request = json.load(sys.stdin)
    run_id, prompt = request["runId"], request["prompt"]
    start = datetime.now(UTC)

    def at(ms: int) -> str:
        return (start + timedelta(milliseconds=ms)).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    called = {"seq": 2, "timestamp": at(10), "type": "tool_called", "runId": run_id,
              "payload": {"toolName": "get_portfolio", "callId": "c1"}}
    events = [
        # no run_started: the trace begins with the user's message
        {"seq": 1, "timestamp": at(0), "type": "user_message", "runId": run_id, "payload": {"content": prompt}},
        called,
        dict(called),  # the same event twice in a row (a retrying logger)
        {"seq": 2, "timestamp": at(40), "type": "tool_end", "runId": run_id,  # alias, and seq went backwards
         "payload": {"toolName": "get_portfolio", "callId": "c1", "result": {"AAPL": 0.4}}},
        {"seq": "5", "timestamp": at(50), "type": "llm_message", "runId": run_id,  # alias, seq is a string
         "payload": "AAPL is your largest holding."},  # payload is not an object
        # no run_completed: the trace just stops
    ]
    output = {"status": "ok", "framework": "hand-rolled", "response": "AAPL is your largest holding.",
              "events": events, "sources": ["portfolio_db"],
              "usage": {"inputTokens": 42, "outputTokens": 7, "costUsd": 0.0004}}
    json.dump(output, sys.stdout)


if __name__ == "__main__":
    main()
