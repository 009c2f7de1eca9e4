"""`replay write`: a canonical stream out to stdout or a file, or written back in another agent's dialect (spec: write)."""

from __future__ import annotations

from typing import Any

import click

from replay.pipeline.cli.app import exit_code_for, run_spec
from replay.pipeline.cli.command import ReplayCommand
from replay.pipeline.cli.commands.read import DIALECTS, max_line_option, strict_option
from replay.pipeline.engine.spec import Flag


@click.command(cls=ReplayCommand, epilog="""\b
Examples:
  replay read --dialect claude-code session.jsonl | replay write --dialect claude-code > same-session.jsonl
  replay heal session.jsonl | replay write --dialect claude-code --out repaired-session.jsonl
  replay read runs/ | replay heal | replay write --out healed.jsonl
\b
Graph: `replay stages --graph write`.""")
@click.argument("paths", nargs=-1)
@click.option("--dialect", type=click.Choice(DIALECTS), default=None,
              help="Write the runs back as the records of the dialect they were read from (auto: each its own); "
                   "without it, the canonical stream is written.")
@click.option("--out", "out_path", metavar="FILE", help="Write to FILE (whole or not at all) instead of stdout.")
@max_line_option
@strict_option
def write(paths: tuple[str, ...], dialect: str | None, out_path: str | None, max_line_bytes: int, strict: bool) -> int:
    """Write a canonical stream (PATHs, or stdin) to stdout or --out FILE.

    With --dialect, each run read from another agent's log (`replay read --dialect NAME`) is written
    back as that agent's records, rebuilt from the original record every event keeps under `$origin`:
    JSONL for Claude Code and Codex, one JSON document per run for OpenHands and mini-swe-agent. Events
    that have no original (invented by heal) are not written. Without --dialect the stream is copied as
    it is: records come out as their original bytes.
    """
    bound: dict[str, Any] = {"read.max_line_bytes": max_line_bytes, "write.path": Flag("--out", out_path)}
    add: dict[str, dict[str, Any]] = {}
    if dialect is not None:  # (without it, the spec as printed: a copy, lines checked, not kept parsed)
        bound |= {"parse.type": "parse", "write.inputs": ["undialect"]}
        add["undialect"] = {"type": "undialect", "inputs": ["parse"], "dialect": Flag("--dialect", dialect)}
    return exit_code_for(run_spec("write", paths, set=bound, add=add, strict=strict))
