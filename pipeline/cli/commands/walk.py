"""`replay walk`: a run's journal read-only, one line per record, up to any step (spec: walk)."""

from __future__ import annotations

import gzip
import os
import tomllib
import zlib
from collections.abc import Generator, Iterator
from importlib.resources import files
from typing import Any

import click
from replay.pipeline.cli.app import execute, exit_code_for
from replay.pipeline.cli.commands.read import max_line_option
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.config import graph_from_config
from replay.pipeline.engine.errors import ReplayError, excerpt
from replay.pipeline.engine.graph import Graph
from replay.pipeline.engine.stage import Option, Output
from replay.pipeline.io.journals import DOCUMENT, GZIP_MAGIC, UTF8_BOM, as_document, document_items, head_format
from replay.pipeline.model.walk import (
    DEFAULT_DATA_DIR,
    StepEnd,
    find_step_end,
    find_step_end_in,
    first_record_problem,
    is_run_id,
    journal_of,
    looks_like_path,
)
from replay.stages.read import ReadJournal

CHUNK = 1 << 20

data_dir_option = click.option(
    "--data-dir", metavar="DIR", default=None,
    help=f"Where run ids' journals are: DIR/journal/RUN_ID.jsonl (default {DEFAULT_DATA_DIR}). "
         "With --data-dir the argument is always a run id, never a path.",
)


@click.command(epilog="""\b
Examples:
  replay walk run_20260301T120000_3fa9c1           a captured run, from .replay/journal/
  replay walk run_20260301T120000_3fa9c1 --at c1   up to the end of step (tool call) c1
  replay walk --json runs/flow-7.jsonl | jq .kind   one JSON object per record
  replay walk --data-dir /srv/flows/.relayflowd hello-1
\b
Graph: `replay run` of pipeline/specs/walk.toml (read -> walk -> write).""")
@click.argument("run", metavar="RUN_ID_OR_PATH")
@click.option("--at", "at", metavar="STEP", default=None,
              help="Stop after STEP's terminal record (inclusive); a step that never terminated stops at its last record.")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object per record: {step_id, kind, event, verification, spend}.")
@data_dir_option
@max_line_option
def walk(run: str, at: str | None, as_json: bool, data_dir: str | None, max_line_bytes: int) -> int:
    """Walk a run's journal read-only: one line per record, in journal order, optionally up to a step.

    RUN_ID_OR_PATH is a run id (its journal is DATA_DIR/journal/RUN_ID.jsonl) or the path of a
    journal (it has a `/` or ends in .jsonl, .json, .ndjson or .gz). Canonical journals and
    flows-style ones (records with `kind` and `step_id`) are both read. Nothing is run, written or
    contacted: this only reads the file.

    Text lines are kind, step (`-` for run-level records), the essential detail and [state], in
    columns that split on whitespace (awk '{print $1, $2, $NF}'). Exit 0 walked; 2 refused before any
    output (E_RUN_NOT_FOUND, E_INVALID_RUN_ID, E_STEP_NOT_FOUND, E_JOURNAL_READ_FAILED when the first
    record is unreadable); 1 the journal became unreadable after output began (E_JOURNAL_READ_FAILED
    with the byte offset).
    """
    if at == "":
        raise ReplayError("E_USAGE_INVALID", "--at needs a step id", received="", example="replay walk RUN --at step-1")
    path = resolve_journal(run, data_dir)
    stop = inspect_journal(path, at, max_line_bytes)
    bound: dict[str, Any] = {"walk.format": "json" if as_json else "text", "read.max_line_bytes": max_line_bytes}
    if at is not None and stop is not None and stop.end is None:
        bound["walk.at"] = at  # a JSON document is in memory anyway: the stage stops it
    graph = spec_graph("walk", [path], bound)
    if stop is not None and stop.end is not None:
        # The pre-scan found where STEP ends: reading stops there, so a walk near the start of a
        # 1 GB journal reads a few chunks of it.
        node = graph.nodes["read"]
        node.stage = ReadUpTo(**{**node.stage.config, "end": stop.end})
        node.stage.id = node.id
    return exit_code_for(execute(graph, command="walk"))


# the graph ----------------------------------------------------------------------------------------
def spec_graph(name: str, paths: list[str], bound: dict[str, Any]) -> Graph:
    """The shipped spec ``name`` with the flags bound into it (``"<stage>.<option>": value``)."""
    doc = tomllib.loads(files("replay.pipeline.specs").joinpath(f"{name}.toml").read_text("utf-8"))
    for key, value in bound.items():
        stage, _, option = key.partition(".")
        doc["stages"][stage][option] = value
    return graph_from_config(doc, paths=paths)


class _Reached(Exception):
    """The bounded read got to its end."""


