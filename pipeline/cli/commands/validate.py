"""`replay validate`: check artifacts and journals; problems as JSON on stderr, one summary per input on stdout (spec: validate)."""

from __future__ import annotations

from pathlib import Path

import click

from replay.pipeline.cli.app import refuse_terminal_stdin, run_spec, warn_nothing_found
from replay.pipeline.cli.command import ReplayCommand
from replay.pipeline.cli.commands.read import auto_dialect_option, max_line_option, strict_option
from replay.pipeline.cli.in_option import refuse_not_file_or_dir
from replay.pipeline.cli.scale_flags import Scale, scale_options
from replay.pipeline.engine.errors import EXIT_FAILED, EXIT_OK, ReplayError
from replay.pipeline.engine.spec import bind, load_spec
from replay.pipeline.io.journals import (
    DOCUMENT_SUFFIXES,
    LINES_SUFFIXES,
    STDIN,
    expand_paths,
    input_not_found,
    is_url,
    names_own_descriptor,
    not_a_journal_name,
    not_file_or_dir,
    require_stdin,
)

ARTIFACT, STREAM = "artifact", "stream"


def input_kind(name: str) -> str | None:
    """``artifact`` for one JSON document, ``stream`` for a JSONL journal, None for anything else."""
    if name.endswith(DOCUMENT_SUFFIXES):
        return ARTIFACT
    if name.endswith(LINES_SUFFIXES):
        return STREAM
    return None


