"""`replay run`: build the stage graph a pipeline config declares and run it."""

from __future__ import annotations

import click

from replay.pipeline.cli.app import execute, exit_code_for
from replay.pipeline.cli.commands.read import strict_option
from replay.pipeline.engine.config import load_pipeline


@click.command(epilog="""\b
Examples:
  replay run examples/pipelines/tools-only.toml run.jsonl
  replay read runs/ | replay run examples/pipelines/dead-letter.toml
  replay stages --graph heal > my-heal.toml     copy a command's graph, change a stage,
  replay run my-heal.toml run.jsonl             and run it""")
@click.argument("pipeline_file", metavar="PIPELINE.toml")
@click.argument("args", nargs=-1)
@strict_option
def run(pipeline_file: str, args: tuple[str, ...], strict: bool) -> int:
    """Run the stage graph declared in PIPELINE.toml (or .json) over ARGS (default: stdin).

    ARGS go to the options stages bind to the command's arguments: the paths `read` reads, the prompt
    `discover` sends. The whole config is checked before anything runs: unknown stage types, options
    and inputs, cycles and unconsumed outputs are refused with exit 2 and a JSON error naming the key.
    """
    graph = load_pipeline(pipeline_file, paths=list(args))
    return exit_code_for(execute(graph, strict=strict, command="run"))
