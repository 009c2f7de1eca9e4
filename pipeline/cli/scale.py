"""The loop of a command over many inputs, as its flags (``cli/scale_flags.py``) set it, and its progress bar.

``run_over`` takes a command's bound spec (``Work``) and its input files, refuses what one run over
all of them would refuse, skips what a manifest already records, runs the rest on the chosen backend
and hands every input's outcome to the command in input order (by default: its stdout to stdout, its
diagnostics to stderr). An input whose run failed ends the command there, as it would have ended a
single run; the inputs before it have been printed. A command whose inputs are independent jobs
(``incident import DIR``) may ask to keep going past an input that was refused on its own (a bad
export): its error is printed in its place, naming it, and the others go on.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from replay.pipeline.cli.scale_flags import Scale
from replay.pipeline.engine import interrupts
from replay.pipeline.engine.errors import PipeClosed, ReplayError
from replay.pipeline.engine.log import write_stderr
from replay.pipeline.engine.outputs import probe_folder
from replay.pipeline.engine.parallel import (
    CLUSTER_TASK_INPUTS,
    LOCAL_FILES,
    LOCAL_TASK_INPUTS,
    SMALL_JOB_BYTES,
    Completions,
    Files,
    Outcome,
    Work,
    default_workers,
    in_order,
    local_tasks,
    partition,
    preflight_all,
    total_bytes,
)
from replay.pipeline.engine.preflight import refuse_file_in_the_way
from replay.pipeline.io.dask_backend import scheduler_address
from replay.pipeline.io.fdio import write_failed, write_stdout
from replay.pipeline.io.journals import MANIFEST, is_url, names_own_descriptor
from replay.pipeline.io.remote import in_this_process  # a string test: fsspec is imported on a URL's first use
from replay.pipeline.io.staging import finish_partial, make_folder, unmake_folders


@dataclass
class Totals:
    """What the inputs added up to."""

    inputs: int = 0
    skipped: int = 0
    errors: int = 0
    refused: int = 0  # with keep_going: inputs refused on their own (exit 2), the others done


class Progress:
    """click's progress bar on stderr (journals done / total, events/s, errors), only on a terminal."""

    def __init__(self, total: int, label: str, enabled: bool) -> None:
        self.started = time.perf_counter()
        self.records = 0
        self.errors = 0
        self.bar: Any = None
        if enabled and total:
            self.bar = click.progressbar(length=total, label=label, file=sys.stderr, show_pos=True, show_eta=False,
                                         item_show_func=self._describe)
            self.bar.__enter__()

    def _describe(self, _item: Any) -> str:
        seconds = max(time.perf_counter() - self.started, 1e-6)
        return f"{self.records / seconds:,.0f} events/s, {self.errors} errors"

    def advance(self, outcomes: list[Outcome]) -> None:
        self.records += sum(o.records for o in outcomes if not o.skipped)
        self.errors += sum(o.errors + (o.failure is not None) for o in outcomes)
        if self.bar is not None:
            self.bar.update(len(outcomes), current_item=True)

    def clear_line(self) -> None:
        """Make room for lines printed on stderr meanwhile (the bar is drawn again at the next update)."""
        if self.bar is not None:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def stderr_is_terminal() -> bool:
    return sys.stderr is not None and sys.stderr.isatty()


def print_outcome(outcome: Outcome) -> None:
    """An input's output where one run would have put it: stdout, then its diagnostics on stderr."""
    if outcome.stderr:
        write_stderr(outcome.stderr)
    if outcome.stdout:
        write_stdout(outcome.stdout)


def holding_stdout(held: list[bytes]) -> Callable[[Outcome], None]:
    """``print_outcome`` whose stdout waits in ``held``: for a folder that appears only at the end, the lines naming
    its files are printed once it is there (a run that fails instead, or is interrupted, printed none of them)."""

    def take(outcome: Outcome) -> None:
        print_outcome(replace(outcome, stdout=b""))
        held.append(outcome.stdout)

    return take


