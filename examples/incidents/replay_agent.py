#!/usr/bin/env python3
"""The fictional support agent of the refund incident: a fixed policy speaking replay's incident JSONL protocol.

It reads task_start on stdin, looks the order up, refunds it, and retries the refund once when the
payments tool times out, without asking whether the first attempt went through. That retry is the
bug: in the recorded incident the first refund committed despite the timeout, so the customer was
refunded twice. No model, no network: replace `policy` with your own agent's adapter.

With --fixed it follows the corrected policy instead: after a timeout it asks whether a refund exists
before trying again. That is a different path from the recording, so a replay reports a divergence
at that call (and stops the agent there): validate a fix with new recordings or a test environment.

Protocol (one JSON object per line): replay sends task_start and tool_result; the agent sends
tool_call, then final_output or task_error. Logs go to stderr (replay counts them and keeps nothing).
"""

from __future__ import annotations

import json
import sys
from typing import Any

_calls = 0
FIXED = "--fixed" in sys.argv[1:]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def receive() -> dict[str, Any]:
    line = sys.stdin.readline()
    if not line:
        sys.exit("replay_agent: stdin closed before the expected message")
    return json.loads(line)


def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """One tool call; the reply is the recorded tool_result."""
    global _calls
    _calls += 1
    send({"type": "tool_call", "call_id": f"agent-{_calls}", "name": name, "args": args})
    reply = receive()
    if reply.get("type") != "tool_result":
        sys.exit(f"replay_agent: expected tool_result, got {reply.get('type')!r}")
    return reply


def policy(task: dict[str, Any]) -> dict[str, Any]:
    order_id = task["input"]["order_id"]
    order = call("lookup_order", {"order_id": order_id})
    if not order["ok"]:
        return {"type": "task_error", "message": "order lookup failed"}
    details = order["result"]
    refund = {"order_id": order_id, "amount_cents": details["amount_cents"], "currency": details["currency"]}
    for attempt in (1, 2):
        reply = call("issue_refund", refund)
        if reply["ok"]:
            return {"type": "final_output", "output": {"status": "refunded", "order_id": order_id,
                                                       "refund_id": reply["result"]["refund_id"],
                                                       "amount_cents": refund["amount_cents"], "currency": refund["currency"]}}
        error = reply.get("error") or {}
        print(f"replay_agent: refund attempt {attempt} failed ({error.get('code')}); retrying", file=sys.stderr)
        if error.get("code") != "TIMEOUT":
            break
        if FIXED:
            existing = call("list_refunds", {"order_id": order_id})
            if existing["ok"] and existing["result"].get("refunds"):
                refund_id = existing["result"]["refunds"][0]["refund_id"]
                return {"type": "final_output", "output": {"status": "refunded", "order_id": order_id, "refund_id": refund_id,
                                                           "amount_cents": refund["amount_cents"], "currency": refund["currency"]}}
    return {"type": "task_error", "message": "refund failed"}


def main() -> None:
    task = receive()
    if task.get("type") != "task_start":
        sys.exit(f"replay_agent: expected task_start, got {task.get('type')!r}")
    send(policy(task))


if __name__ == "__main__":
    main()
