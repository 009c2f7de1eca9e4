"""`replay stages`: every stage type with its summary, ports and options."""

from __future__ import annotations

import click
import orjson

from replay.pipeline.cli.command import ReplayCommand
from replay.pipeline.engine.config import RESERVED_HELP
from replay.pipeline.engine.errors import error_line
from replay.pipeline.engine.log import write_stderr
from replay.pipeline.engine.registry import Registry
from replay.pipeline.engine.spec import load_spec, spec_names, spec_text
from replay.pipeline.io.fdio import write_stdout


@click.command(cls=ReplayCommand, epilog="""\b
Examples:
  replay stages                     every stage type, its options and ports
  replay stages --graph heal        the graph `replay heal` runs, as a config to copy
  replay stages --graph heal > my.toml && replay run my.toml run.jsonl
  replay stages --graph heal --json > my.json && replay run my.json run.jsonl""")
@click.option("--json", "as_json", is_flag=True, help="One JSON array for machines; with --graph, the spec as a JSON config.")
@click.option("--graph", "graph", metavar="NAME", help="Print the graph spec a command runs (" + ", ".join(spec_names()) + ").")
def stages(as_json: bool, graph: str | None) -> int:
    """List every stage type (built-in and from `replay.stages` entry points) and its options (the keys
    the stage takes in a `replay run` config, `key = type (default ...)`: no command-line flags), or print
    the graph spec a built-in command runs (`--graph NAME`), in the config format `replay run` reads
    (TOML, comments and all; with --json a JSON document of the same config)."""
    if graph is not None:
        if as_json:
            write_stdout(orjson.dumps(load_spec(graph), option=orjson.OPT_INDENT_2) + b"\n")
        else:
            write_stdout(spec_text(graph).encode())
        return 0
    registry = Registry()
    described = registry.describe_all()
    for problem in registry.problems:
        write_stderr(error_line(problem))
    if as_json:
        write_stdout(orjson.dumps(described, option=orjson.OPT_INDENT_2) + b"\n")
        return 0
    width = max(len(d["type"]) for d in described)
    lines = []
    for d in described:
        lines.append(f"{d['type']:<{width}}  {d['kind']:<9}  {d['summary']}")
        for name, opt in d["options"].items():
            default = orjson.dumps(opt["default"]).decode()
            least = f" >= {opt['minimum']}" if "minimum" in opt else ""
            # (a stage's key in a `replay run` config, `[stages.<id>]` or a chain's `{ type = ... }`; no command-line flag)
            lines.append(f"{'':<{width}}    {name} = {opt['type']}{least} (default {default}): {opt['help']}")
        extra = [p for p in d["ports"] if p != "errors"]
        if extra:
            lines.append(f"{'':<{width}}    side ports: {', '.join(d['ports'])}")
    lines.append("every stage also takes, in a config:")
    lines += [f"{'':<{width}}    {key} = {about}" for key, about in RESERVED_HELP.items()]
    write_stdout(("\n".join(lines) + "\n").encode())
    return 0
