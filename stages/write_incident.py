"""WriteIncident: writes an incident's folder (bundle, audit, evaluation, report, trace, JUnit, replay verdict) whole, and sends a summary line."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio.lowlevel

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import AsyncTransform, Option, Output
from replay.pipeline.model.incident import bundle, records
from replay.pipeline.model.incident.render import folder_files, verdict_line
from replay.pipeline.model.incident.rules import evaluate


@register("write_incident")
class WriteIncident(AsyncTransform):
    summary = ("Write the incident folder `out` (new or empty; it appears whole or not at all): incident.json, "
               "redaction.json, evaluation.json, report.html, trace.jsonl, junit.xml and, after a replay, replay.json. "
               "Refuses an incident no redact stage has seen. Sends one summary record.")
    options = {
        "out": Option(str, "", "the folder to create", required=True),
    }

    def preflight(self, inputs: list[str]) -> None:
        bundle.check_output_folder(self.config["out"])  # a used folder is refused before anything runs

    async def process(self, batches: AsyncIterator[Batch], out: Output) -> None:
        incident: dict[str, Any] | None = None
        evaluation: dict[str, Any] | None = None
        replay: dict[str, Any] | None = None
        async for batch in batches:
            for i, record in enumerate(batch.events or ()):
                kind = records.kind_of(record)
                if kind == records.INCIDENT:
                    if incident is not None:
                        self.error("E_INCIDENT_BUNDLE_INVALID", "a second incident reached write_incident; one folder holds one incident",
                                   batch, i)
                        continue
                    incident = records.body_of(record)
                elif kind == records.EVALUATION and evaluation is None:
                    evaluation = records.body_of(record)
                elif kind == records.REPLAY and replay is None:
                    replay = records.body_of(record)
        await anyio.lowlevel.checkpoint()  # a run cancelled upstream (a refused input) must write nothing
        if incident is None:
            self.error("E_INCIDENT_BUNDLE_INVALID", "no incident record reached write_incident; nothing was written")
            return
        if not isinstance(incident.get("redaction"), dict):
            raise ReplayError("E_INCIDENT_NOT_REDACTED", "the incident has not been redacted; it is not written",
                              howToFix="Put a `redact` stage between load_incident and write_incident.")
        evaluation = evaluation or evaluate(incident)
        summary = verdict_line(evaluation, replay)
        if replay is not None:
            replay = {**replay, "rules": evaluation["status"], "summary": summary}
        files = folder_files(incident, evaluation, replay)
        bundle.write_folder(self.config["out"], files)
        line: dict[str, Any] = {"incident_id": incident["incident_id"], "out": self.config["out"], "summary": summary,
                                "rules": evaluation["status"], "counts": evaluation["counts"]}
        if replay is not None:
            line["replay"] = replay["status"]
            if replay.get("divergence"):
                line["divergence"] = replay["divergence"]["kind"]
        line["files"] = sorted(files)
        await out.send(Batch.of([line], source=f"<{self.id}>"))
