"""JSON report: one document ``{"runs": [...], "aggregate": {...}}`` with a fixed key order, indented."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.report.model import public_run


def render(summaries: Sequence[dict[str, Any]], agg: dict[str, Any], title: str) -> bytes:
    """The report document; ``title`` belongs to the human formats and is not part of it."""
    return b"".join(render_chunks(summaries, agg, title))


def render_chunks(summaries: Sequence[dict[str, Any]], agg: dict[str, Any], title: str) -> Iterator[bytes]:
    """The same document a run at a time (each run dumped on its own and indented into place), so a report
    of any number of runs is written without holding it whole."""
    if not summaries:
        yield exactjson.dumps({"runs": [], "aggregate": agg}, option=orjson.OPT_INDENT_2) + b"\n"
        return
    yield b'{\n  "runs": [\n'
    for k, summary in enumerate(summaries):
        run = exactjson.dumps(public_run(summary), option=orjson.OPT_INDENT_2)
        yield (b",\n    " if k else b"    ") + run.replace(b"\n", b"\n    ")
    yield b'\n  ],\n  "aggregate": ' + exactjson.dumps(agg, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n  ") + b"\n}\n"
