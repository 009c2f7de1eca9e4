"""PassSummaries: run summaries read back from a file (what `summarize` wrote), passed on as summaries.

``report`` takes only the main output of stages that give summaries (checked with the config); this is the
stage that says a stream read from a file is made of them: a report over summaries written earlier (one
`summarize` per shard, one report of them all, as `replay report --workers` does). A line that is no such
record is reported where it is and left out.
"""

from __future__ import annotations

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Transform
from replay.pipeline.model.records import DIAGNOSTICS_RECORD, HEAL_RECORD, RECORD_KEY, SUMMARY_RECORD

SUMMARIZED = (SUMMARY_RECORD, DIAGNOSTICS_RECORD, HEAL_RECORD)  # what `summarize` gives


@register("summaries")
class PassSummaries(Transform):
    summary = ("Pass on the records `summarize` wrote (run summaries, read back from a file) as summaries a `report` "
               "takes; any other line is reported and left out.")
    emits_summaries = True
    keeps_run_state = False  # (each batch taken on its own)

    def __call__(self, batch: Batch) -> Batch | None:
        if batch.port is not None:
            return None
        keep = []
        for i, record in enumerate(batch.events or ()):
            if type(record) is dict and record.get(RECORD_KEY) in SUMMARIZED:
                keep.append(i)
            else:
                self.error("E_CONFIG_INPUTS_INVALID", "not a record `summarize` writes (a run summary, diagnostics "
                           "or a heal record of no run): left out of the report", batch, i,
                           howToFix="Give this stage the lines a `summarize` stage wrote; events go to `summarize`.")
        return batch if len(keep) == len(batch) else batch.select(keep)
