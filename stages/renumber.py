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

    counted: int | None = None  # not None: its repairs are only counted here, not logged (the screen's repair lane)

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

        Only the events numbered wrong are looked at, one by one (the screen hands in only those): each gets its
        number; consecutive ones shifted alike make one stretch, one repair. One numbered right in between ends
        the stretch before it; an event an earlier rule invented just now (``synthetic``, no place in the input)
        is numbered and ends it too, its placeholder number no repair. A stretch open at the end goes on into
        the run's next events (``run.state["open"]``)."""
        run = self.run
        events = batch.events
        assert run is not None and events is not None
        wrong = [k for k, s in enumerate(seqs) if s.__class__ is not int or s != first + k]
        if not wrong:
            if seqs:
                self._close(run)
            return
        lines, pointers, replace = batch.lines, batch.pointers, batch.replace
        stretch: _Stretch | None = run.state["open"]
        previous = -1
        for k in wrong:
            i, want = start + k, first + k
            if k != previous + 1:
                self._log(stretch)
                stretch = None
            previous = k
            event = events[i]
            seq = event.get("seq")
            if seq == want and type(seq) is int:  # (numbered right after all: it ends the stretch before it)
                self._log(stretch)
                stretch = None
                continue
            replace(i, {**event, "seq": want})
            if event.get("synthetic") is True and lines[i] is None and pointers[i] is None:
                self._log(stretch)  # invented by an earlier rule just now: its placeholder seq is not a repair
                stretch = None
                continue
            delta = want - seq if type(seq) is int else None
            if stretch is not None and delta is not None and stretch.delta == delta and stretch.next == want:
                stretch.count += 1
                stretch.next = want + 1
                continue
            self._log(stretch)
            where = batch.position(i) if self.counted is None else {}
            stretch = _Stretch(seq, want, delta, where, type(seq) is not int and "seq" in event)
        if previous != len(seqs) - 1:
            self._log(stretch)  # (numbered right after it: it ends here)
            stretch = None
        run.state["open"] = stretch

    def end_run(self, run: Run) -> list[dict[str, Any]]:
        self._close(run)
        return []

    def _close(self, run: Run) -> None:
        self._log(run.state.get("open"))
        run.state["open"] = None

    def _log(self, stretch: _Stretch | None) -> None:
        """One repair for ``stretch`` (it ends here), when there is one."""
        if stretch is None:
            return
        if self.counted is not None:
            self.counted += 1
            return
        before, after, count = stretch.before, stretch.after, stretch.count
        if stretch.delta is None and not stretch.original:
            message = f"seq missing; set to {after}"
        elif stretch.delta is None:
            message = f"seq {named(before)} is not an integer; set to {after}"
        elif count == 1:
            message = f"seq {before} renumbered to {after}"
        else:
            message = f"seq {before}..{before + count - 1} renumbered to {after}..{after + count - 1}"
        where = {k: v for k, v in stretch.where.items() if v is not None}
        if stretch.original:
            self.repair("renumbered", message, field="seq", **where, seqBefore=before, seqAfter=after, count=count,
                        original=before)
        else:
            self.repair("renumbered", message, field="seq", **where, seqBefore=before, seqAfter=after, count=count)


class _Stretch:
    """Events renumbered alike (one repair): the first one's seq before and after and its place in the input
    (``Batch.position``), and how many; ``delta`` (after - before; None: no integer seq) and ``next`` (the number
    the next one must get) decide whether the next event renumbered goes on with it. ``original``: the first one's
    seq is there, and no integer."""

    __slots__ = ("after", "before", "count", "delta", "next", "original", "where")

    def __init__(self, before: Any, after: int, delta: int | None, where: dict[str, Any], original: bool) -> None:
        self.before, self.after, self.count, self.delta, self.next = before, after, 1, delta, after + 1
        self.where, self.original = where, original