def publish_and_list(work_dir: Path, target: Path, held: list[bytes], *, publish: bool) -> None:
    """The end of a command whose new folder appears whole: ``work_dir`` renamed onto ``target`` (``publish``; else
    removed: nothing appears), then the stdout lines that name its files (``holding_stdout``'s ``held``). From the
    rename on the command is done: an interrupt then neither cuts the listing short nor changes the exit code
    (``interrupts.past_the_end``); one before it still removes the partial folder (``filling``)."""
    with interrupts.past_the_end():
        finish_partial(work_dir, target, publish=publish, last=MANIFEST)
        if publish and held:
            write_stdout(b"".join(held))


def print_refusal(outcome: Outcome) -> None:
    """The error of an input refused on its own, as one run over it alone would print it (plus its ``source``)."""
    from replay.pipeline.engine.errors import error_line

    assert outcome.failure is not None
    body = dict(outcome.failure.reported())
    body.setdefault("source", outcome.path)
    write_stderr(error_line(body))


def files_for(files: list[str]) -> Files:
    """How tasks digest and cache their files: ``io.remote.URL_FILES`` when an input is a URL, else the local functions."""
    if any(is_url(f) for f in files):
        from replay.pipeline.io.remote import URL_FILES

        return URL_FILES
    return LOCAL_FILES


def choose_workers(scale: Scale, files: list[str]) -> int:
    if scale.workers is not None:
        return scale.workers
    if scale.engine == "dask":
        return default_workers()
    return default_workers() if _input_bytes(files) >= SMALL_JOB_BYTES else 1


def _input_bytes(files: list[str]) -> int:
    if any(is_url(f) for f in files):
        from replay.pipeline.io.remote import total_bytes as listed_bytes

        return listed_bytes(files)  # as the folders' listings said: no request per file
    return total_bytes(files)


def _this_process_only(files: list[str], process_local: bool) -> bool:
    """Is something of the run only this process's: memory:// (``process_local``: its output), or an input that is
    one of its descriptors (``<(zcat run.jsonl.gz)``)?"""
    return process_local or any(in_this_process(f) or names_own_descriptor(f) for f in files)


def refuse_process_local(scale: Scale, files: list[str], process_local: bool) -> None:
    """memory:// lives in this process, and so does a pipe of the shell (``/dev/fd/N``): worker processes (local, or a
    local Dask cluster) would find nothing there. A pipe is read in this process whatever ``--workers`` says
    (``run_over``); memory:// with more workers is refused."""
    memory = process_local or any(in_this_process(f) for f in files)
    local_dask = scale.engine == "dask" and not scheduler_address(scale.scheduler)
    if memory and scale.engine == "local" and (scale.workers or 1) > 1:
        raise ReplayError("E_USAGE_INVALID", "memory:// is this process's memory: worker processes cannot see it",
                          received=f"--workers {scale.workers}", expected="--workers 1",
                          howToFix="Use --workers 1, or a Dask cluster whose workers are threads of this process.")
    if memory and local_dask:
        raise ReplayError("E_USAGE_INVALID", "memory:// is this process's memory: the worker processes of a local Dask "
                          "cluster cannot see it", received="--engine dask without --scheduler",
                          howToFix="Point --scheduler at a cluster whose workers are threads of this process, or use "
                                   "--engine local --workers 1.")
    if local_dask and any(names_own_descriptor(f) for f in files):
        raise ReplayError("E_USAGE_INVALID", "an input that is a pipe of this process (/dev/fd/N, from `<(...)`) "
                          "cannot be read by a Dask cluster's workers", received="--engine dask",
                          howToFix="Write what the pipe gives to a file the workers can read, or use --engine local.")


# What ends a command over many inputs before its end: a failure as one run would fail, any other (a backend that could
# not start: an unhandled error), or an interrupt. Its workers are stopped and a partial folder it made goes again.
ENDED_EARLY = (Exception, KeyboardInterrupt)


