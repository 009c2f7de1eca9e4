"""The last resort after an interrupt: a run a stage keeps alive past the grace is ended hard, naming the stage.

Ctrl-C, SIGTERM and SIGHUP stop a run by cancellation (anyio cancels every task of the graph). A stage blocked
where cancellation cannot reach it (a blocking call in a worker thread: ``anyio.to_thread.run_sync`` waits for the
thread; a sync stage blocking the event loop's own thread) would keep the process alive. So, once the CLI has
``enable``d it, the first interrupt starts a watchdog thread's clock: when the run's stages have not all stopped
``GRACE_S`` seconds later (a second interrupt makes it at once), it writes one ``E_STAGE_NOT_STOPPED`` line on
stderr naming the stage still running, removes every output staged under a temp name and not yet published
(``stage_output`` / ``drop_output``: so outputs still appear whole or not at all), and ends the process with
``os._exit(128 + the signal's number)`` (130 SIGINT, 143 SIGTERM, 129 SIGHUP).

A run that took an interrupt itself and goes on to finish what it has (capture: the runner was stopped, what it
printed is written) says so with ``finishing``: until it ends, a further interrupt does not cancel it (that would lose
what it has), it only starts the watchdog's clock, and interrupts after it do not cut the grace short; a run still
going when the grace is over is ended hard, as above.

Only runs of the main thread count (the interrupt cancels those), and only in the process that called ``enable``
(not a worker forked from it). An interrupt reaches the watchdog as one byte on a pipe: written by the interpreter's
C handler (the pipe is the wakeup fd during a run), whichever thread the kernel gave the signal to, and the watchdog
then wakes the run's event loop, so the Python handler that cancels the run gets to run in the main thread.
"""

from __future__ import annotations

import _signal
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from contextvars import Context, ContextVar
from functools import partial
from types import FrameType
from typing import Any

from replay.pipeline.engine.errors import INTERRUPTS, diagnostic, error_line, interrupted_exit

# signal.getsignal and signal.signal without the module's conversion of handlers to enum members (~25 µs a call, and
# ``watching`` makes four per run: over a folder of inputs, one run each, that was a tenth of a small input's cost)
_getsignal, _setsignal = _signal.getsignal, _signal.signal
GRACE_S = 2.0  # how long a run has to stop by cancellation after the first interrupt

# Outputs written under a temp name and not yet renamed into place: path -> is it a folder.
_staged: dict[str, bool] = {}


class _Named:
    """What names a running stage at any moment (called: its name), and tells whether it is one of replay's own
    (``built_in()``: a stage of ``stages/``, not a plugin's; False when not told)."""

    def __init__(self, name: Callable[[], str], built_in: Callable[[], bool] | None = None) -> None:
        self.name = name
        self.built_in = built_in or (lambda: False)

    def __call__(self) -> str:
        return self.name()


# The stages of main-thread runs now running: token -> (what names the stage now, the frame of the task running it).
_running: dict[int, tuple[_Named, FrameType | None]] = {}
# What names the stage a task runs, in the task's context: work it hands to a worker thread runs in a copy of it.
_STAGE: ContextVar[_Named] = ContextVar("replay_stage")


def stage_output(path: str | os.PathLike[str], *, folder: bool = False) -> None:
    """``path`` is an output staged under a temp name (a file, or a ``folder``): the last resort removes it."""
    _staged[os.fspath(path)] = folder


def drop_output(path: str | os.PathLike[str]) -> None:
    """``path`` was published (renamed into place) or removed: nothing left for the last resort to remove."""
    _staged.pop(os.fspath(path), None)


def staged_outputs() -> list[str]:
    """The outputs staged now, in the order they were staged."""
    return list(_staged)


def remove_staged() -> list[str]:
    """Remove every staged output (files, then folders: a file may be inside one); what was removed."""
    import shutil  # (here: a command's start-up does without it)

    removed = []
    for path, folder in sorted(list(_staged.items()), key=lambda item: item[1]):
        try:
            if folder:
                shutil.rmtree(path)
            else:
                os.unlink(path)
        except OSError:
            continue  # published meanwhile, or already gone
        finally:
            _staged.pop(path, None)
        removed.append(path)
    return removed


