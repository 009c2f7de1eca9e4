"""Many inputs in parallel: each input is one run of the command's stage graph; inputs go in tasks to workers.

A command over a folder (``heal --in``, ``validate --in``, ``report --in``, ``replay run`` with
``--workers``) hands this module a ``Work``: its graph spec with its flags bound, as a config
document. A task is a list of inputs; it builds the graph once per input (the input bound to the
options that take the command's arguments, as ``replay run SPEC PATH`` would) and runs it with
``anyio.run``. What the run prints on stdout, its diagnostics and log lines on stderr, the facts its
stages publish and the number of records its sources sent come back as one ``Outcome`` per input,
so the command prints every input's output in input order whatever order the tasks finish in: the
output of ``--workers 8`` is the output of ``--workers 1``.

A task never raises for an input: a failure becomes the input's ``Failure`` (a plain value, so it
crosses process boundaries), and the command raises it in input order. Backends: ``local_tasks``
(this process for one worker, else worker processes) and ``io.dask_backend.dask_tasks``.
"""

from __future__ import annotations

import math
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from replay.pipeline.engine import interrupts
from replay.pipeline.engine.errors import (
    EXIT_FAILED,
    EXIT_REFUSED,
    PipeClosed,
    ReplayError,
    StrictAbort,
    command_named,
    input_unreadable,
    printable,
)
from replay.pipeline.engine.executor import ErrorPort, StageFailed, plan, run_graph
from replay.pipeline.engine.graph import Graph
from replay.pipeline.engine.log import log_unraisable, log_warnings, make_logger
from replay.pipeline.engine.memory import tune_gc
from replay.pipeline.engine.preflight import preflight
from replay.pipeline.engine.quota import DEFAULT_LIMIT
from replay.pipeline.engine.registry import Registry
from replay.pipeline.engine.share import one_share
from replay.pipeline.engine.stage import OUTPUTS_WRITTEN

Chunk = tuple[int, list[str]]  # a task: its number and its inputs
Completions = Iterator[tuple[int, list["Outcome"]]]  # (task number, its outcomes), in the order tasks finish
SMALL_JOB_BYTES = 8 << 20  # below this, worker processes cost more than they save (unless asked for)
LOCAL_TASK_INPUTS = 32  # at most this many inputs per task on local workers (output flows in order)
CLUSTER_TASK_INPUTS = 200  # a Dask task carries hundreds of inputs: scheduling one costs ~1 ms
WORKER_DEATHS = 3  # how many times local worker processes may die before the command fails (Dask's allowed-failures)


class Files(Protocol):
    """Where a task's inputs and outputs live: local paths (``LOCAL_FILES``), or also fsspec URLs
    (``io.remote.URL_FILES``, which the engine does not import: a command that meets a URL passes it)."""

    def start_task(self, paths: list[str]) -> None:
        """A task begins on a worker: forget what this process cached about these inputs."""

    def input_digest(self, path: str) -> tuple[int, int, str]:
        """Size, modification time (ns; 0 when the filesystem keeps none) and SHA-256 of an input."""
        ...

    def output_digest(self, path: str) -> tuple[int, str]:
        """Size and SHA-256 of a file a run wrote."""
        ...


class LocalFiles:
    """Inputs and outputs are local paths (the same on every worker)."""

    def start_task(self, paths: list[str]) -> None:
        pass

    def input_digest(self, path: str) -> tuple[int, int, str]:
        return input_digest(path)

    def output_digest(self, path: str) -> tuple[int, str]:
        return file_digest(path)


LOCAL_FILES = LocalFiles()


@dataclass(frozen=True)
class Work:
    """What every task runs: a config document (a command's spec bound with its flags) per input."""

    doc: dict[str, Any]
    log_level: str = "warning"
    strict: bool = False
    error_limit: int = DEFAULT_LIMIT  # --max-errors: errors printed per (source, code) before the rest are summed
    digest: bool = False  # sizes and SHA-256 of each input and output, for a manifest
    inputs: int = 0  # how many inputs the whole command reads (each run is one of them)
    files: Files = LOCAL_FILES  # how digests are taken: pickled by reference, so a worker imports its module


