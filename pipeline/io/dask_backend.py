"""The Dask backend of a run over many inputs: each task (hundreds of inputs) runs on a Dask worker.

``--engine dask`` with ``--scheduler ADDRESS`` (or ``DASK_SCHEDULER_ADDRESS``) uses that cluster;
without one, a local cluster of ``workers`` worker processes is started for the run and stopped
after it (Ctrl-C, SIGTERM and SIGHUP never reach its workers: replay, interrupted, stops them). A task
is ``parallel.run_inputs``: the command's graph, once per input, under
``anyio.run``; it writes its outputs atomically under deterministic names, so a task that Dask runs
again (its worker died) writes the same bytes and leaves no partial file. Inputs and outputs are either
local paths visible under the same names on every worker (one machine, or a shared filesystem) or
fsspec URLs (``s3://``, ``gcs://``, ``ftp://``, ...: ``io.remote``) that every worker reads and writes
itself. Dask is an optional extra, ``dask`` (``pip install '.[dask]'`` from a clone; it brings fsspec).
"""

from __future__ import annotations

import logging
import os
import signal
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from typing import Any

from replay.pipeline.engine import interrupts
from replay.pipeline.engine.errors import EXIT_FAILED, INTERRUPTS, ReplayError, exc_reason, optional_module
from replay.pipeline.engine.log import make_logger
from replay.pipeline.engine.parallel import Chunk, Completions, Outcome, Work, run_inputs

SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"
CONNECT_SECONDS = 10  # distributed's own timeout on connecting (the TCP connection; each step of its handshake)
# The whole connection to a --scheduler, handshake included (``_connected``): a little over distributed's own timeout,
# so that its error, which says more (refused, no route), comes first where it has one.
CONNECT_DEADLINE = CONNECT_SECONDS + 2
STOP_SECONDS = 60  # how long a failed command waits for its tasks to end their current input


def _distributed() -> Any:
    return optional_module("distributed", "--engine dask needs Dask's distributed scheduler", "the `dask` extra",
                           "pip install 'dask[distributed]' fsspec where replay is installed (the dask extra), or use the "
                           "local engine: --workers N")


def _local_cluster(distributed: Any, workers: int) -> Any:
    """A LocalCluster of ``workers`` processes whose logs stay off stderr, which keeps to JSON lines: the workers'
    (``silence_logs`` quiets only the cluster's own) are set before they start, through the environment they are
    spawned with. (When the cluster closes under load, a worker's heartbeat may still find the scheduler gone and log
    it as an ERROR; a task that fails or a worker that dies is replay's own error, E_CLUSTER_TASK_FAILED.)"""
    import dask

    environ = {**dask.config.get("distributed.nanny.pre-spawn-environ", {}), "DASK_LOGGING__DISTRIBUTED": "critical"}
    with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
        return distributed.LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True,
                                        dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)


def scheduler_address(given: str | None) -> str | None:
    return given or os.environ.get(SCHEDULER_ENV) or None


_HOST_PORT_SCHEMES = ("tcp", "tls", "ws", "wss")  # the transports a scheduler on another process listens on by HOST:PORT
SCHEDULER_FORM = "tcp://HOST:PORT"


def check_scheduler(given: str | None) -> None:
    """Refuse (E_USAGE_INVALID, exit 2, before anything runs) a scheduler address (``--scheduler``, else
    ``DASK_SCHEDULER_ADDRESS``) that Dask could not connect to whatever runs there: no port (``garbage``), a scheme
    Dask has no transport for (``http://``), a host and port that do not parse (``:::``). Whether a scheduler
    answers there is found out by connecting (E_CLUSTER_UNREACHABLE)."""
    address = scheduler_address(given)
    if address is None:
        return
    flag = "--scheduler" if given else SCHEDULER_ENV
    comm = _distributed().comm
    scheme, _, _ = address.rpartition("://")
    why = None
    if scheme and scheme not in _HOST_PORT_SCHEMES:  # (inproc:// is another process's memory; ucx:// needs its own stack)
        why = f"{scheme + '://'!r} is not one of {', '.join(s + '://' for s in _HOST_PORT_SCHEMES)}"
    else:
        try:
            host, port = comm.get_address_host_port(address)
        except ValueError as exc:
            why = str(exc)
        else:
            if not host:
                why = "no host"
            elif not 0 < port < 65536:
                why = f"port {port} is not 1 to 65535"
    if why is not None:
        raise ReplayError("E_USAGE_INVALID", f"{flag} {address!r} is not a Dask scheduler address: {why}", path=flag,
                          received=address, expected=f"{SCHEDULER_FORM} (the address `dask scheduler` prints)",
                          howToFix=f"{'Give --scheduler' if given else 'Set ' + flag + ' to'} the scheduler's address in the form {SCHEDULER_FORM}, e.g. "
                                   "tcp://10.0.0.5:8786 (tls://HOST:PORT for a TLS one).")