class _Watchdog:
    """The thread that waits for interrupts (bytes on a pipe) and ends a run that outlives the grace."""

    def __init__(self, grace: float, exit: Callable[[int], Any], write: Callable[[bytes], Any]) -> None:
        self.grace = grace
        self.exit = exit
        self.write = write
        self.pid = os.getpid()
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.write_fd, False)
        self.thread: threading.Thread | None = None
        self.runs = 0  # watched runs going on now: an interrupt outside them is none of the watchdog's
        self.finishing = False  # the run watched now took an interrupt itself and finishes: interrupts do not cancel it
        self.came = 0  # the interrupt the run watched now took (its number), 0 while none came
        self.loop: Any = None  # the event loop of the run watched now (asyncio's), to wake up

    def start(self) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self.watch, name="replay-interrupt-watchdog", daemon=True)
            self.thread.start()

    def notice(self, number: int) -> None:
        """Signal-safe: tell the watchdog an interrupt came."""
        with suppress(OSError):  # (a full pipe: enough interrupts are waiting already)
            os.write(self.write_fd, bytes([number & 0xFF]))

    def wake_loop(self) -> None:
        """Wake the run's event loop: a signal another thread received leaves the main thread asleep in its select,
        with the interrupt's handler (which cancels the run) waiting for it to run Python code again."""
        loop = self.loop
        if loop is not None:
            with suppress(Exception):  # (closed meanwhile)
                loop.call_soon_threadsafe(_nothing)

    def _next(self, timeout: float | None) -> int | None:
        """The next interrupt's number, None when ``timeout`` ran out first, 0 once ``close``d."""
        import select

        ready, _, _ = select.select([self.read_fd], [], [], timeout)
        if not ready:
            return None
        data = os.read(self.read_fd, 1)
        return data[0] if data else 0

    def close(self) -> None:
        """The thread (if started) ends: it reads the end of the pipe."""
        with suppress(OSError):
            os.close(self.write_fd)
        if self.thread is None:
            with suppress(OSError):
                os.close(self.read_fd)

    def watch(self) -> None:
        try:
            self._watch()
        finally:
            with suppress(OSError):
                os.close(self.read_fd)

    def _watch(self) -> None:
        while True:
            first = self._next(None)
            if first == 0:
                return
            if first is None:
                continue
            self.wake_loop()
            deadline = time.monotonic() + self.grace
            again = False
            while (left := deadline - time.monotonic()) > 0:
                later = self._next(left)
                if later == 0:
                    return
                if later is not None:
                    self.wake_loop()
                    if self.finishing:
                        continue  # (a run that finishes what it has keeps its grace: Ctrl-C pressed again and again)
                    again = True  # a second interrupt: no more grace
                    break
            try:
                found = stuck()
            except Exception:  # (naming it failed: the process still ends)
                found = [("<unknown>", False)] if _running else []
            if found:
                self.end(first, [name for name, _ in found], again, built_in=found[0][1])
            # else the run stopped by cancellation and no stage's work goes on: nothing to do

    def end(self, number: int, stages: list[str], again: bool = False, *, built_in: bool = False) -> None:
        """The last resort: say which stage has not stopped, remove the staged outputs, exit 128 + ``number``
        (``again``: a second interrupt cut the grace short; ``built_in``: the first stage is one of replay's own)."""
        with suppress(Exception):  # whatever happens, the process ends
            self.write(not_stopped_line(number, stages, self.grace, again, built_in=built_in))
        with suppress(Exception):
            remove_staged()
        self.exit(interrupted_exit(number))


_watchdog: _Watchdog | None = None


def enable(*, grace: float = GRACE_S, exit: Callable[[int], Any] = os._exit,
           write: Callable[[bytes], Any] | None = None) -> None:
    """Arm the last resort for this process (the CLI's ``main``); ``exit`` and ``write`` for tests."""
    global _watchdog
    disable()
    _watchdog = _Watchdog(grace, exit, write if write is not None else _write_stderr)


def disable() -> None:
    """No last resort any more (tests): the watchdog thread, if one started, ends."""
    global _watchdog
    dog, _watchdog = _watchdog, None
    if dog is not None and dog.pid == os.getpid():
        dog.close()


def _active() -> _Watchdog | None:
    """The watchdog of this process, when ``enable`` armed one here (a forked worker inherits none)."""
    dog = _watchdog
    return dog if dog is not None and dog.pid == os.getpid() else None


