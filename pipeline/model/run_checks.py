"""The run checks validate warns with (check_runs, check_order, check_run_ids) judge an artifact read whole as its records.

``replay validate`` reads a ``.json`` artifact whole (one ``document`` record) and checks it against the artifact
schema; a journal it reads line by line, and the run checks warn of what heal would repair or leaves as it is. An
artifact holds the same run (its run record's facts and its events), so the checks judge it as those records
(``artifacts.document_items``, each at its JSON path, ``$.events[3]``), and the artifact goes on unchanged.
"""

from __future__ import annotations

from replay.pipeline.engine.batch import Batch
from replay.pipeline.model.artifacts import document_items
from replay.pipeline.model.records import DOCUMENT_RECORD, record_kind
from replay.pipeline.model.runs import RunScoped


class RunCheck(RunScoped):
    """A run check (notices only, nothing changed) that also judges an artifact read whole, as its records."""

    def __call__(self, batch: Batch) -> Batch | list[Batch]:
        events = batch.events
        if events is not None and len(events) == 1 and record_kind(events[0]) == DOCUMENT_RECORD:
            document = events[0].get("document")
            inner = document.get("events") if isinstance(document, dict) else None
            # (an artifact the schema refuses, its events no list of objects: validate's errors say what is wrong)
            if isinstance(inner, list) and all(type(event) is dict for event in inner):
                self.close_run()  # (the run before it is another input's)
                for part in document_items(document, batch.source):
                    super().__call__(part)  # (what a check passes on is what it was given: its notices are the point)
                self.close_run()
            return batch
        return super().__call__(batch)
