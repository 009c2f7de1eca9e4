"""RedactRecords: local redaction of incidents (fresh secret each, pointer removal, audit inside) and of any other record."""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError, diagnostic
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Transform
from replay.pipeline.model.incident import pointers, records
from replay.pipeline.model.incident.audit import verdicts_changed
from replay.pipeline.model.incident.redact_pointers import deletion_key
from replay.pipeline.model.incident.redactor import Redactor
from replay.pipeline.model.incident.rules import judged_otherwise

PROTOCOL_FIELDS = ["$record", "seq", "timestamp", "type", "runId", "step", "turn", "parentId", "synthetic"]


@register("redact")
class RedactRecords(Transform):
    summary = ("Redact records locally: secrets, personal data, identifiers (keyed-hash aliases) and freeform text. "
               "An incident record gets a fresh secret and its audit; other records share one secret per run and "
               "get one {\"$record\": \"redaction\"} audit at the end.")
    redacts = True  # the one stage that may take load_incident's export (``Graph._check_redacted``)
    ports = ("errors", "notices")  # notices: a rule the redaction made judge otherwise (E_INCIDENT_REDACTION_CHANGED_VERDICT)
    options = {
        "remove": Option(list, [], "JSON Pointers to delete before redacting (`*` matches one level). On incidents they "
                                   "must exist and not remove protocol structure; on other records they apply where they match"),
        "keep_fields": Option(list, PROTOCOL_FIELDS, "top-level fields of non-incident records left as they are"),
        "audit": Option(bool, True, "after non-incident records, send the value-free audit record"),
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._shared: Redactor | None = None  # per run: created with the first plain record, dropped at flush

    def preflight(self, inputs: list[str]) -> None:
        """A `remove` entry that is no JSON Pointer is refused before anything runs (it failed the stage mid-run)."""
        for k, text in enumerate(self.config["remove"]):
            try:
                pointers.parse(text)
            except pointers.PointerSyntaxError as exc:
                raise ReplayError("E_CONFIG_OPTION_INVALID", f"stage {self.id!r}: remove[{k}] is not a JSON Pointer: {exc}",
                                  path=f"stages.{self.id}.remove[{k}]", expected="a JSON Pointer, e.g. \"/payload/args\"",
                                  received=text, example='remove = ["/payload/args", "/events/*/args/internal_reference"]') from None

    def __call__(self, batch: Batch) -> Batch:
        for i, record in enumerate(batch.events or ()):
            if not isinstance(record, dict):
                continue
            if records.kind_of(record) == records.INCIDENT:
                batch.replace(i, self._incident(record, batch, i))
            elif records.kind_of(record) not in (records.REDACTION, records.EVALUATION, records.REPLAY):
                batch.replace(i, self._record(record))
        return batch

    def _incident(self, record: dict[str, Any], batch: Batch, i: int) -> dict[str, Any]:
        """The incident redacted, its audit inside; a rule that judges it otherwise than before is warned of (on the
        notices port, and in the audit): a ``remove`` pointer took what the rule reads."""
        redactor = Redactor()  # a fresh secret for every incident: aliases differ between imports
        export = records.body_of(record)
        redacted = redactor.incident(export, self.config["remove"])
        changed = judged_otherwise(export, redacted)
        redacted["redaction"] = redactor.audit(record.get("incident_id"), changed)
        if changed:
            self.emit("notices", {**diagnostic("E_INCIDENT_REDACTION_CHANGED_VERDICT", verdicts_changed(changed),
                                               **batch.position(i), stage=self.id, received=[c[0] for c in changed]),
                                  "action": "reported"})
        return records.as_record(records.INCIDENT, redacted)

    def _record(self, record: dict[str, Any]) -> dict[str, Any]:
        if self._shared is None:
            self._shared = Redactor()
        work = dict(record)
        for text in self.config["remove"]:
            tokens = pointers.parse(text)
            for match in sorted(pointers.expand(work, tokens), key=lambda m: deletion_key(work, m), reverse=True):
                if match and match[0] not in self.config["keep_fields"]:
                    pointers.remove(work, match)
                    self._shared.counts["pointer_removed"] += 1
        keep = set(self.config["keep_fields"])
        with exactjson.deep():  # (the walk recurses twice a level: as deep as parse reads)
            # the fields not kept are redacted as one object is, their names too (an email or a key as a field name)
            redacted = iter(self._shared.value({k: v for k, v in work.items() if k not in keep}).items())
            return dict(item if item[0] in keep else next(redacted) for item in work.items())

    def flush(self) -> Batch | None:
        shared, self._shared = self._shared, None
        if shared is None or not self.config["audit"]:
            return None
        return Batch.of([records.as_record(records.REDACTION, shared.audit())], source=f"<{self.id}>")
