"""JSON report: one document ``{"runs": [...], "aggregate": {...}}`` with a fixed key order, indented."""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.report.model import public_run
from replay.pipeline.report.spool import CALLS_A_PIECE, ByteSpool, listed_calls
from replay.pipeline.report.streaming import render_through

RUN_INDENT = b"\n    "  # a run's lines, indented into the ``runs`` list
# what stands for a run's calls while the rest of it is encoded (a text no summary holds: new in each process)
_PLACEHOLDER = f"replay-calls-{secrets.token_hex(16)}"


def render_chunks(summaries: Iterable[dict[str, Any]], agg: dict[str, Any], title: str) -> Iterator[bytes]:
    return render_through(Streamed(), summaries, agg, title)


def run_pieces(run: dict[str, Any], size: int = CALLS_A_PIECE) -> Iterator[bytes]:
    """``exactjson.dumps(run, option=OPT_INDENT_2)`` in pieces: the run around its ``toolCalls.calls``, those
    encoded ``size`` at a time (memory of a run of many calls: a piece of its bytes, not all of them)."""
    tool_calls: Any = run.get("toolCalls")
    calls = listed_calls(tool_calls)
    if calls is None or len(calls) <= size:
        yield exactjson.dumps(run, option=orjson.OPT_INDENT_2)
        return
    rest = exactjson.dumps({**run, "toolCalls": {**tool_calls, "calls": _PLACEHOLDER}}, option=orjson.OPT_INDENT_2)
    mark = b'"' + _PLACEHOLDER.encode() + b'"'
    head, found, tail = rest.partition(mark)
    if not found or mark in tail:  # (not where it stands alone: encoded whole, as it would be)
        yield exactjson.dumps(run, option=orjson.OPT_INDENT_2)
        return
    indent = b"\n" + b" " * (len(head) - head.rfind(b"\n") - 1 - len(b'"calls": '))  # (the key's: a call's is 2 more)
    yield head + b"["
    for at in range(0, len(calls), size):
        items = exactjson.dumps(calls[at:at + size], option=orjson.OPT_INDENT_2)[1:-2]  # ("\n  {...},\n  {...}")
        yield (b"," if at else b"") + items.replace(b"\n", indent)
    yield indent + b"]" + tail


BATCH_RUNS = 64  # runs encoded together (one orjson call: a run's lines come indented as they stand in the list)
_LIST_HEAD, _LIST_TAIL = b'{\n  "runs": [\n', b"\n  ]\n}"  # around the runs of ``{"runs": [...]}``, indented


class Streamed:
    """The document built as the runs come: the runs encoded a batch at a time, as they stand in the ``runs`` list
    (``{"runs": batch}`` encoded, its runs' lines cut out), or a run of many calls on its own, a piece at a time
    (``run_pieces``) indented into place; into a ``ByteSpool`` (memory stays flat), then written between the head and
    the totals."""

    def __init__(self) -> None:
        self.runs = ByteSpool()
        self.count = 0  # runs written into ``runs``
        self.pending: list[dict[str, Any]] = []  # runs (as the report shows them) not encoded yet
        self.pending_calls = 0  # their calls

    def add(self, summary: dict[str, Any]) -> None:
        run = public_run(summary)
        calls = len(listed_calls(run.get("toolCalls")) or ())
        if calls > CALLS_A_PIECE:  # (encoded a piece at a time, in its turn)
            self._write_pending()
            self._write_alone(run)
            return
        self.pending.append(run)
        self.pending_calls += calls
        if len(self.pending) >= BATCH_RUNS or self.pending_calls >= CALLS_A_PIECE:
            self._write_pending()

    def _write_pending(self) -> None:
        """The pending runs, encoded at once by orjson; each alone (``_write_alone``) when it cannot encode them all
        (a number beyond 64 bits, half a surrogate pair: ``exactjson`` then writes a run as orjson would)."""
        runs, self.pending, self.pending_calls = self.pending, [], 0
        if not runs:
            return
        try:
            listed = orjson.dumps({"runs": runs}, option=orjson.OPT_INDENT_2)
        except orjson.JSONEncodeError:
            for run in runs:
                self._write_alone(run)
            return
        if self.count:
            self.runs.append(b",\n")
        self.runs.append(listed[len(_LIST_HEAD):-len(_LIST_TAIL)])
        self.count += len(runs)

    def _write_alone(self, run: dict[str, Any]) -> None:
        self.runs.append(b",\n    " if self.count else b"    ")
        for piece in run_pieces(run):
            self.runs.append(piece.replace(b"\n", RUN_INDENT))
        self.count += 1

    def chunks(self, agg: dict[str, Any], title: str) -> Iterator[bytes]:
        self._write_pending()
        if not self.count:
            yield exactjson.dumps({"runs": [], "aggregate": agg}, option=orjson.OPT_INDENT_2) + b"\n"
            return
        yield _LIST_HEAD
        yield from self.runs.chunks()
        yield b'\n  ],\n  "aggregate": ' + exactjson.dumps(agg, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n  ") + b"\n}\n"

    def close(self) -> None:
        self.runs.close()