@contextmanager
def filling(work_dir: Path, target: Path, *, flag: str | None = None, resume_after_interrupt: bool = False) -> Iterator[None]:
    """``work_dir`` (``target`` itself, or its partial sibling) made if missing for the block; when the block fails
    (as one run would, or otherwise: a backend that could not start), or is interrupted (Ctrl-C, SIGTERM, SIGHUP: KeyboardInterrupt), a partial sibling it made goes
    again, so nothing appears and no temp name is left. One a killed run left, which this run resumed, stays (the next
    run resumes there); so does every partial sibling with ``resume_after_interrupt`` (a Dask cluster's workers may
    still write into it). A file standing where a folder on the way to ``target`` must be is refused first
    (``refuse_file_in_the_way``: exit 2, nothing made), and so is a ``target`` that cannot be written (``probe_folder``:
    a temp file made and removed in it, or in the nearest folder above it that exists; E_OUTPUT_WRITE_FAILED, exit 2),
    as the preflight tries every output of a graph before any input is read."""
    refuse_file_in_the_way(str(target), flag)  # (``flag``: the one that named ``target``, ``--out``)
    probe_folder(target)
    created = not work_dir.exists()
    try:
        made = make_folder(work_dir)
    except OSError as exc:
        raise write_failed(str(target), exc) from exc
    ours = work_dir != target and created
    if ours and not resume_after_interrupt:
        interrupts.stage_output(work_dir, folder=True)  # (the last resort, when a stage does not stop, removes it too)
    try:
        yield
    except BaseException as exc:
        interrupted = isinstance(exc, KeyboardInterrupt)
        with interrupts.held_after(exc):  # (Ctrl-C pressed again: noted, the cleanup goes on)
            if ours and isinstance(exc, ENDED_EARLY) and not (resume_after_interrupt and interrupted):
                import shutil  # (loaded only when a failed run leaves a partial folder to remove)

                with interrupts.let_pass():  # (Ctrl-C pressed again: the folder still goes whole, not half)
                    shutil.rmtree(work_dir, ignore_errors=True)
            _settle(work_dir, target, made)
        raise
    _settle(work_dir, target, made)


def _settle(work_dir: Path, target: Path, made: list[Path]) -> None:
    """The end of ``filling``: nothing left for the last resort, and no folder made on the way to a ``target`` that
    did not appear."""
    interrupts.drop_output(work_dir)  # (published, removed, or kept to resume from)
    if not (work_dir.exists() or target.exists()):
        unmake_folders(made[1:])  # nothing appeared (refused, failed): nor do the folders made on the way to it


def cli_work(doc: dict[str, Any], **fields: Any) -> Work:
    """The work of a command over many inputs: its bound spec, with the command's log level and ``--max-errors``."""
    from replay.pipeline.cli.app import logger, max_errors

    return Work(doc, log_level=logger().level, error_limit=max_errors(), **fields)


