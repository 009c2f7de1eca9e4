"""NormalizePayload: makes every event's payload an object, keeping the replaced value in the heal log."""

from __future__ import annotations

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Transform
from replay.pipeline.model.events import with_field
from replay.pipeline.model.repairs import log_repair


@register("normalize_payload")
class NormalizePayload(Transform):
    summary = "Replace a missing or non-object payload with {} (the original value goes to the heal log)."
    ports = ("errors", "repairs")
    screened_lane = "passes"
    keeps_run_state = False  # (each batch taken on its own)

    def __call__(self, batch: Batch) -> Batch:
        for i, event in enumerate(batch.events or ()):
            if type(event.get("payload")) is dict or "$record" in event:
                continue
            missing = "payload" not in event
            fields = {"field": "payload", "value": {}, "seqBefore": event.get("seq")}
            if not missing:
                fields["original"] = event["payload"]
            batch.replace(i, with_field(event, "payload", {}))
            what = "missing" if missing else _kind(event["payload"])
            log_repair(self, self.name, "changed", f"payload was {what}, not an object; set to {{}}", batch, i,
                       run_id=event.get("runId"), **fields)
        return batch


def _kind(value: object) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", list: "an array"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
