"""A report in parts: the map (the report graph up to ``summarize``, once per part) and the reduce (one ``report``
stage over the parts' summary records), for `report --in DIR`'s files and for one large journal's pieces."""

from __future__ import annotations

import sys
from typing import Any

from replay.pipeline.engine.spec import bind, load_spec


def summaries_only(bound: dict[str, Any]) -> dict[str, Any]:
    """The map of a report in parts: the report graph up to ``summarize``, its summary records on stdout."""
    return bind(load_spec("report"), set=bound, bypass=["report"], add={"summaries": {"type": "write", "inputs": ["summarize"]}})


def report_summaries(files: list[str], bound: dict[str, Any], strict: bool) -> Any:
    """The reduce of a report in parts: the report graph with ``summaries`` in place of ``summarize``, over the summary
    records in ``files`` (in order), each read whole however long (a run's summary lists every call and error)."""
    from replay.pipeline.cli.app import run_spec

    return run_spec("report", files, strict=strict, bypass=["dialect", "notices", "summarize"],
                    add={"summaries": {"type": "summaries", "inputs": ["parse"]}},
                    set={**bound, "read.mark_sources": False, "report.inputs": ["summaries"],
                         "read.max_line_bytes": sys.maxsize})  # (--max-line-bytes is of the input's lines, not of these)
