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
# what stands for a long list of a run while the rest of it is encoded (a text no summary holds: new in each process)
_PLACEHOLDER = f"replay-calls-{secrets.token_hex(16)}"


def render_chunks(summaries: Iterable[dict[str, Any]], agg: dict[str, Any], title: str) -> Iterator[bytes]:
    return render_through(Streamed(), summaries, agg, title)


def _listed_errors(run: dict[str, Any]) -> list[Any] | None:
    """The ``errors`` a run lists, when it is a list; else None."""
    errors = run.get("errors")
    return errors if type(errors) is list else None


def _long_lists(run: dict[str, Any], size: int) -> tuple[dict[str, Any], list[tuple[bytes, bytes, list[Any]]]]:
    """``run`` with each of the lists that grow with it (its ``toolCalls.calls`` and its ``errors``) that has more
    than ``size`` items standing as a placeholder of its own; and those lists, each with its placeholder and its key
    as encoded."""
    held: dict[str, Any] = run
    lists: list[tuple[bytes, bytes, list[Any]]] = []
    tool_calls: Any = run.get("toolCalls")
    calls, errors = listed_calls(tool_calls), _listed_errors(run)
    if calls is not None and len(calls) > size:
        held = {**held, "toolCalls": {**tool_calls, "calls": f"{_PLACEHOLDER}-0"}}
        lists.append((f'"{_PLACEHOLDER}-0"'.encode(), b'"calls": ', calls))
    if errors is not None and len(errors) > size:
        held = {**held, "errors": f"{_PLACEHOLDER}-1"}
        lists.append((f'"{_PLACEHOLDER}-1"'.encode(), b'"errors": ', errors))
    return held, lists


def run_pieces(run: dict[str, Any], size: int = CALLS_A_PIECE) -> Iterator[bytes]:
    """``exactjson.dumps(run, option=OPT_INDENT_2)`` in pieces: the run around its long lists (``_long_lists``: its
    ``toolCalls.calls`` and its ``errors``), those encoded ``size`` items at a time (memory of a run of many calls: a
    piece of its bytes, not all of them)."""
    held, lists = _long_lists(run, size)
    rest = exactjson.dumps(held, option=orjson.OPT_INDENT_2) if lists else b""
    places = [rest.find(mark) for mark, _, _ in lists]
    if not lists or any(at < 0 or rest.count(mark) != 1 for at, (mark, _, _) in zip(places, lists, strict=True)):
        yield exactjson.dumps(run, option=orjson.OPT_INDENT_2)  # (a placeholder not where it stands alone: whole)
        return
    done = 0  # the bytes of ``rest`` written
    for at, (mark, key, items) in sorted(zip(places, lists, strict=True), key=lambda place: place[0]):
        indent = b"\n" + b" " * (at - rest.rfind(b"\n", 0, at) - 1 - len(key))  # (the key's: an item's is 2 more)
        yield rest[done:at] + b"["
        for first in range(0, len(items), size):
            piece = exactjson.dumps(items[first:first + size], option=orjson.OPT_INDENT_2)[1:-2]  # ("\n  {...},\n  {...}")
            yield (b"," if first else b"") + piece.replace(b"\n", indent)
        yield indent + b"]"
        done = at + len(mark)
    yield rest[done:]


BATCH_RUNS = 64  # runs encoded together (one orjson call: a run's lines come indented as they stand in the list)
_LIST_HEAD, _LIST_TAIL = b'{\n  "runs": [\n', b"\n  ]\n}"  # around the runs of ``{"runs": [...]}``, indented


class Streamed:
    """The document built as the runs come: the runs encoded a batch at a time, as they stand in the ``runs`` list
    (``{"runs": batch}`` encoded, its runs' lines cut out), or a run of many calls or errors on its own, a piece at a time
    (``run_pieces``) indented into place; into a ``ByteSpool`` (memory stays flat), then written between the head and
    the totals."""

    def __init__(self) -> None:
        self.runs = ByteSpool()
        self.count = 0  # runs written into ``runs``
        self.pending: list[dict[str, Any]] = []  # runs (as the report shows them) not encoded yet
        self.pending_items = 0  # their calls and errors

    def add(self, summary: dict[str, Any]) -> None:
        run = public_run(summary)
        calls, errors = len(listed_calls(run.get("toolCalls")) or ()), len(_listed_errors(run) or ())
        if max(calls, errors) > CALLS_A_PIECE:  # (encoded a piece at a time, in its turn)
            self._write_pending()
            self._write_alone(run)
            return
        self.pending.append(run)
        self.pending_items += calls + errors
        if len(self.pending) >= BATCH_RUNS or self.pending_items >= CALLS_A_PIECE:
            self._write_pending()

    def _write_pending(self) -> None:
        """The pending runs, encoded at once by orjson; each alone (``_write_alone``) when it cannot encode them all
        (a number beyond 64 bits, half a surrogate pair: ``exactjson`` then writes a run as orjson would)."""
        runs, self.pending, self.pending_items = self.pending, [], 0
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
