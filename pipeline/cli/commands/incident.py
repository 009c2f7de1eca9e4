"""`replay incident import|inspect|replay|promote`: production incidents as local, reviewable regression tests.

Each subcommand is a shipped graph spec (``pipeline/specs/incident-<name>.toml``, ``replay stages --graph
incident-<name>``) with its flags bound into the spec's stages. Refusals (bad input, a used output folder,
a bad agent command) come from the stages' preflight and exit 2 before anything runs or is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import orjson

from replay.pipeline.cli.app import bounded, exit_code_for, run_spec
from replay.pipeline.cli.command import ReplayCommandGroup
from replay.pipeline.cli.commands.capture import parse_timeout
from replay.pipeline.cli.scale_flags import Scale, scale_options
from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.spec import Flag
from replay.pipeline.model.incident.agent_protocol import AgentLimits
from replay.pipeline.model.incident.export import FORMATS, Limits
from replay.stages.load_incident import LoadIncident
from replay.stages.spawn_agent import SpawnAgent


def run(name: str, bindings: dict[str, Any]) -> int:
    """Bind the flags (``{"<stage>.<option>": value}``) into the shipped spec ``incident-<name>`` and run it."""
    return exit_code_for(run_spec(f"incident-{name}", set=bindings))


def limit_options(command: Any) -> Any:
    defaults = Limits()
    for flag, field, what in reversed((
        ("--max-bytes", "max_bytes", "largest input file in bytes"),
        ("--max-events", "max_events", "most events in the trace"),
        ("--max-depth", "max_depth", f"deepest JSON nesting (JSON deeper than {exactjson.MAX_DEPTH} levels is never read)"),
        ("--max-assertions", "max_assertions", "most rules"),
    )):
        command = click.option(flag, field, type=bounded(LoadIncident.options[field]), default=getattr(defaults, field), show_default=True,
                               help=f"Limit: {what}.")(command)
    return command


def limits_of(options: dict[str, Any], writer: str = "folder") -> dict[str, Any]:
    """The --max-* flags bound to the graph's load stage, and --max-bytes to its ``writer`` too (the stage that writes a
    bundle: it writes none the next step could not read at the same --max-bytes)."""
    return {**{f"load.{k}": options[k] for k in ("max_bytes", "max_events", "max_depth", "max_assertions")},
            f"{writer}.max_bytes": options["max_bytes"]}


def out_option(command: Any) -> Any:
    return click.option("--out", "out", required=True, metavar="DIR",
                        help="Folder to create (must be new or empty; it appears whole or not at all).")(command)


def parse_agent_command(text: str) -> list[str]:
    """``'["python", "agent.py"]'`` -> the argument list; refused unless a JSON array of non-empty strings."""
    try:
        command = exactjson.loads(text)
    except orjson.JSONDecodeError:
        command = None
    if not (isinstance(command, list) and command and all(isinstance(a, str) and a for a in command)):
        raise ReplayError("E_INCIDENT_AGENT_COMMAND_INVALID", "--agent-command must be a JSON array of non-empty strings",
                          path="--agent-command", expected='a JSON array, e.g. ["python", "my_agent.py"]',
                          received=text if len(text) <= 200 else text[:200] + "…")
    return command


@click.group(cls=ReplayCommandGroup, epilog="""\b
Examples:
  replay incident import production-export.json --out imported
  replay incident import run.jsonl --format runledger --case refund-case --rules rules.json --out imported-log
  replay incident inspect imported/incident.json --out reviewed
  replay incident replay imported/incident.json --agent-command '["python","my_agent.py"]' --out replayed
  replay incident promote imported/incident.json --to cases/refund-incident.json
  replay incident replay cases/refund-incident.json --agent-command '["python","my_agent.py"]' --out ci --gate
