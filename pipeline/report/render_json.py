"""JSON report: one document ``{"runs": [...], "aggregate": {...}}`` with a fixed key order, indented."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.report.model import public_run
from replay.pipeline.report.spool import ByteSpool
from replay.pipeline.report.streaming import render_through


def render_chunks(summaries: Iterable[dict[str, Any]], agg: dict[str, Any], title: str) -> Iterator[bytes]:
    return render_through(Streamed(), summaries, agg, title)


class Streamed:
    """The document built as the runs come: each run dumped on its own, indented into place, into a ``ByteSpool``
    (memory stays flat), then written between the head and the totals."""

    def __init__(self) -> None:
        self.runs = ByteSpool()
        self.count = 0

    def add(self, summary: dict[str, Any]) -> None:
        run = exactjson.dumps(public_run(summary), option=orjson.OPT_INDENT_2)
        self.runs.append((b",\n    " if self.count else b"    ") + run.replace(b"\n", b"\n    "))
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