def notice(number: int) -> None:
    """Tell the watchdog interrupt ``number`` came (signal-safe); nothing unless the last resort is armed."""
    dog = _active()
    if dog is not None and dog.runs:
        dog.notice(number)


def interrupted(number: int) -> None:
    """Called by the Python handler of an interrupt (main thread): tell the watchdog, unless the signal's byte already
    reached it through the wakeup fd (``watching`` sets it: the C handler writes it, whichever thread got the signal).
    A wakeup fd that was dropped meanwhile (asyncio drops it with its last signal handler: capture's) is set again."""
    dog = _active()
    if dog is None or not dog.runs:
        return
    dog.came = dog.came or number
    try:
        old = signal.set_wakeup_fd(dog.write_fd, warn_on_full_buffer=False)
    except (ValueError, OSError):
        old = None
    if old == dog.write_fd:
        return  # (written already)
    if old is not None and old != -1:
        with suppress(ValueError, OSError):
            signal.set_wakeup_fd(old)  # someone else's (asyncio's own signal handling): it stays theirs
    dog.notice(number)


def watch_again() -> None:
    """The watchdog's pipe is the wakeup fd again, after a signal receiver of the run's own closed (asyncio drops the
    wakeup fd with its last signal handler: capture's runner). Without it, an interrupt the kernel gives another thread
    (a worker thread writing files) never reaches anyone: the main thread sleeps on in its select, the handler that
    would tell the watchdog never runs. Nothing outside a watched run of the main thread; a wakeup fd someone else
    set stays theirs."""
    dog = _active()
    if dog is None or not dog.runs or threading.current_thread() is not threading.main_thread():
        return
    with suppress(ValueError, OSError):
        now = signal.set_wakeup_fd(dog.write_fd, warn_on_full_buffer=False)
        if now not in (-1, dog.write_fd):
            signal.set_wakeup_fd(now)


def finishing() -> None:
    """The run of the main thread took an interrupt itself and goes on to finish what it has (capture stopped its
    runner and writes what it printed). Until the run ends, a further interrupt does not cancel it: it only reaches
    the watchdog, whose clock it starts; the run then has the grace to end (more interrupts do not shorten it: users
    press Ctrl-C again and again) before it is ended hard. Nothing unless the last resort is armed (nothing else would
    end a run that then hangs): an interrupt then cancels the run as usual."""
    dog = _active()
    if dog is not None and dog.runs and threading.current_thread() is threading.main_thread():
        dog.finishing = True


def check() -> None:
    """Let an interrupt in: called now and then by sync work that may take long in the event loop's thread (a
    stage's ``flush`` computing a diff), which cancellation cannot reach until it returns. Once the run of the main
    thread took an interrupt (and is not ``finishing``), it raises KeyboardInterrupt, as a second Ctrl-C would: the
    run ends at once, exit 128 + the signal's number, before the grace is over. Nothing outside such a run."""
    dog = _active()
    if (dog is not None and dog.runs and dog.came and not dog.finishing
            and threading.current_thread() is threading.main_thread()):
        raise KeyboardInterrupt


def finishing_run() -> bool:
    """Is a run finishing (``finishing``)? Then an interrupt's handler leaves it running, once it has told the
    watchdog (``interrupted``)."""
    dog = _active()
    return dog is not None and dog.runs > 0 and dog.finishing


def _nothing() -> None:
    pass


def _write_stderr(data: bytes) -> None:
    with suppress(OSError):
        os.write(2, data)  # (not sys.stderr: the blocked thread may hold its lock)


def not_stopped_line(number: int, stages: list[str], grace: float = GRACE_S, again: bool = False, *,
                     built_in: bool = False) -> bytes:
    """The one E_STAGE_NOT_STOPPED line: the stage still running ``grace`` seconds after interrupt ``number`` (or when
    a second interrupt came, ``again``); ``stages[1:]``, others still running, are named too. ``built_in``: that stage
    is one of replay's own (``stages/``): a bug of replay's to report, not a plugin's blocking call to fix."""
    name = _signal_name(number)
    stage = stages[0] if stages else None
    what = f"stage {stage!r}" if stage is not None else "the run"
    when = "before a second interrupt" if again else f"within {grace:g} s of the interrupt"
    others = f" (still running too: {', '.join(repr(s) for s in stages[1:])})" if len(stages) > 1 else ""
    return error_line(diagnostic(
        "E_STAGE_NOT_STOPPED",
        f"{what} did not stop {when} ({name}){others}; replay ended the process, removing the "
        f"outputs not yet written whole",
        stage=stage, expected=f"the run to stop within {grace:g} s of {name}",
        received=f"{what} still running" + (" at a second interrupt" if again else f" after {grace:g} s"),
        stages=stages if len(stages) > 1 else None,
        **({"howToFix": BUILT_IN_NOT_STOPPED} if built_in and stage is not None else {}),
    ))


