"""RenumberSeq: numbers each run's events 1..n, logging each stretch of changed numbers once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.model.runs import Run, RunScoped
from replay.pipeline.model.validation import named

NO_SEQ: Any = object()  # in the seq numbers ``stretches`` takes: an event without a ``seq`` key


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
        seqs = [events[i].get("seq", NO_SEQ) for i in range(start, end)]
        if seqs == list(range(first, first + end - start)) and all(s.__class__ is int for s in seqs):
            self._close(run)  # numbered right already: the usual case
            return
        lines, pointers = batch.lines, batch.pointers

        def invented(k: int) -> bool:  # by an earlier rule just now: no place in the input
            i = start + k
            return events[i].get("synthetic") is True and lines[i] is None and pointers[i] is None

        wrong, ended, run.state["open"] = stretches(seqs, first, run.state["open"], invented,
                                                    lambda k: batch.position(start + k))
        for k in wrong:
            batch.replace(start + k, {**events[start + k], "seq": first + k})
        for stretch in ended:
            self.log_stretch(stretch)

    def end_run(self, run: Run) -> list[dict[str, Any]]:
        self._close(run)
        return []

    def _close(self, run: Run) -> None:
        stretch = run.state.get("open")
        if stretch is not None:
            self.log_stretch(stretch)
        run.state["open"] = None

    def log_stretch(self, stretch: Stretch) -> None:
        """One repair for ``stretch`` (it ends here)."""
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


def stretches(seqs: Sequence[Any], first: int, stretch: Stretch | None, invented: Callable[[int], bool],
              where: Callable[[int], dict[str, Any]]) -> tuple[list[int], list[Stretch], Stretch | None]:
    """How a run's events numbered ``seqs`` (``NO_SEQ``: none), the first of them its ``first``-th, are renumbered: the
    ``k`` of each event numbered wrong (it gets ``first + k``), the stretches of them that end here, in order (each one
    repair), and the stretch still open after the last (it goes on into the run's next events); ``stretch``: the one
    open before the first.

    Only the events numbered wrong are looked at, one by one: consecutive ones shifted alike make one stretch. One
    numbered right in between ends the stretch before it; an event an earlier rule invented just now (``invented(k)``:
    no place in the input) is numbered and ends it too, its placeholder number no repair. A stretch begins with the input
    position of its first event (``where(k)``)."""
    wrong = [k for k, s in enumerate(seqs) if s.__class__ is not int or s != first + k]
    ended: list[Stretch] = []
    if not wrong:
        if seqs and stretch is not None:
            ended.append(stretch)
        return wrong, ended, None if seqs else stretch
    previous = -1
    for k in wrong:
        if k != previous + 1 and stretch is not None:
            ended.append(stretch)
            stretch = None
        previous = k
        if invented(k):
            if stretch is not None:
                ended.append(stretch)
            stretch = None
            continue
        seq, want = seqs[k], first + k
        delta = want - seq if type(seq) is int else None
        if stretch is not None and delta is not None and stretch.delta == delta and stretch.next == want:
            stretch.count += 1
            stretch.next = want + 1
            continue
        if stretch is not None:
            ended.append(stretch)
        stretch = Stretch(None if seq is NO_SEQ else seq, want, delta, where(k), type(seq) is not int and seq is not NO_SEQ)
    if previous != len(seqs) - 1 and stretch is not None:
        ended.append(stretch)  # (numbered right after it: it ends here)
        stretch = None
    return wrong, ended, stretch


class Stretch:
    """Events renumbered alike (one repair): the first one's seq before and after and its place in the input
    (``Batch.position``), and how many; ``delta`` (after - before; None: no integer seq) and ``next`` (the number
    the next one must get) decide whether the next event renumbered goes on with it. ``original``: the first one's
    seq is there, and no integer."""

    __slots__ = ("after", "before", "count", "delta", "next", "original", "where")

    def __init__(self, before: Any, after: int, delta: int | None, where: dict[str, Any], original: bool) -> None:
        self.before, self.after, self.count, self.delta, self.next = before, after, 1, delta, after + 1
        self.where, self.original = where, original