@dataclass
class Failure:
    """Why an input's run did not complete, as a value: rebuilt into the exception by ``exception()``."""

    kind: str  # "error" (a ReplayError), "strict" (--strict met an error), "stage" (a stage raised), "pipe"
    body: dict[str, Any]
    exit_code: int = EXIT_FAILED
    stage: str | None = None

    @property
    def refused(self) -> bool:
        """The input itself was refused before its run wrote anything (exit 2: a bad input), not a failure midway."""
        return self.kind == "error" and self.exit_code == EXIT_REFUSED

    def exception(self) -> BaseException:
        if self.kind == "strict":
            return StrictAbort(self.body)
        if self.kind == "pipe":
            return PipeClosed()
        if self.kind == "stage":
            message = self.body.get("message", "")
            failed = StageFailed(self.stage or "?", RuntimeError(message), message)
            failed.traceback = self.body.get("traceback")
            failed.path = self.body.get("path")
            return failed
        body = self.reported()
        fields = {k: v for k, v in body.items() if k not in ("code", "message")}
        return ReplayError(body["code"], body.get("message", ""), exit_code=self.exit_code, **fields)

    def reported(self) -> dict[str, Any]:
        """The error's body as the command reports it: a usage error's catalogue advice, which the worker (it runs no
        command) left with the catalogue's placeholder, names the command (``command_named``)."""
        advice = self.body.get("howToFix")
        return {**self.body, "howToFix": command_named(advice)} if isinstance(advice, str) else self.body


@dataclass
class Outcome:
    """One input's run: what it printed, what it reported, what it wrote."""

    path: str
    stdout: bytes = b""
    stderr: bytes = b""
    errors: int = 0
    codes: dict[str, int] = field(default_factory=dict)  # diagnostics by code
    records: int = 0
    facts: dict[str, Any] = field(default_factory=dict)
    failure: Failure | None = None
    size: int = -1  # with Work.digest: the input's size, modification time and content hash when it was read
    mtime_ns: int = 0
    sha256: str = ""
    outputs: list[tuple[str, int, str]] = field(default_factory=list)  # (path, size, sha256) of each file written
    seconds: float = 0.0
    skipped: bool = False  # taken from a manifest, not run


class _Stderr:
    """A run's stderr: diagnostics (bytes) and log lines (text, from structlog's PrintLogger) in order."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write_bytes(self, data: bytes) -> None:
        self.data += data

    def write(self, text: str) -> int:
        self.data += text.encode("utf-8", "replace")
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


class _CountingPort(ErrorPort):
    """The default error port, also counting diagnostics by code."""

    def __init__(self, strict: bool, write: Callable[[bytes], Any], limit: int) -> None:
        super().__init__(strict=strict, write=write, limit=limit)
        self.codes: dict[str, int] = {}

    def put(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            code = str(record.get("code"))
            self.codes[code] = self.codes.get(code, 0) + 1
        super().put(records)


def file_digest(path: str) -> tuple[int, str]:
    """Size and SHA-256 of a file's bytes."""
    import hashlib  # here: only manifests and resumable runs take digests (~3 ms of every command's start-up)

    with open(path, "rb") as handle:
        digest = hashlib.file_digest(handle, "sha256")
        return handle.tell(), digest.hexdigest()


def input_digest(path: str) -> tuple[int, int, str]:
    """Size, modification time (ns) and SHA-256 of an input, from one open file."""
    import hashlib  # (see file_digest)

    with open(path, "rb") as handle:
        mtime = os.fstat(handle.fileno()).st_mtime_ns
        digest = hashlib.file_digest(handle, "sha256")
        return handle.tell(), mtime, digest.hexdigest()