# (E_STAGE_NOT_STOPPED's catalogue howToFix is for a plugin's stage: the usual cause, a blocking call of its own)
BUILT_IN_NOT_STOPPED = (
    "The stage is one of replay's own, and it should stop within the grace: this is a bug in replay. Please report "
    "it with this error line, the command (and config) you ran, your platform and Python version, and what the "
    "stage was doing (its input, an output on a slow or remote disk); meanwhile a second interrupt ends it at once.")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


@contextmanager
def running(stage: Callable[[], str], frame: FrameType | None = None,
            built_in: Callable[[], bool] | None = None) -> Iterator[None]:
    """A stage of a run runs for the block (``stage()`` names it at any moment: a chain of fused transforms names the
    one at work; ``built_in()`` tells whether that one is replay's own); ``frame``: the frame of the task running it,
    to tell which blocks the event loop's thread. Counted only for a run of the main thread, in the process the last
    resort is armed in."""
    if _active() is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    token = object()
    named = _Named(stage, built_in)
    _running[id(token)] = (named, frame)
    var = _STAGE.set(named)  # (copied into the context of the work the stage hands to a worker thread)
    try:
        yield
    finally:
        _STAGE.reset(var)
        del _running[id(token)]


def stuck_stages() -> list[str]:
    """The names of the stages that have not stopped (``stuck``)."""
    return [name for name, _ in stuck()]


def stuck() -> list[tuple[str, bool]]:
    """The stages that have not stopped, each named and whether it is replay's own: the one whose task holds the main
    thread (it blocks the event loop), if one does; else those whose tasks still run, then those whose work still runs
    in a worker thread (their task was cancelled, or the run even ended, but the thread goes on: the interpreter waits
    for it before it exits)."""
    entries = list(_running.values())
    frames = sys._current_frames()
    main = frames.get(threading.main_thread().ident or 0)
    on_stack = set()
    while main is not None:
        on_stack.add(id(main))
        main = main.f_back
    blocking = [stage for stage, frame in entries if frame is not None and id(frame) in on_stack]
    # (while one holds the event loop's thread, the others never got to see the cancellation: it alone is stuck)
    found = blocking or [stage for stage, _ in entries] + threaded_stages(frames)
    names: list[tuple[str, bool]] = []
    for stage in found:
        with suppress(Exception):
            name = stage()
            if name not in [known for known, _ in names]:
                built_in = False
                with suppress(Exception):
                    built_in = bool(stage.built_in())
                names.append((name, built_in))
    return names


def threaded_stages(frames: dict[int, FrameType] | None = None) -> list[_Named]:
    """The stages whose work a thread other than the main one runs now: a frame of the thread runs it in a copy of the
    stage task's context (``anyio.to_thread.run_sync``, ``asyncio.to_thread`` copy it), which names the stage."""
    frames = sys._current_frames() if frames is None else frames
    skip = {threading.main_thread().ident, threading.get_ident()}
    found = []
    for ident, frame in frames.items():
        if ident in skip:
            continue
        current: FrameType | None = frame
        while current is not None:
            stage = _stage_of_frame(current)
            if stage is not None:
                found.append(stage)
                break
            current = current.f_back
    return found


def _stage_of_frame(frame: FrameType) -> _Named | None:
    """The stage whose context a local of ``frame`` holds (a worker thread's copied context), if one does."""
    try:
        values = list(frame.f_locals.values())
    except Exception:
        return None
    for value in values:
        try:
            context = value if isinstance(value, Context) else _context_in_call(getattr(value, "fn", value))
            if context is not None and _STAGE in context:
                return context[_STAGE]
        except Exception:  # (a local whose attributes run code that fails)
            continue
    return None


def _context_in_call(call: Any) -> Context | None:
    """The context of ``functools.partial(context.run, ...)`` (how asyncio.to_thread hands work to its executor)."""
    owner = getattr(getattr(call, "func", None), "__self__", None) if isinstance(call, partial) else None
    return owner if isinstance(owner, Context) else None


