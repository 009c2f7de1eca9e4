"""Benchmark of `replay walk --at` near the start of a big journal, against reading all of it (run by `make bench`).

Generates (once, cached in tests/bench/data/) a ~1 GiB flows-style journal: a run of many steps,
each scheduled, started, charged and completed with a verdict. Then times, as separate processes
on the same file (output to /dev/null):

- baseline: a plain Python loop of orjson.loads + orjson.dumps over every line (what reading the
  whole journal costs at best);
- `replay walk FILE --at step-2` and the same with `--json`: a pre-scan finds where step-2 ends,
  then the walk reads only up to there;
- with `--full`, `replay walk FILE` over every record too.

Each row: seconds, peak RSS (of the command alone, measured by a small launcher) and how many times
faster than the baseline. Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_read import CEILING_LOOP, REPLAY  # noqa: E402
from peak_rss import measured, peak_kib  # noqa: E402

DEFAULT_MB = 1024
BASELINE_LOOP = CEILING_LOOP  # the orjson loads+dumps loop every bench compares with

COMMANDS = ("git status", "make test", "pytest -q tests/unit", "curl -s https://example.test/api", "ls -la src")
PROMPTS = ("Summarize the diff in one sentence.", "Classify the failing test.", "Draft the release note.")


def _step(rng: random.Random, run_id: str, n: int, ms: int) -> list[dict]:
    """The records of one step: scheduled, started, (spend,) completed with a verdict."""
    sid = f"step-{n}"
    llm = rng.random() < 0.4
    spec = {"type": "llm", "prompt": rng.choice(PROMPTS)} if llm else {"type": "run", "command": rng.choice(COMMANDS)}
    out = [
        {"kind": "step.scheduled", "run_id": run_id, "step_id": sid, "ts": ms, "step": spec},
        {"kind": "step.attempt.started", "run_id": run_id, "step_id": sid, "ts": ms + 1, "attempt": 1},
    ]
    if llm:
        out.append({"kind": "spend", "run_id": run_id, "step_id": sid, "ts": ms + 2,
                    "tokens_in": rng.randint(200, 9000), "tokens_out": rng.randint(10, 900), "usd": rng.randint(1, 900) / 1e5})
        out.append({"kind": "step.completed", "run_id": run_id, "step_id": sid, "ts": ms + 3,
                    "verification": {"type": "json_schema", "verdict": "ok"}, "output": {"text": "x" * rng.randint(20, 120)}})
    else:
        code = 0 if rng.random() < 0.97 else 1
        out.append({"kind": "step.completed", "run_id": run_id, "step_id": sid, "ts": ms + 3, "exit_code": code,
                    "verification": {"type": "exit_code", "verdict": "ok" if code == 0 else "fail"},
                    "stdout": "y" * rng.randint(10, 200)})
    return out


def write_flows_journal(path: Path, size: int, seed: int = 7) -> int:
    """Write a flows-style journal of at least ``size`` bytes, streaming; its size in bytes."""
    rng = random.Random(seed)
    run_id = "bench-run-1"
    written = 0
    with open(path, "wb") as out:
        head = orjson.dumps({"kind": "run.spawned", "run_id": run_id, "ts": 0, "flow": "bench"}) + b"\n"
        out.write(head)
        written += len(head)
        n = 0
        while written < size:
            block = []
            for _ in range(1000):
                n += 1
                block += [orjson.dumps(r) for r in _step(rng, run_id, n, n * 10)]
            data = b"\n".join(block) + b"\n"
            out.write(data)
            written += len(data)
        tail = orjson.dumps({"kind": "run.completed", "run_id": run_id, "ts": n * 10 + 5, "outcome": "success"}) + b"\n"
        out.write(tail)
        written += len(tail)
    return written


def cached_flows_journal(folder: Path, size: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"walk-flows-{size >> 20}MiB.jsonl"
    if not path.exists() or path.stat().st_size < size:
        tmp = path.with_suffix(".tmp")
        write_flows_journal(tmp, size)
        os.replace(tmp, path)
    return path


def timed(command: list[str], report: Path) -> tuple[float, int, int]:
    """(seconds, peak RSS KiB, exit code) of one command with stdout to /dev/null."""
    with open(os.devnull, "wb") as devnull:
        started = time.perf_counter()
        done = subprocess.run(measured(command, report), stdout=devnull, stderr=subprocess.PIPE, check=False)
        seconds = time.perf_counter() - started
    return seconds, peak_kib(report), done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=DEFAULT_MB, help="size of the generated journal (MiB)")
    parser.add_argument("--at", default="step-2", help="the step to walk to (near the start)")
    parser.add_argument("--full", action="store_true", help="also time a walk over every record")
    args = parser.parse_args()

    started = time.perf_counter()
    journal = cached_flows_journal(HERE / "data", args.mb << 20)
    size = journal.stat().st_size
    print(f"journal: {journal.relative_to(HERE.parent.parent)}  {size / 1e6:.1f} MB  "
          f"(ready in {time.perf_counter() - started:.1f}s)")
    subprocess.run(["cat", str(journal)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache

    plans = [
        ("baseline: orjson loads+dumps, whole file", [sys.executable, "-c", BASELINE_LOOP, str(journal)]),
        (f"replay walk FILE --at {args.at}", [REPLAY, "walk", str(journal), "--at", args.at]),
        (f"replay walk FILE --at {args.at} --json", [REPLAY, "walk", str(journal), "--at", args.at, "--json"]),
    ]
    if args.full:
        plans.append(("replay walk FILE (every record)", [REPLAY, "walk", str(journal)]))
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for name, command in plans:
            rows.append((name, *timed(command, Path(workdir) / "rss")))
        startup = timed([REPLAY, "walk", str(HERE / ".." / "fixtures" / "walk" / "hello.jsonl")], Path(workdir) / "rss")

    baseline = rows[0][1]
    width = max(len(r[0]) for r in rows)
    print()
    print(f"{'command':<{width}}  {'seconds':>8}  {'peak RSS':>9}  {'vs baseline':>11}")
    print("-" * (width + 34))
    for name, seconds, peak, code in rows:
        flag = "" if code == 0 else f"  (exit {code})"
        print(f"{name:<{width}}  {seconds:>8.2f}  {peak / 1024:>5.0f} MiB  {baseline / seconds:>10.1f}x{flag}")
    print()
    print(f"replay start-up (a walk of a 9-line journal): {startup[0]:.2f}s, included in every replay row")
    return 0 if all(r[3] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
