"""JSON report: one document ``{"runs": [...], "aggregate": {...}}`` with a fixed key order, indented."""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.report.model import public_run
from replay.pipeline.report.spool import CALLS_A_PIECE, ByteSpool
from replay.pipeline.report.streaming import render_through

RUN_INDENT = b"\n    "  # a run's lines, indented into the ``runs`` list
# what stands for a run's calls while the rest of it is encoded (a text no summary holds: new in each process)
_PLACEHOLDER = f"replay-calls-{secrets.token_hex(16)}"


def render_chunks(summaries: Iterable[dict[str, Any]], agg: dict[str, Any], title: str) -> Iterator[bytes]:
    return render_through(Streamed(), summaries, agg, title)


def run_pieces(run: dict[str, Any], size: int = CALLS_A_PIECE) -> Iterator[bytes]:
    """``exactjson.dumps(run, option=OPT_INDENT_2)`` in pieces: the run around its ``toolCalls.calls``, those
    encoded ``size`` at a time (memory of a run of many calls: a piece of its bytes, not all of them)."""
    tool_calls = run.get("toolCalls")
    calls = tool_calls.get("calls") if isinstance(tool_calls, dict) else None
    if not isinstance(tool_calls, dict) or type(calls) is not list or len(calls) <= size:
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


class Streamed:
    """The document built as the runs come: each run dumped on its own (a piece at a time: ``run_pieces``),
    indented into place, into a ``ByteSpool`` (memory stays flat), then written between the head and the totals."""

    def __init__(self) -> None:
        self.runs = ByteSpool()
        self.count = 0

    def add(self, summary: dict[str, Any]) -> None:
        self.runs.append(b",\n    " if self.count else b"    ")
        for piece in run_pieces(public_run(summary)):
            self.runs.append(piece.replace(b"\n", RUN_INDENT))
        self.count += 1

    def chunks(self, agg: dict[str, Any], title: str) -> Iterator[bytes]:
        if not self.count:
            yield exactjson.dumps({"runs": [], "aggregate": agg}, option=orjson.OPT_INDENT_2) + b"\n"
            return
        yield b'{\n  "runs": [\n'
        yield from self.runs.chunks()
        yield b'\n  ],\n  "aggregate": ' + exactjson.dumps(agg, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n  ") + b"\n}\n"

    def close(self) -> None:
        self.runs.close()
