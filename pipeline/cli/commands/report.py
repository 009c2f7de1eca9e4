"""`replay report`: summarize runs from a stream or from artifacts as text, JSON, Markdown, JUnit or HTML (spec: report)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from replay.pipeline.cli.app import exit_code_for, logger, run_spec, warn_nothing_found
from replay.pipeline.cli.command import ReplayCommand
from replay.pipeline.cli.commands.read import auto_dialect_option, max_line_option, strict_option
from replay.pipeline.cli.in_option import refuse_not_file_or_dir
from replay.pipeline.cli.scale_flags import Scale, scale_options
from replay.pipeline.engine.errors import EXIT_FAILED, ReplayError, counted_before, os_reason, write_failed
from replay.pipeline.engine.log import write_stderr
from replay.pipeline.engine.spec import Flag
from replay.pipeline.io.journals import STDIN, expand_paths, is_journal_name, is_url, not_a_journal_name, path_kind
from replay.pipeline.report.model import SUMMARY_FIELDS, SUMMARY_WHOLE_TYPES
from replay.stages.report import AUTO, DEFAULT_TITLE, FORMAT_BY_SUFFIX, FORMATS, STDOUT, report_format

if TYPE_CHECKING:
    from tempfile import TemporaryDirectory


def report_files(paths: list[str], in_paths: list[str]) -> list[str] | None:
    """The files to read, in order; None means stdin.

    A directory is walked for journals and artifacts, each run capture wrote counted once (``captured_once``: where it
    holds both ``<id>.artifact.json`` and ``<id>.healed.json``, only the healed one is read; capture's
    ``journal/<id>.jsonl`` copy of a run whose artifact the walk found is not). Files named on the command line are
    read as given.
    """
    if not paths and not in_paths:
        return None
    for raw in in_paths:
        refuse_not_file_or_dir(raw)  # --in names artifacts on disk (a stream, a pipe or a device, comes on stdin or as a PATH)
        if raw != STDIN and path_kind(raw) == "file" and not is_journal_name(raw):
            raise not_a_journal_name(raw, raw.rstrip("/").rpartition("/")[2])
    files: list[str] = []
    for raw in [*in_paths, *paths]:
        files += expand_paths([raw])  # raises E_INPUT_PATH_NOT_FOUND / E_INPUT_NOT_FILE_OR_DIR
    return files


@click.command(cls=ReplayCommand, epilog="""\b
Examples:
  replay read run.jsonl | replay heal | replay report
  replay report --in .replay/artifacts
  replay report --in .replay/artifacts --format html --out report.html
  replay report --in runs/ --workers 4 --format json --out report.json
  replay report --in s3://bucket/runs --engine dask --out s3://bucket/report.html
  replay report runs/ --format junit --out junit.xml --fail-on-error
  replay report run.jsonl --format json | jq .aggregate.toolCalls
