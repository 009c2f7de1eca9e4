"""`replay heal`: repair inconsistent traces, logging every repair; as a filter (spec: heal) or over
artifact files into a folder (spec: heal-dir)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from replay.pipeline.cli.app import exit_code_for, logger, package_version, run_spec, warn_nothing_found
from replay.pipeline.cli.command import ReplayCommand
from replay.pipeline.cli.commands.read import DIALECTS, auto_dialect_option, max_line_option, strict_option
from replay.pipeline.cli.in_option import refuse_not_file_or_dir
from replay.pipeline.cli.scale_flags import Scale, scale_options
from replay.pipeline.engine.errors import EXIT_FAILED, EXIT_OK, PipeClosed, ReplayError, counted_before, empty_value
from replay.pipeline.engine.preflight import refuse_overlap
from replay.pipeline.engine.spec import Flag, bind, load_spec
from replay.pipeline.io.journals import (
    ORIGINAL,
    captured_once,
    expand_paths,
    input_not_found,
    is_journal_name,
    is_url,
    not_a_journal_name,
    place_of,
)
from replay.pipeline.model.healing import rules_read


@click.command(cls=ReplayCommand, epilog="""\b
Examples:
  replay read run.jsonl | replay heal > healed.jsonl
  replay heal --log repairs.jsonl < broken.jsonl > healed.jsonl
  replay heal --in .replay/artifacts --out .replay/healed
  replay heal --in runs/ --out healed/ --workers 8
  replay heal --in runs/ --out healed/ --engine dask --scheduler tcp://10.0.0.5:8786
  replay heal --in s3://bucket/runs --out s3://bucket/healed --engine dask   (any fsspec URL)
  replay heal --rules my.rules.json run.jsonl
  replay heal ~/.claude/projects/<project>/<session>.jsonl --log repairs.jsonl
  replay heal --dialect-out claude-code broken-session.jsonl > repaired-session.jsonl
