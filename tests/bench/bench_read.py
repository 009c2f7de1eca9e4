"""Benchmark of `replay read` against baselines measured in the same run (run by `make bench`).

Generates (once, cached in tests/bench/data/) a ~200 MB journal of agent events and times, as
separate processes reading the same file into /dev/null:

- ceiling: a plain Python loop of orjson.loads + orjson.dumps per line;
- `jq -c .` (when jq is installed);
- `replay read FILE`;
- `replay read FILE | replay read -`.

Each is reported as events/s, MB/s, its ratio to the ceiling and its peak RSS (of the largest
process in the row, measured by a small launcher so the benchmark's own size stays out). Targets: `replay read`
at >= 0.8x the ceiling and >= 4x `jq -c .`. Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from journal_gen import cached_journal  # noqa: E402
from peak_rss import cpu_seconds, measured, peak_kib  # noqa: E402

# REPLAY_BENCH=/path/to/replay measures another build (e.g. the one before a change) against the same baselines
REPLAY = os.environ.get("REPLAY_BENCH") or str(Path(sys.executable).parent / "replay")
DEFAULT_MB = 200
TARGET_VS_CEILING = 0.8
TARGET_VS_JQ = 4.0

CEILING_LOOP = """
import sys, orjson
loads, dumps = orjson.loads, orjson.dumps
with open(sys.argv[1], "rb") as src, open("/dev/null", "wb") as out:
    write = out.write
    for line in src:
        write(dumps(loads(line)) + b"\\n")
"""


@dataclass
class Measure:
    name: str
    seconds: float
    peak_kib: int
    ok: bool
    cpu: float  # CPU seconds of every process of the row (a command in pieces: its pieces' too)


def run_pipeline(name: str, commands: list[list[str]], workdir: Path) -> Measure:
    """Start the commands joined by pipes, the last one into /dev/null; wall time until all have ended."""
    procs: list[subprocess.Popen] = []
    reports = [workdir / f"rss-{k}" for k in range(len(commands))]
    with open(os.devnull, "wb") as devnull:
        started = time.perf_counter()
        stdin = subprocess.DEVNULL
        for k, cmd in enumerate(commands):
            last = k == len(commands) - 1
            proc = subprocess.Popen(measured(cmd, reports[k]), stdin=stdin,
                                    stdout=devnull if last else subprocess.PIPE, stderr=subprocess.DEVNULL)
            if k:
                procs[-1].stdout.close()  # only the next process holds the pipe now
            procs.append(proc)
            stdin = proc.stdout
        ok = all(proc.wait() == 0 for proc in procs)
        seconds = time.perf_counter() - started
    return Measure(name, seconds, max(peak_kib(r) for r in reports), ok, sum(cpu_seconds(r) for r in reports))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=DEFAULT_MB, help="size of the generated journal (MiB)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per command; the fastest is reported")
    args = parser.parse_args()

    started = time.perf_counter()
    journal = cached_journal(HERE / "data", args.mb << 20)
    size = journal.stat().st_size
    with open(journal, "rb") as handle:
        events = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 24), b""))
    print(f"journal: {journal.relative_to(HERE.parent.parent)}  {size / 1e6:.1f} MB  {events:,} events  "
          f"(avg {size / events:.0f} B/line; ready in {time.perf_counter() - started:.1f}s)")
    subprocess.run(["cat", str(journal)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    root = HERE.parent.parent  # byte-compile as an install would (PYTHONDONTWRITEBYTECODE may be set)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "pipeline"), str(root / "stages")],
                   stdout=subprocess.DEVNULL, check=False)

    plans: list[tuple[str, list[list[str]]]] = [
        ("ceiling: orjson loads+dumps loop", [[sys.executable, "-c", CEILING_LOOP, str(journal)]]),
    ]
    jq = shutil.which("jq")
    if jq:
        plans.append(("jq -c .", [[jq, "-c", ".", str(journal)]]))
    plans += [
        ("replay read FILE", [[REPLAY, "read", str(journal)]]),
        ("replay read FILE | replay read -", [[REPLAY, "read", str(journal)], [REPLAY, "read", "-"]]),
    ]
    results: dict[str, Measure] = {}
    with tempfile.TemporaryDirectory() as workdir:
        for name, commands in plans:
            runs = [run_pipeline(name, commands, Path(workdir)) for _ in range(max(1, args.repeat))]
            results[name] = min(runs, key=lambda m: m.seconds)
        start = run_pipeline("start-up", [[REPLAY, "read", "/dev/null"]], Path(workdir))

    ceiling = results[plans[0][0]].seconds
    width = max(len(name) for name in results)
    print()
    print(f"{'command':<{width}}  {'seconds':>8}  {'events/s':>12}  {'MB/s':>7}  {'vs ceiling':>10}  {'peak RSS':>9}")
    print("-" * (width + 56))
    for name, m in results.items():
        flag = "" if m.ok else "  (FAILED)"
        print(f"{name:<{width}}  {m.seconds:>8.2f}  {events / m.seconds:>12,.0f}  {size / 1e6 / m.seconds:>7.1f}  "
              f"{ceiling / m.seconds:>9.2f}x  {m.peak_kib / 1024:>6.0f} MiB{flag}")

    replay = results["replay read FILE"]
    print()
    vs_ceiling = ceiling / replay.seconds
    print(f"replay read vs ceiling: {vs_ceiling:.2f}x  (target >= {TARGET_VS_CEILING}x)  "
          f"{'met' if vs_ceiling >= TARGET_VS_CEILING else 'NOT met'}")
    if jq:
        vs_jq = results["jq -c ."].seconds / replay.seconds
        print(f"replay read vs jq -c .: {vs_jq:.2f}x  (target >= {TARGET_VS_JQ}x)  "
              f"{'met' if vs_jq >= TARGET_VS_JQ else 'NOT met'}")
    else:
        print("jq not installed: the jq comparison was skipped")
    print(f"replay start-up (read of an empty input): {start.seconds:.2f}s, included in every replay row")
    return 0 if all(m.ok for m in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