@contextmanager
def _connected(distributed: Any, address: str) -> Iterator[Any]:
    """A client of the scheduler at ``address`` for the block, then closed; E_CLUSTER_UNREACHABLE (exit 2) when none
    answers there within ``CONNECT_DEADLINE`` seconds. ``Client(address, timeout=...)`` bounds the TCP connection
    only, not the handshake that follows: a peer that accepts and never answers (no scheduler: an HTTP server, a
    scheduler stopped with SIGSTOP) held it forever. So the client is connected asynchronously under
    ``asyncio.wait_for``, on an event loop of its own in a thread of its own (the interrupts blocked there: they come
    to the main thread, which is waiting and can be interrupted); used from this thread, it is a synchronous client
    (``Client.asynchronous`` is false outside its loop's thread). Whatever ends the block, the client is closed and
    the thread ends (``asyncio.run`` cancels what is left on the loop)."""
    import asyncio
    import threading

    made: list[Any] = []  # the client, once Client() returned
    loop: asyncio.AbstractEventLoop | None = None
    stop: asyncio.Event | None = None
    running = threading.Event()

    async def serve() -> None:
        nonlocal loop, stop
        loop, stop = asyncio.get_running_loop(), asyncio.Event()
        running.set()
        await stop.wait()

    def run() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, INTERRUPTS)  # (and in the threads the loop starts: they inherit it)
        try:
            asyncio.run(serve())
        finally:
            running.set()  # (asyncio.run failed before serving: nothing to wait for)

    async def connect() -> Any:
        made.append(distributed.Client(address, asynchronous=True, timeout=CONNECT_SECONDS))
        return await made[0]

    thread = threading.Thread(target=run, name="replay-dask-client", daemon=True)
    thread.start()
    try:
        running.wait()
        if loop is None:
            raise RuntimeError("the Dask client's event loop did not start")
        connecting = asyncio.run_coroutine_threadsafe(asyncio.wait_for(connect(), CONNECT_DEADLINE), loop)
        try:
            client = connecting.result()
        except BaseException as exc:
            connecting.cancel()  # (an interrupt while connecting: the connection is given up, and closed below)
            if not isinstance(exc, Exception):
                raise
            # (OSError, TimeoutError, what a peer that is no scheduler answered: MemoryError for a frame "too long";
            # a transport that cannot connect at all: ValueError, TypeError)
            timed_out = isinstance(exc, TimeoutError) and not str(exc)  # (the deadline's: distributed's own have a text)
            why = f" within {CONNECT_DEADLINE} s" if timed_out else f": {exc_reason(exc)}"
            raise ReplayError("E_CLUSTER_UNREACHABLE", f"no Dask scheduler answered at {address!r}{why}",
                              received=address, expected="a running scheduler, e.g. tcp://10.0.0.5:8786") from exc
        yield client
    finally:
        with _quiet_distributed():
            for made_client in made:
                with suppress(Exception):  # (the scheduler lost, or never there)
                    made_client.close(timeout=CONNECT_SECONDS)
        if loop is not None and stop is not None:
            loop.call_soon_threadsafe(stop.set)
        thread.join()


def dask_tasks(work: Work, chunks: list[Chunk], *, scheduler: str | None = None, workers: int = 2) -> Completions:
    """Submit every task to the cluster; yields (task number, outcomes) as tasks finish."""
    distributed = _distributed()
    address = scheduler_address(scheduler)
    with ExitStack() as stack:
        stack.enter_context(_quiet_once_interrupted())
        if address:
            client = stack.enter_context(_connected(distributed, address))
        else:
            from multiprocessing import resource_tracker  # here, not at the top: every heal imports this module

            # The interrupts are blocked in this thread while the cluster starts: the threads it starts inherit the
            # mask, and so do the worker processes they spawn (now or on a restart), so a Ctrl-C sent to the process
            # group does not end each worker with a KeyboardInterrupt traceback on stderr; replay, interrupted, closes
            # the cluster. One that comes while the cluster starts waits until it is up (and in the stack). (The
            # resource tracker of multiprocessing does the same for its process, bpo-33613.) It is started here, with
            # SIGHUP blocked too: started later, it would unblock SIGINT and SIGTERM in the thread that spawns workers.
            unblocked = signal.pthread_sigmask(signal.SIG_BLOCK, INTERRUPTS)
            try:
                resource_tracker.ensure_running()  # (unblocks SIGINT and SIGTERM here once its process is spawned)
                signal.pthread_sigmask(signal.SIG_BLOCK, INTERRUPTS)
                cluster = stack.enter_context(_local_cluster(distributed, workers))
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)
            client = stack.enter_context(distributed.Client(cluster))
        run = uuid.uuid4().hex[:12]  # task keys of this run: a cluster may serve several runs at once
        remote = address is not None  # (its workers may be other machines)
        futures = {client.submit(_task, work, paths, run, remote, key=f"replay-{run}-{index}", pure=False): index
                   for index, paths in chunks}
        try:
            for future in distributed.as_completed(list(futures)):
                index = futures[future]
                try:
                    outcomes = future.result()
                except Exception as exc:  # the task's worker died too often (KilledWorker), or the task itself broke
                    raise ReplayError("E_CLUSTER_TASK_FAILED", f"Dask task {index} failed: {type(exc).__name__}: {exc}",
                                      received=type(exc).__name__, exit_code=EXIT_FAILED) from exc
                yield index, outcomes
        except (GeneratorExit, Exception):
            # The command fails as one run would (--strict, a task that failed): its caller removes the folder the
            # tasks write into next. A task running on a worker cannot be cancelled (a scheduler of our own is closed
            # with its workers, one given by --scheduler is not), so every task is told to stop before its next
            # input, and waited for (``STOP_SECONDS`` at most): none writes after this.
            with _quiet_distributed():  # (the scheduler may be lost: distributed logs its reconnects as tracebacks)
                with suppress(Exception):  # (a worker that cannot be told runs its task to the end: waited for as well)
                    client.run(_stop, run, callback_timeout=CONNECT_SECONDS)  # (a scheduler that hangs never answers)
                if _waited(distributed, list(futures), work):
                    with suppress(Exception):
                        client.run(_forget, run, callback_timeout=CONNECT_SECONDS)
                else:
                    with suppress(Exception):
                        client.close(timeout=CONNECT_SECONDS)
            raise
        finally:
            for future in futures:
                with suppress(Exception):  # (its client closed, the scheduler lost)
                    future.cancel()


