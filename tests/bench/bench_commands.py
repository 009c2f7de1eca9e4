"""Benchmark of read, validate, heal and report against baselines measured in the same run (`make bench`).

Generates (once, cached in tests/bench/data/) a clean journal, one clean journal that is a single run (a long
session: longer than the fast lane holds to judge a run), and one where ~20% of the events need a
repair (aliases, wrong seq numbers, missing terminal events), and times each command as its own process
(or pipeline) into /dev/null, next to a plain Python loop of orjson.loads + orjson.dumps per line and
`jq -c .` over the same file, and the floor of a clean heal in Python (a loop that checks each line by a msgspec decode
of its head and writes its bytes). Ratios are to the orjson loop on the same file (wall time), each row the fastest of
``--repeat`` runs (3). validate, heal and report
of one file cut it into pieces run at once on every core (``--workers``, the default); the ``--workers 1`` rows are
the same commands in one process, and the CPU column adds up every process of a row. Peak RSS is the largest
process of a row. Targets (issue 11) are printed with "met" / "NOT met"; nothing is asserted.

    python tests/bench/bench_commands.py                 # 100 MB journals
    python tests/bench/bench_commands.py --mb 200 --repeat 5
    python tests/bench/bench_commands.py --rss 100,1000  # also: peak RSS at 100 MB and 1 GB
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_read import CEILING_LOOP, REPLAY, Measure, run_pipeline  # noqa: E402
from journal_gen import cached_broken_journal, cached_journal, cached_one_run_journal  # noqa: E402

# command name -> (target ratio to the orjson loop, which journal)
TARGETS = {
    "replay read FILE": 1.5,
    "replay validate FILE": 1.2,
    "replay read FILE | replay heal (clean)": 1.2,
    "replay heal FILE (clean)": 1.2,
    "replay report FILE": 0.8,
    "replay report --format json FILE": 0.8,
    "replay read FILE | replay heal (20% repairs)": 0.6,
}
RSS_LIMIT_MIB = 150
# What heal of a clean journal cannot go below in Python (no target, a reference): each line checked by a msgspec decode
# of the fields a clean run's check reads, and written as its bytes, in a plain loop (no start-up, no engine).
FLOOR_LOOP = """
import sys, msgspec
class Head(msgspec.Struct, gc=False):
    seq: int
    timestamp: str
    type: str
    runId: str
decode = msgspec.json.Decoder(Head).decode
with open(sys.argv[1], "rb") as src, open("/dev/null", "wb") as out:
    write = out.write
    for line in src:
        decode(line)
        write(line)