\b
Graphs: `replay stages --graph heal`, `--graph heal-dir`; the rules in order: `--graph heal-rules`.""")
@click.argument("paths", nargs=-1)
@click.option("--in", "in_path", metavar="PATH", help="Artifact file or directory to heal into --out (directory mode); "
              "a local path or an fsspec URL (s3://, gcs://, ftp://, file://, ...).")
@click.option("--out", "out_dir", metavar="DIR", help="Where directory mode writes <id>.healed.json and <id>.heal-log.json "
              "(a local folder or an fsspec URL).")
@click.option("--log", "log_path", metavar="FILE", help="Filter mode: write the heal log (JSONL, one repair per line) here.")
@click.option("--rules", "rules_path", metavar="FILE", help="Heal rules (default: .replay/heal.rules.json when present).")
@click.option("--summary/--no-summary", default=True, show_default=True,
              help="Add a {\"$record\": \"heal\"} line after each repaired run (counts by rule).")
@auto_dialect_option
@click.option("--dialect-out", type=click.Choice(DIALECTS), default=None,
              help="Write the healed runs back in the dialect they were read from (auto: each its own).")
@max_line_option
@strict_option
@scale_options
def heal(paths: tuple[str, ...], in_path: str | None, out_dir: str | None, log_path: str | None,
         rules_path: str | None, summary: bool, dialect: str, dialect_out: str | None, max_line_bytes: int,
         strict: bool, workers: int | None, engine: str, scheduler: str | None, quiet: bool) -> int:
    """Heal journals: map type aliases, insert missing run_started / terminal / assistant_message events,
    make payloads objects, repair timestamps and missing runIds, drop exact adjacent duplicates and
    renumber seq 1..n per run. Events that needed no repair come out byte for byte. Healing a healed
    stream changes nothing.

    Other agents' logs (Claude Code, Codex CLI, OpenHands, mini-swe-agent) are mapped onto canonical
    events first (--dialect), and a record their writer split across lines is joined again.

    Filter mode (PATHs or stdin -> stdout) unless --in is given; one large journal file is cut at run boundaries
    into pieces healed at once (--workers; the same bytes and heal log as one run's, or one run is made). Directory mode reads artifacts
    (*.json, *.jsonl) under --in and writes healed copies and heal logs under --out; stdout then gets
    one JSON line per file written. Files are healed in parallel (--workers, --engine dask), the output
    in input order whatever the workers; OUT/.replay-manifest.json records every input, and a run
    again (after a crash, or with new inputs) heals only what it does not record.
    """
    bound: dict[str, Any] = {"heal.rules_file": Flag("--rules", rules_path), "heal.summary": summary, "read.max_line_bytes": max_line_bytes,
                             "dialect.dialect": dialect, "dialect.hold_bytes": max_line_bytes,  # (a document as lines)
                             "join.max_bytes": max_line_bytes,  # (a record split across lines is held to the same limit)
                             "screen.rules_file": rules_path or "",
                             "screen.enabled": dialect == "auto" and dialect_out is None}  # the fast lane knows replay's own events only
    if rules_path == "":  # (a config's empty `rules_file` means the default; a flag given empty names nothing)
        raise empty_value("--rules", "--rules", by_flag=True, names="file", expected="a heal rules file",
                          example="my.rules.json")
    if in_path is not None or out_dir is not None:
        if log_path is not None:
            raise ReplayError("E_USAGE_INVALID", "--log is filter mode's heal log; directory mode writes each input's "
                              "heal log beside its healed copy in --out (<name>.heal-log.json)",
                              received=["--log", log_path],
                              howToFix="Leave --log out with --in/--out, or heal one journal as a filter with --log.",
                              example="replay heal --log repairs.jsonl run.jsonl > healed.jsonl")
        if dialect_out is not None:
            raise ReplayError("E_USAGE_INVALID", "--dialect-out writes a stream: use it in filter mode (PATHs or stdin), "
                              "not with --in/--out", received="--dialect-out " + dialect_out,
                              example="replay heal --dialect-out claude-code session.jsonl > repaired.jsonl")
        if in_path is None and paths:  # (`replay heal run.jsonl --out healed.jsonl`: --out is a folder, and only with --in)
            import shlex

            raise ReplayError("E_USAGE_INVALID", "--out DIR is directory mode's folder and needs --in PATH; in filter mode "
                              "(PATHs) the healed stream goes to stdout", received=["--out", out_dir, *paths],
                              howToFix="Redirect stdout to write one healed file, or heal files into a folder with "
                                       "--in PATH --out DIR.",
                              example=f"replay heal {shlex.join(paths)} > healed.jsonl")
        if in_path is None or out_dir is None:
            raise ReplayError("E_USAGE_INVALID", "directory mode needs both --in PATH and --out DIR",
                              example="replay heal --in .replay/artifacts --out .replay/healed")
        if paths:
            raise ReplayError("E_USAGE_INVALID", "give either PATHs (filter mode) or --in/--out (directory mode)",
                              received=list(paths))
        root, files = directory_inputs(in_path)
        if not files:
            warn_nothing_found("heal.nothing_found", [in_path], "healed")
            return EXIT_OK
        if out_dir:  # (the healed copies would be read as inputs by the next run); URLs too: file:// is local, and
            # s3://b/runs/healed is inside s3://b/runs (places of different filesystems never overlap)
            refuse_overlap(out_dir, [in_path], "--out", what="--in", place=place_of,
                           how_to_fix="Heal into a folder beside the inputs, e.g. --out healed.")
            refuse_overlap(out_dir, rules_read(rules_path), "--out", what="the heal rules file", place=place_of,
                           how_to_fix="Heal into a folder that does not hold the rules file (or give --rules a file outside --out).")
        bound |= {"write.out_dir": Flag("--out", out_dir), "write.root": Flag("--in", str(root)),
                  "read.listed": True}  # (the files its walk found: a link to nothing among them is reported, not refused)
        scale = Scale(workers, engine, scheduler, quiet)
        if is_url(out_dir):
            return heal_into_url(bound, files, root, out_dir, scale, strict)
        return heal_folder(bound, files, root, Path(out_dir), scale, strict)
    add: dict[str, dict[str, Any]] = {}
    bound["screen.repair_log"] = log_path is not None  # (without a log, the runs the screen repairs are counted only)
    if log_path is not None:  # ("" is refused by the preflight, as `--out ""` is)
        add["log"] = {"type": "write", "path": Flag("--log", log_path), "inputs": ["heal.repairs"]}
    if dialect_out is not None:
        add["undialect"] = {"type": "undialect", "dialect": Flag("--dialect-out", dialect_out), "inputs": ["check"]}
        bound["out.inputs"] = ["undialect"]
    try:
        if len(paths) == 1 and dialect_out is None:  # one large file: in pieces at once, when that gives one run's
            from replay.pipeline.cli.pieces import cuts_for, heal_in_pieces  # bytes

            cuts = cuts_for(paths[0], Scale(workers, engine, scheduler, quiet), max_line_bytes, strict=strict,
                            dialect=dialect)
            if cuts and heal_in_pieces(bind(load_spec("heal"), set=bound, add=add), paths[0], cuts, log_path):
                return EXIT_OK
        return exit_code_for(run_spec("heal", paths, set=bound, add=add, strict=strict))
    except (PipeClosed, BrokenPipeError):  # (`replay heal x --log L | head`: stdout's reader went away, the run stops: its verdict so far)
        if log_path is not None:
            logger().warning("heal.log_not_written", code="E_HEAL_LOG_NOT_WRITTEN", path=log_path,
                             message="stdout's reader went away (a `| head`, say) before heal's end: the heal log was "
                                     "not written, as it would hold part of the run (whole or not at all)")
        raise


def directory_inputs(in_path: str) -> tuple[Path | str, list[str]]:
    """The folder whose layout --out mirrors, and the files under --in to heal."""
    if is_url(in_path):
        return _url_inputs(in_path)
    root = Path(in_path)
    if not in_path or not root.exists():  # (Path("") is the current folder: an empty --in names nothing)
        raise input_not_found(in_path, "--in target",
                              "Point --in at an artifact or journal file, or a folder of them (e.g. .replay/artifacts).")
    refuse_not_file_or_dir(in_path, stdin=False)
    if root.is_file():
        if not is_journal_name(root.name):  # (the names a folder's walk heals)
            raise not_a_journal_name(in_path, root.name)
        return root.parent, [str(root)]
    return root, _to_heal(expand_paths([str(root)], once=False))


def _to_heal(found: list[str]) -> list[str]:
    """The walked files to heal: every one but a second file of one run (``captured_once``). Capture leaves
    <id>.artifact.json and <id>.healed.json side by side: the original is healed once (healing the healed copy again
    would give the same file and an empty log over the real one), and its journal/ copy not again; of a file an earlier
    `heal --in --out` healed and its copy, both walked, the file. Any other healed copy (a `<name>.healed.jsonl` saved by
    `replay heal FILE >`, a copy whose input is elsewhere) is an input as any journal is, as read and validate take it."""
    return captured_once(found, keep=ORIGINAL)


def _url_inputs(url: str) -> tuple[str, list[str]]:
    """``directory_inputs`` for an fsspec URL (listed once, through fsspec)."""
    from replay.pipeline.io import remote

    url = url if url.endswith("://") else url.rstrip("/")
    found = remote.kind(url)
    if found is None:
        raise input_not_found(url, "--in target", "Check the URL: its bucket or host and its path.")
    if found == "file":
        if not is_journal_name(remote.name(url)):
            raise not_a_journal_name(url, remote.name(url))
        return remote.parent(url), [url]
    return url, _to_heal(remote.expand(url))


def heal_into_url(bound: dict[str, Any], files: list[str], root: Path | str, target: str, scale: Scale, strict: bool) -> int:
    """Directory mode into a folder URL: written in place (an object store cannot rename a folder), each
    file under a temp name then moved onto its own, the manifest (at the URL) last; a run again resumes
    from it. A folder this run created is removed again when the command fails as one run would, or when every input
    is refused (nothing healed)."""
    from replay.pipeline.cli.scale import cli_work, run_over
    from replay.pipeline.io import remote
    from replay.pipeline.io.manifest import Manifest, work_key

    target = target if target.endswith("://") else target.rstrip("/")
    doc = bind(load_spec("heal-dir"), set=bound | {"write.out_dir": target})
    work = cli_work(bind(doc, set={"write.write_dir": target}), strict=strict, digest=True,
                inputs=len(files), files=remote.URL_FILES)
    created = remote.kind(target) is None
    manifest = Manifest(target, work_key(doc, package_version()), root, "heal")
    try:
        totals = run_over(work, files, scale, label="heal", manifest=manifest, process_local=remote.in_this_process(target))
    except Exception:  # (as one run would, or an error replay did not foresee: any error ending removes it)
        if created:
            remote.remove_tree(target)
        raise
    if created and not manifest.wrote_any():  # every input refused: nothing was healed, no folder appears
        remote.remove_tree(target)
    return EXIT_FAILED if totals.errors else EXIT_OK


def heal_folder(bound: dict[str, Any], files: list[str], root: Path | str, target: Path, scale: Scale, strict: bool) -> int:
    """Directory mode: the heal-dir graph once per input, in parallel, into ``target``.

    A new ``target`` is filled as the hidden sibling ``.<name>.partial.replay.tmp`` (a temp name: readers
    skip it) and renamed into place when every input is done, so it appears whole, and its stdout lines come then (from
    the rename on an interrupt cuts nothing short: ``publish_and_list``); a run that was interrupted before removes
    that folder (``filling``; with ``--engine dask`` it stays), one that was killed leaves it, and the next run resumes
    from what its manifest fragments record. When every input
    is refused (nothing healed), that folder goes again: no ``target`` appears. An existing ``target`` is written in
    place (each file atomically), the manifest last.
    """
    from replay.pipeline.cli.scale import (
        cli_work,
        files_for,
        filling,
        holding_stdout,
        print_outcome,
        publish_and_list,
        run_over,
    )
    from replay.pipeline.io.manifest import Manifest, work_key
    from replay.pipeline.io.staging import partial_sibling

    doc = bind(load_spec("heal-dir"), set=bound)
    key = work_key(doc, package_version())
    work_dir = target if target.is_dir() else partial_sibling(target)
    work = cli_work(bind(doc, set={"write.write_dir": str(work_dir)}), strict=strict,
                digest=True, inputs=len(files), files=files_for(files))
    held: list[bytes] = []  # a new folder's lines wait for it: they name files that appear with it
    take = holding_stdout(held) if work_dir != target else print_outcome
    manifest = Manifest(work_dir, key, root, "heal")
    # (a folder made at ``target`` meanwhile, not empty: the partial folder goes again)
    with filling(work_dir, target, flag="--out", resume_after_interrupt=scale.engine == "dask"):
        totals = run_over(work, files, scale, label="heal", manifest=manifest, take=take)
        # every input refused: nothing was healed, no folder appears (their errors are printed); once it appears the
        # command is done: the lines naming its files all come, whatever interrupt comes meanwhile
        with counted_before(totals.errors):
            publish_and_list(work_dir, target, held, publish=manifest.wrote_any())
    return EXIT_FAILED if totals.errors else EXIT_OK
