"""RenderReport: the sink that renders run summaries as text, JSON, Markdown, JUnit XML or HTML, to stdout or a file."""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import PurePath
from typing import Any

import anyio
import anyio.lowlevel

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Sink
from replay.pipeline.io.fdio import stdout_writer
from replay.pipeline.io.journals import is_url
from replay.pipeline.io.run_files import write_file
from replay.pipeline.io.staging import atomic_output
from replay.pipeline.model.records import DIAGNOSTICS_RECORD, HEAL_RECORD, RECORD_KEY, SUMMARY_RECORD
from replay.pipeline.report.model import Aggregate, aggregate, first_problems
from replay.pipeline.report.spool import SpooledSummaries
from replay.pipeline.report.streaming import Streamed, joined

STDOUT = "-"
FLUSH_BYTES = 256 * 1024
RENDERERS = {
    "text": "replay.pipeline.report.render_text",
    "json": "replay.pipeline.report.render_json",
    "markdown": "replay.pipeline.report.render_markdown",
    "junit": "replay.pipeline.report.render_junit",
    "html": "replay.pipeline.report.render_html",
}
FORMATS = tuple(RENDERERS)
AUTO = "auto"  # the format follows the path's extension (FORMAT_BY_SUFFIX), else text
FORMAT_BY_SUFFIX = {".txt": "text", ".json": "json", ".md": "markdown", ".markdown": "markdown",
                    ".xml": "junit", ".html": "html", ".htm": "html"}
DEFAULT_TITLE = "replay report"


def report_format(fmt: str, path: str) -> str:
    """The format a report written to ``path`` has: ``fmt`` when it names one (a format given wins over the extension),
    else (``auto``) the one its extension says (``FORMAT_BY_SUFFIX``, any case), else text (stdout too)."""
    if fmt != AUTO:
        return fmt
    return FORMAT_BY_SUFFIX.get(PurePath(path).suffix.lower(), "text") if path != STDOUT else "text"


def render(fmt: str, summaries: Sequence[dict[str, Any]], diagnostics: dict[str, Any] | None = None,
           title: str = DEFAULT_TITLE, unattributed: Sequence[dict[str, Any]] = ()) -> bytes:
    """The report over ``summaries`` (and the heal records of no run among them) in format ``fmt`` (one of FORMATS)."""
    return b"".join(render_chunks(fmt, summaries, diagnostics, title, unattributed=unattributed))


def render_chunks(fmt: str, summaries: Sequence[dict[str, Any]], diagnostics: dict[str, Any] | None = None,
                  title: str = DEFAULT_TITLE, totals: Aggregate | None = None,
                  unattributed: Sequence[dict[str, Any]] = ()) -> Iterator[bytes]:
    """The report in pieces, a run at a time in every format (flat memory). ``totals``: the summaries' totals when
    gathered already (as they came, the heal records of no run with them), else they are read for them."""
    module = importlib.import_module(RENDERERS[fmt])
    agg = totals.result(diagnostics) if totals is not None else aggregate(summaries, diagnostics, unattributed)
    yield from module.render_chunks(summaries, agg, title)


def streamed_renderer(fmt: str) -> Streamed | None:
    """The renderer of ``fmt`` that takes the runs as they come (text, json), or None (the others need them all)."""
    module = importlib.import_module(RENDERERS[fmt])
    return module.Streamed() if hasattr(module, "Streamed") else None