_QUIET = ("distributed", "tornado.application")  # (tornado's: the loop distributed runs its callbacks on)


@contextmanager
def _quiet_once_interrupted() -> Iterator[None]:
    """From an interrupt on (Ctrl-C; SIGTERM and SIGHUP call its handler too), distributed's and tornado's loggers in
    this process stay quiet for good: the command is ending, and a callback distributed left on its loop when the
    interrupt cut its ``sync`` short logs a traceback (NameError: free variable 'future') that stderr, which keeps to
    JSON lines, must not show. Quieted in the handler, before the interrupt is raised, so before any such callback.
    (A Ctrl-C that is ignored, in a background job, stays ignored: ``interrupts.handling_first``.)"""

    def quiet(_number: int) -> None:
        for log in _distributed_loggers():
            log.setLevel(logging.CRITICAL + 1)

    with interrupts.handling_first(quiet):
        yield


def _distributed_loggers() -> list[logging.Logger]:
    """distributed's loggers in this process, and tornado's."""
    names = [*_QUIET, *(name for name in logging.root.manager.loggerDict if name.startswith("distributed."))]
    return [logging.getLogger(name) for name in names]


@contextmanager
def _quiet_distributed() -> Iterator[None]:
    """distributed's loggers (in this process) hold back their records for the block: stderr keeps to JSON lines."""
    loggers = _distributed_loggers()
    levels = [log.level for log in loggers]
    for log in loggers:
        log.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for log, level in zip(loggers, levels, strict=True):
            log.setLevel(level)


def _waited(distributed: Any, futures: list[Any], work: Work) -> bool:
    """Whether the tasks of a failed command all ended. When they did not within ``STOP_SECONDS``, or the scheduler
    was lost (its futures are cancelled, the tasks on its workers may run on), a warning says so and names the folders
    they write into, which may be left: the command's own error stays its error."""
    try:
        distributed.wait(futures, timeout=STOP_SECONDS)
        return True
    except Exception as exc:  # TimeoutError; FuturesCancelledError (the scheduler lost), a closed connection
        make_logger(work.log_level).warning("dask.tasks_not_stopped", **tasks_not_stopped(work, exc))
        return False


def tasks_not_stopped(work: Work, exc: BaseException) -> dict[str, Any]:
    """The fields of the warning that the tasks of a failed command (``work``) were not seen to end (``exc``: why)."""
    folders = sorted({str(options["write_dir"]) for options in work.doc.get("stages", {}).values()
                      if isinstance(options, dict) and options.get("write_dir")})
    return {"code": "E_CLUSTER_TASKS_NOT_STOPPED", "reason": f"{type(exc).__name__}: {str(exc).partition(chr(10))[0]}",
            "message": f"tasks of the failed command may still be running on the cluster (not stopped within "
                       f"{STOP_SECONDS} s, or the scheduler was lost); they may write into, and leave, the folders named",
            "folders": folders}


_STOPPED: set[str] = set()  # on a worker: the runs whose command stopped (``_stop``)


def _task(work: Work, paths: list[str], run: str, remote: bool = False) -> list[Outcome]:
    """``run_inputs`` on a worker, which ends before its next input once the command stopped the run ``run``. On a
    worker of an external scheduler (``remote``: maybe another machine) what the task wrote is put on disk before it
    reports done: files written inside a staged folder skip their own fsync, and the one sync of ``publish_folder``
    on the command's machine covers that machine's writes only."""
    outcomes = run_inputs(work, paths, lambda: run in _STOPPED)
    if remote:
        os.sync()
    return outcomes


def _stop(run: str) -> None:
    """Run on every worker (``Client.run``): the tasks of ``run`` end before their next input."""
    _STOPPED.add(run)


def _forget(run: str) -> None:
    """Run on every worker once the tasks of ``run`` are all done."""
    _STOPPED.discard(run)
