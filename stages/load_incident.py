"""LoadIncident: the source that reads an incident export (canonical, RunLedger JSONL, replay journal) or a bundle and sends one incident record."""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Output, Source
from replay.pipeline.model.incident import bundle, export, records

FORMATS = (*export.FORMATS, "bundle")


@register("load_incident")
class LoadIncident(Source):
    summary = ("Read one incident: an export (format canonical, runledger, replay; checked by every import rule) or a "
               "bundle (format bundle; checksum verified). Sends one {\"$record\": \"incident\"} record; an export's, "
               "unredacted, goes to a `redact` stage only (any other taker is refused with the config). What the import "
               "took otherwise than written (a replay journal's call arguments that are no object) is a notice.")
    ports = ("errors", "notices")  # notices: E_INCIDENT_ARGS_WRAPPED, a warning on stderr unless a stage takes it
    options = {
        "path": Option(str, "", "the export, or the bundle's incident.json (or its folder); empty: the command's argument",
                       required=True, bind="args"),
        "format": Option(str, "canonical", "what the file is", choices=FORMATS),
        "case": Option(str, "", "runledger/replay formats: the case id / runId to import (needed when there are several)"),
        "rules": Option(str, "", "runledger/replay formats: a JSON file with the array of rules"),
        "effects_complete": Option(bool, False, "runledger/replay formats: the log holds the complete effect ledger"),
        "max_bytes": Option(int, export.Limits.max_bytes, "largest input file, in bytes", minimum=1),
        "max_events": Option(int, export.Limits.max_events, "most events in the trace", minimum=1),
        "max_depth": Option(int, export.Limits.max_depth, f"deepest nesting of the export's JSON (JSON deeper than {exactjson.MAX_DEPTH} levels is never read)", minimum=1),
        "max_assertions": Option(int, export.Limits.max_assertions, "most rules", minimum=1),
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._loaded: dict[str, Any] | None = None  # per run: read and checked in preflight, sent by produce
        self._notices: list[dict[str, Any]] = []  # what that load noticed, emitted by produce with the incident

    def private_output(self) -> bool:
        """An export is sent as read, private values and all: only a redact stage may take it. A bundle was redacted
        when it was imported (``bundle.load_bundle`` refuses one holding a value redaction would change)."""
        return bool(self.config["format"] != "bundle")

    def input_files(self) -> list[str]:
        c = self.config
        return [p for p in (c["path"], c["rules"]) if p]

    def preflight(self, inputs: list[str]) -> None:
        """Every import rule is checked before any stage runs: a bad export is refused with nothing written."""
        self._loaded = self.load()

    def load(self) -> dict[str, Any]:
        """The incident record (refusals are ReplayErrors: nothing has been sent yet); what the import noticed is kept
        for ``produce`` to emit (``_notices``)."""
        self._notices = []
        c = self.config
        if not c["path"]:
            raise ReplayError("E_USAGE_INVALID", "load_incident needs the file to read", path=f"stages.{self.id}.path",
                              expected="an export, or a bundle's incident.json", received="nothing",
                              example="replay run incident-import.toml production-export.json")
        limits = export.Limits(c["max_bytes"], c["max_events"], c["max_depth"], c["max_assertions"])
        if c["format"] == "bundle":
            return records.as_record(records.INCIDENT, bundle.load_bundle(c["path"], limits))
        imported = c["format"] != "canonical"
        # (bound by `replay incident import`, whose flags name them all, one it was not given too: `--case` is the fix;
        # a config's are named as it writes them: ``Stage.as_named``)
        incident = export.load_export(c["path"], format=c["format"], case=c["case"] or None, rules_path=c["rules"] or None,
                                      effects_complete=c["effects_complete"] if imported else None, limits=limits,
                                      flags=export.FLAGS if self.flags else {}, notices=self._notices)
        return records.as_record(records.INCIDENT, {
            "schema_version": bundle.SCHEMA_VERSION, "kind": bundle.KIND, "incident_id": bundle.new_incident_id(),
            "effects_complete": incident["effects_complete"], "input": incident["input"], "events": incident["events"],
            "assertions": incident["assertions"], "redaction": None,
        })

    async def produce(self, out: Output) -> None:
        record = self._loaded if self._loaded is not None else self.load()
        for notice in self._notices:
            self.emit("notices", {**notice, "stage": self.id})
        await out.send(Batch.of([record], source=self.config["path"]))