@register("report")
class RenderReport(Sink):
    summary = ("Render the summaries from `summarize` (and the heal records of no run it passes on) as a text, json, "
               "markdown, junit or html report (stdout or a file).")
    options = {
        "format": Option(str, AUTO, "report format; auto: from the path's extension ("
                         + " ".join(FORMAT_BY_SUFFIX) + "), else text", choices=(AUTO, *FORMATS)),
        "path": Option(str, STDOUT, "output file (a path or an fsspec URL), written whole or not at all; '-' is stdout"),
        "title": Option(str, DEFAULT_TITLE, "title of the html, markdown and junit reports"),
    }
    takes_summaries = True  # (its inputs are checked with the config: each the main output of a `summarize`)

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.summaries = SpooledSummaries()  # on disk past a few MiB: memory stays flat in the number of runs
        self.streamed: Streamed | None = None  # text and json: each run rendered as it comes, not spooled
        self.format = report_format(self.config["format"], self.config["path"])  # (auto: the path's extension says)

    url_outputs = frozenset({"path"})

    def outputs(self) -> list[tuple[str | None, str]]:
        return [("path", self.config["path"])]

    def whole_stream(self) -> bool:
        return True  # one report of every input

    async def consume(self, batches: AsyncIterator[Batch]) -> None:
        self.streamed = streamed_renderer(self.format)
        try:
            await self._render(batches)
        finally:  # what was spooled goes, whether the report was written or not
            self.summaries.close()
            if self.streamed is not None:
                self.streamed.close()

    async def _gather(self, batches: AsyncIterator[Batch], totals: Aggregate, diagnostics: Counter[str],
                      first: list[dict[str, Any]]) -> int:
        """Keep (spool or stream) the summaries that come, counted into ``totals``; returns how many other records came.
        A method of its own so that the last batch and summary it read are let go before the report is written (a long
        run's summary holds a dict for each of its calls, once they are spooled no longer needed)."""
        others = 0
        keep = self.summaries.append if self.streamed is None else self.streamed.add
        async for batch in batches:
            for record in batch.events or ():
                kind = record.get(RECORD_KEY) if type(record) is dict else None
                if kind == SUMMARY_RECORD:
                    keep(record)
                    totals.add(record)
                elif kind == DIAGNOSTICS_RECORD:
                    diagnostics.update(record.get("byCode") or {})
                    first_problems(first, record.get("first") or ())
                elif kind == HEAL_RECORD:  # repairs of no run in the report (summarize passed them on)
                    totals.add_unattributed(record)
                else:
                    others += 1
        return others

    async def _render(self, batches: AsyncIterator[Batch]) -> None:
        diagnostics: Counter[str] = Counter()
        first: list[dict[str, Any]] = []
        totals = Aggregate()
        others = await self._gather(batches, totals, diagnostics, first)
        if others:
            self.error("E_CONFIG_INPUTS_INVALID",
                       f"the report stage takes summary records; {others} other records were ignored",
                       howToFix="Put a `summarize` stage before `report`: inputs = [\"summarize\"].")
        # The input also ends when an upstream stage failed (its channel is closed on the way out); let the
        # runner's cancellation arrive before anything is written, so a failed run leaves no report.
        await anyio.lowlevel.checkpoint()
        self.publish("failed_runs", totals.statuses["error"])  # (runs by status: the totals count them)
        self.publish("unknown_runs", totals.statuses["unknown"])
        self.publish("failed_run_names", totals.named["error"])  # (the first few: what a warning names)
        self.publish("unknown_run_names", totals.named["unknown"])
        diag = {"total": sum(diagnostics.values()), "byCode": dict(diagnostics), "first": first}
        if self.streamed is not None:
            chunks = self.streamed.chunks(totals.result(diag), self.config["title"])
        else:
            chunks = render_chunks(self.format, self.summaries, diag, self.config["title"], totals)
        path = self.config["path"]
        if path == STDOUT:
            await _to_stdout(chunks)
        elif is_url(path):
            write_file(path, b"".join(chunks))  # a URL: under a temp name, then moved onto its own
        else:
            with atomic_output(path) as handle:
                for chunk in chunks:
                    handle.write(chunk)
                await anyio.lowlevel.checkpoint()  # a run cancelled meanwhile must not commit the file


async def _to_stdout(chunks: Iterator[bytes]) -> None:
    async with stdout_writer() as writer:
        for block in joined(chunks, FLUSH_BYTES, b""):
            await writer.write(block)