def run_inputs(work: Work, paths: list[str], stop: Callable[[], bool] | None = None) -> list[Outcome]:
    """A task: run the graph once per input, in order, inside one event loop. Never raises for an input.
    ``stop``, asked before each input: True ends the task there (the command stopped; the outcomes so far come back)."""
    global _in_task
    tune_gc()  # as the CLI does, wherever the task runs (a Dask worker too)
    work.files.start_task(paths)
    registry = Registry()

    built: dict[str, Graph] = {}  # the graph, built for the first input and run for each (``Stage.fresh``)
    probed: set[Path] = set()  # the folders its outputs were tried in (``preflight``): each once for all inputs

    async def run_all() -> list[Outcome]:
        outcomes = []
        with interrupts.handling_first(_once) if worker else nullcontext():
            for path in paths:
                if stop is not None and stop():
                    break
                with one_share(work.inputs) as stdout:
                    outcome = await _run_one(work, path, registry, built, probed)
                    outcome.stdout = bytes(stdout)
                outcomes.append(outcome)
        return outcomes

    _in_task = True
    worker = signal.getsignal(signal.SIGINT) is _worker_interrupted
    try:
        with _cancelled_by_ctrl_c(worker):
            return interrupts.run_async(run_all)
    finally:
        _in_task = False


@contextmanager
def _cancelled_by_ctrl_c(worker: bool) -> Iterator[None]:
    """In a ``worker`` process, for a task's runs: Ctrl-C cancels the run as it cancels one in the command's process
    (asyncio's handler, which ``anyio.run`` installs over Python's own: the graph's stages stop by cancellation, what
    they staged under temp names goes, and the task ends in KeyboardInterrupt); a Ctrl-C again while it stops does
    nothing more (``_once``: the command ends its workers then). The worker's handler between tasks
    (``_worker_interrupted``) is back after. (It raised KeyboardInterrupt inside whatever task of the event loop ran:
    asyncio printed "Task exception was never retrieved" on the command's stderr, which carries JSON lines only.)"""
    if not worker:
        yield  # (the command's own process, or a Dask worker: their handlers stay)
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, _worker_interrupted)