"""


def plans(clean: Path, broken: Path, long: Path) -> list[tuple[str, Path, list[list[str]]]]:
    c, b, one = str(clean), str(broken), str(long)
    return [
        ("replay read FILE", clean, [[REPLAY, "read", c]]),
        ("replay validate FILE", clean, [[REPLAY, "validate", "--in", c]]),
        ("replay read FILE | replay heal (clean)", clean, [[REPLAY, "read", c], [REPLAY, "heal"]]),
        ("replay heal FILE (clean)", clean, [[REPLAY, "heal", c]]),
        ("replay report FILE", clean, [[REPLAY, "report", c]]),
        ("replay report --format json FILE", clean, [[REPLAY, "report", "--format", "json", c]]),
        ("replay read FILE | replay heal (20% repairs)", broken, [[REPLAY, "read", b], [REPLAY, "heal"]]),
        ("replay heal FILE (20% repairs)", broken, [[REPLAY, "heal", b]]),
        # one clean run as long as the file (a long session): longer than the screen holds, so the slow way
        ("replay validate FILE (one run)", long, [[REPLAY, "validate", "--in", one]]),
        ("replay heal FILE (one run)", long, [[REPLAY, "heal", one]]),
        ("replay report FILE (one run)", long, [[REPLAY, "report", one]]),
        # the same in one process (--workers 1): what each core does, where the rows above cut the file into pieces
        ("replay validate --workers 1 FILE", clean, [[REPLAY, "validate", "--workers", "1", c]]),
        ("replay heal --workers 1 FILE (clean)", clean, [[REPLAY, "heal", "--workers", "1", c]]),
        ("replay report --workers 1 FILE", clean, [[REPLAY, "report", "--workers", "1", c]]),
        ("replay report --workers 1 --format json FILE", clean, [[REPLAY, "report", "--workers", "1", "--format", "json", c]]),
        ("replay heal --workers 1 FILE (20% repairs)", broken, [[REPLAY, "heal", "--workers", "1", b]]),
    ]


def lines_in(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 24), b""))


def best(name: str, commands: list[list[str]], workdir: Path, repeat: int) -> Measure:
    runs = [run_pipeline(name, commands, workdir) for _ in range(max(1, repeat))]
    return min(runs, key=lambda m: m.seconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100, help="size of the generated journals (MiB)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per command; the fastest is reported (runs a "
                        "minute apart vary by up to ~15%% on a shared machine, the baselines' too)")
    parser.add_argument("--rss", default="", help="comma-separated sizes (MiB) to measure peak RSS at, e.g. 100,1000")
    args = parser.parse_args()

    started = time.perf_counter()
    clean = cached_journal(HERE / "data", args.mb << 20)
    broken = cached_broken_journal(HERE / "data", args.mb << 20)
    long = cached_one_run_journal(HERE / "data", args.mb << 20)
    journals = {clean: "clean", broken: "20% repairs", long: "one run"}
    sizes = {p: (p.stat().st_size, lines_in(p)) for p in journals}
    for path, (size, events) in sizes.items():
        print(f"journal: {path.relative_to(HERE.parent.parent)}  {size / 1e6:.1f} MB  {events:,} events")
    print(f"(ready in {time.perf_counter() - started:.1f}s)")
    for path in journals:
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    root = HERE.parent.parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "pipeline"), str(root / "stages")],
                   stdout=subprocess.DEVNULL, check=False)

    jq = shutil.which("jq")
    results: list[tuple[str, Path, Measure]] = []
    ceilings: dict[Path, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for path, label in journals.items():
            name = f"orjson loads+dumps loop ({label})"
            m = best(name, [[sys.executable, "-c", CEILING_LOOP, str(path)]], workdir, args.repeat)
            ceilings[path] = m.seconds
            results.append((name, path, m))
        results.append(("msgspec check+copy loop (clean)", clean,
                        best("floor", [[sys.executable, "-c", FLOOR_LOOP, str(clean)]], workdir, args.repeat)))
        if jq:
            results.append(("jq -c . (clean)", clean, best("jq", [[jq, "-c", ".", str(clean)]], workdir, args.repeat)))
        for name, path, commands in plans(clean, broken, long):
            results.append((name, path, best(name, commands, workdir, args.repeat)))
        start = run_pipeline("start-up", [[REPLAY, "read", "/dev/null"]], workdir)

    width = max(len(name) for name, _, _ in results)
    print()
    print(f"{'command':<{width}}  {'seconds':>8}  {'CPU s':>6}  {'events/s':>11}  {'MB/s':>6}  {'vs orjson loop':>14}  "
          f"{'peak RSS':>9}  target")
    print("-" * (width + 80))
    verdicts = []
    for name, path, m in results:
        size, events = sizes[path]
        ratio = ceilings[path] / m.seconds
        target = TARGETS.get(name)
        mark = ""
        if target is not None:
            met = ratio >= target and m.ok
            verdicts.append((name, ratio, target, met))
            mark = f">= {target}x {'met' if met else 'NOT met'}"
        flag = "" if m.ok else "  (FAILED)"
        print(f"{name:<{width}}  {m.seconds:>8.2f}  {m.cpu:>6.2f}  {events / m.seconds:>11,.0f}  {size / 1e6 / m.seconds:>6.1f}  "
              f"{ratio:>13.2f}x  {m.peak_kib / 1024:>5.0f} MiB  {mark}{flag}")
    print()
    print(f"replay start-up (read of an empty input): {start.seconds:.2f}s, included in every replay row")
    print(f"targets met: {sum(1 for v in verdicts if v[3])} of {len(verdicts)}")
    if args.rss:
        rss_sweep([int(x) for x in args.rss.split(",") if x.strip()])
    return 0 if all(m.ok for _, _, m in results) else 1


def rss_sweep(sizes_mb: list[int]) -> None:
    """Peak RSS of read, validate, heal and report at each size: flat means the same at 100 MB and 1 GB."""
    print()
    print(f"peak RSS (MiB) by journal size; limit {RSS_LIMIT_MIB} MiB")
    rows = ["read", "validate", "heal", "report"]
    table: dict[str, list[float]] = {r: [] for r in rows}
    with tempfile.TemporaryDirectory() as tmp:
        for mb in sizes_mb:
            path = str(cached_journal(HERE / "data", mb << 20))
            commands = {"read": [REPLAY, "read", path], "validate": [REPLAY, "validate", "--in", path],
                        "heal": [REPLAY, "heal", path], "report": [REPLAY, "report", path]}
            for row in rows:
                m = run_pipeline(row, [commands[row]], Path(tmp))
                table[row].append(m.peak_kib / 1024)
    print(f"{'command':<10}" + "".join(f"{mb:>9} MB" for mb in sizes_mb) + "  flat (< limit)")
    for row in rows:
        values = table[row]
        ok = all(v < RSS_LIMIT_MIB for v in values)
        print(f"{row:<10}" + "".join(f"{v:>12.0f}" for v in values) + f"  {'yes' if ok else 'NO'}")


if __name__ == "__main__":
    sys.exit(main())
