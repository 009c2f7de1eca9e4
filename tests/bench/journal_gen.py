"""Synthetic agent journals for the benchmark and the memory test: realistic, seeded, written streaming."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

TOOLS = ("bash", "read_file", "write_file", "grep", "http_get", "python")
WORDS = (
    "agent", "journal", "stream", "replay", "tool", "call", "result", "error", "retry", "cache", "token",
    "model", "prompt", "file", "line", "batch", "async", "parse", "heal", "seq", "event", "runner",
)
START = datetime(2026, 1, 1, tzinfo=UTC)


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _payload(rng: random.Random, kind: str, call: int) -> dict:
    if kind == "user_message":
        return {"role": "user", "content": [{"type": "text", "text": _words(rng, rng.randint(8, 30))}]}
    if kind == "assistant_message":
        return {
            "role": "assistant",
            "content": [{"type": "text", "text": _words(rng, rng.randint(10, 35))}],
            "usage": {"inputTokens": rng.randint(100, 9000), "outputTokens": rng.randint(5, 900)},
            "model": "model-large-2026-01",
        }
    if kind == "tool_called":
        return {
            "callId": f"call_{call:08d}",
            "toolName": rng.choice(TOOLS),
            "args": {"path": f"/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py", "flags": ["-n", "-r"],
                     "limit": rng.randint(1, 500)},
        }
    if kind == "tool_completed":
        return {"callId": f"call_{call:08d}", "output": {"stdout": _words(rng, rng.randint(5, 25)), "exitCode": 0},
                "durationMs": rng.randint(1, 4000)}
    if kind == "tool_failed":
        return {"callId": f"call_{call:08d}", "error": {"code": "ETIMEDOUT", "message": _words(rng, 6)},
                "retryable": True}
    return {"reason": _words(rng, 3)}


def _stamp(clock: datetime) -> str:
    return clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{clock.microsecond // 1000:03d}Z"


def _run(rng: random.Random, run_no: int, clock: datetime) -> tuple[list[dict], datetime]:
    """One run: started, a few turns of user/assistant/tool traffic, then a terminal event."""
    kinds = ["run_started"]
    for _ in range(rng.randint(2, 8)):
        kinds += ["user_message", "assistant_message"]
        for _ in range(rng.randint(1, 4)):
            kinds += ["tool_called", rng.choice(("tool_completed", "tool_completed", "tool_completed", "tool_failed"))]
        kinds.append("assistant_message")
    kinds.append(rng.choice(("run_completed", "run_completed", "run_failed")))
    events, call, turn = [], 0, 0
    for seq, kind in enumerate(kinds, start=1):
        clock += timedelta(milliseconds=rng.randint(5, 3000))
        if kind == "tool_called":
            call += 1
        if kind == "user_message":
            turn += 1
        events.append({
            "seq": seq,
            "timestamp": _stamp(clock),
            "type": kind,
            "runId": "",
            "turn": turn,
            "payload": _payload(rng, kind, run_no * 1000 + call),
        })
    return events, clock


POOL_RUNS = 400  # distinct runs generated; the file repeats them under fresh run ids
RUN_ID_MARK = b"run_??????"


def write_journal(path: str | os.PathLike[str], target_bytes: int, seed: int = 7) -> tuple[int, int]:
    """Write runs until the file holds at least ``target_bytes``; returns (events, bytes).

    A pool of distinct runs is serialised once; the file cycles through it, giving each copy a new
    ``runId``. Written one run at a time, so memory stays small whatever the size.
    """
    rng = random.Random(seed)
    clock = START
    pool: list[tuple[bytes, int]] = []
    for n in range(POOL_RUNS):
        run, clock = _run(rng, n, clock)
        for event in run:
            event["runId"] = RUN_ID_MARK.decode()
        pool.append((b"".join(orjson.dumps(e) + b"\n" for e in run), len(run)))
    written = events = run_no = 0
    with open(path, "wb", buffering=1 << 20) as out:
        while written < target_bytes:
            chunk, count = pool[run_no % POOL_RUNS]
            run_no += 1
            chunk = chunk.replace(RUN_ID_MARK, b"run_%06d" % run_no)
            out.write(chunk)
            written += len(chunk)
            events += count
    return events, written


def _cached(directory: Path, name: str, write: Callable[[Path, int], object], target_bytes: int) -> Path:
    """``directory``/``name``-<size>MiB.jsonl, written by ``write`` on first use and kept (it is gitignored)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}-{target_bytes // (1 << 20)}MiB.jsonl"
    if not path.exists():
        tmp = path.with_suffix(".partial")
        write(tmp, target_bytes)
        os.replace(tmp, path)
    return path


def cached_journal(directory: Path, target_bytes: int) -> Path:
    """The benchmark journal in ``directory``, generated on first use and kept."""
    return _cached(directory, "journal", write_journal, target_bytes)


ALIASES = {"tool_called": "tool_call", "tool_completed": "tool_result", "assistant_message": "llm_message",
           "user_message": "user", "run_started": "start"}


def write_broken_journal(path: str | os.PathLike[str], target_bytes: int, share: float = 0.2, seed: int = 11) -> tuple[int, int]:
    """Like ``write_journal``, but about ``share`` of the events need one repair each: a type alias, a wrong
    seq (renumbered), or a missing terminal event (ensure_terminal). Returns (events, bytes)."""
    rng = random.Random(seed)
    clock = START
    written = events = run_no = 0
    with open(path, "wb", buffering=1 << 20) as out:
        while written < target_bytes:
            run, clock = _run(rng, run_no % POOL_RUNS, clock)
            run_no += 1
            lines = []
            for event in run:
                event["runId"] = f"run_{run_no:06d}"
                if rng.random() < share:
                    fix = rng.choice(("alias", "seq", "drop"))
                    if fix == "drop" and event["type"] in ("run_completed", "run_failed"):
                        continue
                    if fix == "alias" and event["type"] in ALIASES:
                        event["type"] = ALIASES[event["type"]]
                    else:
                        event["seq"] += 1000
                lines.append(orjson.dumps(event) + b"\n")
            chunk = b"".join(lines)
            out.write(chunk)
            written += len(chunk)
            events += len(lines)
    return events, written


def cached_broken_journal(directory: Path, target_bytes: int, share: float = 0.2) -> Path:
    return _cached(directory, f"broken-{int(share * 100)}pct", lambda path, size: write_broken_journal(path, size, share),
                   target_bytes)


def write_one_run_journal(path: str | os.PathLike[str], target_bytes: int, seed: int = 13) -> tuple[int, int]:
    """One clean run as long as the file: ``run_started``, turns of traffic as ``_run`` makes them (numbered on, the
    clock going on) until the file holds ``target_bytes``, then ``run_completed``. A run longer than the screen
    holds to judge it (a long agent session): the case the per-run fast lane does not take. Returns (events, bytes)."""
    rng = random.Random(seed)
    clock = START
    written = events = run_no = 0
    seq = 1
    with open(path, "wb", buffering=1 << 20) as out:
        first = {"seq": 1, "timestamp": _stamp(clock), "type": "run_started", "runId": "run_long", "turn": 0,
                 "payload": {"reason": "long"}}
        line = orjson.dumps(first) + b"\n"
        out.write(line)
        written, events = len(line), 1
        turn = 0
        while written < target_bytes:
            run, clock = _run(rng, run_no, clock)
            run_no += 1
            lines = []
            for event in run[1:-1]:  # (its own start and end left out)
                seq += 1
                turn += event["type"] == "user_message"
                lines.append(orjson.dumps({**event, "seq": seq, "runId": "run_long", "turn": turn}) + b"\n")
            chunk = b"".join(lines)
            out.write(chunk)
            written += len(chunk)
            events += len(lines)
        clock += timedelta(milliseconds=5)
        last = {"seq": seq + 1, "timestamp": _stamp(clock), "type": "run_completed", "runId": "run_long", "turn": turn,
                "payload": {}}
        line = orjson.dumps(last) + b"\n"
        out.write(line)
    return events + 1, written + len(line)


def cached_one_run_journal(directory: Path, target_bytes: int) -> Path:
    return _cached(directory, "one-run", write_one_run_journal, target_bytes)
