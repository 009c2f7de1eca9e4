"""`replay heal`: repair inconsistent traces, logging every repair; as a filter or over artifact files."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import click
import orjson

from replay.pipeline.cli.app import execute, logger
from replay.pipeline.cli.commands.read import DIALECTS, max_line_option, strict_option
from replay.pipeline.engine.errors import EXIT_FAILED, EXIT_OK, ReplayError, diagnostic, printable
from replay.pipeline.engine.graph import Graph
from replay.pipeline.model.healing import add_heal, healed_artifact, healed_problems, load_rules
from replay.pipeline.io.journals import expand_paths, write_atomic
from replay.pipeline.model.repairs import heal_log_document
from replay.pipeline.engine.executor import ErrorPort
from replay.stages.collect import Collected, CollectRuns
from replay.stages.log import LogRecords
from replay.stages.parse import ParseLines
from replay.stages.read import ReadJournal
from replay.stages.validate import ValidateEvents
from replay.stages.write import WriteJsonl


@click.command(epilog="""\b
Examples:
  replay read run.jsonl | replay heal > healed.jsonl
  replay heal --log repairs.jsonl < broken.jsonl > healed.jsonl
  replay heal --in .replay/artifacts --out .replay/healed
  replay heal --rules my.rules.json run.jsonl
  replay heal ~/.claude/projects/<project>/<session>.jsonl --log repairs.jsonl
  replay heal --dialect-out claude-code broken-session.jsonl > repaired-session.jsonl""")
@click.argument("paths", nargs=-1)
@click.option("--in", "in_path", metavar="PATH", help="Artifact file or directory to heal into --out (directory mode).")
@click.option("--out", "out_dir", metavar="DIR", help="Where directory mode writes <id>.healed.json and <id>.heal-log.json.")
@click.option("--log", "log_path", metavar="FILE", help="Filter mode: write the heal log (JSONL, one repair per line) here.")
@click.option("--rules", "rules_path", metavar="FILE", help="Heal rules (default: .replay/heal.rules.json when present).")
@click.option("--summary/--no-summary", default=True, show_default=True,
              help="Add a {\"$record\": \"heal\"} line after each repaired run (counts by rule).")
@click.option("--dialect", type=click.Choice(DIALECTS), default="auto", show_default=True,
              help="The input's dialect (another agent's log), mapped onto canonical events first; auto detects it.")
@click.option("--dialect-out", type=click.Choice(DIALECTS), default=None,
              help="Write the healed runs back in the dialect they were read from (auto: each its own).")
@max_line_option
@strict_option
def heal(paths: tuple[str, ...], in_path: str | None, out_dir: str | None, log_path: str | None,
         rules_path: str | None, summary: bool, dialect: str, dialect_out: str | None, max_line_bytes: int,
         strict: bool) -> int:
    """Heal journals: map type aliases, insert missing run_started / terminal / assistant_message events,
    make payloads objects, repair timestamps and missing runIds, drop exact adjacent duplicates and
    renumber seq 1..n per run. Events that needed no repair come out byte for byte. Healing a healed
    stream changes nothing.

    Filter mode (PATHs or stdin -> stdout) unless --in is given. Directory mode reads artifacts
    (*.json, *.jsonl) under --in and writes healed copies and heal logs under --out; stdout then gets
    one JSON line per file written.
    """
    rules = load_rules(rules_path)
    if in_path is not None or out_dir is not None:
        if in_path is None or out_dir is None:
            raise ReplayError("E_USAGE_INVALID", "directory mode needs both --in PATH and --out DIR",
                              example="replay heal --in .replay/artifacts --out .replay/healed")
        if paths:
            raise ReplayError("E_USAGE_INVALID", "give either PATHs (filter mode) or --in/--out (directory mode)",
                              received=list(paths))
        return _heal_directory(in_path, out_dir, rules, summary, max_line_bytes, strict)
    expand_paths(list(paths))  # refuse missing inputs before any output
    graph = Graph()
    read = graph.add(ReadJournal(paths=list(paths), max_line_bytes=max_line_bytes))
    parse = graph.add(ParseLines(torn_tail="repair"), inputs=[read])
    last, repairs, more_notices = _dialect_rules(graph, parse, dialect)
    ports = add_heal(graph, last, rules, summary=summary, extra_repairs=(f"{parse}.repairs", *repairs))
    checked = graph.add(ValidateEvents(report_as="E_HEALED_ARTIFACT_INVALID"), id="check_healed", inputs=[ports.last])
    if dialect_out is not None:
        from replay.stages.undialect import WriteDialect

        checked = graph.add(WriteDialect(dialect=dialect_out), id="undialect", inputs=[checked])
    graph.add(WriteJsonl(), id="out", inputs=[checked])
    if log_path:
        graph.add(WriteJsonl(path=log_path), id="heal_log", inputs=ports.repairs)
    notices = LogRecords(event="heal.notice")
    notices.logger = logger()
    graph.add(notices, id="notices", inputs=[*more_notices, *ports.notices])
    result = execute(graph, strict=strict, command="heal")
    return EXIT_FAILED if result.errors else EXIT_OK


def _dialect_rules(graph: Graph, after: str, dialect: str) -> tuple[str, list[str], list[str]]:
    """Map other agents' logs (``dialect``), then the rules for what those logs break; returns the last node,
    and the repairs and notices ports to add to heal's."""
    from replay.stages.dialect import MapDialect
    from replay.stages.drop_resume_duplicates import DropResumeDuplicates
    from replay.stages.order_sidechains import OrderSidechains
    from replay.stages.pair_tool_calls import PairToolCalls

    last = graph.add(MapDialect(dialect=dialect), inputs=[after])
    repairs, notices = [], []
    for stage in (DropResumeDuplicates(), OrderSidechains(), PairToolCalls()):
        last = graph.add(stage, inputs=[last])
        repairs.append(f"{last}.repairs")
        if "notices" in stage.ports:
            notices.append(f"{last}.notices")
    return last, repairs, notices