\b
Graph: `replay stages --graph report`.""")
@click.argument("paths", nargs=-1)
@click.option("--in", "in_paths", multiple=True, metavar="PATH",
              help="An artifact (.json), a journal (.jsonl) or a directory of them (a local path or an fsspec URL); may be repeated.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help=f"Report format [default: from --out's extension ({' '.join(FORMAT_BY_SUFFIX)}), else text].")
@click.option("--out", "out", metavar="FILE", default=None,
              help="Write the report to FILE (whole or not at all; a local path or an fsspec URL) instead of stdout.")
@click.option("--title", default=DEFAULT_TITLE, show_default=True, help="Title of the html, markdown and junit reports.")
@click.option("--fail-on-error", is_flag=True,
              help="Exit 1 when any run failed (status error or run_failed), after writing the report. For CI gates. A run "
                   "whose journal tells no end (status unknown) is no failure: see --fail-on-unknown.")
@click.option("--fail-on-unknown", is_flag=True,
              help="Exit 1 when any run's journal tells no end (status unknown: no terminal event, no run record's "
                   "status, as an agent that crashed leaves it), after writing the report.")
@click.option("--no-heal-logs", is_flag=True,
              help="Do not count repairs from the <id>.heal-log.json files beside artifacts.")
@auto_dialect_option
@max_line_option
@strict_option
@scale_options
def report(paths: tuple[str, ...], in_paths: tuple[str, ...], fmt: str | None, out: str | None, title: str,
           fail_on_error: bool, fail_on_unknown: bool, no_heal_logs: bool, dialect: str, max_line_bytes: int, strict: bool,
           workers: int | None, engine: str, scheduler: str | None, quiet: bool) -> int:
    """Report on runs: status, events by type, tool calls, errors, usage, repairs and duration, per run and in all.

    Reads a stream on stdin (`replay read ... | replay heal | replay report`) or the PATHs / --in
    paths: journals, artifacts, and directories of them such as .replay/artifacts. In a directory,
    <id>.healed.json is read instead of <id>.artifact.json, so a captured run counts once. Repairs are
    counted from heal records in the stream, or from the heal logs capture writes beside its artifacts.

    Exit 0 when the report was written, even if runs in it failed (unless --fail-on-error, or --fail-on-unknown for
    runs whose journal tells no end); 1 when
    input lines could not be read (reported on stderr; the report is still written, except with
    --strict, which stops at the first one); 2 when the input cannot be used at all.

    Files are summarized in parallel (--workers, --engine dask): each worker runs the graph up to
    `summarize` over its files, and one `report` stage renders the summaries in input order; one large journal is
    cut at run boundaries into pieces summarized so (the same report as one run's, or one run is made).
    """
    if out is not None and path_kind(out) == "directory":
        raise ReplayError("E_OUTPUT_UNWRITABLE", f"--out {out!r} is a directory; name the report file", path="--out",
                          expected="a file path, or '-' for stdout", received=out,
                          howToFix="Name the report file (a folder is not written into).", example="--out report.html")
    fmt = report_format(fmt or AUTO, out or STDOUT)  # (the stage's own rule: its timeline need follows from it)
    files = report_files(list(paths), list(in_paths))  # (None: stdin, whose terminal run_spec refuses)
    if files == []:
        warn_nothing_found("report.no_inputs", [*paths, *in_paths], "reported")
        files = [os.devnull]  # an empty report rather than reading stdin
    bound = {"read.max_line_bytes": max_line_bytes, "parse.fields": list(SUMMARY_FIELDS),
             "parse.whole_types": list(SUMMARY_WHOLE_TYPES), "dialect.dialect": dialect,
             "dialect.hold_bytes": max_line_bytes, "summarize.heal_logs": not no_heal_logs,
             "summarize.timeline": fmt == "html", "report.format": fmt, "report.path": Flag("--out", out), "report.title": title,
             "read.listed": True,  # (``report_files`` found the files: a link to nothing a walk met is reported, not refused)
             "read.walked": [path for path in [*in_paths, *paths]  # (the folders it walked: local ones, as checked)
                             if path != STDIN and not is_url(path) and path_kind(path) == "directory"]}
    scale = Scale(workers, engine, scheduler, quiet)
    if files is not None and len(files) == 1:  # one large journal: in pieces at once, when
        from replay.pipeline.cli.pieces import cuts_for, report_in_pieces  # that gives one run's report

        cuts = cuts_for(files[0], scale, max_line_bytes, strict=strict, dialect=dialect)
        result = report_in_pieces(bound, files[0], cuts) if cuts else None
        if result is not None:
            return _exit_code(result, fail_on_error, fail_on_unknown, exit_code_for(result))
    if files and STDIN not in files and len(files) > 1:  # one file streams through one graph (flat memory)
        errors, result = _report_in_parallel(files, bound, scale, strict)
        code = EXIT_FAILED if errors or result.errors else 0
    else:
        result = run_spec("report", files or [], strict=strict, set=bound)
        code = exit_code_for(result)
    return _exit_code(result, fail_on_error, fail_on_unknown, code)


def _exit_code(result: Any, fail_on_error: bool, fail_on_unknown: bool, code: int) -> int:
    """The report's exit code: ``code`` (the run's), else 1 for the runs --fail-on-error / --fail-on-unknown fail on.
    Each gate that fails says so (a warning), whatever else made the exit 1 (a line not read): the runs are named."""
    if code not in (0, EXIT_FAILED):  # (no report: refused, interrupted)
        return code
    facts = result.facts
    failed, unknown = facts.get("failed_runs", 0), facts.get("unknown_runs", 0)
    if fail_on_error and failed:
        logger().warning("report.failed_runs", code="E_RUNS_FAILED", failed=failed,
                         message=f"{_runs(failed, facts.get('failed_run_names'))} failed (status error)")
        code = EXIT_FAILED
    if fail_on_unknown and unknown:
        logger().warning("report.unknown_runs", code="E_RUNS_STATUS_UNKNOWN", unknown=unknown,
                         message=f"{_runs(unknown, facts.get('unknown_run_names'))}: the journal does not tell how "
                                 f"{'it' if unknown == 1 else 'they'} ended (status unknown)")
        code = EXIT_FAILED
    return code


def _runs(count: int, names: list[str] | None) -> str:
    """``2 runs (r1, r2)``: how many runs, and the first of them by name (``…, 3 more``)."""
    named = [json.dumps(name, ensure_ascii=False) for name in names or ()]
    more = f", … {count - len(named)} more" if named and count > len(named) else ""
    return f"{count} run{'' if count == 1 else 's'}" + (f" ({', '.join(named)}{more})" if named else "")


def _report_in_parallel(files: list[str], bound: dict[str, Any], scale: Scale, strict: bool) -> tuple[int, Any]:
    """Map: the report graph without its `report` stage, once per file, its summary records kept in input
    order. Reduce: the report graph with `summaries` in place of `summarize`, over those records. Diagnostics are printed as
    the files' runs report them, in input order."""
    from replay.pipeline.cli.scale import cli_work, files_for, run_over
    from replay.pipeline.engine.parallel import Work, preflight_all
    from replay.pipeline.engine.spec import bind, load_spec

    spec = load_spec("report")
    preflight_all(Work(bind(spec, set=bound)), files)  # what the whole graph refuses (a report over an input)
    from replay.pipeline.cli.report_parts import report_summaries, summaries_only

    work = cli_work(summaries_only(bound), strict=strict, inputs=len(files), files=files_for(files))
    with _spool_folder() as where:
        summaries = Path(where) / "summaries.jsonl"
        with _spooling(summaries):
            sink = summaries.open("wb", buffering=0)  # (unbuffered: a failed write is seen there, not at a later flush)
        with sink:

            def take(outcome: Any) -> None:
                if outcome.stderr:
                    write_stderr(outcome.stderr)
                with _spooling(summaries):
                    data = memoryview(outcome.stdout)
                    while data:
                        data = data[sink.write(data):]

            totals = run_over(work, files, scale, label="report", take=take, preflight=None)  # made above, on the whole graph
        with counted_before(totals.errors):
            result = report_summaries([str(summaries)], bound, strict)
    return totals.errors, result


