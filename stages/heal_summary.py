"""SummarizeRepairs: after each run that heal repaired, adds a heal record counting its repairs by rule."""

from __future__ import annotations

from collections import Counter
from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.model.records import HEAL_RECORD
from replay.pipeline.model.repairs import DROP_TORN_LINE, counts_as_repair
from replay.pipeline.model.runs import Run, RunScoped

_INPUT_END = object()  # the key of an input's cut-off last line among the pending repairs


@register("heal_summary")
class SummarizeRepairs(RunScoped):
    summary = "Take the heal rules' repairs ports and the healed stream; add {\"$record\": \"heal\"} after each repaired run."
    ports = ("errors",)

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.pending: dict[tuple[Any, Any], Counter[str]] = {}

    def __call__(self, batch: Batch) -> Batch | list[Batch] | None:  # type: ignore[override]
        if batch.port is None:
            out = super().__call__(batch)
            if batch.lane is not None:  # a run the screen repaired: its repairs came in before it
                for record in self.end_run(Run(batch.lane["run"], None, batch.source)):
                    batch.append_line(exactjson.dumps(record))
            return out
        for entry in batch.events or ():
            n = counts_as_repair(entry)
            if n:
                # A run is known by its input and its id: two files may well use the same runId. A cut-off last
                # line names no run: it is its input's last run's, however many runs of that input this batch holds.
                key = (entry.get("source"), _INPUT_END if entry.get("rule") == DROP_TORN_LINE else entry.get("runId"))
                counts = self.pending.get(key)
                if counts is None:  # (not setdefault: a Counter made for every entry costs ~1% of a heal with repairs)
                    counts = self.pending[key] = Counter()
                counts[str(entry.get("rule"))] += n
        return None

    def on_events(self, batch: Batch, start: int, end: int) -> None:
        """Events pass through untouched; only run boundaries matter here."""

    def flush(self) -> Batch | None:
        """The last run's heal record, then one for each run whose repairs were never followed by the end of a run of
        its id here: a run all of whose events a rule dropped (an orphaned result after another run's event cut its
        run in two) never reaches this stage, and a later run of its id may pass the screen unparsed. Its repairs
        are logged; they are counted at the end rather than lost."""
        tail = super().flush()
        left = [self._record(None if run_id is _INPUT_END else run_id, counts)
                for (_, run_id), counts in self.pending.items() if counts]
        self.pending = {}
        if not left:
            return tail
        if tail is None:
            return Batch.of(left, self.run_source or "<stdin>")
        for record in left:
            tail.insert(len(tail), record)
        return tail

    def end_run(self, run: Run) -> list[dict[str, Any]]:
        counts = self.pending.pop((run.source, run.run_id), Counter())
        counts.update(self.pending.pop((run.source, None), Counter()))  # repairs of a run no rule had named yet
        if not self.run_follows:  # another run of this input begins here: its cut-off last line is a later run's
            counts.update(self.pending.pop((run.source, _INPUT_END), Counter()))
        if not counts:
            return []
        return [self._record(run.run_id, counts)]

    @staticmethod
    def _record(run_id: Any, counts: Counter[str]) -> dict[str, Any]:
        return {"$record": HEAL_RECORD, "runId": run_id, "repairs": sum(counts.values()), "byRule": dict(sorted(counts.items()))}