class _HandledFirst:
    """A SIGINT handler (``handling_first``): ``first(number)``, then the handler it wraps, unless ``first`` returned
    True (the interrupt is dealt with)."""

    def __init__(self, first: Callable[[int], bool | None], wrapped: Callable[[int, FrameType | None], Any]) -> None:
        self.first = first
        self.wrapped = wrapped

    def __call__(self, number: int, frame: FrameType | None) -> Any:
        if self.first(number):
            return None
        return self.wrapped(number, frame)


@contextmanager
def handling_first(first: Callable[[int], bool | None]) -> Iterator[None]:
    """For the block, Ctrl-C's handler calls ``first(number)`` before the handler it had (asyncio's, which cancels a run;
    Python's, which raises KeyboardInterrupt; SIGTERM and SIGHUP call it too), and skips that one when ``first`` returns
    True. Only in the main thread, and only over a handler of Python's: a Ctrl-C ignored (a background job) or left to
    the system stays so. Not twice with one ``first`` (a run within a run). Put back at the end, unless another handler
    replaced it meanwhile (that one is someone else's, and stays)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = _getsignal(signal.SIGINT)
    if not callable(handler) or (isinstance(handler, _HandledFirst) and handler.first is first):
        yield
        return
    wrapper = _HandledFirst(first, handler)
    _setsignal(signal.SIGINT, wrapper)
    try:
        yield
    finally:
        if _getsignal(signal.SIGINT) is wrapper:
            _setsignal(signal.SIGINT, handler)  # (asyncio's, as it set it: it restores its own when the loop ends)


@contextmanager
def let_pass() -> Iterator[None]:
    """For the block, Ctrl-C, SIGTERM and SIGHUP do nothing: the cleanup of a run that is ending already (a partial
    folder being removed, which a Ctrl-C pressed again must not leave half removed; the run ends with its own exit
    code). Main thread only; a signal ignored, or left to the system, stays so; each handler is put back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {number: _getsignal(number) for number in INTERRUPTS}
    for number, handler in handlers.items():
        if callable(handler):
            _setsignal(number, _passed)
    try:
        yield
    finally:
        for number, handler in handlers.items():
            if callable(handler) and _getsignal(number) is _passed:
                _setsignal(number, handler)


def _passed(_number: int, _frame: FrameType | None) -> None:
    pass


@contextmanager
def at_once() -> Iterator[None]:
    """For the block, Ctrl-C raises KeyboardInterrupt where it finds the main thread (Python's own handler; SIGTERM and
    SIGHUP too, where the CLI makes them act as Ctrl-C): sync work in an event loop's thread before any task runs (a
    graph's preflight, which may block opening a FIFO no one writes: the sidecar found beside a session), which the
    cancellation asyncio's handler starts would reach only once it returned. Main thread only; a Ctrl-C ignored, or
    left to the system, stays so; put back after, unless another handler replaced it meanwhile."""
    handler = _getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(handler):
        yield
        return
    _setsignal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if _getsignal(signal.SIGINT) is signal.default_int_handler:
            _setsignal(signal.SIGINT, handler)


def held_after(exc: BaseException) -> AbstractContextManager[Any]:
    """The cleanup after ``exc`` ended a block: Ctrl-C pressed again while it runs waits (``held``) when ``exc`` was an
    interrupt (the first Ctrl-C: noted, the cleanup goes on), else nothing is held."""
    return held() if isinstance(exc, KeyboardInterrupt) else nullcontext()


@contextmanager
def held() -> Iterator[list[int]]:
    """For the block, Ctrl-C waits: the handler it had runs when the block ends (raising KeyboardInterrupt there, or
    cancelling a run), once however many came; the block sees them come in the list it is given, to end early. For
    a step an interrupt must not cut halfway (a worker process being started: cut after the fork, it was known to no
    one, and it failed on its own later, its traceback on stderr), or a wait on threads' locks (KeyboardInterrupt
    raised just as a lock was taken left it taken: the thread that needed it next hung, and the command with it).
    SIGTERM and SIGHUP wait too where the CLI makes them act as Ctrl-C. Main thread only; a Ctrl-C ignored, or left
    to the system, stays so."""
    with _kept(late=False) as came:
        yield came


