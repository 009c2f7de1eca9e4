#!/usr/bin/env python3
"""A streaming runner that dies halfway: prints each event as a JSON line as it happens, then crashes.

Streaming is how a runner makes sure a crash or a timeout loses nothing: every line printed (and
flushed) before the end is kept in the raw capture and in the artifacts, which record the run as
status "error". A streaming runner that finishes prints the output object last, on its own line,
with `"events": []` (its events were already streamed). Pass context {"crash": false} to see that.
"""

import json
import sys
from datetime import UTC, datetime


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def main() -> None:
    request = json.load(sys.stdin)
    run_id, prompt = request["runId"], request["prompt"]
    crash = (request.get("context") or {}).get("crash", True)
    seq = 0

    def stream(kind: str, **payload) -> None:
        nonlocal seq
        seq += 1
        line = {"seq": seq, "timestamp": now(), "type": kind, "runId": run_id, "payload": payload}
        print(json.dumps(line), flush=True)

    stream("run_started")
    stream("user_message", content=prompt)
    stream("tool_called", toolName="search", callId="s1", arguments={"q": prompt})
    if crash:
        raise RuntimeError("search backend went away (this runner crashes on purpose)")
    stream("tool_completed", toolName="search", callId="s1", result={"hits": 3})
    stream("assistant_message", content=f"Found 3 results for {prompt!r}")
    stream("run_completed")
    print(json.dumps({"status": "ok", "response": f"Found 3 results for {prompt!r}", "events": []}), flush=True)


if __name__ == "__main__":
    main()
