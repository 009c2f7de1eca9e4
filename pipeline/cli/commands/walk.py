"""`replay walk`: a run's journal read-only, one line per record, up to any step (spec: walk)."""

from __future__ import annotations

import os
import shlex
import stat
from typing import Any

import click

from replay.pipeline.cli.app import exit_code_for, run_spec
from replay.pipeline.cli.command import ReplayCommand
from replay.pipeline.cli.commands.read import auto_dialect_option, max_line_bytes_option
from replay.pipeline.engine.errors import ReplayError, refused
from replay.pipeline.io.journals import JOURNAL_FOLDER, STDIN, not_file_or_dir
from replay.pipeline.model.dialects import AUTO
from replay.pipeline.model.walk_journal import (
    DEFAULT_DATA_DIR,
    WALK_LOG,
    another_agents_log,
    is_run_id,
    journal_of,
    looks_like_path,
    not_a_journal_file,
    scan_journal,
)

data_dir_option = click.option(
    "--data-dir", metavar="DIR", default=None,
    help=f"Where run ids' journals are: DIR/journal/RUN_ID.jsonl (default {DEFAULT_DATA_DIR}). "
         "With --data-dir the argument is always a run id, never a path.",
)

max_line_option = max_line_bytes_option(  # (read skips a longer line and goes on: the walk of a journal ends at it)
    "Longest line read. A longer line of a journal is reported and the walk ends there (exit 1; refused, exit 2, when "
    "it is the first record); in another agent's log it is reported and skipped, as heal skips it.")


@click.command(cls=ReplayCommand, epilog="""\b
Examples:
  replay walk run_20260301T120000_3fa9c1           a captured run, from .replay/journal/
  replay walk run_20260301T120000_3fa9c1 --at c1   up to the end of step (tool call) c1
  replay walk --json runs/flow-7.jsonl | jq .kind   one JSON object per record
  replay walk --data-dir /srv/flows/.relayflowd hello-1
  replay walk ~/.claude/projects/<project>/<session>.jsonl   a Claude Code session, mapped
  replay walk rollout.jsonl --at call_1               a Codex log up to the end of tool call call_1
\b
Graphs: `replay stages --graph walk` (read -> join -> walk -> write); another agent's log:
`replay stages --graph walk-log` (read -> join -> parse -> dialect -> heal -> walk -> write).""")
@click.argument("run", metavar="RUN_ID_OR_PATH")
@click.option("--at", "at", metavar="STEP", default=None,
              help="Stop after STEP's terminal record (inclusive); a step that never terminated stops at its last record.")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object per record: {step_id, kind, event, verification, spend}.")
@data_dir_option
@auto_dialect_option
@max_line_option
def walk(run: str, at: str | None, as_json: bool, data_dir: str | None, dialect: str, max_line_bytes: int) -> int:
    """Walk a run's journal read-only: one line per record, in journal order, optionally up to a step.

    RUN_ID_OR_PATH is a run id (its journal is DATA_DIR/journal/RUN_ID.jsonl) or the path of a
    journal (it has a `/` or ends in .jsonl, .json, .ndjson or .gz); not `-`: walk reads no stdin.
    Canonical journals and flows-style ones (records with `kind` and `step_id`) are both read.
    Another agent's log (Claude Code, Codex CLI, OpenHands, mini-swe-agent; --dialect, auto-detected
    from its first records) is walked as its canonical journal: its records mapped onto canonical
    events and healed in memory, the lines walking `replay heal LOG`'s output shows; its steps are
    those events' (a tool call's call id, or the model call a mapped event is numbered with), and
    --at reads the whole log (nothing in its bytes says where a mapped step ends). A line of it that
    is no record is reported as heal reports it (exit 1) and the walk goes on; a cut-off last line is
    reported too (E_JSONL_LINE_TORN, exit 1), where heal drops it.
    Nothing is run, written or contacted: this only reads the file.

    Text lines are kind, step (`-` for run-level records), the essential detail and [state], in
    columns that split on whitespace (awk '{print $1, $2, $NF}'). Exit 0 walked; 2 refused before any
    output (E_RUN_NOT_FOUND, E_INVALID_RUN_ID, E_STEP_NOT_FOUND, E_JOURNAL_READ_FAILED when the first
    record is unreadable); 1 the journal became unreadable after output began (E_JOURNAL_READ_FAILED
    with the byte offset), or, for another agent's log, the walk went on past what heal would report
    (a line that is no record, a --dialect that is not the log's: E_DIALECT_MISMATCH). A refusal is the last
    error on stderr: a line of another agent's log that is no record, read before it, is reported first.
    """
    if at == "":
        raise ReplayError("E_USAGE_INVALID", "--at needs a step id", received="", example="replay walk RUN --at step-1")
    path = resolve_journal(run, data_dir)
    # (the walk stage's pre-scan has the read's line limit: ``WalkRecords.wired`` takes it from a read that feeds it,
    # and walk.toml's reaches it through the join, so it is bound here too; walk-log's has no pre-scan)
    bound: dict[str, Any] = {"walk.format": "json" if as_json else "text", "walk.at": at, "read.max_line_bytes": max_line_bytes,
                             "join.max_bytes": max_line_bytes}
    if dialect != AUTO or another_agents_log(path, max_line_bytes):
        # another agent's log: walked as `replay heal` maps and heals it (the walk stage finds where `at` ends)
        bound |= {"dialect.dialect": dialect, "dialect.hold_bytes": max_line_bytes}
        return exit_code_for(run_spec(WALK_LOG, [path], set=bound))
    bound["walk.max_line_bytes"] = max_line_bytes
    if at is not None:
        # The pre-scan (which the walk stage's preflight remembers: it is not made twice) says where
        # the walk ends; the read stops at that byte, so a walk near the start of a 1 GB journal reads
        # a few chunks of it.
        scan = scan_journal(path, at, max_line_bytes)
        if not scan.document and scan.end is not None and scan.end.end is not None:
            bound["read.end_offset"] = scan.end.end
    return exit_code_for(run_spec("walk", [path], set=bound))


