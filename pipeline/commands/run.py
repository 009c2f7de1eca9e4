"""`replay run`: build the stage graph a pipeline config declares and run it."""

from __future__ import annotations

import os

import click

from replay.pipeline.cli import execute, exit_code_for
from replay.pipeline.commands.read import strict_option
from replay.pipeline.config import load_pipeline
from replay.pipeline.errors import ReplayError
from replay.pipeline.graph import Graph
from replay.pipeline.journal_io import STDIN, expand_paths


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
    inputs: list[str] = []
    for node in graph.nodes.values():
        if node.stage.name == "read":
            inputs += expand_paths(node.stage.config["paths"])  # refuse missing inputs before any output
    refuse_overwriting_inputs(graph, inputs)
    return exit_code_for(execute(graph, strict=strict, command="run"))


def refuse_overwriting_inputs(graph: Graph, inputs: list[str]) -> None:
    """A file sink must not replace one of the run's own inputs (inputs are never modified)."""
    identities: dict[tuple[int, int], str] = {}
    for source in inputs:
        try:
            st = os.fstat(0) if source == STDIN else os.stat(source)
        except (OSError, ValueError):
            continue
        identities[(st.st_dev, st.st_ino)] = "<stdin>" if source == STDIN else source
    for node in graph.nodes.values():
        target = node.stage.config.get("path") if node.stage.kind == "sink" else None
        if not isinstance(target, str) or target == "-" or not os.path.isfile(target):
            continue
        st = os.stat(target)
        source = identities.get((st.st_dev, st.st_ino))
        if source is not None:
            raise ReplayError(
                "E_CONFIG_OPTION_INVALID", f"stage {node.id!r} would overwrite its own input {source!r}",
                path=f"stages.{node.id}.path", received=target, expected="a path that is not one of the inputs",
                howToFix="Write to another file; inputs are never modified.",
            )
