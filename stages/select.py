"""SelectEvents: keep only the events (and run records) that match type and run filters."""

from __future__ import annotations

import fnmatch
from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Transform
from replay.pipeline.model.records import is_run_record


@register("select")
class SelectEvents(Transform):
    keeps_run_state = False  # (each event judged alone)
    summary = "Keep events whose type matches `types` (globs) and not `exclude`, optionally of one run."
    options = {
        "types": Option(list, ["*"], "event type globs to keep, e.g. [\"tool_*\"]"),
        "exclude": Option(list, [], "event type globs to drop"),
        "run_id": Option(str, "", "keep only this runId (empty: every run)"),
        "keep_run_records": Option(bool, True, "pass run records of kept runs through"),
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._cache: dict[Any, bool] = {}

    def _type_kept(self, event_type: Any) -> bool:
        name = event_type if type(event_type) is str else ""  # a missing or non-string type matches as ""
        hit = self._cache.get(name)
        if hit is None:
            hit = any(fnmatch.fnmatchcase(name, g) for g in self.config["types"]) and not any(
                fnmatch.fnmatchcase(name, g) for g in self.config["exclude"]
            )
            if len(self._cache) < 10_000:
                self._cache[name] = hit
        return hit

    def __call__(self, batch: Batch) -> Batch:
        run_id = self.config["run_id"]
        keep = []
        for i, ev in enumerate(batch.events or ()):
            if run_id and ev.get("runId") != run_id:
                continue
            if is_run_record(ev):
                if self.config["keep_run_records"]:
                    keep.append(i)
            elif self._type_kept(ev.get("type")):
                keep.append(i)
        return batch if len(keep) == len(batch) else batch.select(keep)