def resolve_inputs(paths: tuple[str, ...], named: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """``(path, kind)`` for every file to validate, in order; refuses unusable paths before any output. A file in
    ``named`` (the command's PATHs) is read whatever its name, as read, heal and report read theirs: a journal unless
    its name says artifact; one given to --in must say what it is by its suffix."""
    found: list[tuple[str, str]] = []
    for raw in paths:
        if raw == STDIN:
            require_stdin()
            found.append((STDIN, STREAM))
            continue
        if is_url(raw):
            found += _url_inputs(raw)
            continue
        p = Path(raw)
        if not p.exists():
            raise input_not_found(raw, "input", "Check the path (e.g. replay validate .replay/artifacts).")
        if p.is_dir():  # the same walk as `replay read` (sorted, regular files only, side files skipped), but every
            for name in expand_paths([raw], once=False):  # file a capture wrote is checked: validate judges files
                kind = input_kind(name)
                if kind is not None:
                    found.append((name, kind))
            continue
        # a PATH `<(zcat run.jsonl.gz)` (/dev/fd/N), a named pipe and the like: a stream, as stdin is and as read, heal
        # and report read one (--in, which names files and folders, refused it above)
        if (raw.startswith("/dev/") or names_own_descriptor(raw) or (raw in named and p.is_fifo())) and not p.is_file():
            found.append((raw, input_kind(p.name) or STREAM))
            continue
        if not p.is_file():
            raise not_file_or_dir(raw, "input", "Pass an artifact or journal file, a directory of them, or a pipe "
                                  "(`<(zcat run.jsonl.gz)`); `-` reads stdin.")
        kind = input_kind(p.name) or (STREAM if raw in named else None)
        if kind is None:
            raise not_a_journal_name(raw, p.name, howToFix="Name a journal or an artifact; named as a PATH (without "
                                     "--in), a file is read as a journal whatever its name.",
                                     example="replay validate --in .replay/artifacts/2026-03-01/run_1.healed.json")
        found.append((raw, kind))
    return found


def _url_inputs(url: str) -> list[tuple[str, str]]:
    """``resolve_inputs`` for an fsspec URL: a folder listed through fsspec, a file as given."""
    from replay.pipeline.io import remote

    found = remote.kind(url)
    if found is None:
        raise input_not_found(url, "input", "Check the URL: its bucket or host and its path.")
    if found == "directory":
        return [(name, k) for name in remote.expand(url) if (k := input_kind(name)) is not None]
    k = input_kind(remote.name(url))
    if k is None:
        raise not_a_journal_name(url, remote.name(url), subject="input")
    return [(url, k)]


@click.command(cls=ReplayCommand, epilog="""\b
stdout: one JSON line per input validated, e.g.
  {"source": "a.healed.json", "kind": "artifact", "valid": false, "errors": 2, "events": 7}
  (streams also give "runs"). stderr: one {"error": {...}} line per problem, with code,
  message, source, path (e.g. $.events[3].seq), line/offset for journals, expected,
  received, howToFix. Exit 0: all valid; 1: a problem was found; 2: an input path is unusable.
\b
Examples:
  replay validate .replay/artifacts                every artifact and journal below it
  replay validate run_1.healed.json                (the same as --in run_1.healed.json)
  replay validate runs/ --workers 4 --quiet        in 4 worker processes, no progress bar
  replay read runs/ | replay validate              a stream on stdin
  replay read runs/ | replay validate --pass-through | replay report
\b
Graph: `replay stages --graph validate`.""")
@click.argument("paths", nargs=-1)
@click.option("--in", "inputs", multiple=True, metavar="PATH",
              help="An artifact (.json), a journal (.jsonl) or a directory of them (walked recursively; "
                   "*.raw.json and *.heal-log.json side files and heal.rules.json / replay.override.json are skipped). Repeatable; `-` is stdin.")
@click.option("--pass-through", is_flag=True,
              help="Stream mode: write the stream on stdout unchanged instead of the summary line, "
                   "so validate can sit inside a pipeline (another agent's log: as mapped, see --dialect).")
@auto_dialect_option
@max_line_option
@strict_option
@scale_options
def validate(paths: tuple[str, ...], inputs: tuple[str, ...], pass_through: bool, dialect: str, max_line_bytes: int, strict: bool,
             workers: int | None, engine: str, scheduler: str | None, quiet: bool) -> int:
    """Validate replay artifacts and journals against the canonical formats.

    Artifacts are checked against `replay schema replay-artifact`, journal lines against
    `replay schema stream` (a .json file holding an array is a journal written as one, checked as
    read reads it, each record at its path $[k]); in each run, seq must go 1, 2, ... n. Every problem of every input is
    reported, not only the first. PATHs and --in PATH mean the same (but a file named as a PATH is read whatever
    its name, as read, heal and report read theirs: a journal unless it is .json; PATHs first, like read, heal and
    report); files are checked in parallel (--workers, --engine dask), the output in input order
    whatever the workers; one large journal is cut at run boundaries into pieces checked at once (the same line as
    one run's, or one run is made). Without either, the stream on stdin is validated (a JSON artifact piped on
    stdin, on one line or pretty-printed, is checked as its file is: against the artifact schema).
    """
    for raw in inputs:  # (before anything is read: --in names files and folders, in every command that has it)
        refuse_not_file_or_dir(raw)
    named = frozenset(paths) - frozenset(inputs)  # (files named as PATHs: read whatever their names)
    inputs = (*paths, *inputs)
    if pass_through and inputs and inputs != (STDIN,):
        raise ReplayError("E_USAGE_INVALID", "--pass-through works on the stream from stdin, not with PATHs or --in",
                          received=list(inputs), howToFix="Drop the paths and pipe the stream: replay read X | replay validate --pass-through")
    if pass_through and not inputs:  # (stdin only: a terminal there is advised the pipe and `-`, not a path)
        refuse_terminal_stdin(takes_paths=False)
    files = resolve_inputs(inputs or (STDIN,), named=named)
    if not files:
        warn_nothing_found("validate.nothing_found", list(inputs), "validated")
        return EXIT_OK
    bound = {"read.max_line_bytes": max_line_bytes, "dialect.dialect": dialect, "dialect.hold_bytes": max_line_bytes,
             "screen.enabled": dialect == "auto",  # (the fast lane knows replay's own events only: a named dialect maps all)
             "read.listed": True}  # (``resolve_inputs`` found the files: a link to nothing a walk met is reported, not refused)
    found = [path for path, _ in files]
    if pass_through or STDIN in found:
        # (given no path, none: the graph reads stdin for want of one, and a terminal there is refused: ``app.execute``)
        result = run_spec("validate", found if inputs else [], set=bound, bypass=["summary"] if pass_through else (),
                          strict=strict)
        return EXIT_FAILED if result.errors else EXIT_OK
    from replay.pipeline.cli.scale import cli_work, files_for, run_over  # (the loop over files: not for a stream)

    work = cli_work(bind(load_spec("validate"), set=bound), strict=strict, inputs=len(found),
                files=files_for(found))
    scale = Scale(workers, engine, scheduler, quiet)
    if len(files) == 1 and files[0][1] == STREAM:  # one large journal: in pieces at once, when that gives one run's line
        from replay.pipeline.cli.pieces import cuts_for, validate_in_pieces

        cuts = cuts_for(found[0], scale, max_line_bytes, strict=strict, dialect=dialect)
        if cuts and validate_in_pieces(work, found[0], cuts):
            return EXIT_OK
    totals = run_over(work, found, scale, label="validate")
    return EXIT_FAILED if totals.errors else EXIT_OK
