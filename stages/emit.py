"""EmitArtifacts: the sink that writes each run's capture files and the run's journal, atomically.

Per run, in ``out_dir`` (default ``.replay/artifacts/YYYY-MM-DD``, the run's UTC date):

- ``<id>.raw.json``: the raw capture (request, stdout, stderr, exit code, signal, timing), from the
  ``raw`` records of ``spawn``; written first;
- ``<id>.artifact.json``: the run as a replay artifact before healing;
- ``<id>.healed.json`` and ``<id>.heal-log.json``: the healed artifact and every repair (when the
  main input is healed: option ``healed``);

and ``<journal_dir>/<runId>.jsonl``: the run's stream as it arrived (run record, events, heal record),
untouched events as their original bytes. One JSON line per run on stdout names the files.
Inputs: the main stream, ``spawn.raw`` and the heal rules' ``repairs`` and ``notices`` ports.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import anyio

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch, Column
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Sink
from replay.pipeline.io.fdio import write_stdout
from replay.pipeline.io.run_files import (
    ARTIFACT,
    HEAL_LOG,
    HEALED,
    JOURNAL,
    JOURNAL_FOLDER,
    RAW,
    document_bytes,
    file_stem,
    refuse_non_folder,
    write_file,
)
from replay.pipeline.model.artifacts import artifact_from_run
from replay.pipeline.model.events import parse_timestamp
from replay.pipeline.model.healing import healed_problems
from replay.pipeline.model.records import HEAL_RECORD, RECORD_KEY, RUN_RECORD, is_record
from replay.pipeline.model.repairs import heal_log_document
from replay.pipeline.model.runs import Run, names_run, of_no_run, starts_run
from replay.pipeline.report.model import healed_run_artifact

ARTIFACTS_DIR = Path(".replay") / "artifacts"
JOURNAL_DIR = Path(".replay") / JOURNAL_FOLDER


@dataclass
class RunParts:
    """What reached the sink about one run."""

    run_id: str | None
    record: dict[str, Any] | None = None
    columns: list[Column] = field(default_factory=list)
    heal: dict[str, Any] | None = None
    repairs: list[dict[str, Any]] = field(default_factory=list)
    notices: list[dict[str, Any]] = field(default_factory=list)
    raw: dict[str, Any] | None = None

    @property
    def events(self) -> list[dict[str, Any]]:
        return [c[0] for c in self.columns if not is_record(c[0])]




@register("emit")
class EmitArtifacts(Sink):
    summary = "Write per run: <id>.raw.json, .artifact.json, .healed.json, .heal-log.json and the journal <runId>.jsonl; print a summary line."
    options = {
        "out_dir": Option(str, "", "directory for the <id>.*.json files; empty: .replay/artifacts/YYYY-MM-DD"),
        "journal_dir": Option(str, str(JOURNAL_DIR), "directory for <runId>.jsonl; empty: no journal"),
        "healed": Option(bool, True, "the main input went through heal: write <id>.healed.json and <id>.heal-log.json"),
        "summary": Option(bool, True, "print one JSON line per run on stdout naming the files written"),
    }
    ports: ClassVar[tuple[str, ...]] = ("errors",)

    def output_files(self) -> list[str]:
        return ["-"] if self.config["summary"] else []  # the per-run files are named as the runs arrive

    def output_folders(self) -> list[tuple[str | None, str]]:
        return [(key, self.config[key] or str(folder)) for key, folder in self._folders().items() if folder is not None]

    def _folders(self) -> dict[str, Path | None]:
        """The folders it writes into; without --out, the folder of today's runs (a run is dated when it starts)."""
        return {"out_dir": Path(self.config["out_dir"]) if self.config["out_dir"] else ARTIFACTS_DIR / _date_of(None, []),
                "journal_dir": Path(self.config["journal_dir"]) if self.config["journal_dir"] else None}

    def preflight(self, inputs: list[str]) -> None:
        """A folder to write into that is a file (`--out /dev/null`), or is under one (a file at .replay/artifacts), is
        refused before the runner starts; so is `--out ""` (an empty option of a config means the dated default)."""
        if "out_dir" in self.flags and not self.config["out_dir"]:
            raise self.refuse_empty("out_dir", names="folder", expected="a folder (made when missing)", example="captures")
        for key, folder in self._folders().items():
            if folder is not None:  # folders on this machine (emit writes no URLs)
                refuse_non_folder(folder, "Give --out a folder (it is made when missing)." if key == "out_dir" else
                                  "Move the file out of the way: capture writes each run's journal in that folder.",
                                  example="replay capture --out captures \"prompt\"" if key == "out_dir" else None,
                                  flag=self.flags.get(key))

    async def consume(self, batches: AsyncIterator[Batch]) -> None:
        runs: list[RunParts] = []
        raws: dict[Any, dict[str, Any]] = {}
        repairs: dict[Any, list[dict[str, Any]]] = {}
        notices: dict[Any, list[dict[str, Any]]] = {}
        tracker: Run | None = None
        async for batch in batches:
            if batch.port == "raw":
                raws.update((r.get("runId"), r) for r in batch.events or ())
            elif batch.port == "repairs":
                for entry in batch.events or ():
                    repairs.setdefault(entry.get("runId"), []).append(entry)
            elif batch.port == "notices":
                for entry in batch.events or ():
                    notices.setdefault(entry.get("runId"), []).append(entry)
            elif batch.port is None:
                for i, record in enumerate(batch.events or ()):
                    if not isinstance(record, dict) or of_no_run(record):
                        continue  # (the heal record of a run heal dropped whole: no run's, its repairs in the heal log)
                    if starts_run(record, tracker, batch.source):
                        is_run = record.get(RECORD_KEY) == RUN_RECORD
                        rid = record.get("runId") if isinstance(record.get("runId"), str) else None
                        tracker = Run(rid, record if is_run else None, batch.source)
                        runs.append(RunParts(rid, record if is_run else None))
                    assert tracker is not None
                    parts = runs[-1]
                    if parts.run_id is None and names_run(record.get("runId")):
                        parts.run_id = tracker.run_id = record["runId"]
                    if record.get(RECORD_KEY) == HEAL_RECORD:
                        parts.heal = record
                    parts.columns.append(batch.column(i))
        for parts in runs:
            parts.raw = raws.pop(parts.run_id, None)
            parts.repairs = repairs.pop(parts.run_id, [])
            parts.notices = notices.pop(parts.run_id, [])
        for rid, raw in raws.items():  # a capture whose run never reached us: its raw files still count
            runs.append(RunParts(rid, raw.get("run"), raw=raw, repairs=repairs.pop(rid, [])))
        for parts in runs:
            summary = await anyio.to_thread.run_sync(self._write_run, parts)
            if self.config["summary"]:
                _print_line(exactjson.dumps(summary) + b"\n")

    def _write_run(self, parts: RunParts) -> dict[str, Any]:
        """Write one run's files (each atomically); the summary of what was written."""
        record = parts.record or (parts.raw or {}).get("run")
        artifact_id = str((record or {}).get("artifactId") or parts.run_id or "run")
        stem = file_stem(artifact_id)
        folder = Path(self.config["out_dir"]) if self.config["out_dir"] else ARTIFACTS_DIR / _date_of(record, parts.events)
        files: dict[str, str] = {}
        raw = parts.raw
        if raw is not None:
            files["raw"] = write_file(folder / (stem + RAW), document_bytes(raw["capture"]))
            files["artifact"] = write_file(folder / (stem + ARTIFACT),
                                            document_bytes(artifact_from_run(raw["run"], raw["events"])))
        main = healed_run_artifact(parts.record, parts.events, parts.heal)
        log = heal_log_document(parts.repairs, parts.notices, artifact_id=artifact_id, run_id=parts.run_id)
        invalid = False  # the healed artifact still fails validation (said on stderr, and in the summary line)
        if self.config["healed"]:
            for problem in healed_problems(main, str(folder / (stem + HEALED)), stage=self.id):
                self.emit("errors", problem)
                invalid = True
            files["healed"] = write_file(folder / (stem + HEALED), document_bytes(main))
            files["healLog"] = write_file(folder / (stem + HEAL_LOG), document_bytes(log))
        elif raw is None:
            files["artifact"] = write_file(folder / (stem + ARTIFACT), document_bytes(main))
        if self.config["journal_dir"] and parts.columns:
            journal = Path(self.config["journal_dir"]) / (file_stem(parts.run_id) + JOURNAL)
            files["journal"] = write_file(journal, Batch.from_columns(parts.columns).to_jsonl())
        summary: dict[str, Any] = {"runId": parts.run_id, "artifactId": artifact_id, "status": main.get("status"),
                                   "events": len(main.get("events", []))}
        if self.config["healed"]:
            summary["repairs"] = log["summary"]["total"]
        error = main.get("error")
        if isinstance(error, dict) and isinstance(error.get("code"), str):
            summary["error"] = error["code"]
        elif invalid:  # (the run may be ok: what capture wrote of it is not)
            summary["error"] = "E_HEALED_ARTIFACT_INVALID"
        message = run_error_message(error)
        if message is not None:
            summary["errorMessage"] = message
        summary["files"] = files
        return summary


def run_error_message(error: Any) -> str | None:
    """The message of a run's ``error`` (the summary line's ``errorMessage``): its ``message``, or the error itself
    when a runner wrote it as a bare message (``"error": "database connection refused"``, which capture keeps as
    ``{"message": ...}``); None when it says none. A runner's error that names no code is told by it alone."""
    message = error if isinstance(error, str) else error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) and message.strip() else None


def _date_of(record: dict[str, Any] | None, events: list[dict[str, Any]]) -> str:
    """The run's UTC date: from its run record, else its first event, else today."""
    moment = parse_timestamp((record or {}).get("timestamp")) or next(
        (m for m in (parse_timestamp(e.get("timestamp")) for e in events) if m is not None), None) or datetime.now(UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d")


def _print_line(data: bytes) -> None:
    write_stdout(data)  # a reader gone away is PipeClosed; a full disk E_OUTPUT_WRITE_FAILED
