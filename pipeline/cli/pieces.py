"""validate, heal and report over one large journal file in pieces run at once (``engine.forked_pieces``), used only when
the pieces' results are exactly what one run over the file gives; else the command runs once, as it always did.

The pieces' results are used when every piece ended clean (nothing on stderr: no diagnostic, no warning, no
failure); for validate and heal also when no run id is in two pieces (``_not_apart``: a run that comes back in another
piece is one they warn of; a report reads each run alone); for heal also when no piece but the last wrote a heal
record for a run it dropped whole (one run writes those at its end). A heal piece but the last closes its last run as
one another run follows (``screen.ends_at_run``: the rules log its end with each rule's lines, as one run does, not
after them all, as at an input's end); and with --log, no piece's heal log may follow where its reads cut it
(``LOG_FOLLOWS_READS``: a source record, a run that needs repairs near the most heal holds; or a line longer than a
read's block by a cut, ``run_cuts.long_line_near``): a piece reads from another place than one run. Their merge: validate's summary lines added up
into one, heal's stdout concatenated in order (and its heal logs, into the one --log), report's summaries rendered by
the reduce of a report in parts (``report_parts``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from replay.pipeline.cli.scale_flags import Scale
from replay.pipeline.engine.exactjson import dumps, loads
from replay.pipeline.engine.spec import bind
from replay.pipeline.io.fdio import copy_file, copy_to_stdout, write_stdout
from replay.pipeline.io.journals import STDIN
from replay.pipeline.model.records import LOG_FOLLOWS_READS, RUNS_DROPPED
from replay.pipeline.model.run_cuts import long_line_near, pieces_in, plan
from replay.pipeline.model.runs import keep_every_id

if TYPE_CHECKING:  # (the pieces' engine and the loop over inputs: loaded when a file is large enough to cut)
    from replay.pipeline.engine.forked_pieces import Job, Piece
    from replay.pipeline.engine.parallel import Work

SPOOL_SPARE = 64 << 20  # free bytes left in the temp folder beyond the pieces' outputs


def cuts_for(path: str, scale: Scale, limit: int, *, strict: bool, dialect: str) -> list[int]:
    """Where the command may cut ``path`` (``run_cuts.plan``), ``[]`` to run once: with ``--workers 1``, Dask, --strict
    (it stops at the first problem, which a piece cannot tell is the first), a named --dialect, stdin or a file too
    small for two pieces, or where this process cannot fork (``forked_pieces.can_fork``)."""
    if strict or dialect != "auto" or scale.engine != "local" or scale.workers == 1 or not _large(path):
        return []
    from replay.pipeline.engine.forked_pieces import can_fork
    from replay.pipeline.engine.parallel import default_workers

    return plan(path, scale.workers or default_workers(), limit) if can_fork() else []


def _large(path: str) -> bool:
    """Is ``path`` a file large enough for two pieces? (Asked first: a small input loads nothing of the pieces' engine.)
    Stdin (``-``, whatever file of that name the folder holds) is none."""
    try:
        return path != STDIN and pieces_in(os.stat(path).st_size) >= 2
    except OSError:  # (a path not there: read as it is)
        return False


@contextmanager
def _pieces(command: str, path: str, cuts: list[int], job: Job, room: int,
            check: Callable[[list[Piece]], str] = lambda _: "", handed: list[Any] | None = None, known: str = ""
            ) -> Iterator[list[Piece] | None]:
    """Run ``job`` over the pieces of ``path`` at ``cuts`` (their stdout spooled; ``handed``: as many spools more, one
    for each piece's ``job`` to write into, put in the list before any piece runs), and log (info) how it went: the
    pieces, or None when one run must do the command (``known``: a reason told before, and no piece runs; a piece not
    clean, ``check``'s reason, no room to spool: ``room`` bytes). The spools stay open for the block."""
    from replay.pipeline.cli.app import logger
    from replay.pipeline.engine.forked_pieces import run_pieces, spooled

    started = time.perf_counter()
    count = len(cuts) - 1

    def said(why: str) -> None:
        logger().info("pieces.not_used" if why else "pieces.done", command=command, path=path, pieces=count,
                      cuts=cuts[1:-1], seconds=round(time.perf_counter() - started, 3), **({"why": why} if why else {}))

    if known:
        said(known)
        yield None
        return
    with spooled(count * (1 if handed is None else 2), room) as files:
        if files is not None and handed is not None:
            handed[:] = files[count:]
        pieces, why = run_pieces(cuts, job, files) if files is not None else (None, "no file could be spooled in the "
                                                                              "temp folder (TMPDIR): no room, or none "
                                                                              "can be made there")
        why = why or (check(pieces) if pieces is not None else "")
        said(why)
        yield None if why else pieces


def _piece_level() -> str:
    """The log level of a piece's run, set as the piece's run begins: the command's, but no lower than warning (what
    a run did, info, the command says once for all pieces)."""
    import click

    from replay.pipeline.cli.app import logger
    from replay.pipeline.engine.log import LEVELS, make_logger

    level = LEVELS[max(LEVELS.index(logger().level), LEVELS.index("warning"))]
    ctx = click.get_current_context(silent=True)
    if ctx is not None and isinstance(ctx.find_root().obj, dict):
        ctx.find_root().obj["log"] = make_logger(level)
    return level


def _unclean() -> None:
    """A piece's run found a problem: said on its stderr, where any byte makes the command run once."""
    os.write(2, b"not clean")


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


def validate_in_pieces(work: Work, path: str, cuts: list[int]) -> bool:
    """validate's summary line of ``path`` from its pieces, printed; False (nothing printed) when one run must do it."""
    from replay.pipeline.engine.parallel import preflight_all, run_inputs

    preflight_all(work, [path])  # (what one run refuses, it refuses before any piece runs)

    def job(_k: int, start: int, end: int) -> dict[str, Any]:
        every = keep_every_id()
        outcome, = run_inputs(replace(work, doc=_at(work.doc, start, end, cuts[-1]), log_level=_piece_level()), [path])
        if outcome.failure is not None or outcome.errors or outcome.stderr:
            _unclean()
        os.write(1, outcome.stdout)
        return {"ids": list(every)}

    with _pieces("validate", path, cuts, job, SPOOL_SPARE, _not_apart) as pieces:
        if pieces is None:
            return False
        lines = []
        for piece in pieces:
            piece.stdout.seek(0)
            lines.append(loads(piece.stdout.read()))
    write_stdout(dumps(lines[0] | {"events": sum(line["events"] for line in lines),
                                   "runs": sum(line["runs"] for line in lines)}) + b"\n")
    return True


def heal_in_pieces(doc: dict[str, Any], path: str, cuts: list[int], log: str | None = None) -> bool:
    """heal's stream of ``path`` from its pieces, written on stdout, and with ``log`` (--log, the ``log`` stage of
    ``doc``) its heal log from theirs, written whole after it, as one run writes it; False (nothing written) when one
    run must do it."""
    from replay.pipeline.cli.app import execute
    from replay.pipeline.engine.config import graph_from_config
    from replay.pipeline.engine.outputs import note_handed_descriptor
    from replay.pipeline.engine.parallel import Work, preflight_all
    from replay.pipeline.io.staging import atomic_output

    preflight_all(Work(doc), [path])  # (--log too: tried where it is, before any piece runs)
    logs: list[Any] = []  # with --log: each piece's heal log, spooled

    def job(k: int, start: int, end: int) -> dict[str, Any]:
        every = keep_every_id()
        _piece_level()
        piece = _at(doc, start, end, cuts[-1])
        if end < cuts[-1]:  # (its last run is followed by the next piece's first: closed so, as one run closes it)
            piece = bind(piece, set={"screen.ends_at_run": True})
        if log is not None:  # (the piece's heal log into its own spool, handed to it: written through its name)
            note_handed_descriptor(logs[k].fileno())
            piece = bind(piece, set={"log.path": f"/dev/fd/{logs[k].fileno()}"})
        result = execute(graph_from_config(piece, paths=[path]), command="heal")
        if result.errors:
            _unclean()
        return {"ids": list(every), "dropped": result.facts.get(RUNS_DROPPED, 0), "reads": result.facts.get(LOG_FOLLOWS_READS, False)}

    def check(pieces: list[Piece]) -> str:
        if any(piece.result["dropped"] for piece in pieces[:-1]):
            return "a piece before the last wrote a heal record of a run dropped whole (one run writes those at its end)"
        if log is not None and any(piece.result["reads"] for piece in pieces):  # (the order of its log: its stream's is one)
            return "a piece's heal log may follow where its reads cut it (its stream went the slow way at a source " \
                   "record, or a run that needs repairs is near the most heal holds): one run reads it otherwise"
        return _not_apart(pieces)

    room = 2 * cuts[-1] + SPOOL_SPARE  # (a healed stream is rarely much longer than its input, nor its heal log)
    known = ("a line longer than a read's block lies by a cut: one run holds the runs beside it with it (and may send "
             "one that needs repairs on in parts, logged so), a piece without it"
             if log is not None and long_line_near(path, cuts) else "")  # (read before any piece runs)
    with _pieces("heal", path, cuts, job, room, check, handed=logs if log is not None else None, known=known) as pieces:
        if pieces is None:
            return False
        for piece in pieces:
            copy_to_stdout(piece.stdout.fileno())
        if log is not None:
            with atomic_output(log) as handle:
                for spool in logs:
                    copy_file(spool.fileno(), handle)
    return True


def report_in_pieces(bound: dict[str, Any], path: str, cuts: list[int]) -> Any:
    """The report of ``path`` from its pieces' summaries (the map of a report in parts, once per piece), rendered by
    the reduce (``report_parts``); None (nothing written) when one run must do it."""
    from replay.pipeline.cli.app import execute
    from replay.pipeline.cli.report_parts import report_summaries, summaries_only
    from replay.pipeline.engine.config import graph_from_config
    from replay.pipeline.engine.parallel import Work, preflight_all
    from replay.pipeline.engine.spec import load_spec

    preflight_all(Work(bind(load_spec("report"), set=bound)), [path])  # (--out: tried before any piece runs)
    doc = summaries_only(bound)

    def job(_k: int, start: int, end: int) -> dict[str, Any]:
        _piece_level()
        if execute(graph_from_config(_at(doc, start, end, cuts[-1]), paths=[path]), command="report").errors:
            _unclean()
        return {}

    with _pieces("report", path, cuts, job, cuts[-1] + SPOOL_SPARE) as pieces:  # (a run's summary: a few kB)
        if pieces is None:
            return None
        return report_summaries([f"/dev/fd/{piece.stdout.fileno()}" for piece in pieces], bound, strict=False)