\b
Graphs: `replay stages --graph incident-import` (also incident-inspect, incident-replay, incident-promote).""")
def incident() -> None:
    """Turn a production incident into a local regression test: import it with local redaction, check its
    explicit business rules, replay your agent against the recorded tool responses, keep it as a fixture.

    Exit 0: valid import or inspect (even with a recorded rule violation), or a replay that matched the
    recording (even of a failed incident) by an agent that exited (with 0 after a final_output). Exit 1: --gate
    with failed or inconclusive rules, a replay divergence, or an agent error (an agent that exits non-zero
    after a final_output, or by a signal, is one, even when what it sent matched). Exit 2: invalid input, output folder or command (nothing written).
    """


@incident.command("import", epilog="""\b
Examples:
  replay incident import production-export.json --out imported
  replay incident import production-export.json --redact /input/company --redact /events/*/args/internal_reference --out imported-private
  replay incident import run.jsonl --format runledger --case refund-case --rules rules.json --out imported-log
  replay incident import journal.jsonl --format replay --case run_42 --rules rules.json --out imported-run
  replay incident import exports/ --out imported --workers 4       (each export into imported/<its name>/)
  replay incident import logs/ --format runledger --rules rules.json --out imported-logs --engine dask""")
@click.argument("export_path", metavar="EXPORT|DIR")
@out_option
@click.option("--format", "format_", type=click.Choice(FORMATS), default="canonical", show_default=True,
              help="canonical: one JSON export (schema_version 1); runledger: a RunLedger run.jsonl; replay: a replay journal.")
@click.option("--case", metavar="ID", help="runledger/replay: the case id / runId to import (needed when the log has several).")
@click.option("--rules", "rules", metavar="FILE", help="runledger/replay: JSON array of rules (at least one).")
@click.option("--effects-complete", is_flag=True, default=None,
              help="runledger/replay: the log holds the complete ledger of business effects.")
@click.option("--redact", "redact", multiple=True, metavar="POINTER",
              help="JSON Pointer into input, events or assertions to remove before redaction (`*` = one level); repeatable.")
@limit_options
@scale_options
def import_(export_path: str, out: str, format_: str, case: str | None, rules: str | None, effects_complete: bool | None,
            redact: tuple[str, ...], workers: int | None, engine: str, scheduler: str | None, quiet: bool,
            **limits: int) -> int:
    """Import an incident export: check it, redact it on this machine (a fresh secret per import; the secret and
    the alias mapping are never written), judge its rules, and write DIR with incident.json, redaction.json,
    evaluation.json, report.html, trace.jsonl and junit.xml. Prints one JSON summary line.

    Given a folder, every export in it (*.json; *.jsonl logs with --format runledger/replay, each one incident,
    all with the same --case/--rules) is imported into OUT/<its name>/, each with its own secret, in parallel
    (--workers, --engine dask); one summary line per export in input order. An invalid export is reported and
    the others imported (exit 2 at the end). OUT must be new or empty, for a folder too; a killed run's partial
    folder is resumed by the same command."""
    if format_ == "canonical":
        for flag, given in (("--case", case), ("--rules", rules), ("--effects-complete", effects_complete)):
            if given is not None:
                raise ReplayError("E_USAGE_INVALID", f"{flag} is for --format runledger/replay; a canonical export declares it itself",
                                  path=flag, howToFix="Put `assertions` and `effects_complete` in the export, or pick --format.")
    from replay.pipeline.model.incident.redact_pointers import removal_pointer

    for pointer in redact:  # refused here as a pointer, once for a folder too; the stage's option takes no empty string
        removal_pointer(pointer)
    bindings = {"load.path": export_path, "load.format": Flag("--format", format_), "load.case": Flag("--case", case),
                "load.rules": Flag("--rules", rules), "load.effects_complete": Flag("--effects-complete", bool(effects_complete)),
                **limits_of(limits),
                "redact.remove": list(redact), "folder.out": Flag("--out", out)}
    if Path(export_path).is_dir():
        from replay.pipeline.cli.commands.incident_many import import_many

        return import_many(export_path, out, format_, bindings, Limits(**limits), Scale(workers, engine, scheduler, quiet))
    return run("import", bindings)


@incident.command("inspect", epilog="""\b
Examples:
  replay incident inspect imported/incident.json --out reviewed
  replay incident inspect cases/refund-incident.json --out ci-rules --gate""")
@click.argument("bundle", metavar="BUNDLE")
@out_option
@click.option("--gate", is_flag=True, help="Exit 1 when a rule fails or is inconclusive.")
@limit_options
def inspect(bundle: str, out: str, gate: bool, **limits: int) -> int:
    """Check a bundle (an import's incident.json, or a promoted fixture whose checksum is verified), judge its
    rules and write DIR with the same files as import."""
    return run("inspect", {"load.path": bundle, **limits_of(limits), "evaluate.gate": gate, "folder.out": Flag("--out", out)})


@incident.command("replay", epilog="""\b
Examples:
  replay incident replay imported/incident.json --agent-command '["python","my_agent.py"]' --out replayed
  replay incident replay cases/refund-incident.json --agent-command '["python","my_agent.py"]' --out ci-result --gate""")
@click.argument("bundle", metavar="BUNDLE")
@click.option("--agent-command", "agent_command", required=True, metavar="JSON",
              help="The agent as a JSON argument list, e.g. '[\"python\",\"my_agent.py\"]'. It runs locally, unsandboxed.")
@out_option
@click.option("--gate", is_flag=True, help="Also exit 1 when a rule fails or is inconclusive.")
@click.option("--timeout-ms", metavar="MS", help=f"Time limit of the whole agent run.  [default: {AgentLimits.timeout_ms}]")
@click.option("--max-messages", type=bounded(SpawnAgent.options["max_messages"]), default=AgentLimits.max_messages, show_default=True,
              help="Most protocol messages the agent may send.")
@click.option("--max-tool-calls", type=bounded(SpawnAgent.options["max_tool_calls"]), default=AgentLimits.max_tool_calls, show_default=True,
              help="Most tool calls the agent may make.")
@limit_options
def replay(bundle: str, agent_command: str, out: str, gate: bool, timeout_ms: str | None, max_messages: int,
           max_tool_calls: int, **limits: int) -> int:
    """Run the agent against the incident: it gets task_start with the sanitized input, and each tool call is
    answered with the next recorded response only when tool name and arguments match the recording exactly. The
    first extra, missing, reordered or changed call, or a changed final output, stops it (no live tool is ever
    called). Writes DIR with the import files plus replay.json; candidate values, logs and stderr are withheld."""
    return run("replay", {"load.path": bundle, **limits_of(limits), "agent.command": Flag("--agent-command", parse_agent_command(agent_command)),
                          "agent.timeout_ms": parse_timeout(timeout_ms, AgentLimits.timeout_ms), "agent.max_messages": max_messages,
                          "agent.max_tool_calls": max_tool_calls, "evaluate.gate": gate, "folder.out": Flag("--out", out)})


@incident.command("promote", epilog="""\b
Examples:
  replay incident promote imported/incident.json --to cases/refund-incident.json""")
@click.argument("bundle", metavar="BUNDLE")
@click.option("--to", "to", required=True, metavar="PATH", help="The fixture file to create (never overwritten).")
@limit_options
def promote(bundle: str, to: str, **limits: int) -> int:
    """Save a checked bundle as a regression fixture with a SHA-256 checksum (it detects accidental edits; it is
    not a signature). Refuses to overwrite an existing file."""
    return run("promote", {"load.path": bundle, **limits_of(limits, "fixture"), "fixture.to": Flag("--to", to)})