def resolve_journal(arg: str, data_dir: str | None, command: str = "walk", pipes: bool = False) -> str:
    """The journal file a RUN_ID_OR_PATH argument of ``replay COMMAND`` names: a path (it has a separator or a journal
    suffix, in any case, or it is no run id and something is there: ``my run.log``), a run's journal in the data dir,
    or, when no run has that id (and no --data-dir was given), a file of that name (refused: E_INVALID_RUN_ID,
    E_RUN_NOT_FOUND; E_JOURNAL_READ_FAILED when something other than a file is where the run's journal is;
    E_USAGE_INVALID for stdin or a folder, E_INPUT_NOT_FILE_OR_DIR for a path that is no regular file nor folder, nor
    a pipe when the command reads its inputs once: ``pipes``, diff's ``<(...)``)."""
    example = f"replay {command} .replay/journal/RUN_ID.jsonl" + (" other.jsonl" if command == "diff" else "")
    if data_dir is None and arg == STDIN:
        raise ReplayError("E_USAGE_INVALID", f"{command} reads a journal file or a run id, not stdin", received=arg,
                          howToFix="Save the stream to a file first (... > run.jsonl) and pass that path, or pass "
                                   "the journal's path or run id.", example=example)
    if data_dir is None and (looks_like_path(arg) or (not is_run_id(arg) and os.path.exists(arg))):
        if not os.path.exists(arg):
            raise refused("E_RUN_NOT_FOUND", f"no journal at {arg!r}", path=arg,
                          howToFix="Check the path, or give a run id to look in .replay/journal/.")
        if not _readable(arg, pipes):
            raise _not_a_file(arg, command, example, pipes=pipes)
        return arg
    if not is_run_id(arg):
        hint = " (with --data-dir the argument is always a run id)" if data_dir is not None and looks_like_path(arg) else ""
        raise refused("E_INVALID_RUN_ID", f"{arg!r} is not a run id{hint}", received=arg,
                      expected="letters, digits, '.', '_' and '-' (at most 200), no '..'",
                      example="run_20260301T120000_3fa9c1")
    folder = data_dir if data_dir is not None else DEFAULT_DATA_DIR
    path = journal_of(folder, arg)
    if not os.path.isfile(path) and data_dir is None and _readable(arg, pipes):
        return arg  # (no run of that id, and a file of that name here: the file, though its name has no journal suffix)
    if not os.path.isfile(path) and os.path.exists(path):  # (a folder, a socket where the journal is)
        raise not_a_journal_file(path)
    journals = os.path.join(folder, JOURNAL_FOLDER)
    if not os.path.isfile(path) and data_dir is None and os.path.exists(arg):  # (a folder, a socket of that name here)
        raise _not_a_file(arg, command, example, f" (and no run has that id: no journal in {journals!r})", pipes)
    if not os.path.isfile(path):
        raise refused("E_RUN_NOT_FOUND", f"no journal for run {arg!r} in {journals!r}", path=path, received=arg,
                      howToFix=f"Check the run id (`ls {shlex.quote(journals)}`)"
                      + (" or the --data-dir." if data_dir is not None else " or pass --data-dir."))
    return path


def _readable(arg: str, pipes: bool) -> bool:
    """Is ``arg`` a regular file, or a pipe (a FIFO, bash's ``<(...)``) when the command reads its inputs once?"""
    try:
        mode = os.stat(arg).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or (pipes and stat.S_ISFIFO(mode))


def _not_a_file(arg: str, command: str, example: str, also: str = "", pipes: bool = False) -> ReplayError:
    """The refusal of an argument that names something here other than a regular file: E_USAGE_INVALID for a folder,
    E_INPUT_NOT_FILE_OR_DIR for what is neither (a socket, a device; a pipe, when the command reads its journal twice:
    walk)."""
    fix = "Pass the journal file itself (a .jsonl or .json file), or a run id."
    if os.path.isdir(arg):
        return ReplayError("E_USAGE_INVALID", f"{arg!r} is not a regular file; {command} reads journal files{also}",
                           path=arg, howToFix=fix, example=example)
    if stat.S_ISFIFO(os.stat(arg).st_mode):  # (a command that reads its inputs once takes one: not this one)
        fix = (f"{command} reads its journal twice, and a pipe can be read once: save it to a file first "
               "(... > run.jsonl) and pass that path.")
    return not_file_or_dir(arg, "journal", fix, also=also,
                           expected="a journal file or a pipe" if pipes else "a journal file (a regular file)")