def _once(_number: int) -> bool:
    """A task's first Ctrl-C reaches asyncio's handler (which cancels the run); those after it are ignored until the
    task ends (``_cancelled_by_ctrl_c`` puts the worker's handler back). Not only while the run's main task runs: then
    asyncio's handler, and Python's once ``anyio.run`` put it back, raised KeyboardInterrupt as the event loop closed
    ("Task was destroyed but it is pending!" and a RuntimeWarning on the command's stderr). A handler of this
    ``handling_first``'s own, left as it is when the run's handlers are put back (they restore only their own)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return False


async def _run_one(work: Work, path: str, registry: Registry, built: dict[str, Graph], probed: set[Path]) -> Outcome:
    from replay.pipeline.engine.config import graph_from_config

    started = time.perf_counter()
    outcome = Outcome(path)
    stderr = _Stderr()
    port = _CountingPort(work.strict, stderr.write_bytes, work.error_limit)
    try:
        if work.digest and not _digested(work, path, outcome, port):
            return _finished(outcome, port, stderr, started)
        if "graph" not in built:  # (a config it refuses, it refuses for every input: each then says so)
            built["graph"] = graph_from_config(work.doc, registry=registry, paths=[path])
        result = await run_graph(built["graph"], error_port=port, log=make_logger(work.log_level, stderr),  # type: ignore[arg-type]
                                 args=[path], probed=probed)
        outcome.records = result.records
        outcome.facts = result.facts
        if work.digest:
            outcome.outputs = [(out, *work.files.output_digest(out)) for out in result.facts.get(OUTPUTS_WRITTEN, [])]
    except ReplayError as exc:
        outcome.failure = Failure("error", exc.body, exc.exit_code)
    except StrictAbort as exc:
        outcome.failure = Failure("strict", exc.body)
    except (PipeClosed, BrokenPipeError):
        outcome.failure = Failure("pipe", {})
    except StageFailed as exc:
        import traceback  # (only when a stage crashed)

        outcome.failure = Failure("stage", {"message": str(exc), "traceback": "".join(traceback.format_exception(exc.exc)),
                                            "path": exc.path}, stage=exc.stage_id)
    except OSError as exc:  # the input vanished meanwhile
        unreadable = input_unreadable(path, exc)
        outcome.failure = Failure("error", unreadable.body, unreadable.exit_code)
    return _finished(outcome, port, stderr, started)


def _digested(work: Work, path: str, outcome: Outcome, port: _CountingPort) -> bool:
    """Take the input's size, time and digest into ``outcome``; False when it cannot be read: an error of this input
    (as `read` reports one, and the other inputs go on), and nothing of it is run or recorded."""
    try:
        outcome.size, outcome.mtime_ns, outcome.sha256 = work.files.input_digest(path)
    except OSError as exc:
        port.put([input_unreadable(path, exc).body])
        return False
    return True


def _finished(outcome: Outcome, port: _CountingPort, stderr: _Stderr, started: float) -> Outcome:
    outcome.errors = port.count
    outcome.codes = port.codes
    outcome.stderr = bytes(stderr.data)
    outcome.seconds = time.perf_counter() - started
    return outcome


def preflight_all(work: Work, paths: list[str]) -> None:
    """Refusals over the whole set of inputs before any task starts (two inputs healing into one file,
    an output over an input): what one run of the graph over every input would refuse."""
    from replay.pipeline.engine.config import graph_from_config

    graph = graph_from_config(work.doc, paths=list(paths))
    tasks, _ = plan(graph)
    try:
        preflight((live.stage for task in tasks for live in task.nodes), graph.read_files)
    except ReplayError as exc:  # (named as the config has it: `chain[0].out_dir`, as one run names it)
        raise graph.as_written(exc) from None


def partition(paths: list[str], workers: int, most: int) -> list[Chunk]:
    """Inputs in contiguous tasks: about eight per worker (so a slow one does not hold the end back),
    at most ``most`` inputs each. Depends only on the inputs and the numbers, never on timing."""
    if not paths:
        return []
    size = max(1, min(most, math.ceil(len(paths) / (max(1, workers) * 8))))
    return [(k, paths[start:start + size]) for k, start in enumerate(range(0, len(paths), size))]


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def local_tasks(work: Work, chunks: list[Chunk], workers: int) -> Completions:
    """Run the tasks in this process (one worker) or in ``workers`` worker processes; yields as they finish.
    Worker processes come from a fork server (no threads of this process are copied into them).

    A worker process that dies (the kernel's OOM killer, a signal) breaks its pool, as the fork server dying before the
    pool's workers all started does (none more can start): the tasks not yet done run again
    in a new one, as Dask runs again the task of a worker that died (they write the same bytes, each file whole), up to
    ``WORKER_DEATHS`` times; then the command fails with E_WORKER_LOST."""
    if workers <= 1 or len(chunks) <= 1:
        for index, paths in chunks:
            yield index, run_inputs(work, paths)
        return
    import multiprocessing  # here, not at the top: a run in one process never loads multiprocessing (~7 ms)

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["replay.pipeline.engine.parallel", "replay.pipeline.engine.config"])
    # The workers' lifeline: each worker holds the read end and watches it (``_worker_started``); only this process
    # holds the write end, so when it is gone (killed outright: SIGKILL, the OOM killer) the workers read EOF and end,
    # and with them the fork server and multiprocessing's resource tracker (they stayed, reparented to PID 1, forever)
    lifeline, alive = context.Pipe(duplex=False)
    try:
        yield from _pooled(work, chunks, workers, context, lifeline)
    finally:
        alive.close()
        lifeline.close()


def _start_resource_tracker_quiet() -> None:
    """Start multiprocessing's resource tracker (else started with the pool's first lock) on the null device, as it
    is started again should it die (``tracker.quiet``): its warning of leaked semaphores (the command was killed
    outright and it cleans up after it), or its tracebacks once started again after it was killed, went to the
    command's stderr, which carries JSON lines only."""
    from replay.pipeline.engine import tracker

    tracker.quiet()


