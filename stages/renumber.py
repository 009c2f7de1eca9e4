"""RenumberSeq: numbers each run's events 1..n, logging each stretch of changed numbers once."""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.model.runs import Run, RunScoped
from replay.pipeline.model.validation import named


@register("renumber")
class RenumberSeq(RunScoped):
    summary = "Renumber seq strictly 1..n within each run; consecutive events shifted alike are one repair (one log line, `count` events)."

    def begin_run(self, run: Run) -> None:
        run.state["open"] = None  # the stretch being logged: events whose seq moved by the same amount

    def on_events(self, batch: Batch, start: int, end: int) -> None:
        run = self.run
        events = batch.events
        assert run is not None and events is not None
        first = run.events + 1
        seqs = [events[i].get("seq") for i in range(start, end)]
        if seqs == list(range(first, first + end - start)) and all(s.__class__ is int for s in seqs):
            self._close(run)  # numbered right already: the usual case
            return
        self.renumber(batch, start, seqs, first)

    def renumber(self, batch: Batch, start: int, seqs: list[Any], first: int) -> None:
        """Events ``start``.. of ``batch`` (their ``seqs``), the first of them the run's ``first``-th event.

        Only the events numbered wrong are looked at one by one (the screen hands in only those); one
        numbered right in between closes the stretch before it, as it would have on its own turn."""
        run = self.run
        events = batch.events
        assert run is not None and events is not None
        wrong = [k for k, s in enumerate(seqs) if s.__class__ is not int or s != first + k]
        previous = -1
        for k in wrong:
            if k != previous + 1:
                self._close(run)
            run.events = first - 1 + k
            self.on_event(batch, start + k, events[start + k])
            previous = k
        if previous != len(seqs) - 1:
            self._close(run)

    def on_event(self, batch: Batch, i: int, event: dict[str, Any]) -> None:
        run = self.run
        assert run is not None
        want = run.events + 1
        seq = event.get("seq")
        if seq == want and type(seq) is int:
            self._close(run)
            return
        batch.replace(i, {**event, "seq": want})
        if event.get("synthetic") is True and batch.lines[i] is None and batch.pointers[i] is None:
            self._close(run)  # invented by an earlier rule just now: its placeholder seq is not a repair
            return
        delta = want - seq if type(seq) is int else None
        stretch = run.state["open"]
        if stretch is not None and delta is not None and stretch["delta"] == delta and stretch["next"] == want:
            stretch["count"] += 1
            stretch["next"] = want + 1
            return
        self._close(run)
        entry = {"seqBefore": seq, "seqAfter": want, "count": 1, "delta": delta, "next": want + 1}
        entry.update((k, v) for k, v in batch.position(i).items() if v is not None)
        if type(seq) is not int and "seq" in event:
            entry["original"] = seq
        run.state["open"] = entry

    def end_run(self, run: Run) -> list[dict[str, Any]]:
        self._close(run)
        return []

    def _close(self, run: Run) -> None:
        stretch = run.state.get("open")
        if stretch is None:
            return
        run.state["open"] = None
        stretch.pop("next")
        delta = stretch.pop("delta")
        count = stretch["count"]
        before, after = stretch["seqBefore"], stretch["seqAfter"]
        if delta is None and "original" not in stretch:
            message = f"seq missing; set to {after}"
        elif delta is None:
            message = f"seq {named(before)} is not an integer; set to {after}"
        elif count == 1:
            message = f"seq {before} renumbered to {after}"
        else:
            message = f"seq {before}..{before + count - 1} renumbered to {after}..{after + count - 1}"
        position = {k: stretch.pop(k) for k in ("source", "line", "offset", "path") if k in stretch}
        self.repair("renumbered", message, field="seq", **position, **stretch)
