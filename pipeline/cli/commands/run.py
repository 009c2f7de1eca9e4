"""`replay run`: build the stage graph a pipeline config declares and run it (once per input with --workers)."""

from __future__ import annotations

import click

from replay.pipeline.cli.app import execute, exit_code_for
from replay.pipeline.cli.command import ReplayCommand
from replay.pipeline.cli.commands.read import strict_option
from replay.pipeline.cli.scale_flags import Scale, scale_options
from replay.pipeline.engine.config import graph_from_config, load_pipeline, read_config_file
from replay.pipeline.engine.errors import EXIT_FAILED, EXIT_OK, ReplayError
from replay.pipeline.io.journals import STDIN, expand_paths


@click.command(cls=ReplayCommand, epilog="""\b
Examples:
  replay run examples/pipelines/tools-only.toml run.jsonl
  replay read runs/ | replay run examples/pipelines/dead-letter.toml
  replay stages --graph heal > my-heal.toml     copy a command's graph, change a stage,
  replay run my-heal.toml run.jsonl             and run it
  replay run examples/pipelines/tools-only.toml runs/ --workers 4 > tools.jsonl
  replay run heal.toml s3://bucket/runs --engine dask > healed.jsonl   (heal.toml: replay stages --graph heal)
  replay run examples/pipelines/nats-heal.toml  heal a live NATS stream into another subject""")
@click.argument("pipeline_file", metavar="PIPELINE.toml")
@click.argument("args", nargs=-1)
@strict_option
@scale_options
def run(pipeline_file: str, args: tuple[str, ...], strict: bool, workers: int | None, engine: str,
        scheduler: str | None, quiet: bool) -> int:
    """Run the stage graph declared in PIPELINE.toml (or .json) over ARGS (default: stdin).

    ARGS go to the options stages bind to the command's arguments: the paths `read` reads, the prompt
    `discover` sends; ARGS that no stage takes (the config names its own inputs) are refused, not ignored.
    The whole config is checked before anything runs: unknown stage types, options
    and inputs, cycles and unconsumed outputs are refused with exit 2 and a JSON error naming the key.

    With --workers N (or --engine dask) and paths to read, the graph runs once per file (directories
    are walked), in parallel, and each file's output is printed in input order: the same bytes as
    --workers 1. The graph must then write to stdout only (a file it writes would be written once per input), and
    have no stage that works over all the inputs together (report, diff, script, walk with `at`).
    """
    scale = Scale(workers, engine, scheduler, quiet)
    if not scale.asked or not args or STDIN in args:
        return exit_code_for(execute(load_pipeline(pipeline_file, paths=list(args)), strict=strict, command="run"))
    doc = read_config_file(pipeline_file)
    files = expand_paths(list(args))
    graph = graph_from_config(doc, paths=files)
    for node in graph.nodes.values():
        if node.stage.whole_stream() and len(files) > 1:
            raise graph.as_written(ReplayError(
                "E_USAGE_INVALID", f"stage {node.id!r} ({node.stage.name}) works over all the inputs together: run once per "
                "input, it would give one result per input", path=f"stages.{node.id}", received=node.stage.name,
                howToFix="Drop --workers/--engine to run the graph once over every input."))
        written = [f for _, f in node.stage.outputs() if f and f != "-"]
        if written:
            raise graph.as_written(ReplayError(
                "E_USAGE_INVALID", f"stage {node.id!r} writes {written[0]!r}: run once per input, every run would write it "
                "again", path=f"stages.{node.id}", received=written[0],
                howToFix="Drop --workers/--engine to run the graph once over every input, or write to stdout."))
    from replay.pipeline.cli.scale import cli_work, files_for, run_over
    from replay.pipeline.engine.parallel import preflight_all

    work = cli_work(doc, strict=strict, inputs=len(files), files=files_for(files))
    # refused before any file runs: what one run over ARGS refuses (their folders too: an output inside a folder named;
    # the files its walk found do not say they were read from it), once
    totals = run_over(work, files, scale, label="run", preflight=lambda work, _files: preflight_all(work, list(args)))
    return EXIT_FAILED if totals.errors else EXIT_OK