def _start_fork_server_deaf() -> None:
    """Start the fork server (else started with the pool's first worker) with Ctrl-C blocked, a mask it and the workers
    it forks inherit: a Ctrl-C while its interpreter starts and loads replay's modules, or while a worker starts (a
    terminal signals the whole process group), raised KeyboardInterrupt there and printed a traceback (or "Fatal Python
    error") on the command's stderr. The fork server ignores Ctrl-C once loaded; a worker unblocks it once its handler
    is set (``_worker_started``). The command's own Ctrl-C stays pending while blocked here, not lost. (After the
    resource tracker started: starting it unblocks Ctrl-C.)"""
    from multiprocessing import forkserver

    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        forkserver.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _pooled(work: Work, chunks: list[Chunk], workers: int, context: Any, lifeline: Any) -> Completions:
    """``local_tasks`` in worker processes of ``context``, each given ``lifeline`` (see there)."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    todo = dict(chunks)  # the tasks not yet done, by number (in task order)
    deaths = 0
    while todo:
        _start_resource_tracker_quiet()  # (each pool: after a loss, the fork server is started again if it died, deaf
        _start_fork_server_deaf()  # to Ctrl-C as at first; the tracker first, as starting it unblocks Ctrl-C)
        pool = ProcessPoolExecutor(max_workers=min(workers, len(todo)), mp_context=context,
                                   initializer=_worker_started, initargs=(lifeline,))
        try:
            pending: dict[Future[list[Outcome]], int] = {}
            lost: BaseException | None = None
            try:
                with interrupts.held():  # (a submit starts a worker process: one a Ctrl-C cut off halfway was lost)
                    for index, paths in todo.items():
                        pending[pool.submit(run_inputs, work, paths)] = index
            except (BrokenProcessPool, EOFError, OSError) as exc:  # no worker could be started: the fork server died
                lost = exc  # (killed: its socket gives EOFError, or refuses the connection), or a fork failed (ENOMEM)
            while pending and lost is None:
                done = _next_done(pending)
                for future in sorted(done, key=pending.__getitem__):
                    index = pending.pop(future)
                    failed = future.exception()
                    if isinstance(failed, BrokenProcessPool):
                        lost = failed
                        continue
                    del todo[index]
                    yield index, future.result()
        finally:
            _shut_down(pool)
        if lost is not None:
            deaths += 1
            if deaths > WORKER_DEATHS:
                first = todo[min(todo)][0]
                raise ReplayError("E_WORKER_LOST", f"worker processes died {deaths} times (killed: out of memory, or a "
                                  f"signal); {len(todo)} tasks were not done, the first from {printable(first)!r}",
                                  received=str(lost), exit_code=EXIT_FAILED,
                                  howToFix="Look for what kills the workers (the kernel log: `dmesg` names the OOM "
                                           "killer's victims); give them more memory or run fewer --workers, then run "
                                           "the command again.") from lost


WAIT_S = 0.1  # how often the command, waiting for its workers, looks whether Ctrl-C came


def _next_done(pending: dict[Future[list[Outcome]], int]) -> set[Future[list[Outcome]]]:
    """The tasks done next, waited for with Ctrl-C held (``interrupts.held``): it ends the wait, as KeyboardInterrupt
    raised between two of its steps, never inside the locks it shares with the pool's thread (raised there, it could
    leave one taken: the pool's thread then hung on it, and the command with it, at a second Ctrl-C)."""
    with interrupts.held() as came:
        while not came:
            done, _ = wait(pending, timeout=WAIT_S, return_when=FIRST_COMPLETED)
            if done:
                return done
    return set()  # (only when the interrupt held did not raise as the block ended, its handler having cancelled the
    # run or only noted it: the caller waits on)


def _shut_down(pool: Any) -> None:
    """The pool's workers end their tasks and are waited for; an interrupt meanwhile (a second Ctrl-C: the first is
    why the pool shuts down) ends them now, as it ends a run in this process. (It waited on: the pool's workers, whose
    next task never came, and this process, joining them at its exit, both waited forever.) The pool is told to shut
    down without waiting, and its manager thread (which ends once the workers have) is then joined a short wait at a
    time with Ctrl-C held, as ``_next_done`` waits, so a second Ctrl-C is seen between waits, never raised inside the
    pool's locks; without that thread (a later Python's pool), the workers themselves are joined so."""
    processes = dict(getattr(pool, "_processes", None) or {})
    manager = getattr(pool, "_executor_manager_thread", None)
    with interrupts.held() as came:
        pool.shutdown(wait=False, cancel_futures=True)
        for waited in [manager] if manager is not None else list(processes.values()):
            while waited.is_alive() and not came:
                waited.join(WAIT_S)
        if came:
            for process in processes.values():
                with suppress(Exception):
                    process.kill()  # (what it staged under a temp name is swept by the next run over its folder)
            for process in processes.values():
                with suppress(Exception):
                    process.join(5)


