"""Benchmark of commands over many small journals against the same events in one file (run by `make bench`).

Generates (once, cached in tests/bench/data/) a folder of N small clean journals (whole runs, about
``--events`` events each, from journal_gen) and one file holding the same events in the same order,
and times, each as its own process into /dev/null:

- `replay validate DIR` and `replay validate FILE`;
- `replay heal --in DIR --out OUT` and `replay heal --in FILE --out OUT` (a fresh OUT each time).

The folder rows run with `--workers 1` (what an input costs, not how inputs spread over workers), and
once more with `--workers 2`. Printed per row: seconds (the best of
``--repeat``), events/s, and for the folder rows their ratio to the one-file row and the cost per input
beyond it ((folder - one file) / N, in ms), and the least CPU time (user + system) a run took: steadier than
seconds on a busy machine (worker processes the command's fork server starts may be left out of it).
Timings are printed, never asserted.

    python tests/bench/bench_many_files.py                       # 1,500 files of ~50 events
    python tests/bench/bench_many_files.py --files 3000 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import orjson  # noqa: E402
from bench_read import REPLAY, Measure, run_pipeline  # noqa: E402
from journal_gen import write_journal  # noqa: E402

APPROX_LINE_BYTES = 600  # more than the generator's average line: the stream written is long enough to cut from


def many_files(directory: Path, files: int, events: int) -> tuple[Path, Path, int]:
    """(folder of ``files`` journals, one file of the same events in the same order, events in all), cached.
    Each journal holds whole runs, at least ``events`` events, so every one is clean on its own."""
    target = directory / f"many-{files}x{events}"
    folder, whole = target / "journals", target / "all.jsonl"
    if not target.exists():
        directory.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".many.", dir=directory))
        stream = staging / "stream.jsonl"
        write_journal(stream, files * events * APPROX_LINE_BYTES)
        (staging / "journals").mkdir()
        written = 0
        with stream.open("rb") as src, (staging / "all.jsonl").open("wb") as all_out:
            part: list[bytes] = []
            run_id = None
            for line in src:
                rid = orjson.loads(line)["runId"]
                if rid != run_id and len(part) >= events:  # a run starts and the file is full: write it
                    chunk = b"".join(part)
                    (staging / "journals" / f"journal-{written:05d}.jsonl").write_bytes(chunk)
                    all_out.write(chunk)
                    written += 1
                    part = []
                    if written == files:
                        break
                run_id = rid
                part.append(line)
        stream.unlink()
        if written < files:
            raise SystemExit(f"the generated stream gave {written} journals, not {files}: raise APPROX_LINE_BYTES")
        os.replace(staging, target)
    with whole.open("rb") as handle:
        count = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 24), b""))
    return folder, whole, count


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def best(name: str, command: list[str], workdir: Path, repeat: int, out: Path | None = None) -> tuple[Measure, float]:
    """The fastest of ``repeat`` runs, and the least CPU time (user + system) one took."""
    runs, cpu = [], []
    for _ in range(max(1, repeat)):
        if out is not None:
            shutil.rmtree(out, ignore_errors=True)
        before = children_cpu()
        runs.append(run_pipeline(name, [command], workdir))
        cpu.append(children_cpu() - before)
    return min(runs, key=lambda m: m.seconds), min(cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1500, help="how many journals in the folder")
    parser.add_argument("--events", type=int, default=50, help="events per journal (at least; whole runs)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per command; the fastest is reported")
    args = parser.parse_args()

    started = time.perf_counter()
    folder, whole, events = many_files(HERE / "data", args.files, args.events)
    print(f"folder: {folder.relative_to(HERE.parent.parent)}  {args.files:,} journals  "
          f"{whole.stat().st_size / 1e6:.1f} MB  {events:,} events (the same in {whole.name})  "
          f"(ready in {time.perf_counter() - started:.1f}s)")
    subprocess.run(["cat", *map(str, sorted(folder.iterdir())), str(whole)], stdout=subprocess.DEVNULL, check=True)
    root = HERE.parent.parent  # byte-compile as an install would (PYTHONDONTWRITEBYTECODE may be set)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "pipeline"), str(root / "stages")],
                   stdout=subprocess.DEVNULL, check=False)

    rows: list[tuple[str, str | None, Measure, float]] = []  # (name, the one-file row it compares to, measure, CPU s)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        out = workdir / "out"
        d, f = str(folder), str(whole)
        plans: list[tuple[str, str | None, list[str], bool]] = [
            ("replay validate FILE", None, [REPLAY, "validate", f], False),
            ("replay validate DIR --workers 1", "replay validate FILE", [REPLAY, "validate", d, "--workers", "1"], False),
            ("replay validate DIR --workers 2", "replay validate FILE", [REPLAY, "validate", d, "--workers", "2"], False),
            ("replay heal --in FILE --out OUT", None, [REPLAY, "heal", "--in", f, "--out", str(out)], True),
            ("replay heal --in DIR --out OUT --workers 1", "replay heal --in FILE --out OUT",
             [REPLAY, "heal", "--in", d, "--out", str(out), "--workers", "1"], True),
            ("replay heal --in DIR --out OUT --workers 2", "replay heal --in FILE --out OUT",
             [REPLAY, "heal", "--in", d, "--out", str(out), "--workers", "2"], True),
        ]
        for name, base, command, writes in plans:
            rows.append((name, base, *best(name, command, workdir, args.repeat, out if writes else None)))
        start = run_pipeline("start-up", [[REPLAY, "read", "/dev/null"]], workdir)

    seconds = {name: m.seconds for name, _, m, _ in rows}
    width = max(len(name) for name, _, _, _ in rows)
    print()
    print(f"{'command':<{width}}  {'seconds':>8}  {'CPU s':>6}  {'events/s':>11}  {'vs one file':>11}  {'ms per input beyond':>19}")
    print("-" * (width + 64))
    for name, base, m, cpu in rows:
        flag = "" if m.ok else "  (FAILED)"
        ratio = per_input = ""
        if base is not None:
            ratio = f"{m.seconds / seconds[base]:.2f}x"
            per_input = f"{(m.seconds - seconds[base]) / args.files * 1e3:.2f}"
        print(f"{name:<{width}}  {m.seconds:>8.2f}  {cpu:>6.2f}  {events / m.seconds:>11,.0f}  {ratio:>11}  {per_input:>19}{flag}")
    print()
    print(f"replay start-up (read of an empty input): {start.seconds:.2f}s, included in every row")
    return 0 if all(m.ok for _, _, m, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