def _spool_folder() -> TemporaryDirectory[str]:
    """The folder the map spools the files' summaries in, made in the temp folder (``TMPDIR``, else ``/tmp``,
    ``/var/tmp``, ``/usr/tmp``, the working folder: the first one a file can be written in). None of them can be (a
    container whose file system is read-only, TMPDIR naming a folder that is not there): E_OUTPUT_WRITE_FAILED at
    ``TMPDIR``, exit 2, before any input is read (as an output that cannot be written is refused); a folder that
    cannot be made there, as a spooled write that fails (``_spooling``)."""
    import tempfile

    try:
        where = tempfile.gettempdir()
    except OSError as exc:  # (FileNotFoundError: "No usable temporary directory found in [...]")
        raise ReplayError("E_OUTPUT_WRITE_FAILED", "no temp folder can be written: a report over several files spools "
                          "their summaries there", path="TMPDIR", received=os_reason(exc)[1],
                          expected="a folder replay can write temp files in",
                          howToFix="Set TMPDIR to a folder you can write, or pipe the files in (`replay read FILES | "
                                   "replay report`: one stream, nothing spooled); no report was written.",
                          example="TMPDIR=$HOME/tmp", exit_code=2) from None
    with _spooling(Path(where) / "replay-report-*"):
        return tempfile.TemporaryDirectory(prefix="replay-report-")


@contextmanager
def _spooling(path: Path) -> Iterator[None]:
    """A write of the summaries the map spools in the temp folder, which the system refuses (a full TMPDIR, a
    file-size limit): E_OUTPUT_WRITE_FAILED (exit 1) naming the file, as a failed write of the report itself is."""
    try:
        yield
    except OSError as exc:
        error = write_failed(str(path), exc)
        error.body["howToFix"] = ("The summaries of the files are spooled in the temp folder: free space there, or "
                                  "set TMPDIR to a folder with room, then run the command again (no report was written).")
        raise error from exc