def _inputs(in_path: str) -> tuple[Path, list[str]]:
    root = Path(in_path)
    if not root.exists():
        raise ReplayError("E_INPUT_PATH_NOT_FOUND", f"--in target {in_path!r} does not exist", path=in_path,
                          howToFix="Point --in at an artifact or journal file, or a folder of them (e.g. .replay/artifacts).")
    if root.is_file():
        if not root.name.endswith((".json", ".jsonl", ".json.gz", ".jsonl.gz")):
            raise ReplayError("E_INPUT_FILE_NOT_JSON", f"--in file {in_path!r} is not a .json or .jsonl file", path=in_path,
                              expected=".json / .jsonl", received=root.suffix or "(no suffix)")
        return root.parent, [str(root)]
    if not root.is_dir():
        raise ReplayError("E_INPUT_NOT_FILE_OR_DIR", f"--in target {in_path!r} is neither a file nor a directory", path=in_path)
    files = [f for f in expand_paths([str(root)]) if not Path(f).name.endswith(".healed.jsonl")]
    # capture leaves <id>.artifact.json and <id>.healed.json side by side: heal the original once
    # (healing the healed copy again would give the same file and an empty log over the real one).
    present = set(files)
    files = [f for f in files if not (f.endswith(".healed.json") and f[: -len(".healed.json")] + ".artifact.json" in present)]
    return root, files


