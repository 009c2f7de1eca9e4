"""`replay export --otlp`: runs in, OpenTelemetry traces (OTLP/JSON, GenAI semantic conventions) out (spec: export)."""

from __future__ import annotations

import click

from replay.pipeline.cli.app import exit_code_for, run_spec
from replay.pipeline.cli.command import ReplayCommand
from replay.pipeline.cli.commands.read import auto_dialect_option, max_line_option, strict_option
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.spec import Flag


@click.command(cls=ReplayCommand, epilog="""\b
Examples:
  replay read run.jsonl | replay heal | replay export --otlp > traces.jsonl
  replay export --otlp ~/.codex/sessions/2026/01/02/rollout-*.jsonl --out traces.jsonl
  replay export --otlp run.jsonl | while read -r line; do
    curl -s -H 'Content-Type: application/json' -d "$line" http://localhost:4318/v1/traces; done""")
@click.argument("paths", nargs=-1)
@click.option("--otlp", is_flag=True, help="Write OTLP/JSON traces: one ExportTraceServiceRequest per run, one per line.")
@click.option("--out", "out_path", metavar="FILE", help="Write to FILE (atomically) instead of stdout.")
@auto_dialect_option
@max_line_option
@strict_option
def export(paths: tuple[str, ...], otlp: bool, out_path: str | None, dialect: str, max_line_bytes: int, strict: bool) -> int:
    """Export runs to OpenTelemetry: each run becomes a trace of an `invoke_agent` span with a `chat`
    span per model call and an `execute_tool` span per tool call, with the GenAI semantic conventions'
    attributes (operation, provider, model, tokens, tool name and call id) and errors as span status.

    Reads replay streams (heal them first for the best result) or other agents' logs (mapped by
    --dialect). The output loads into any OTLP/HTTP endpoint (Jaeger, Grafana Tempo, Arize Phoenix,
    Langfuse) one line per request, or into the OpenTelemetry collector's otlpjsonfile receiver.
    """
    if not otlp:
        raise ReplayError("E_USAGE_INVALID", "say which format to export: --otlp",
                          howToFix="Add --otlp, the one format there is: `replay export --otlp FILE`.",
                          example="replay export --otlp run.jsonl")
    bound = {"read.max_line_bytes": max_line_bytes, "dialect.dialect": dialect, "out.path": Flag("--out", out_path)}
    return exit_code_for(run_spec("export", paths, set=bound, strict=strict))
