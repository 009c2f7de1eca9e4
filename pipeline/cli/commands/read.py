"""`replay read`: journals in, the canonical JSONL stream out (spec: read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from replay.pipeline.cli.app import bounded, execute, exit_code_for, run_spec
from replay.pipeline.cli.command import ReplayCommand
from replay.pipeline.engine.config import graph_from_config
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.spec import bind, load_spec
from replay.pipeline.io.journals import DEFAULT_MAX_LINE_BYTES, expand_paths, is_nats_url
from replay.stages.read import ReadJournal


def max_line_bytes_option(help_text: str = "Longest line accepted; longer lines are reported and skipped.") -> Any:
    """``--max-line-bytes``, read's ``max_line_bytes``, with ``help_text`` saying what the command does with a longer line."""
    return click.option("--max-line-bytes", type=bounded(ReadJournal.options["max_line_bytes"]),
                        default=DEFAULT_MAX_LINE_BYTES, show_default=True, help=help_text)


max_line_option = max_line_bytes_option()
strict_option = click.option("--strict", is_flag=True, help="Stop at the first error (exit 1).")
DIALECTS = ("auto", "claude-code", "codex", "openhands", "mini-swe-agent")  # pipeline/model/dialects (not imported here)
dialect_option = click.option(
    "--dialect", type=click.Choice(DIALECTS), default=None,
    help="Map another agent's log (Claude Code, Codex CLI, OpenHands, mini-swe-agent) onto canonical events; "
         "auto detects it per input.",
)
# heal, validate, report and export: another agent's log is always mapped first, auto-detected unless named
auto_dialect_option = click.option(
    "--dialect", type=click.Choice(DIALECTS), default="auto", show_default=True,
    help="The input's dialect (another agent's log), mapped onto canonical events first; auto detects it.",
)


@click.command(cls=ReplayCommand, epilog="""\b
Examples:
  replay read run.jsonl > canonical.jsonl
  replay read runs/ artifacts/run.artifact.json
  gunzip -c old.jsonl.gz | replay read -
  replay read --follow .replay/journal/run_1.jsonl
  replay read --dialect claude-code ~/.claude/projects/<project>/<session>.jsonl
  replay read nats://127.0.0.1:4222/agents.raw  a live JetStream subject (extra `nats`)
\b
Graph: `replay stages --graph read`.""")
@click.argument("paths", nargs=-1)
@click.option("--follow", "-f", is_flag=True, help="Keep reading one journal as it grows (like tail -f); Ctrl-C ends.")
@dialect_option
@max_line_option
@strict_option
def read(paths: tuple[str, ...], follow: bool, dialect: str | None, max_line_bytes: int, strict: bool) -> int:
    """Read journals (files, directories, .gz, `-` or nothing for stdin) and write the canonical stream.

    Accepts JSONL journals, JSONL streams with run records, and single JSON artifacts with an
    `events` array. Events no stage changed come out as their original bytes. Bad lines are
    reported on stderr with line and byte offset; the valid events still come out (exit 1).
    """
    if any(is_nats_url(p) for p in paths):
        from replay.pipeline.io.nats_stream import parse_address, without_credentials  # here: a NATS address is rare

        if len(paths) != 1:
            raise ReplayError("E_USAGE_INVALID", "a nats:// address is read on its own", received=[
                without_credentials(p) if is_nats_url(p) else p for p in paths],
                              howToFix="Run one `replay read nats://HOST:PORT/SUBJECT` per subject.")
        parse_address(paths[0], option="PATH")
        bound, add, bypass = _dialect_stages(dialect, documents=False)
        doc = bind(load_spec("read"), set=bound | {"parse.mark_max_bytes": max_line_bytes}, add=add, bypass=bypass)
        from replay.stages.read_nats import ReadNats  # (here: only a NATS address loads it)

        # (a read_nats stage in read's place, as the spec's comment says, with those of read's options it has too)
        doc["stages"]["read"] = {**{k: v for k, v in doc["stages"]["read"].items() if k in ReadNats.options},
                                 "type": "read_nats", "ack": "sent", "max_line_bytes": max_line_bytes}
        return exit_code_for(execute(graph_from_config(doc, paths=list(paths)), strict=strict, command="read"))
    files = expand_paths(list(paths)) if follow else []  # (else the read stage walks them: one walk, one warning)
    if follow and (len(files) != 1 or files[0] == "-" or not Path(files[0]).is_file()):
        raise ReplayError("E_USAGE_INVALID", "--follow reads exactly one journal file", received=list(paths),
                          howToFix="Pass one file path with --follow; stdin already streams.")
    bound, add, _ = _dialect_stages(dialect, documents=True)
    bound |= {"read.follow": follow, "read.max_line_bytes": max_line_bytes,
              "parse.mark_max_bytes": max_line_bytes}  # (a dropped record read takes)
    if "dialect" in add:  # a document's records as lines are held to their end as read holds a document whole
        add["dialect"]["hold_bytes"] = max_line_bytes
    return exit_code_for(run_spec("read", paths, set=bound, add=add, strict=strict))


def _dialect_stages(dialect: str | None, documents: bool) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """What --dialect changes in the read graph (files, stdin or a NATS subject), as bindings (set, add, bypass):
    mapped records are parsed records, so parse, then the dialect stage, writes; its notices (a mapped line with a key
    written twice, which only keeps the last value) are warnings on stderr, as heal logs them, with read's
    (``documents``: files or stdin, where a JSON document read whole has a key written twice; a NATS subject's
    messages are lines, and read_nats has no notices: without a dialect, nothing is left for the spec's ``notices``)."""
    notices = ["read.notices"] if documents else []
    if dialect is None:
        return {}, {}, [] if documents else ["notices"]
    return {"parse.type": "parse", "parse.mark_dropped": True, "write.inputs": ["dialect"],
            "notices.inputs": [*notices, "dialect.notices"]}, {
        "dialect": {"type": "dialect", "dialect": dialect, "inputs": ["parse"]}}, []