def _output_names(path: str) -> tuple[str, str]:
    """<id>.artifact.json / <id>.json -> <id>.healed.json; journals keep JSONL."""
    name = Path(path).name
    for suffix in (".artifact.json", ".healed.json", ".json", ".json.gz"):
        if name.endswith(suffix):
            stem = name[: -len(suffix)]
            return stem + ".healed.json", stem + ".heal-log.json"
    for suffix in (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz"):
        if name.endswith(suffix):
            stem = name[: -len(suffix)]
            return stem + ".healed.jsonl", stem + ".heal-log.json"
    return name + ".healed.json", name + ".heal-log.json"


def _plan_outputs(root: Path, files: list[str], target: Path) -> dict[str, tuple[Path, Path]]:
    """Each input's (healed, log) paths relative to --out; refused when two inputs would write the
    same file or an output would land on an input."""
    plan: dict[str, tuple[Path, Path]] = {}
    claimed: dict[Path, str] = {}
    inputs = {Path(f).resolve() for f in files}
    for path in files:
        rel = Path(path).resolve().relative_to(root.resolve()).parent if root.is_dir() else Path()
        healed, log = (rel / name for name in _output_names(path))
        for out in (healed, log):
            if out in claimed:
                raise ReplayError("E_USAGE_INVALID", f"{claimed[out]!r} and {path!r} would both be healed into {str(out)!r}",
                                  received=[claimed[out], path], howToFix="Heal one of them on its own, or rename it.")
            if (target / out).resolve() in inputs:
                raise ReplayError("E_USAGE_INVALID", f"healing {path!r} would overwrite the input {str(target / out)!r}",
                                  received=str(target), howToFix="Choose an --out folder that holds none of the inputs.")
            claimed[out] = path
        plan[path] = (healed, log)
    return plan


def heal_log_of(collected: Collected, artifact_id: Any) -> dict[str, Any]:
    run_id = (collected.run or {}).get("runId") or next((e.get("runId") for e in collected.events), None)
    return heal_log_document(collected.repairs, collected.notices, artifact_id=artifact_id, run_id=run_id,
                             source=collected.source)


def _heal_directory(in_path: str, out_dir: str, rules: dict[str, Any], summary: bool, max_line_bytes: int,
                    strict: bool) -> int:
    root, files = _inputs(in_path)
    target = Path(out_dir)
    plan = _plan_outputs(root, files, target)
    port = ErrorPort(strict=strict)
    collector = CollectRuns()
    graph = Graph()
    read = graph.add(ReadJournal(paths=files, max_line_bytes=max_line_bytes, mark_sources=False))
    parse = graph.add(ParseLines(torn_tail="repair"), inputs=[read])
    ports = add_heal(graph, parse, rules, summary=summary, extra_repairs=(f"{parse}.repairs",))
    graph.add(collector, id="collect", inputs=[ports.last, *ports.repairs, *ports.notices])
    execute(graph, error_port=port, command="heal")

    # A new --out folder appears whole or not at all: fill a sibling staging folder, then rename it.
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = None if target.exists() else Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    written: list[dict[str, Any]] = []
    try:
        for path in files:
            collected = collector.by_source.get(printable(path))
            if collected is None:
                port.put([diagnostic("E_ARTIFACT_EVENTS_INVALID", f"{printable(path)!r} holds no records to heal",
                                     source=printable(path), expected="an artifact or a journal with events",
                                     received="no records")])
                continue
            healed_rel, log_rel = plan[path]
            base = staging or target
            if healed_rel.name.endswith(".jsonl"):
                data = b"".join(orjson.dumps(r) + b"\n" for r in collected.records)
                artifact_id = (collected.run or {}).get("artifactId") or Path(path).name
            else:
                artifact = healed_artifact(collected.run, collected.events, collected.heal)
                port.put(healed_problems(artifact, printable(path)))
                data = orjson.dumps(artifact, option=orjson.OPT_INDENT_2) + b"\n"
                artifact_id = artifact["id"]
            write_atomic(base / healed_rel, data)
            log_doc = heal_log_of(collected, artifact_id)
            write_atomic(base / log_rel, orjson.dumps(log_doc, option=orjson.OPT_INDENT_2) + b"\n")
            written.append({"source": printable(path), "healed": printable(str(target / healed_rel)),
                            "log": printable(str(target / log_rel)), "repairs": log_doc["summary"]["total"]})
        if staging is not None:
            os.replace(staging, target)
            staging = None
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    sys.stdout.buffer.write(b"".join(orjson.dumps(w) + b"\n" for w in written))
    sys.stdout.flush()
    return EXIT_FAILED if port.count else EXIT_OK
