"""Shared test helpers: run `replay` (in-process, or as the real executable), read its JSON errors, pick async backends."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import settings
from inprocess import run_cli_in_process

# No timing assertion in `make test`: hypothesis's per-example deadline (200 ms) is one, and it fails property tests
# on a loaded machine (seen: 530 ms for one example under a full -n 2 run beside other work).
settings.register_profile("replay", deadline=None)
settings.load_profile("replay")

# Started with SIGINT ignored (`make test &` in a non-interactive shell, as a CI step may run it), pytest and its xdist
# workers pass SIG_IGN on to every `replay` they start, and replay keeps an ignored Ctrl-C ignored (as it should): each
# test that Ctrl-Cs a child replay would fail. A handled signal goes back to its default in an exec'd child.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "corpus"  # copies of ../shared/corpus/real, licences in SOURCES.md
FIXTURES = ROOT / "tests" / "fixtures"
EXAMPLES = ROOT / "examples"
REPLAY = str(Path(sys.executable).parent / "replay")


def run_replay(*args: str, input: bytes | None = None, cwd: str | Path | None = None,
               env: dict[str, str] | None = None, timeout: float = 120,
               process: bool = False) -> subprocess.CompletedProcess[bytes]:
    """Run `replay ARGS` and collect its exit code, stdout and stderr.

    In-process by default: the CLI entry function runs in this interpreter with file descriptors 0, 1
    and 2 pointed at temporary files (stdin holds ``input``), so the code reads and writes real file
    descriptors as it does in a shell, without the ~0.25 s start-up of a new interpreter. With
    ``process=True`` it runs the installed console script as a real process: for pipes, signals,
    terminals, a closed stdin, or the start-up itself.
    """
    if process:
        full_env = {**os.environ, **(env or {})}
        return subprocess.run([REPLAY, *args], input=input, capture_output=True, cwd=cwd, env=full_env,
                              timeout=timeout, check=False)
    code, out, err = run_cli_in_process(list(args), input or b"", cwd, env)
    if CPYTHON_AST_RACE in err:  # (CPython 3.11's bug, not replay's: see CPYTHON_AST_RACE) once more, as a user would
        code, out, err = run_cli_in_process(list(args), input or b"", cwd, env)
    return subprocess.CompletedProcess([REPLAY, *args], code, out, err)


# CPython 3.11 keeps the AST constructor's recursion count per interpreter, not per thread: two threads building
# AST objects at once (inspect.signature of a builtin, ast.literal_eval in dask's config) can fail one of them with
# this SystemError (python/cpython#106905). In-process runs share the interpreter with the Dask
# workers of ``thread_cluster``, so a run of one of those tests fails now and then with it in a task's error.
CPYTHON_AST_RACE = b"AST constructor recursion depth mismatch"


def write_one_line_artifact(path: Path, events: int, text: int) -> None:
    """A replay artifact of ``events`` user messages (each ``text`` characters long), written on one line as orjson
    writes it: a large document with no newline in it."""
    listed = [{"type": "user_message", "seq": n, "timestamp": "2026-03-01T12:00:00.000Z", "text": "x" * text,
               "runId": "run_1"} for n in range(1, events + 1)]
    path.write_bytes(orjson.dumps({"schemaVersion": "1.0.0", "artifactType": "replay", "id": "run_1",
                                   "timestamp": "2026-03-01T12:00:00.000Z", "prompt": "hi", "query": "hi",
                                   "status": "ok", "response": "hello", "events": listed}))


def errors_of(stderr: bytes) -> list[dict]:
    """The `{"error": ...}` bodies printed on stderr (log lines are skipped)."""
    bodies = []
    for line in stderr.splitlines():
        if line.startswith(b'{"error"'):
            bodies.append(orjson.loads(line)["error"])
    return bodies


def no_temp_folder() -> None:
    """A ``preexec_fn``: no file the process writes can grow by a byte (``ulimit -f 0``; a write fails, EFBIG, SIGXFSZ
    ignored): every temp folder candidate ($TMPDIR, /tmp, /var/tmp, /usr/tmp, the working folder) fails ``tempfile``'s
    trial write, as on a read-only file system with TMPDIR naming no folder (a container whose root is read-only), and
    ``tempfile.gettempdir()`` raises FileNotFoundError. Run Python so with PYTHONDONTWRITEBYTECODE=1."""
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


_LOG_TIME = re.compile(rb',"timestamp":"[^"]*"}$')


def timeless(stderr: bytes) -> bytes:
    """``stderr`` with each log line (a warning) without the wall-clock time it was logged at: what two runs over one
    input must both say, in order."""
    return b"".join((_LOG_TIME.sub(b"}", line) if b'"level"' in line else line) + b"\n" for line in stderr.splitlines())


def diagnostics(stderr: bytes) -> list[bytes]:
    """``timeless(stderr)``'s lines, sorted: what two runs over one input must both say, whatever the order their
    stages wrote it in."""
    return sorted(timeless(stderr).splitlines())


def jsonl(data: bytes) -> list[dict]:
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


def piped_line_by_line(args: list[str], data: bytes, pause_s: float = 0.05) -> tuple[int, bytes, bytes]:
    """Run `replay ARGS` (a real process) with ``data`` written to its stdin a line at a time, waiting ``pause_s`` after
    each (the read finds nothing more for now: its batch is marked paused, as a live stream's is); its exit code,
    stdout and stderr."""
    proc = subprocess.Popen([REPLAY, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None
    for line in data.splitlines(keepends=True):
        proc.stdin.write(line)
        proc.stdin.flush()
        time.sleep(pause_s)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


def stopped(proc: subprocess.Popen[bytes], number: int, *, times: int = 1, hang_s: float = 15) -> tuple[int, bytes, bytes]:
    """Send ``proc`` the signal ``number`` (``times`` times) and wait for it: its exit code and the rest of its stdout
    and stderr. ``hang_s`` bounds a hang (the process is killed and the test fails), not a speed."""
    for _ in range(times):
        os.kill(proc.pid, number)
    try:
        out, err = proc.communicate(timeout=hang_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"replay was still running {hang_s} s after the signal") from None
    return proc.returncode, out or b"", err or b""


def alive(pid: int) -> bool:
    """Is ``pid`` a live process? (A zombie waiting for its reaper is not.)"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def group_gone(pgid: int, limit: float = 60.0) -> bool:
    """Poll until no process of group ``pgid`` runs (a zombie nobody reaps, in a container, has stopped running)."""
    import time

    from replay.pipeline.io.processes import only_zombies_left

    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        if only_zombies_left(pgid):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def ctrl_c_caught():
    """SIGINT that reaches no one else goes here, not to pytest (KeyboardInterrupt): what interrupts came."""
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: caught.append(number))
    yield caught
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def cli(tmp_path: Path):
    """`replay ARGS` in this process, as (exit code, stdout bytes, error bodies); ``cwd`` is where it runs."""

    def run(*args: str, cwd: Path | None = None, input: bytes = b"") -> tuple[int, bytes, list[dict]]:
        done = run_replay(*args, cwd=cwd, input=input)
        return done.returncode, done.stdout, errors_of(done.stderr)

    return run


# real Dask clusters on loopback, started once per session and shared by the tests that need one ---------
@pytest.fixture(scope="session")
def thread_cluster():
    """Workers as threads of this process: cheap to start; they share this process's memory:// too."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0",
                                  host="127.0.0.1", protocol="tcp://") as cluster:
        yield cluster.scheduler_address


@pytest.fixture(scope="session")
def process_cluster():
    """Workers as processes: what crosses to them is pickled, and one can be killed."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
                                  host="127.0.0.1") as cluster:
        yield cluster
