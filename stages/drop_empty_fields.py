"""DropEmptyFields: leaves out an optional event field that says nothing (``step``/``turn`` null, ``synthetic`` false or null).

The event schema lets ``step`` and ``turn`` be an integer or a string and ``synthetic`` only ``true``: a writer that
serializes "no step" as ``null`` or "not invented" as ``false`` (Python's ``None``/``False``, say) wrote an event
validation refuses and no other rule repairs. What such a field says is what its absence says, so it is left out
(logged with its original value); a field of any other wrong type (an object, a number for ``synthetic``) is no
such statement and is left for validation to report.

An artifact's top-level field that is null (``response``, ``error``, ``usage``, a dialect's ``model``, ``status``, ...)
is left out of the run record reading it makes (``events.run_record``): as its run record passes, each is logged here,
with its path in the artifact (``$.response``). Those that ``heal --in`` writes anew into the healed copy
(``artifacts.FILLED_FIELDS``, ``REPLACED_FIELDS``: a null status is replaced) are logged there instead, once.
"""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Stage, Transform
from replay.pipeline.model.artifacts import FILL_STAGE, FILLED_FIELDS, REPLACED_FIELDS, lacking
from replay.pipeline.model.records import RECORD_KEY, RUN_RECORD
from replay.pipeline.model.repairs import log_repair
from replay.pipeline.model.validation import SAYS_NOTHING, says_nothing


@register("drop_empty_fields")
class DropEmptyFields(Transform):
    summary = "Leave out an optional field that says nothing: step or turn null, synthetic false or null (logged)."
    ports = ("errors", "repairs")
    screened_lane = "passes"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.filled_after = False  # a stage after it writes healed artifacts (and logs the fields it writes anew)

    def reaches(self, after: list[Stage]) -> None:
        self.filled_after = any(stage.name == FILL_STAGE for stage in after)

    def built_again(self, given: dict[str, Any]) -> Stage:
        copy = super().built_again(given)
        assert isinstance(copy, DropEmptyFields)
        copy.filled_after = self.filled_after
        return copy

    def __call__(self, batch: Batch) -> Batch:
        for i, event in enumerate(batch.events or ()):
            if event.get(RECORD_KEY) == RUN_RECORD:
                self._log_nulls(batch, i, event)
                continue
            # (the usual event has none of the fields, or a value that says something: one lookup each)
            if RECORD_KEY in event or (event.get("step", 0) is not None and event.get("turn", 0) is not None
                                      and event.get("synthetic", True) not in (None, False)):
                continue
            empty = [key for key in SAYS_NOTHING if key in event and says_nothing(key, event[key])]
            if not empty:
                continue
            batch.replace(i, {key: value for key, value in event.items() if key not in empty})
            for key in empty:
                log_repair(self, self.name, "changed", f"{key} was {exactjson.dumps(event[key]).decode()}; left out ({SAYS_NOTHING[key][1]})",
                           batch, i, run_id=event.get("runId"), field=key, original=event[key], seqBefore=event.get("seq"))
        return batch


    def _log_nulls(self, batch: Batch, i: int, record: dict[str, Any]) -> None:
        """Log the null fields of the artifact whose run record this is, that the record left out (once)."""
        noted = lacking(self.shared, batch.source)
        if noted is None or not noted.nulls:
            return
        nulls, noted.nulls = noted.nulls, ()
        written = (*FILLED_FIELDS, *REPLACED_FIELDS) if self.filled_after else ()
        for key in nulls:
            if key not in written:
                log_repair(self, self.name, "changed", f"the artifact's `{key}` was null; left out (a run with no "
                           f"`{key}` has none: null says what its absence says)", run_id=record.get("runId"),
                           source=batch.source, path=f"$.{key}", field=key, original=None)
