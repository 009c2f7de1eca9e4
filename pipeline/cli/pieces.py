"""validate, heal and report over one large journal file in pieces run at once (``engine.shards``), used only when
the pieces' results are exactly what one run over the file gives; else the command runs once, as it always did.

The pieces' results are used when every piece ended clean (nothing on stderr: no diagnostic, no warning, no
failure) and no run id is in two pieces (``apart``: a run that comes back in another piece is one a single run warns
of); heal's also when no piece but the last wrote a heal record for a run it dropped whole (``runDropped``: one run
writes those at its end). Their merge: validate's summary lines added up into one, heal's stdout concatenated in
order, report's summaries rendered by one ``report`` stage as ``report --in DIR`` renders its files'.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from replay.pipeline.cli.scale_flags import Scale
from replay.pipeline.engine.exactjson import dumps, loads
from replay.pipeline.engine.parallel import Work, default_workers, preflight_all, run_inputs
from replay.pipeline.engine.shards import Piece, copy_out, plan, run_pieces, spool_folder
from replay.pipeline.engine.spec import bind
from replay.pipeline.io.fdio import write_stdout
from replay.pipeline.model.records import RUN_DROPPED
from replay.pipeline.model.runs import keep_every_id

QUIET_LEVELS = ("warning", "error")  # below these, a run says what it does on stderr (info): one run says it


def cuts_for(path: str, scale: Scale, limit: int, *, strict: bool, dialect: str) -> list[int]:
    """Where the command may cut ``path`` (``shards.plan``), ``[]`` to run once: with ``--workers 1``, Dask, --strict
    (it stops at the first problem, which a piece cannot tell is the first), a named --dialect, or --log-level
    info/debug."""
    from replay.pipeline.cli.app import logger

    if strict or dialect != "auto" or scale.engine != "local" or logger().level not in QUIET_LEVELS:
        return []
    return plan(path, scale.workers or default_workers(), limit)


def apart(pieces: list[Piece]) -> bool:
    """Is every run id of the pieces in one piece only? (1 and 1.0 count as one id: a doubt runs once.)"""
    seen: set[Any] = set()
    for piece in pieces:
        try:
            ids = set(piece.result["ids"])
        except TypeError:  # (an id that is an object or an array: validate reports it, so this is never clean)
            return False
        if not seen.isdisjoint(ids):
            return False
        seen |= ids
    return True


def _at(doc: dict[str, Any], start: int, end: int) -> dict[str, Any]:
    return bind(doc, set={"read.start_offset": start, "read.end_offset": end})


def _ids(every: set[Any]) -> dict[str, Any]:
    return {"ids": list(every)}


def validate_in_pieces(work: Work, path: str, cuts: list[int]) -> bool:
    """validate's summary line of ``path`` from its pieces, printed; False (nothing printed) when one run must do it."""
    preflight_all(work, [path])  # (what one run refuses, it refuses before any piece runs)

    def job(start: int, end: int) -> dict[str, Any]:
        every = keep_every_id()
        outcome, = run_inputs(replace(work, doc=_at(work.doc, start, end)), [path])
        if outcome.failure is not None or outcome.errors or outcome.stderr:
            os.write(2, b"not clean")
        os.write(1, outcome.stdout)
        return _ids(every)

    with spool_folder() as folder:
        pieces = run_pieces(cuts, job, folder)
        if pieces is None or not apart(pieces):
            return False
        lines = [loads(piece.stdout.read_bytes()) for piece in pieces]
    first = lines[0]
    if any(line.keys() != first.keys() or line["source"] != first["source"] or line["errors"] for line in lines):
        return False
    write_stdout(dumps(first | {"events": sum(line["events"] for line in lines),
                                "runs": sum(line["runs"] for line in lines)}) + b"\n")
    return True


def heal_in_pieces(doc: dict[str, Any], path: str, cuts: list[int]) -> bool:
    """heal's stream of ``path`` from its pieces, written on stdout; False (nothing written) when one run must do it."""
    from replay.pipeline.cli.app import execute
    from replay.pipeline.engine.config import graph_from_config

    preflight_all(Work(doc), [path])

    def job(start: int, end: int) -> dict[str, Any]:
        every = keep_every_id()
        result = execute(graph_from_config(_at(doc, start, end), paths=[path]), command="heal")
        if result.errors:
            os.write(2, b"not clean")
        return _ids(every)

    with spool_folder() as folder:
        pieces = run_pieces(cuts, job, folder)
        if pieces is None or not apart(pieces) or any(_dropped_runs(piece) for piece in pieces[:-1]):
            return False
        copy_out(pieces, write_stdout)
    return True


def _dropped_runs(piece: Piece) -> bool:
    """Might the piece's stream hold a heal record of a run dropped whole (one run writes those at its end)? (Its
    text anywhere, an event's string too: a doubt runs once.)"""
    marker = dumps(RUN_DROPPED)
    with piece.stdout.open("rb") as f:
        tail = b""
        while chunk := f.read(1 << 20):
            if marker in tail + chunk[:len(marker)] or marker in chunk:
                return True
            tail = chunk[-len(marker):]
    return False


def report_in_pieces(bound: dict[str, Any], path: str, cuts: list[int]) -> Any:
    """The report of ``path`` from its pieces' summaries (the map of a report in parts, once per piece), rendered by
    the reduce (``report_summaries``); None (nothing written) when one run must do it."""
    from replay.pipeline.cli.app import execute
    from replay.pipeline.cli.commands.report import report_summaries, summaries_only
    from replay.pipeline.engine.config import graph_from_config
    from replay.pipeline.engine.spec import load_spec

    preflight_all(Work(bind(load_spec("report"), set=bound)), [path])  # (--out: tried before any piece runs)
    doc = summaries_only(bound)

    def job(start: int, end: int) -> dict[str, Any]:
        if execute(graph_from_config(_at(doc, start, end), paths=[path]), command="report").errors:
            os.write(2, b"not clean")
        return {}

    with spool_folder() as folder:
        pieces = run_pieces(cuts, job, folder)
        if pieces is None:
            return None
        return report_summaries([str(piece.stdout) for piece in pieces], bound, strict=False)