_in_task = False  # a worker process runs a task now (``run_inputs``)


def _worker_started(lifeline: Any = None) -> None:
    """A worker process hears Ctrl-C as the command does (a terminal sends it to the whole process group): inside a
    task, as KeyboardInterrupt, which stops its run (what it staged under temp names goes); between tasks (waiting for
    the next, sending a result back) it ends quietly, having nothing of its own to finish (it printed
    multiprocessing's traceback on stderr, which carries JSON lines only). And it ends when the command's process is
    gone: a thread waits on ``lifeline``, the read end of a pipe whose write end only the command holds, and reads EOF
    when the command was killed outright (SIGKILL: no Ctrl-C, no shutdown). The worker then ends at once, as a killed
    run does: what it staged under temp names is swept by the next run over the folder. (A pipe, not Linux's
    PR_SET_PDEATHSIG: a worker's parent is the fork server, and a pipe works on every POSIX system.) Python's warnings
    it meets are log records, as the command's are (``log_warnings``): a coroutine a Ctrl-C left unawaited printed its
    RuntimeWarning as text on the command's stderr, which carries JSON lines only; so are exceptions Python cannot
    raise (``log_unraisable``)."""
    signal.signal(signal.SIGINT, _worker_interrupted)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # (blocked since the fork server started: a Ctrl-C
    # that came meanwhile is handled now, by the handler above)
    log_warnings(make_logger())
    log_unraisable()
    if lifeline is not None:
        import threading

        threading.Thread(target=_end_with_the_command, args=(lifeline,), name="replay-lifeline", daemon=True).start()


LIFELINE_GRACE_S = 10.0  # how long a task the command left behind has to stop (its temp names removed) before the end


def _end_with_the_command(lifeline: Any) -> None:
    """Wait for EOF on ``lifeline`` (the command's process is gone), then end this worker process: a task in hand stops
    first as at a Ctrl-C (KeyboardInterrupt in the main thread: what it staged under temp names goes), for at most
    ``LIFELINE_GRACE_S``; ended at once, it left a temp file in the folder the next run resumes."""
    import _thread

    with suppress(EOFError, OSError):
        while True:
            lifeline.recv_bytes()  # (nothing is ever sent: this returns only by EOF)
    if _in_task:
        _thread.interrupt_main()  # (the SIGINT handler runs in the main thread: ``_worker_interrupted``)
        deadline = time.monotonic() + LIFELINE_GRACE_S
        while _in_task and time.monotonic() < deadline:
            time.sleep(0.01)
    os._exit(128 + signal.SIGKILL)


def _worker_interrupted(number: int, _frame: Any) -> None:
    if _in_task:
        raise KeyboardInterrupt
    os._exit(128 + number)


def in_order(chunks: list[Chunk], completions: Completions,
             on_done: Callable[[int, list[Outcome]], None] | None = None) -> Iterator[Outcome]:
    """Outcomes in input order, each as soon as every input before it is done; ``on_done`` sees every
    task as it finishes (progress, manifest fragments)."""
    waiting: dict[int, list[Outcome]] = {}
    next_index = 0
    order = [index for index, _ in chunks]
    for index, outcomes in completions:
        if on_done is not None:
            on_done(index, outcomes)
        waiting[index] = outcomes
        while next_index < len(order) and order[next_index] in waiting:
            yield from waiting.pop(order[next_index])
            next_index += 1


def total_bytes(paths: Iterable[str]) -> int:
    total = 0
    for path in paths:
        try:
            total += os.stat(path).st_size
        except OSError:
            continue
    return total