class ReadUpTo(ReadJournal):
    """``read`` that stops at byte ``end`` of its input (where the pre-scan found the walk ends)."""

    options = {**ReadJournal.options, "end": Option(int, 0, "stop reading at this byte offset (0: read it all)")}

    async def produce(self, out: Output) -> None:
        end = self.config["end"]
        if end <= 0:
            await super().produce(out)
            return

        async def send(batch: Batch) -> None:
            offsets = batch.offsets
            if offsets and offsets[-1] is not None and offsets[-1] < end and not batch.tail_open:
                last = batch.raws[-1]
                if last is None or offsets[-1] + len(last) + 1 < end:
                    await out.send(batch)
                    return
            keep = [i for i, o in enumerate(offsets) if o is None or o < end]
            await out.send(batch.select(keep))
            raise _Reached()

        try:
            await super().produce(Output(send, out.drain))
        except _Reached:
            await out.drain()

    def emit(self, port: str, record: dict[str, Any]) -> None:
        """Problems past the end (a line too long after the stop) are none of this walk's business."""
        end = self.config["end"]
        offset = record.get("offset")
        if end > 0 and port == "errors" and isinstance(offset, int) and offset >= end:
            return
        super().emit(port, record)


# refusals before any output ---------------------------------------------------------------------------
def resolve_journal(arg: str, data_dir: str | None) -> str:
    """The journal file a RUN_ID_OR_PATH argument names (refused: E_INVALID_RUN_ID, E_RUN_NOT_FOUND)."""
    if data_dir is None and looks_like_path(arg):
        if not os.path.exists(arg):
            raise ReplayError("E_RUN_NOT_FOUND", f"no journal at {arg!r}", path=arg, refusal="run_not_found",
                              howToFix="Check the path, or give a run id to look in .replay/journal/.")
        if not os.path.isfile(arg):
            raise ReplayError("E_USAGE_INVALID", f"{arg!r} is not a regular file; walk reads one journal file", path=arg,
                              example="replay walk .replay/journal/RUN_ID.jsonl")
        return arg
    if not is_run_id(arg):
        hint = " (with --data-dir the argument is always a run id)" if data_dir is not None and looks_like_path(arg) else ""
        raise ReplayError("E_INVALID_RUN_ID", f"{arg!r} is not a run id{hint}", received=arg, refusal="invalid_run_id",
                          expected="letters, digits, '.', '_' and '-' (at most 200), no '..'",
                          example="run_20260301T120000_3fa9c1")
    folder = data_dir if data_dir is not None else DEFAULT_DATA_DIR
    path = journal_of(folder, arg)
    if not os.path.isfile(path):
        raise ReplayError("E_RUN_NOT_FOUND", f"no journal for run {arg!r} in {os.path.join(folder, 'journal')!r}",
                          path=path, received=arg, refusal="run_not_found")
    return path


def _unreadable(path: str, reason: str, **fields: Any) -> ReplayError:
    at = f" at byte {fields['offset']}" if fields.get("offset") is not None else ""
    return ReplayError("E_JOURNAL_READ_FAILED", f"the journal could not be read{at}: {reason}", source=path,
                       refusal="journal_read_failed", **fields)


def _chunks(path: str) -> Generator[bytes, None, None]:
    """The bytes of a journal (gunzipped), as ``read`` sees them; a leading byte order mark is kept."""
    opened = False
    offset = 0
    try:
        with open(path, "rb") as raw:
            opened = True
            gzipped = raw.read(2) == GZIP_MAGIC
            raw.seek(0)
            stream: Any = gzip.GzipFile(fileobj=raw) if gzipped else raw
            while data := stream.read(CHUNK):
                yield data
                offset += len(data)
    except (OSError, EOFError, zlib.error) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        if not opened:
            raise _unreadable(path, f"cannot open it: {reason}") from exc
        raise _unreadable(path, reason, offset=offset) from exc


def inspect_journal(path: str, at: str | None, max_line_bytes: int) -> StepEnd | None:
    """Refuse, before any output, a journal whose first record is unreadable and an ``at`` step that
    never appears; where the walk stops (None: at the end)."""
    head = b""
    for data in _chunks(path):
        head += data
        if head_format(head) is not None or len(head) > max_line_bytes:
            break
    bom = len(UTF8_BOM) if head.startswith(UTF8_BOM) else 0
    if head_format(head) == DOCUMENT:  # one JSON document (an artifact): read whole, like `read` does
        data = b"".join(_chunks(path))[bom:]
        document = as_document(data) if len(data) <= max_line_bytes else None
        if document is None:
            raise _unreadable(path, "it is neither JSONL nor one JSON artifact", offset=0, received=excerpt(data[:120]))
        if at is None:
            return None
        records = [r for batch in document_items(document, path) for r in batch.events or ()]
        return _found(find_step_end_in(records, at), at, path)
    chunks = _chunks(path)
    problem = first_record_problem(_skip(chunks, bom), max_line_bytes)
    chunks.close()
    if problem is not None:
        raise _unreadable(path, problem.message, line=problem.line, offset=problem.offset + bom,
                          received=excerpt(problem.excerpt))
    if at is None:
        return None
    chunks = _chunks(path)
    end = find_step_end(_skip(chunks, bom), at, max_line_bytes)
    chunks.close()
    if end.end is not None:
        end = StepEnd(end.found, end.terminated, end.end + bom, end.line)
    return _found(end, at, path)


def _skip(chunks: Iterator[bytes], n: int) -> Iterator[bytes]:
    for k, data in enumerate(chunks):
        yield data[n:] if k == 0 else data


def _found(end: StepEnd, at: str, path: str) -> StepEnd:
    if not end.found:
        raise ReplayError("E_STEP_NOT_FOUND", f"step {at!r} never appears in {path!r}", source=path, received=at,
                          refusal="step_not_found", howToFix=f"Run `replay walk {path}` to list the steps, then pick one.")
    return end
