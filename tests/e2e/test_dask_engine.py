"""--engine dask against a real distributed.LocalCluster on loopback: same bytes as --workers 1, pickling in
worker processes, a worker killed mid-run, no partial file left, Ctrl-C and SIGTERM with no traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import EXAMPLES, REPLAY, group_gone, run_replay, timeless
from scale_support import make_journals, tree_bytes

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def journals(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_journals(tmp_path_factory.mktemp("dask-in"), count=24)


@pytest.fixture(scope="module")
def clean(journals: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, dict[str, bytes]]:
    out = tmp_path_factory.mktemp("clean") / "out"
    proc = run_replay("heal", "--in", str(journals), "--out", str(out), "--workers", "1")
    assert proc.returncode == 1 and b"E_JSONL_LINE_INVALID" in proc.stderr  # bad lines on purpose, healed around
    return proc.stdout.replace(str(out).encode(), b"OUT"), tree_bytes(out)


def test_a_thread_cluster_gives_the_bytes_of_one_worker(journals, clean, thread_cluster, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_replay("heal", "--in", str(journals), "--out", str(out), "--engine", "dask", "--scheduler", thread_cluster)
    assert proc.returncode == 1, proc.stderr
    assert (proc.stdout.replace(str(out).encode(), b"OUT"), tree_bytes(out)) == clean


def test_the_scheduler_address_may_come_from_the_environment(journals, thread_cluster, tmp_path: Path) -> None:
    proc = run_replay("validate", "--in", str(journals), "--engine", "dask", env={"DASK_SCHEDULER_ADDRESS": thread_cluster})
    single = run_replay("validate", "--in", str(journals), "--workers", "1")
    assert proc.returncode == single.returncode == 1  # the journals have bad lines on purpose
    assert (proc.stdout, timeless(proc.stderr)) == (single.stdout, timeless(single.stderr))


def test_worker_processes_unpickle_the_work_and_a_killed_worker_leaves_no_partial_file(journals, clean, process_cluster,
                                                                                        tmp_path: Path) -> None:
    from replay.pipeline.cli.app import package_version
    from replay.pipeline.cli.scale import run_over
    from replay.pipeline.cli.scale_flags import Scale
    from replay.pipeline.engine.parallel import Work
    from replay.pipeline.engine.spec import bind, load_spec
    from replay.pipeline.io.dask_backend import dask_tasks
    from replay.pipeline.io.journals import expand_paths
    from replay.pipeline.io.manifest import Manifest, work_key

    out = tmp_path / "out"
    out.mkdir()
    files = expand_paths([str(journals)])
    doc = bind(load_spec("heal-dir"), set={"write.out_dir": str(out), "write.root": str(journals)})
    work = Work(bind(doc, set={"write.write_dir": str(out)}), digest=True, inputs=len(files))
    client = distributed.Client(process_cluster)
    pids = client.run(os.getpid)
    killed: list[int] = []
    # A task interrupted while writing leaves its temp file; the manifest's last step sweeps it.
    (out / ".j000.healed.jsonl.deadbeef.replay.tmp").write_bytes(b"half a file")

    def tasks(work, chunks, workers):
        for index, outcomes in dask_tasks(work, chunks, scheduler=process_cluster.scheduler_address, workers=workers):
            if not killed:  # the first task is done; the others are queued or running on both workers
                victim = sorted(pids.values())[-1]
                os.kill(victim, signal.SIGKILL)
                killed.append(victim)
            yield index, outcomes

    stdout: list[bytes] = []
    totals = run_over(work, files, Scale(workers=2, engine="dask"), label="heal",
                      manifest=Manifest(out, work_key(doc, package_version()), journals, "heal"),
                      take=lambda outcome: stdout.append(outcome.stdout), completions=tasks)
    client.close()
    assert killed and totals.inputs == len(files)
    assert b"".join(stdout).replace(str(out).encode(), b"OUT") == clean[0]
    assert tree_bytes(out) == clean[1]  # byte-identical, the manifest included, and no .tmp left


def test_a_strict_run_on_a_running_scheduler_leaves_nothing_behind(process_cluster, tmp_path: Path) -> None:
    """--strict against a running scheduler (--scheduler: the command does not own the cluster, so it cannot stop the
    workers): the tasks still running when the first error ends the command wrote into the staging folder after it
    was removed, and it stayed. They are told to stop and waited for: no folder, no staging folder, now or later."""

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a-bad.jsonl").write_bytes(b"not json\n")
    make_journals(folder, count=60, size=60_000)
    done = run_replay("heal", "--in", str(folder), "--out", str(tmp_path / "out"), "--strict", "--engine", "dask",
                      "--scheduler", process_cluster.scheduler_address, "--workers", "2", process=True)
    assert done.returncode == 1 and done.stdout == b""
    assert [line[:40] for line in done.stderr.splitlines()] == [b'{"error":{"code":"E_JSONL_LINE_INVALID",']
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]
    time.sleep(1)  # (a task still running would write within this)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


KILL_SCHEDULER_PRELOAD = """
import os, signal, threading
from distributed.diagnostics.plugin import WorkerPlugin

