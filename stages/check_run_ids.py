"""ReportReturningRuns: notes a run whose runId comes back after another run of the same input (runs written interleaved); changes nothing.

Runs are cut where the runId changes or an input begins, so the events of two runs written in turn into
one file are read as more runs than there were: heal then completes each piece on its own, and a report
counts the pieces. This stage says so, at the first line of each piece that comes back; the fix is the
input's (split it by runId first). The ids of the input's last ``RECENT_RUNS`` runs are remembered (those
the screen passes unread by the ids it sends with them), so memory stays bounded. Each input is judged
alone, as a worker process judges it (``--workers``): a run split across two files (a rotated journal) is
two runs, as it is everywhere; join such files in order (``cat a.jsonl b.jsonl | replay heal``).
"""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.model.run_checks import RunCheck
from replay.pipeline.model.runs import RECENT_RUNS, Input, RecentIds, Run


@register("check_run_ids")
class ReportReturningRuns(RunCheck):
    summary = ("Report (not join) a run whose runId comes back after another run of its input (runs written "
               f"interleaved; the input's last {RECENT_RUNS:,} runs' ids), on the notices port.")
    ports = ("errors", "notices")
    notice_code = "E_RUN_ID_REUSED"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.recent = RecentIds()
        self.input: Input | None = None  # the input the recent ids are of (the same file read twice: two inputs)

    def __call__(self, batch: Batch) -> Batch | list[Batch]:
        if batch.clean is not None:  # whole runs the screen passed on unread: their ids, as it sends them
            self._input(self.inputs.at(batch.source))
            self.recent.add_all(list(batch.clean[2]))
        return super().__call__(batch)

    def begin_run(self, run: Run) -> None:
        self._input(run.input)

    def on_events(self, batch: Batch, start: int, end: int) -> None:
        run = self.run
        assert run is not None
        rid = run.run_id
        if not run.events and rid is not None and self.recent.comes_back(rid):  # (the run's first events)
            self.notice(f"runId {rid!r} comes back after another run of this input: its events here are read as a "
                        "run of their own (runs are cut where the runId changes), so runs written interleaved are "
                        "healed and reported as pieces. Split the input by runId first", batch, start,
                        field="runId", value=rid)

    def end_run(self, run: Run) -> list[dict[str, Any]]:
        if run.run_id is not None:
            self.recent.add(run.run_id)
        return []

    def _input(self, which: Input | None) -> None:
        if which != self.input:  # another input: its runs are its own
            self.input, self.recent = which, RecentIds()
