"""Benchmark of a command over many journals: one worker, two worker processes, Dask (run by `make bench`).

Generates (once, cached in tests/bench/data/) a folder of ~2,000 journals, ~300 MB in all (one
generated stream from journal_gen, cut at line ends), and times `replay heal --in DIR --out OUT`
(a fresh OUT each time) with `--workers 1`, `--workers 2` and `--engine dask --workers 2` (a local
cluster of two worker processes, started by the command and counted in its time). Reports events/s
(the records the manifest counts), the speed-ups against one worker, and the peak RSS of the largest
worker process (read from /proc while the command runs). Targets: >= 1.7x from one worker to two on
a 2-core machine, Dask within 20% of local --workers 2. Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from journal_gen import write_journal  # noqa: E402

REPLAY = str(Path(sys.executable).parent / "replay")
TARGET_TWO_WORKERS = 1.7
TARGET_DASK_VS_LOCAL = 0.8


def journal_folder(directory: Path, count: int, total_mb: int) -> Path:
    folder = directory / f"scale-{count}x{total_mb}MB"
    if folder.exists():
        return folder
    staging = Path(tempfile.mkdtemp(prefix=".scale.", dir=directory))
    whole = staging / "all.jsonl"
    write_journal(whole, total_mb << 20)
    per = whole.stat().st_size // count
    with whole.open("rb") as src:
        for k in range(count):
            part = src.read(per) if k < count - 1 else src.read()
            part += src.readline() if k < count - 1 else b""  # end at a line end
            sub = staging / f"batch-{k // 500:02d}"
            sub.mkdir(exist_ok=True)
            (sub / f"journal-{k:05d}.jsonl").write_bytes(part)
    whole.unlink()
    os.replace(staging, folder)
    return folder


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        children: list[str] = []
        for task in Path(f"/proc/{parent}/task").glob("*"):  # a child started from any thread (Dask's nannies)
            try:
                children += (task / "children").read_text().split()
            except OSError:
                continue
        for child in map(int, children):
            out.append(child)
            todo.append(child)
    return out


def _hwm_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def timed(args: list[str]) -> tuple[float, int, int, int, float]:
    """Wall seconds, exit code, peak RSS of the command itself and of its largest worker (KiB), and the CPU
    seconds the command and all its workers used (on a shared machine: did two workers get two cores?)."""
    started = time.perf_counter()
    proc = subprocess.Popen([REPLAY, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peaks: dict[int, int] = {}
    cpu: dict[int, float] = {}  # the last reading of each process (workers exit before the command)
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for pid in [proc.pid, *_descendants(proc.pid)]:
                peaks[pid] = max(peaks.get(pid, 0), _hwm_kib(pid))
                cpu[pid] = max(cpu.get(pid, 0.0), _cpu_seconds(pid))
            done.wait(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, _usage = os.wait4(proc.pid, 0)  # (its usage would count Dask's workers twice)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    done.set()
    watcher.join()
    if proc.returncode not in (0, 1):
        print(err.decode(errors="replace")[-2000:], file=sys.stderr)
    main = peaks.pop(proc.pid, 0)
    return seconds, proc.returncode, main, max(peaks.values(), default=0), sum(cpu.values())


class RunningCluster:
    """A Dask scheduler and a two-process worker, started as `dask scheduler` / `dask worker` would be, for
    the row that points --scheduler at a cluster that is already up (no start-up in the command's time)."""

    def __init__(self, workers: int = 2) -> None:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.address = f"tcp://127.0.0.1:{port}"
        dask = str(Path(sys.executable).parent / "dask")
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        self.procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], **quiet)]
        self.procs.append(subprocess.Popen([dask, "worker", self.address, "--nworkers", str(workers), "--nthreads", "1",
                                            "--no-dashboard"], **quiet))
        import distributed

        with distributed.Client(self.address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=60)

    def close(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
            proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--journals", type=int, default=2000)
    parser.add_argument("--mb", type=int, default=300)
    parser.add_argument("--data", type=Path, default=HERE / "data")
    args = parser.parse_args()
    args.data.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    folder = journal_folder(args.data, args.journals, args.mb)
    size = sum(p.stat().st_size for p in folder.rglob("*.jsonl"))
    print(f"journals: {folder}  {args.journals} files, {size / 1e6:.0f} MB  (ready in {time.perf_counter() - t0:.1f}s)")
    print(f"load before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1, 5, 15 min) on {os.cpu_count()} cores\n")
    cluster = RunningCluster(2)
    rows = [("heal --workers 1", ["--workers", "1"]), ("heal --workers 2", ["--workers", "2"]),
            ("heal --engine dask --workers 2", ["--engine", "dask", "--workers", "2"]),
            ("heal --engine dask --scheduler ADDR", ["--engine", "dask", "--scheduler", cluster.address])]
    results = {}
    print(f"{'command':34} {'seconds':>8} {'CPU s':>7} {'events/s':>10} {'vs 1 worker':>11} {'peak RSS main':>13} "
          f"{'peak RSS worker':>15}")
    print("-" * 104)
    for name, flags in rows:
        with tempfile.TemporaryDirectory(prefix="bench-scale-", dir=args.data) as scratch:
            out = Path(scratch) / "out"
            seconds, code, main_kib, worker_kib, cpu = timed(["heal", "--in", str(folder), "--out", str(out), "--quiet", *flags])
            manifest = json.loads((out / ".replay-manifest.json").read_text()) if code in (0, 1) else {"totals": {"records": 0}}
            events = manifest["totals"]["records"]
            shutil.rmtree(out, ignore_errors=True)
        results[name] = events / seconds if seconds else 0.0
        base = results[rows[0][0]]
        worker = f"{worker_kib / 1024:.0f} MiB" if worker_kib else "(in process)" if "--scheduler" not in flags else "(cluster's)"
        print(f"{name:34} {seconds:8.2f} {cpu:7.1f} {results[name]:10,.0f} {results[name] / base:10.2f}x "
              f"{main_kib / 1024:9.0f} MiB {worker:>15}")
    cluster.close()
    two = results[rows[1][0]] / results[rows[0][0]]
    dask = results[rows[2][0]] / results[rows[1][0]]
    running = results[rows[3][0]] / results[rows[1][0]]
    print(f"\nspeed-up 1 -> 2 workers: {two:.2f}x (target >= {TARGET_TWO_WORKERS}x)")
    print(f"dask vs local --workers 2: {dask:.2f} (target >= {TARGET_DASK_VS_LOCAL:.2f}, i.e. within 20%); "
          f"with the cluster already up: {running:.2f}")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
