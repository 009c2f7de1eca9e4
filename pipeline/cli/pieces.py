"""validate, heal and report over one large journal file in pieces run at once (``engine.forked_pieces``), used only when
the pieces' results are exactly what one run over the file gives; else the command runs once, as it always did.

The pieces' results are used when every piece ended clean (nothing on stderr: no diagnostic, no warning, no
failure) and no run id is in two pieces (``_not_apart``: a run that comes back in another piece is one a single run warns
of); heal's also when no piece but the last wrote a heal record for a run it dropped whole (``runDropped``: one run
writes those at its end). Their merge: validate's summary lines added up into one, heal's stdout concatenated in
order (and its heal logs, into the one --log), report's summaries rendered by one ``report`` stage as
``report --in DIR`` renders its files'.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from replay.pipeline.cli.scale_flags import Scale
from replay.pipeline.engine.exactjson import dumps, loads
from replay.pipeline.engine.outputs import note_handed_descriptor
from replay.pipeline.engine.spec import bind
from replay.pipeline.io.fdio import copy_file, copy_to_stdout, write_stdout
from replay.pipeline.io.staging import atomic_output
from replay.pipeline.model.records import RUNS_DROPPED
from replay.pipeline.model.run_cuts import pieces_in, plan
from replay.pipeline.model.runs import keep_every_id

if TYPE_CHECKING:  # (the pieces' engine and the loop over inputs: loaded when a file is large enough to cut)
    from replay.pipeline.engine.forked_pieces import Piece
    from replay.pipeline.engine.parallel import Work

QUIET_LEVELS = ("warning", "error")  # a piece says nothing below these (info: what it did): the command says it


def cuts_for(path: str, scale: Scale, limit: int, *, strict: bool, dialect: str) -> list[int]:
    """Where the command may cut ``path`` (``run_cuts.plan``), ``[]`` to run once: with ``--workers 1``, Dask, --strict
    (it stops at the first problem, which a piece cannot tell is the first), a named --dialect, or where this process
    cannot fork (``forked_pieces.can_fork``)."""
    if strict or dialect != "auto" or scale.engine != "local" or scale.workers == 1 or not _large(path):
        return []
    from replay.pipeline.engine.forked_pieces import can_fork
    from replay.pipeline.engine.parallel import default_workers

    return plan(path, scale.workers or default_workers(), limit) if can_fork() else []


def _large(path: str) -> bool:
    """Is ``path`` large enough for two pieces? (Asked first: a small input loads nothing of the pieces' engine.)"""
    try:
        return pieces_in(os.stat(path).st_size) >= 2
    except OSError:
        return False


SPOOL_SPARE = 64 << 20  # free bytes left in the temp folder beyond the pieces' outputs


def _no_room(spools: list[Any] | None) -> str:
    return "" if spools is not None else "no room for the pieces' outputs in the temp folder (TMPDIR)"


def _piece_level() -> str:
    """The log level of a piece's run, set as the piece's run begins: the command's, but no lower than warning (what
    a run did, info, the command says once for all pieces: ``_said``)."""
    import click

    from replay.pipeline.cli.app import logger
    from replay.pipeline.engine.log import make_logger

    level = logger().level if logger().level in QUIET_LEVELS else QUIET_LEVELS[0]
    ctx = click.get_current_context(silent=True)
    if ctx is not None and isinstance(ctx.find_root().obj, dict):
        ctx.find_root().obj["log"] = make_logger(level)
    return level


def _said(command: str, path: str, cuts: list[int], pieces: list[Piece] | None, started: float, why: str = "") -> bool:
    """Log (info) how the pieces went; True when their results are used."""
    from replay.pipeline.cli.app import logger

    used = pieces is not None and not why
    logger().info("pieces.done" if used else "pieces.not_used", command=command, path=path, pieces=len(cuts) - 1,
                  cuts=cuts[1:-1], seconds=round(time.perf_counter() - started, 3),
                  **({} if used else {"why": why or "a piece wrote on stderr: one run over the whole file says it"}))
    return used


def _not_apart(pieces: list[Piece]) -> str:
    """Why the pieces' results cannot be used for their run ids: a run id in two pieces (one run would say it comes
    back; 1 and 1.0 count as one id: a doubt runs once); "" when every id is in one piece only."""
    seen: set[Any] = set()
    for piece in pieces:
        try:
            ids = set(piece.result["ids"])
        except TypeError:  # (an id that is an object or an array: never in a clean piece, which validate would say)
            return "a run id is no string or number"
        if not seen.isdisjoint(ids):
            return "a run id is in two pieces (one run over the whole file says it comes back)"
        seen |= ids
    return ""


def _at(doc: dict[str, Any], start: int, end: int, size: int) -> dict[str, Any]:
    """``doc`` reading the piece [start, end) of a file of ``size`` bytes (the last piece: to the file's end, wherever
    it is then, as one run reads it)."""
    return bind(doc, set={"read.start_offset": start, "read.end_offset": end if end < size else 0})


def _ids(every: set[Any]) -> dict[str, Any]:
    return {"ids": list(every)}


def validate_in_pieces(work: Work, path: str, cuts: list[int]) -> bool:
    """validate's summary line of ``path`` from its pieces, printed; False (nothing printed) when one run must do it."""
    from replay.pipeline.engine.forked_pieces import run_pieces, spooled
    from replay.pipeline.engine.parallel import preflight_all, run_inputs

    preflight_all(work, [path])  # (what one run refuses, it refuses before any piece runs)
    started = time.perf_counter()

    def job(start: int, end: int) -> dict[str, Any]:
        every = keep_every_id()
        outcome, = run_inputs(replace(work, doc=_at(work.doc, start, end, cuts[-1]), log_level=_piece_level()), [path])
        if outcome.failure is not None or outcome.errors or outcome.stderr:
            os.write(2, b"not clean")
        os.write(1, outcome.stdout)
        return _ids(every)

    with spooled(len(cuts) - 1, SPOOL_SPARE) as spools:
        pieces = run_pieces(cuts, job, spools) if spools is not None else None
        lines = [loads(os.pread(piece.stdout.fileno(), 1 << 20, 0)) for piece in pieces or ()]
    why = _no_room(spools) or ("" if pieces is None else _not_apart(pieces))
    first = lines[0] if lines else {}
    if any(line.keys() != first.keys() or line["source"] != first["source"] or line["errors"] for line in lines):
        why = "the pieces' summaries do not add up"  # (never so: a summary with errors was a piece's stderr)
    if not _said("validate", path, cuts, pieces, started, why):
        return False
    write_stdout(dumps(first | {"events": sum(line["events"] for line in lines),
                                "runs": sum(line["runs"] for line in lines)}) + b"\n")
    return True


def heal_in_pieces(doc: dict[str, Any], path: str, cuts: list[int], log: str | None = None) -> bool:
    """heal's stream of ``path`` from its pieces, written on stdout, and with ``log`` (--log, the ``log`` stage of
    ``doc``) its heal log from theirs, written whole after it, as one run writes it; False (nothing written) when one
    run must do it."""
    from replay.pipeline.cli.app import execute
    from replay.pipeline.engine.config import graph_from_config
    from replay.pipeline.engine.forked_pieces import run_pieces, spooled
    from replay.pipeline.engine.parallel import Work, preflight_all

    preflight_all(Work(doc), [path])  # (--log too: tried where it is, before any piece runs)
    started = time.perf_counter()
    count = len(cuts) - 1
    logs: list[Any] = []

    def job(start: int, end: int) -> dict[str, Any]:
        every = keep_every_id()
        _piece_level()
        piece = _at(doc, start, end, cuts[-1])
        if log is not None:  # (the piece's heal log into its own spool, handed to it: written through its name)
            spool = logs[cuts.index(start)].fileno()
            note_handed_descriptor(spool)
            piece = bind(piece, set={"log.path": f"/dev/fd/{spool}"})
        result = execute(graph_from_config(piece, paths=[path]), command="heal")
        if result.errors:
            os.write(2, b"not clean")
        return _ids(every) | {"dropped": result.facts.get(RUNS_DROPPED, 0)}

    room = 2 * cuts[-1] * (2 if log is not None else 1) + SPOOL_SPARE  # (a healed stream is rarely much longer than
    with spooled(count * (2 if log is not None else 1), room) as spools:  # its input; a heal log rarely longer)
        logs = spools[count:] if spools is not None else []
        pieces = run_pieces(cuts, job, spools[:count]) if spools is not None else None
        why = _no_room(spools) or ("" if pieces is None else _not_apart(pieces))
        if pieces is not None and not why and any(piece.result["dropped"] for piece in pieces[:-1]):
            why = "a piece before the last wrote a heal record of a run dropped whole (one run writes those at its end)"
        if not _said("heal", path, cuts, pieces, started, why):
            return False
        assert pieces is not None
        for piece in pieces:
            copy_to_stdout(piece.stdout.fileno())
        if log is not None:
            with atomic_output(log) as handle:
                for spool in logs:
                    copy_file(spool.fileno(), handle)
    return True


def report_in_pieces(bound: dict[str, Any], path: str, cuts: list[int]) -> Any:
    """The report of ``path`` from its pieces' summaries (the map of a report in parts, once per piece), rendered by
    the reduce (``report_summaries``); None (nothing written) when one run must do it."""
    from replay.pipeline.cli.app import execute
    from replay.pipeline.cli.commands.report import report_summaries, summaries_only
    from replay.pipeline.engine.config import graph_from_config
    from replay.pipeline.engine.forked_pieces import run_pieces, spooled
    from replay.pipeline.engine.parallel import Work, preflight_all
    from replay.pipeline.engine.spec import load_spec

    preflight_all(Work(bind(load_spec("report"), set=bound)), [path])  # (--out: tried before any piece runs)
    doc = summaries_only(bound)
    started = time.perf_counter()

    def job(start: int, end: int) -> dict[str, Any]:
        _piece_level()
        if execute(graph_from_config(_at(doc, start, end, cuts[-1]), paths=[path]), command="report").errors:
            os.write(2, b"not clean")
        return {}

    with spooled(len(cuts) - 1, cuts[-1] + SPOOL_SPARE) as spools:  # (a run's summary is a few kB, its events more)
        pieces = run_pieces(cuts, job, spools) if spools is not None else None
        if not _said("report", path, cuts, pieces, started, _no_room(spools)):
            return None
        assert pieces is not None
        return report_summaries([f"/dev/fd/{piece.stdout.fileno()}" for piece in pieces], bound, strict=False)
