"""CutRuns: cuts a batch where a run begins, so the heal rules after it take one run at a time.

The screen sends each run the slow way as a batch of its own (``closes_run``); a stream it leaves alone (another
agent's log, read's mark of several inputs, a JSON document, a first line that is no event of replay's own) comes as
read cut it, several runs to a batch. Fused, each rule then took the whole batch before the next rule saw any of it:
what a run's end adds (``ensure_terminal``'s event, say: a repair at no line of the input) was logged for every run of
the batch before ``heal_summary`` saw the first end, and it counted the repairs of a run id that comes back within the
batch with that id's first run. Cut here, each part but the last closes its run (``Batch.rebuild_parts``): the rules
log, and ``heal_summary`` counts, run by run, however the input was cut into batches.

It logs the joins of ``join_split_records`` too (``logs_joins``: ``parse`` hands them on with their lines when it comes
before this stage), each just before the part its line is in goes on (the parts given lazily): first among the repairs
of its run, after those of the runs before it, as where the screen holds a run to its end.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from replay.pipeline.engine.batch import Batch, first_line
from replay.pipeline.engine.registry import register
from replay.pipeline.model.runs import RunScoped, marks_input


@register("cut_runs")
class CutRuns(RunScoped):
    summary = "Cut batches where a run begins (each part but the last closes its run): the stages after take a run at a time."
    ports: ClassVar[tuple[str, ...]] = ("errors", "repairs")  # (repairs: the joins, ``_logged``)
    logs_joins = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._cuts: list[int] = []  # the columns of the batch in hand where a run begins

    def __call__(self, batch: Batch) -> Batch | list[Batch] | list[Iterator[Batch]]:  # type: ignore[override]
        self._cuts = []
        before = self.run if self.run is not None and (self.run.events or self.run.facts is not None) else None
        out = super().__call__(batch)  # (runs are cut as every per-run stage cuts them; nothing is added or dropped)
        cuts, self._cuts = self._cuts, []
        inner = [(i, 0) for i in cuts if i > 0]  # (a clean batch, whole runs, is never cut: nothing here begins in it)
        # (each part has the joins of its lines: ``rebuild_parts`` carries them)
        parts = batch.rebuild_parts({}, set(), [], inner) if inner and batch.clean is None else [batch]
        if before is not None and before.source == batch.source and (batch.clean is not None or (cuts and cuts[0] == 0)):
            # the run in progress ends where this batch begins: an empty batch closes it first, so each stage after ends
            # it (and logs what its end adds) before it takes any of this batch
            parts.insert(0, _closing(before.source, batch))
        if out is not batch:
            assert isinstance(out, list) and out[-1] is batch  # (the end of the run before: nothing of this stage's)
        if any(part.rejoined for part in parts):
            return [self._logged(parts)]
        return parts if len(parts) > 1 else parts[0]

    def _logged(self, parts: list[Batch]) -> Iterator[Batch]:
        """``parts``, given one at a time, each after its joins are logged (taken off it: none goes on past this stage):
        they come out just before it goes on."""
        for part in parts:
            joins, part.rejoined = part.rejoined, None
            for _, entry in sorted(joins.items()) if joins else ():
                self.emit("repairs", entry)
            yield part

    def _new_run(self, batch: Batch, i: int, record: dict[str, Any], rid: Any, source: str) -> int:
        # (where another run of the input follows: an input ends at read's mark or another source, as the stages after
        # know, and its last run counts its cut-off last line there)
        if self.run is None or (self.run.source == source and not marks_input(record, source)):
            self._cuts.append(i)
        return super()._new_run(batch, i, record, rid, source)


def _closing(source: str, batch: Batch) -> Batch:
    """An empty batch of ``source`` that closes the run in progress, which ends before the first line of ``batch``."""
    closing = Batch(source, [], [], [], [], [])
    closing.closes_run = True
    if len(batch):
        closing.ends_before = batch.at("lines", 0) if batch.clean is not None else first_line(batch.lines)
    return closing

