"""`replay run`: build the stage graph a pipeline config declares and run it."""

from __future__ import annotations

import click

from replay.pipeline.cli.app import execute, exit_code_for
from replay.pipeline.cli.commands.read import strict_option
from replay.pipeline.engine.config import load_pipeline


@click.command(epilog="""\b
Examples:
  replay run examples/pipelines/tools-only.toml run.jsonl
  replay read runs/ | replay run examples/pipelines/dead-letter.toml""")
@click.argument("pipeline_file", metavar="PIPELINE.toml")
@click.argument("paths", nargs=-1)
@strict_option
def run(pipeline_file: str, paths: tuple[str, ...], strict: bool) -> int:
    """Run the stage graph declared in PIPELINE.toml (or .json) over PATHs (default: stdin).

    The whole config is checked before anything runs: unknown stage types, options and inputs,
    cycles and unconsumed outputs are refused with exit 2 and a JSON error naming the key.
    """
    graph = load_pipeline(pipeline_file, paths=list(paths))
    return exit_code_for(execute(graph, strict=strict, command="run"))