def run_over(work: Work, files: list[str], scale: Scale, *, label: str, manifest: Any = None,
             take: Callable[[Outcome], None] = print_outcome,
             completions: Callable[[Work, list[tuple[int, list[str]]], int], Completions] | None = None,
             process_local: bool = False, preflight: Callable[[Work, list[str]], None] | None = preflight_all,
             keep_going: bool = False) -> Totals:
    """Run ``work`` over ``files`` and hand each outcome to ``take`` in input order.

    ``manifest`` (an ``io.manifest.Manifest``) skips recorded inputs and records each finished task.
    ``completions`` replaces the backend (tests); else local workers or Dask, as ``scale`` says.
    ``process_local``: the command writes to memory:// (refused where workers are other processes).
    ``preflight``: the refusals over the whole set before any task starts (None: the command made them).
    ``keep_going``: an input refused on its own (exit 2) is printed as its error and counted in
    ``Totals.refused``; the others go on. Any other failure still ends the command.
    """
    if completions is None:
        refuse_process_local(scale, files, process_local)
    if preflight is not None:
        preflight(work, files)
    reused: dict[str, Outcome] = {}
    if manifest is not None:
        manifest.load()
        reused = manifest.reusable(files)
    todo = [f for f in files if f not in reused]
    workers = choose_workers(scale, todo)
    if _this_process_only(files, process_local):
        workers = 1 if scale.engine == "local" else workers
    most = CLUSTER_TASK_INPUTS if scale.engine == "dask" else LOCAL_TASK_INPUTS
    chunks = partition(todo, workers, most)
    if completions is None:
        completions = _backend(scale)
    totals = Totals(inputs=len(files), skipped=len(reused))
    progress = Progress(len(files), label, enabled=not scale.quiet and stderr_is_terminal())
    if reused:
        progress.advance(list(reused.values()))

    def on_done(_index: int, outcomes: list[Outcome]) -> None:
        progress.advance(outcomes)
        if manifest is not None:
            manifest.record(outcomes)

    done: list[str] = []  # the inputs done, for the manifest (their outputs went to ``take``: nothing else is kept)
    running = completions(work, chunks, workers)
    counted = 0  # the errors of the inputs taken so far and of the one being taken: the verdict if stdout's reader goes
    try:
        fresh: Iterator[Outcome] = in_order(chunks, running, on_done)
        for path in files:
            outcome = reused.get(path) or next(fresh)
            assert outcome.path == path, (outcome.path, path)
            counted = totals.errors + outcome.errors
            if outcome.failure is not None:
                progress.clear_line()
                take(outcome)
                if not (keep_going and outcome.failure.refused):
                    raise outcome.failure.exception()
                print_refusal(outcome)
                totals.refused += 1
                continue
            totals.errors += outcome.errors
            done.append(outcome.path)
            if outcome.stderr:
                progress.clear_line()
            take(outcome)
        for _ in fresh:  # let the backend finish (it stops its workers)
            pass
    except ENDED_EARLY as exc:
        if isinstance(exc, PipeClosed):
            exc.errors = counted  # (an input's run that met it counted its own errors in its outcome)
        # The command fails as one run would, or was interrupted: the backend stops its workers now (those busy finish
        # the file they write) rather than when the generator is collected, after the caller removed the folder they
        # write into. (Not a Dask cluster's on an interrupt: its tasks are not waited for then.)
        # Interrupted: Ctrl-C pressed again meanwhile is held (``interrupts.held``), not raised in the middle of this
        # cleanup (the workers' pool half shut down; Python's "Exception ignored in ..." on stderr); the pool's
        # shutdown still sees it (it stops waiting for the workers' tasks), and it is raised once the cleanup is done.
        with interrupts.held_after(exc):
            stop = getattr(running, "close", None)
            if stop is not None and not (isinstance(exc, KeyboardInterrupt) and scale.engine == "dask"):
                stop()
        raise
    finally:
        progress.close()
    from replay.pipeline.cli.app import logger

    if manifest is not None:
        manifest.finish(done, files)
        if manifest.stale.removed:
            logger().info("scale.stale_removed", label=label, paths=manifest.stale.removed,
                          why="their inputs are no longer inputs of the command (deleted, renamed, or under another folder)")
        if manifest.stale.edited:
            logger().warning("scale.stale_kept", code="E_OUTPUT_STALE_KEPT", label=label, paths=manifest.stale.edited,
                             message="their inputs are no longer inputs of the command, but these files were changed since they "
                                 "were written", howToFix="Remove them if they are no longer needed.")
    logger().info("scale.done", label=label, inputs=totals.inputs, skipped=totals.skipped, computed=len(todo),
                  tasks=len(chunks), workers=min(workers, max(1, len(chunks))), engine=scale.engine, errors=totals.errors,
                  **({"refused": totals.refused} if totals.refused else {}))
    return totals


def _backend(scale: Scale) -> Callable[[Work, list[tuple[int, list[str]]], int], Completions]:
    if scale.engine == "dask":
        from replay.pipeline.io.dask_backend import dask_tasks

        return lambda work, chunks, workers: dask_tasks(work, chunks, scheduler=scale.scheduler, workers=workers)
    return local_tasks