@contextmanager
def past_the_end() -> Iterator[list[int]]:
    """For the block, the command's work is done: its output is being published (a new folder renamed into place) and
    said (the stdout lines naming its files). An interrupt then is too late to undo anything, and cutting the block
    would leave the folder there with part of its listing: the first one (Ctrl-C; SIGTERM and SIGHUP where the CLI
    makes them act as it) is noted in the list the block is given and dropped, the block finishes, and the command
    exits as it would have. A second one still ends the block (the handler it had runs: KeyboardInterrupt), for a
    write that hangs. Main thread only; a Ctrl-C ignored, or left to the system, stays so."""
    with _kept(late=True) as came:
        yield came


@contextmanager
def _kept(*, late: bool) -> Iterator[list[int]]:
    """Ctrl-C noted in the list the block is given, not acted on: when the block ends the handler it had runs once
    (``held``), or (``late``: ``past_the_end``) the first is dropped and a second runs the handler at once."""
    came: list[int] = []
    handler = _getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(handler):
        yield came
        return

    def note(number: int, frame: FrameType | None) -> None:
        came.append(number)
        if late and len(came) > 1:
            _setsignal(signal.SIGINT, handler)
            handler(number, frame)

    _setsignal(signal.SIGINT, note)
    try:
        yield came
    finally:
        if _getsignal(signal.SIGINT) is note:
            _setsignal(signal.SIGINT, handler)
        if came and not late:
            handler(signal.SIGINT, sys._getframe())


def _noticed(number: int) -> bool:
    """Ctrl-C during a watched run (``watching``): the watchdog is told; a run that is ``finishing`` is not cancelled
    (the watchdog alone hears of it)."""
    interrupted(number)
    return finishing_run()


def unwrapped(handler: Any) -> Any:
    """``handler`` as it was before ``watching`` wrapped it (SIGTERM and SIGHUP call it after their own ``notice``)."""
    return handler.wrapped if isinstance(handler, _HandledFirst) and handler.first is _noticed else handler


@contextmanager
def watching() -> Iterator[None]:
    """The block is a run of the main thread: Ctrl-C's handler (asyncio's, which cancels the run) also tells the
    watchdog. Nothing unless the last resort is armed, or outside the main thread."""
    dog = _active()
    if dog is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    dog.start()
    with handling_first(_noticed):
        # An interrupt's byte reaches the watchdog from whichever thread the kernel gives the signal to (a worker
        # thread's, the main thread asleep in its select meanwhile); a wakeup fd someone else set stays theirs.
        woken = signal.set_wakeup_fd(dog.write_fd, warn_on_full_buffer=False)
        if woken not in (-1, dog.write_fd):
            signal.set_wakeup_fd(woken)
        loop = dog.loop
        with suppress(RuntimeError):  # (no asyncio loop: another backend)
            import asyncio

            dog.loop = asyncio.get_running_loop()
        dog.runs += 1
        finishing, came = dog.finishing, dog.came
        dog.finishing, dog.came = False, 0
        try:
            yield
        finally:
            dog.runs -= 1
            dog.loop = loop
            dog.finishing, dog.came = finishing, came
            if woken == -1:
                now = signal.set_wakeup_fd(-1)
                if now != dog.write_fd:
                    signal.set_wakeup_fd(now)  # (set by someone else meanwhile: theirs)


def run_async(func: Callable[[], Any]) -> Any:
    """``anyio.run(func)`` (asyncio), its event loop made whole whatever Ctrl-C does meanwhile (``loop_made_whole``)."""
    import anyio

    return anyio.run(func, backend_options={"loop_factory": loop_made_whole})


def loop_made_whole() -> Any:
    """A new asyncio event loop, made with Ctrl-C held: one cut halfway (KeyboardInterrupt inside its ``__init__``, a
    Ctrl-C just as a run starts: a worker taking its next task, say) lacked its self-pipe, and its ``__del__`` printed
    Python's "Exception ignored ... AttributeError: '_UnixSelectorEventLoop' object has no attribute '_ssock'" on
    stderr, which carries JSON lines only. A Ctrl-C that came meanwhile acts once the loop is made, which it closes
    first when it raises."""
    import asyncio

    loop = None
    try:
        with held():
            loop = asyncio.new_event_loop()
    except BaseException:
        if loop is not None:
            loop.close()
        raise
    return loop
