"""A fused segment: consecutive transforms run as one, a batch at a time, with no event loop.

The executor runs each segment in one task (no channel between its stages) and ``inline`` runs a
whole chain with it in plain Python; both get the same order of results. A batch goes through the
stages in turn; a stage may drop it (None, or empty: unless it closes a run, carries notes or a pause, which goes on
in an empty batch: ``_still_paused``) or split it (a list of batches, e.g. at a file
boundary), and each part goes on through the rest. After each stage call, that stage's side records
(errors, repairs, ...) come out *before* the batch moves on, so a consumer of both sees a batch's
diagnostics before the batch; of batches a stage gives back lazily, what it says while giving one comes out before
that one moves on (``cut_runs``: each run's joins just before the run).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.stage import Transform, result_invalid

# What a segment gives out, in order: a batch that left the last stage, or (stage index, side records) right after a
# call of that stage.
Item = Batch | tuple[int, dict[str, list[dict[str, Any]]]]


_END = object()  # (what ``next`` gives at the end of a segment's parts)


def _still_paused(result: Any, stage: Transform, source: str) -> Any:
    """What a stage gave back for a batch marked ``pause`` (the input may wait after it: a live writer is silent)
    ends in a batch marked so too, whatever batches the stage made: a stage after it that holds lines looking ahead
    decides with what has come (``RunScoped.at_pause``). Where none of them can carry it (the stage gave nothing, held
    or dropped what it was given, or what it gives back lazily ends it: read back from a spool), an empty batch marked
    so goes on after them (``Batch.pause_mark``: raw lines where the stage gives them)."""
    last = result[-1] if type(result) is list and result else result
    if type(last) is Batch:
        last.pause = True
        return result
    mark = Batch.pause_mark(source, stage.emits_raw)
    if result is None or result == []:
        return mark
    return [*result, mark] if type(result) is list else result  # (anything else: the caller refuses it)


class Segment:
    def __init__(self, stages: list[Transform], feeds: dict[int, tuple[str, ...]] | None = None) -> None:
        self.stages = stages
        self.current = 0  # the stage running now (named when it raises)
        # ``feeds``: stage index -> side ports whose records, from earlier stages, are handed to it as
        # tagged side batches before each main batch (what a ``"*.<port>"`` input does in a graph).
        self.feeds = feeds or {}
        self.pending: dict[str, list[dict[str, Any]]] = {}

    def push(self, batch: Any, start: int = 0) -> Iterator[Item]:
        """Run ``batch`` (a Batch, a list of them, None) through stages ``start``..: what comes out, in order, as it
        is taken. A stage is called only when what came before is taken, so batches a stage gives back lazily (an
        iterator in the list it returns: held records read back from a spool a piece at a time) go on through the
        rest of the segment one at a time, as they are taken: never all in memory at once. Take all of it before the
        next push (or ``finish``)."""
        stages = self.stages
        lazy = isinstance(batch, Iterator)  # (batches a stage gives back lazily: a failure taking one is that stage's)
        parts = iter(batch if type(batch) is list or lazy else (batch,))
        while True:
            if lazy:
                self.current = max(start - 1, 0)
            part = next(parts, _END)
            if lazy and start and stages[start - 1]._side:  # (what the stage giving them said while it gave this one:
                yield self._side(start - 1)                  # out before it goes on, as after a call)
            if part is _END:
                break
            current: Any = part
            if current is None:
                continue
            if type(current) is not Batch:  # an item of a list a stage returned (or flushed)
                if isinstance(current, Iterator):  # batches given back lazily: taken one at a time
                    yield from self.push(current, start)
                    continue
                raise result_invalid(stages[max(start - 1, 0)].id, current)
            if not current.goes_on():
                continue
            for k in range(start, len(stages)):
                self.current = k
                if self.feeds:
                    yield from self._feed(k)
                stage = stages[k]
                paused, source = current.pause, current.source
                current = stage(current)
                if paused:
                    current = _still_paused(current, stage, source)
                if stage._side:
                    yield self._side(k)
                if type(current) is not Batch:
                    if type(current) is list:
                        yield from self.push(current, k + 1)
                    elif current is not None:
                        raise result_invalid(stage.id, current)
                    break
                if not current.goes_on():
                    break
            else:
                yield current

    def finish(self) -> Iterator[Item]:
        """End of input: flush each stage in order, pushing what it releases through the rest (as ``push``)."""
        for k, stage in enumerate(self.stages):
            self.current = k
            if self.feeds:
                yield from self._feed(k)
            tail = stage.flush()
            if stage._side:
                yield self._side(k)
            yield from self.push(tail, k + 1)

    def _side(self, k: int) -> Item:
        side = self.stages[k].drain()
        if self.feeds:
            for port, records in side.items():
                self.pending.setdefault(port, []).extend(records)
        return (k, side)

    def _feed(self, k: int) -> Iterator[Item]:
        for port in self.feeds.get(k, ()):
            records = self.pending.pop(port, None)
            if records:
                stage = self.stages[k]
                stage(Batch.side(records, port, f"<{port}>"))
                if stage._side:
                    yield self._side(k)
