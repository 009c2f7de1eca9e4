"""`replay diff`: where two runs part and what differs between them (spec: diff)."""

from __future__ import annotations

import click

from replay.pipeline.cli.app import exit_code_for, run_spec
from replay.pipeline.cli.command import ReplayCommand
from replay.pipeline.cli.commands.read import max_line_bytes_option
from replay.pipeline.cli.commands.walk import data_dir_option, resolve_journal
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.diff import DEFAULT_IGNORE, IgnorePathError, parse_ignore


@click.command(cls=ReplayCommand, epilog=f"""\b
Examples:
  replay diff run_20260301T120000_3fa9c1 run_20260302T090000_77ab01
  replay diff before.jsonl after.artifact.json --json | jq .firstDivergence
  replay diff a.jsonl b.jsonl --ignore payload.model --ignore '**.traceparent'
\b
Ignored by default: {", ".join(DEFAULT_IGNORE)}.
Graph: `replay stages --graph diff` (read -> parse -> dialect -> diff -> write).""")
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: same, firstDivergence, summary, differences.")
@click.option("--ignore", "ignore", metavar="PATH", multiple=True,
              help="Also leave this field out of the comparison (dot-separated keys, `*` any key, `**` any depth); repeatable.")
@click.option("--no-default-ignore", is_flag=True, help="Compare every field, timestamps and ids too.")
@data_dir_option
@max_line_bytes_option("Longest line accepted; an input with a longer line cannot be compared: refused "
                       "(E_JOURNAL_READ_FAILED, exit 2).")
def diff(a: str, b: str, as_json: bool, ignore: tuple[str, ...], no_default_ignore: bool, data_dir: str | None,
         max_line_bytes: int) -> int:
    """Compare two runs record by record: the first divergence and a summary of what differs.

    A and B are journals, artifacts (.json) or run ids (DATA_DIR/journal/RUN_ID.jsonl). Records are
    aligned on their content, leaving out fields that always differ between runs (timestamps, run
    ids, ids, durations); what is left is reported as changed (event type, tool name, tool
    arguments, output, other fields), moved (the same record elsewhere), missing from B or extra in B.

    Exit 0 same, 1 different (E_RUNS_DIFFER on stderr), 2 unusable input (nothing on stdout).
    """
    for path in ignore:
        try:
            parse_ignore(path)
        except IgnorePathError as exc:
            raise ReplayError("E_USAGE_INVALID", str(exc), path="--ignore", received=path,
                              example="--ignore payload.model") from exc
    paths = [resolve_journal(arg, data_dir, "diff", pipes=True) for arg in (a, b)]  # (read once: a pipe too)
    return exit_code_for(run_spec("diff", paths, set={
        "diff.format": "json" if as_json else "text", "diff.ignore": list(ignore),
        "diff.default_ignore": not no_default_ignore, "read.max_line_bytes": max_line_bytes,
    }))
