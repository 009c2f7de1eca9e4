"""`replay script`: a session journal's model calls as a replay script (spec: script)."""

from __future__ import annotations

import click

from replay.pipeline.cli.app import exit_code_for, run_spec
from replay.pipeline.cli.command import ReplayCommand
from replay.pipeline.cli.commands.read import max_line_option, strict_option
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.spec import Flag
from replay.pipeline.model.session import refuse_unusable_override


@click.command(cls=ReplayCommand, epilog="""\b
Examples:
  replay script scenarios/echo/session.jsonl > script.json
  replay script session.jsonl --override flaky.override.json
  replay script session.jsonl --out tests/fixtures/script.json
\b
Graph: `replay stages --graph script`.""")
@click.argument("session", metavar="[SESSION.jsonl]", required=False)
@click.option("--override", "override", metavar="FILE",
              help="Override sidecar (throw / hang for a named turn and step); default: replay.override.json beside SESSION.")
@click.option("--no-override", is_flag=True, help="Ignore replay.override.json beside SESSION.")
@click.option("--out", "out", metavar="FILE",
              help="Write the script here (atomically) instead of stdout; a refused script is not written at all "
                   "(the first error stops it, as with --strict).")
@max_line_option
@strict_option
def script(session: str | None, override: str | None, no_override: bool, out: str | None, max_line_bytes: int, strict: bool) -> int:
    """Turn a session journal into its replay script: the assistant/chunk lines grouped by (turn, step)
    in journal order, one group per model stream call, as one JSON document (`replay schema replay-script`).

    A group must end with a `finish` chunk: one without is where a stream threw, and is refused
    (E_SESSION_GROUP_UNFINISHED naming its turn and step, exit 1) unless the override sidecar says
    what happened there (`replay schema replay-override`). Streaming: one group is held at a time.
    """
    if override is not None and no_override:
        raise ReplayError("E_USAGE_INVALID", "give --override FILE or --no-override, not both")
    if override is not None:  # (a pipe, `--override <(...)`, is read: once)
        refuse_unusable_override(override)
    # (the sidecar beside SESSION is the script stage's own default: `replay run` of the spec finds it too)
    bound = {"script.override": Flag("--override", override), "script.sidecar": False if no_override else None,
             "write.path": Flag("--out", out), "read.max_line_bytes": max_line_bytes}
    # A script refused (any error) is not written to --out at all: the first error stops it, as --strict does,
    # before `write` commits the file.
    return exit_code_for(run_spec("script", [session] if session is not None else [], set=bound, strict=strict or out is not None))
