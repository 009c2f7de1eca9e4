"""`replay schema`: print a bundled JSON Schema, or list them."""

from __future__ import annotations

from importlib.resources import files

import click

from replay.pipeline.cli.command import ReplayCommand
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.io.fdio import write_stdout

SUFFIX = ".schema.json"


def schema_names() -> list[str]:
    return sorted(p.name[: -len(SUFFIX)] for p in files("replay.schemas").iterdir() if p.name.endswith(SUFFIX))


def schema_bytes(name: str) -> bytes:
    stem = name[: -len(SUFFIX)] if name.endswith(SUFFIX) else name
    if stem not in schema_names():
        raise ReplayError("E_SCHEMA_UNKNOWN", f"no bundled schema named {name!r}", received=name,
                          expected="one of: " + ", ".join(schema_names()))
    return files("replay.schemas").joinpath(stem + SUFFIX).read_bytes()


@click.command(cls=ReplayCommand)
@click.argument("name", required=False)
def schema(name: str | None) -> int:
    """Print the bundled JSON Schema NAME (`event`, `stream`, ...); without NAME, list them."""
    if name is None:
        write_stdout(("\n".join(schema_names()) + "\n").encode())
        return 0
    write_stdout(schema_bytes(name))
    return 0