class KillScheduler(WorkerPlugin):
    \"\"\"Kills (or stops: SCHEDULER_SIGNAL) the scheduler a second after the worker's first replay task is done (the client has its result
    then; the other task is still running).\"\"\"
    fired = False

    def transition(self, key, start, finish, **kwargs):
        if finish == "memory" and str(key).startswith("replay-") and not self.fired:
            self.fired = True
            pid, number = int(os.environ["SCHEDULER_PID"]), int(os.environ["SCHEDULER_SIGNAL"])
            threading.Timer(1.0, os.kill, (pid, number)).start()

async def dask_setup(worker):
    await worker.plugin_add(KillScheduler(), name="kill-scheduler")
"""


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "hung"])
def test_a_strict_run_whose_scheduler_is_lost_keeps_its_error_and_warns_of_the_tasks_left(
        sig: signal.Signals, tmp_path: Path) -> None:
    """--strict against an external scheduler lost while the command waits for its tasks to stop. Killed: the wait
    (its futures cancelled with the connection lost) raised FuturesCancelledError in place of the command's error, with
    tracebacks on stderr. Hung (SIGSTOP): the wait, and telling the workers to stop, had no bound. The command's error
    stays its error, and a JSON warning names the folder a task may still write into. (The hung scheduler's case runs
    the CLI with its bounds made short.)"""
    from journal_gen import write_journal

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a-bad.jsonl").write_bytes(b"not json\n")
    big = folder / "b-big.jsonl"
    write_journal(big, 40_000_000)  # a task of seconds: every event marked not synthetic goes the slow way (no fast lane)
    big.write_bytes(big.read_bytes().replace(b'"payload":', b'"synthetic":false,"payload":'))
    preload = tmp_path / "kill_scheduler.py"
    preload.write_text(KILL_SCHEDULER_PRELOAD)
    quiet = {**os.environ, "DASK_LOGGING__DISTRIBUTED": "critical"}
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                  "--port", "0", "--no-dashboard", "--scheduler-file", str(tmp_path / "s.json")],
                                 stderr=subprocess.DEVNULL, env=quiet)
    worker = None
    try:
        address = _scheduler_address(tmp_path / "s.json")
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "2",
                                   "--no-dashboard", "--preload", str(preload)], stderr=subprocess.DEVNULL,
                                  env={**quiet, "SCHEDULER_PID": str(scheduler.pid), "SCHEDULER_SIGNAL": str(int(sig))})
        with distributed.Client(address, timeout=20) as client:
            client.wait_for_workers(1, timeout=20)
        out = tmp_path / "out"
        started = time.monotonic()
        args = ["heal", "--in", str(folder), "--out", str(out), "--strict", "--engine", "dask", "--scheduler", address,
                "--workers", "2"]
        if sig == signal.SIGKILL:
            done = run_replay(*args, process=True, timeout=60)
        else:  # the CLI in a process of its own, with its bounds made short
            short = ("from replay.pipeline.io import dask_backend; dask_backend.STOP_SECONDS = 2; "
                     "dask_backend.CONNECT_SECONDS = 2; import sys; sys.argv[0] = 'replay'; "
                     "from replay.pipeline.cli.app import main; main()")
            done = subprocess.run([sys.executable, "-c", short, *args], capture_output=True, timeout=60, check=False)
        assert time.monotonic() - started < 30
        if sig == signal.SIGKILL:
            assert scheduler.wait(timeout=5) == -signal.SIGKILL  # killed mid-run, as planned
        else:
            assert "State:\tT" in Path(f"/proc/{scheduler.pid}/status").read_text()  # stopped mid-run, as planned
        assert done.returncode == 1 and done.stdout == b"", done.stderr
        lines = [json.loads(line) for line in done.stderr.splitlines()]
        warnings = [line for line in lines if line.get("event") == "dask.tasks_not_stopped"]
        errors = [line["error"] for line in lines if "error" in line]
        assert [e["code"] for e in errors] == ["E_JSONL_LINE_INVALID"] and len(lines) == 2, done.stderr
        assert warnings[0]["level"] == "warning" and warnings[0]["folders"] == [str(tmp_path / ".out.partial.replay.tmp")]
    finally:
        for process in (worker, scheduler):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()


def test_a_runner_started_by_a_task_of_the_local_cluster_can_be_interrupted(tmp_path: Path) -> None:
    """The local cluster's workers run with SIGINT, SIGTERM and SIGHUP blocked (Ctrl-C is replay's to handle); a
    runner a task starts had them blocked too (a child inherits its starter's mask): its timeout's SIGTERM and a
    Ctrl-C's SIGINT never reached it. It starts with none of them blocked."""
    runner = tmp_path / "runner.py"
    runner.write_text("import json, os, pathlib, sys\n"
                      "status = pathlib.Path('/proc/self/status').read_text()\n"
                      "blocked = next(line for line in status.splitlines() if line.startswith('SigBlk:')).split()[1]\n"
                      "pathlib.Path(sys.argv[0]).with_name(f'mask-{os.getpid()}').write_text(blocked)\n"
                      "print(json.dumps({'status': 'ok', 'response': 'r', 'events': []}))\n")
    config = tmp_path / "capture.toml"
    config.write_text(f'chain = [{{ type = "discover", runner = "{runner}" }}, {{ type = "spawn" }}]\n')
    prompts = [tmp_path / "a.txt", tmp_path / "b.txt"]
    for prompt in prompts:
        prompt.write_text("hi\n")
    done = run_replay("run", str(config), *map(str, prompts), "--engine", "dask", "--workers", "2", process=True)
    assert done.returncode == 0, done.stderr
    masks = [int(p.read_text(), 16) for p in tmp_path.glob("mask-*")]
    assert len(masks) == 2
    interrupts = sum(1 << (number - 1) for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP))
    assert [mask & interrupts for mask in masks] == [0, 0]


