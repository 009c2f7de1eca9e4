"""JSON report: one document ``{"runs": [...], "aggregate": {...}}`` with a fixed key order, indented."""

from __future__ import annotations

from typing import Any

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.report.model import public_run


def render(summaries: list[dict[str, Any]], agg: dict[str, Any], title: str) -> bytes:
    """The report document; ``title`` belongs to the human formats and is not part of it."""
    document = {"runs": [public_run(s) for s in summaries], "aggregate": agg}
    return exactjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"
