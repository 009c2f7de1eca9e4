#!/usr/bin/env python3
"""A scriptable agent for the incident replay tests: follows a JSON plan given as argv[1].

Steps: {"call": NAME, "args": {...}} (waits for the tool_result), {"final": {...}}, {"error": "message"},
{"log": "text"} (a protocol log message), {"stderr": "text"}, {"raw": "a line"} (written as is),
{"exit": code}, {"kill": "SIGKILL"} (sends itself that signal), {"sleep": seconds}, {"close_stdout": true} (closes stdout and goes on), {"long": N} (a line of N bytes), {"child": PIDFILE} (starts a sleeping child and writes its pid there).
Strings "$input.KEY" and "$last.KEY" are replaced by the task input's / the last tool result's value. With argv[2], every message received is appended there as JSONL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

PLAN = json.loads(sys.argv[1])
TRANSCRIPT = sys.argv[2] if len(sys.argv) > 2 else None


def receive() -> dict[str, Any]:
    line = sys.stdin.readline()
    if not line:
        sys.exit(4)
    message = json.loads(line)
    if TRANSCRIPT:
        with open(TRANSCRIPT, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(message) + "\n")
    return message


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def fill(value: Any, task: dict[str, Any], last: Any) -> Any:
    if isinstance(value, str) and value.startswith("$input."):
        return task["input"][value[len("$input."):]]
    if isinstance(value, str) and value.startswith("$last."):
        return (last or {}).get(value[len("$last."):])
    if isinstance(value, dict):
        return {k: fill(v, task, last) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, task, last) for v in value]
    return value


def main() -> None:
    task = receive()
    last: Any = None
    for n, step in enumerate(PLAN, 1):
        if "call" in step:
            send({"type": "tool_call", "call_id": f"x{n}", "name": step["call"], "args": fill(step.get("args", {}), task, last)})
            reply = receive()
            last = reply.get("result")
        elif "final" in step:
            send({"type": "final_output", "output": fill(step["final"], task, last)})
        elif "error" in step:
            send({"type": "task_error", "message": step["error"]})
        elif "log" in step:
            send({"type": "log", "level": "info", "message": step["log"]})
        elif "stderr" in step:
            print(step["stderr"], file=sys.stderr, flush=True)
        elif "raw" in step:
            sys.stdout.write(step["raw"] + "\n")
            sys.stdout.flush()
        elif "long" in step:
            sys.stdout.write("x" * step["long"] + "\n")
            sys.stdout.flush()
        elif "exit" in step:
            sys.exit(step["exit"])
        elif "kill" in step:
            os.kill(os.getpid(), getattr(signal, step["kill"]))
            time.sleep(10)  # (the signal ends it first)
        elif "close_stdout" in step:
            os.close(1)
        elif "sleep" in step:
            time.sleep(step["sleep"])
        elif "child" in step:
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
            with open(step["child"], "w", encoding="utf-8") as handle:
                handle.write(str(child.pid))


if __name__ == "__main__":
    main()