def test_a_dashboard_port_in_use_puts_no_python_warning_on_stderr(journals, tmp_path: Path) -> None:
    """A Dask user often has a dashboard on 8787 already: the cluster --engine dask starts takes a free port on
    loopback instead, and stderr keeps to JSON lines (distributed warned in plain text that 8787 was in use)."""
    import socket

    taken = socket.socket()
    try:
        taken.bind(("127.0.0.1", 8787))
        taken.listen()
    except OSError:
        pass  # something holds it already: the same case
    try:
        proc = run_replay("validate", "--in", str(journals), "--engine", "dask", "--workers", "1", process=True)
    finally:
        taken.close()
    assert proc.returncode == 1, proc.stderr  # the journals have bad lines on purpose
    assert all(line.startswith(b"{") for line in proc.stderr.splitlines()), proc.stderr


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupt_to_the_process_group_stops_the_local_cluster_quietly(tmp_path: Path, sig: signal.Signals,
                                                                          code: int) -> None:
    """Ctrl-C in a terminal reaches the whole process group, the local cluster's worker processes too, while they run
    tasks: exit 130, stderr keeps to JSON lines (each worker printed its KeyboardInterrupt traceback), and nothing of
    the group is left. SIGTERM to the group (``timeout``, ``kill -- -PGID``) likewise, exit 143."""
    journals = tmp_path / "in"
    journals.mkdir()
    first = journals / "j00000.jsonl"
    first.write_bytes((EXAMPLES / "journals" / "two-runs.jsonl").read_bytes())
    for k in range(1, 20_000):  # enough tasks that the run is still going when the first input's line is out
        os.link(first, journals / f"j{k:05d}.jsonl")
    proc = subprocess.Popen([REPLAY, "validate", "--in", str(journals), "--engine", "dask", "--workers", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout.readline(), proc.stderr.read()  # a task is done: the workers are running the next ones
        os.killpg(proc.pid, sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    gone = group_gone(proc.pid)
    if not gone:
        os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == code, err
    assert all(line.startswith(b"{") for line in err.splitlines()), err
    assert gone


def test_the_workers_of_a_local_cluster_log_nothing_on_stderr(journals, tmp_path: Path) -> None:
    """stderr keeps to JSON lines with --engine dask too: the worker processes' own logs (a heartbeat that finds the
    scheduler gone as the cluster closes under load, logged as an ERROR) stay off it. A stage in the workers logs
    such an ERROR on distributed's logger, as distributed would."""
    from plugin_support import make_plugin

    logging_stage = '''
    import logging

    from replay.pipeline.engine.stage import Transform

    class Shout(Transform):
        summary = "Logs an ERROR on distributed's logger, as a worker's heartbeat does when the scheduler is gone."

        def __call__(self, batch):
            logging.getLogger("distributed.worker").error("Failed to communicate with scheduler during heartbeat.")
            return batch
    '''
    site = make_plugin(tmp_path / "site", {"shout": "replay_upper_plugin:Shout"}, module=logging_stage)
    config = tmp_path / "p.toml"
    config.write_text('chain = ["shout"]\n')
    inputs = sorted(str(p) for p in journals.iterdir())[:2]
    proc = run_replay("run", str(config), *inputs, "--engine", "dask", "--workers", "1", "--quiet",
                      env={"PYTHONPATH": str(site)}, process=True, timeout=240)
    assert proc.returncode in (0, 1), proc.stderr  # (the journals have bad lines on purpose)
    assert proc.stdout  # the stage ran in the workers
    assert b"heartbeat" not in proc.stderr and all(line.startswith(b"{") for line in proc.stderr.splitlines()), proc.stderr


def _scheduler_address(path: Path, seconds: float = 30) -> str:
    """The address the scheduler writes to its scheduler file: once the file is whole (it exists, empty, a moment
    before the scheduler writes it: reading it then failed now and then)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return str(json.loads(path.read_text())["address"])
        except (FileNotFoundError, ValueError, KeyError):
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)
