"""PromoteIncident: writes an incident bundle as a regression fixture with its SHA-256 checksum, never over an existing file."""

from __future__ import annotations

from collections.abc import AsyncIterator

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import AsyncTransform, Option, Output
from replay.pipeline.model.incident import bundle, export, records


@register("promote_incident")
class PromoteIncident(AsyncTransform):
    summary = ("Save the incident record as a fixture file `to` (the bundle plus a SHA-256 checksum that later loads "
               "verify); refuses to overwrite anything. Sends one summary record.")
    options = {
        "to": Option(str, "", "the fixture file to create", required=True),
        "max_bytes": Option(int, export.Limits.max_bytes, "the max_bytes the fixture is to be read with: one larger than "
                            f"{export.BUNDLE_GROWTH} times it is refused, not written", minimum=1),
    }

    def outputs(self) -> list[tuple[str | None, str]]:
        return [("to", self.config["to"])]

    def preflight(self, inputs: list[str]) -> None:
        bundle.refuse_existing_fixture(self.config["to"])

    async def process(self, batches: AsyncIterator[Batch], out: Output) -> None:
        async for batch in batches:
            for record in batch.events or ():
                if records.kind_of(record) != records.INCIDENT:
                    continue
                incident = records.body_of(record)
                if not isinstance(incident.get("redaction"), dict):
                    raise ReplayError("E_INCIDENT_NOT_REDACTED", "the incident has not been redacted; it is not promoted",
                                      howToFix="Promote a bundle an import wrote (load_incident with format = \"bundle\").")
                promoted = bundle.promote(incident, self.config["to"], export.Limits(self.config["max_bytes"]), batch.source)
                await out.send(Batch.of([promoted], source=f"<{self.id}>"))
