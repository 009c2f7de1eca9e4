"""`replay walk` and `replay diff` as real processes: read-only (no process, file, socket), stable bytes,
pipes, and a walk --at near the start of a big journal that reads only its start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from bench.bench_walk import write_flows_journal
from conftest import EXAMPLES, FIXTURES, errors_of, run_replay

WALK = FIXTURES / "walk"
RUNNERS = EXAMPLES / "runners"

# Runs the replay CLI with an audit hook that ends the process (exit 97) on anything but reading:
# starting a process, opening a file for writing, creating, renaming or removing a file, a network
# socket call. At the end it reports how many bytes the process read (/proc/self/io rchar).
GUARDED = r"""
import os, sys
WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
FORBIDDEN = {
    "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    "os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.truncate", "os.link", "os.symlink", "os.chmod",
    "os.chown", "os.utime", "tempfile.mkstemp", "tempfile.mkdtemp", "shutil.copyfile", "shutil.rmtree",
    "socket.connect", "socket.bind", "socket.getaddrinfo", "socket.sendto", "socket.sendmsg",
}

def refuse(event, args):
    os.write(2, f"FORBIDDEN {event} {args!r}\n".encode())
    os._exit(97)

def hook(event, args):
    if event in FORBIDDEN:
        refuse(event, args)
    if event == "open":
        path, mode, flags = args
        if isinstance(path, int) and path in (1, 2):
            return
        if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (isinstance(flags, int) and flags & WRITES):
            refuse(event, args)

sys.addaudithook(hook)
from replay.pipeline.cli.app import run_cli
code = run_cli(sys.argv[1:])
with open("/proc/self/io") as io:
    rchar = next(int(line.split()[1]) for line in io if line.startswith("rchar"))
os.write(2, f"RCHAR {rchar}\n".encode())
sys.stdout.flush()
os._exit(code)
"""


def guarded(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", GUARDED, *args], capture_output=True, cwd=cwd, env=env, timeout=300, check=False)


def bytes_read(done: subprocess.CompletedProcess[bytes]) -> int:
    return int(done.stderr.rsplit(b"RCHAR ", 1)[1].split()[0])


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    home = tmp_path_factory.mktemp("captured")
    ids = []
    for runner in ("echo_runner.py", "broken_trace_runner.py"):
        done = run_replay("capture", "--runner", str(RUNNERS / runner), "What are my top holdings?", cwd=home)
        assert done.returncode == 0, done.stderr
        ids.append(orjson.loads(done.stdout)["runId"])
    return home, ids


def test_the_guard_catches_a_command_that_writes(captured, tmp_path: Path):
    """The harness itself: heal --log writes a file, and is stopped."""
    home, (run_id, _) = captured
    done = guarded("heal", str(home / ".replay" / "journal" / f"{run_id}.jsonl"), "--log", str(tmp_path / "log.jsonl"))
    assert done.returncode == 97 and b"FORBIDDEN" in done.stderr


@pytest.mark.parametrize("args", [
    ("walk", "{a}"), ("walk", "--json", "{a}"), ("walk", "{a}", "--at", "call_1"), ("walk", "{a}", "--at", "nope"),
    ("walk", "nope"), ("walk", "--data-dir", ".replay", "../../etc/passwd"), ("diff", "{a}", "{b}"), ("diff", "--json", "{a}", "{a}"),
])
def test_walk_and_diff_only_read(captured, args):
    """No process spawned, no file opened for writing, created or removed, no network: the data dir is untouched."""
    home, (a, b) = captured
    before = snapshot(home)
    done = guarded(*(x.format(a=a, b=b) for x in args), cwd=home)
    assert done.returncode in (0, 1, 2), done.stderr
    assert b"FORBIDDEN" not in done.stderr
    assert snapshot(home) == before
    assert sorted(os.listdir(home)) == [".replay"]


def test_json_is_byte_identical_across_processes(captured):
    home, (_, broken) = captured
    first = run_replay("walk", "--json", broken, cwd=home)
    second = run_replay("walk", "--json", broken, cwd=home)
    assert first.returncode == 0 and first.stdout and first.stdout == second.stdout
    flows = [run_replay("walk", "--json", str(WALK / "interleaved.jsonl")).stdout for _ in range(2)]
    assert flows[0] == flows[1] and len(flows[0].splitlines()) == 12


def test_refusals_exit_2_with_nothing_on_stdout_and_the_refusal_text_on_stderr(captured):
    """The walk specification's acceptance: `exit 2, stderr contains REFUSED [run_not_found]` (and so on for each
    refusal it names), as one JSON error on stderr, nothing else there."""
    home, (run_id, _) = captured
    for args, refusal in (
        (("walk", "does-not-exist"), "run_not_found"),
        (("walk", run_id, "--at", "nonexistent-step"), "step_not_found"),
        (("walk", "bad/../id", "--data-dir", ".replay"), "invalid_run_id"),
        (("walk", str(WALK / "bad-first-record.jsonl")), "journal_read_failed"),
    ):
        done = run_replay(*args, cwd=home, process=True)
        assert done.returncode == 2 and done.stdout == b""
        assert f"REFUSED [{refusal}]".encode() in done.stderr
        assert len(done.stderr.splitlines()) == 1
        (error,) = errors_of(done.stderr)
        assert (error["code"], error["refusal"]) == ("E_" + refusal.upper(), refusal)


def test_a_mid_journal_failure_exits_1_after_the_good_records():
    done = run_replay("walk", str(WALK / "mid-journal-error.jsonl"))
    assert done.returncode == 1 and len(done.stdout.splitlines()) == 3
    assert errors_of(done.stderr)[0]["offset"] == 254


def test_a_reader_that_stops_early_ends_the_walk_quietly():
    walk = subprocess.Popen([str(Path(sys.executable).parent / "replay"), "walk", str(WALK / "interleaved.jsonl")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = subprocess.run(["head", "-1"], stdin=walk.stdout, capture_output=True, timeout=60, check=False)
    walk.stdout.close()
    assert walk.wait(timeout=60) == 0 and walk.stderr.read() == b""
    assert head.stdout.split()[0] == b"run.spawned"


@pytest.mark.slow
def test_at_near_the_start_of_a_big_journal_reads_only_its_start(tmp_path: Path):
    """A 32 MiB journal, --at its second step: the walk reads a few MiB, not the file (bytes read by the
    process, from /proc/self/io; the timing and memory benchmark is tests/bench/bench_walk.py)."""
    path = tmp_path / "big.jsonl"
    size = write_flows_journal(path, 32 << 20)
    near = guarded("walk", str(path), "--at", "step-2", "--json")
    assert near.returncode == 0, near.stderr
    assert [orjson.loads(x)["step_id"] for x in near.stdout.splitlines()][-1] == "step-2"
    whole = guarded("walk", str(path), "--json")
    assert whole.returncode == 0
    start_up = bytes_read(guarded("walk", str(WALK / "hello.jsonl")))  # what Python reads to start (modules)
    # The start-up reads vary by a few hundred KiB from one process to the next (which modules a walk imports, and
    # whether their bytecode was cached yet), so the whole walk is compared with the near one, not with start_up.
    assert bytes_read(whole) - bytes_read(near) > size * 3 / 4, (bytes_read(whole), bytes_read(near), size)
    assert bytes_read(near) - start_up < size / 4, (bytes_read(near), start_up, size)
