"""A fused segment: consecutive transforms run as one, a batch at a time, with no event loop.

The executor runs each segment in one task (no channel between its stages) and ``inline`` runs a
whole chain with it in plain Python; both get the same order of results. A batch goes through the
stages in turn; a stage may drop it (None, or empty: unless it closes a run) or split it (a list of batches, e.g. at a file
boundary), and each part goes on through the rest. After each stage call, that stage's side records
(errors, repairs, ...) come out *before* the batch moves on, so a consumer of both sees a batch's
diagnostics before the batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.stage import Transform, result_invalid

# What a push produces, in order: a batch that left the last stage, (stage index, side records), or batches the last
# stage gives back lazily (an iterator in a list it returned: held records read back from a spool a piece at a time,
# so that they need not all be in memory at once); each is taken before the next push.
Item = Batch | tuple[int, dict[str, list[dict[str, Any]]]] | Iterator[Batch]


class Segment:
    def __init__(self, stages: list[Transform], feeds: dict[int, tuple[str, ...]] | None = None) -> None:
        self.stages = stages
        self.current = 0  # the stage running now (named when it raises)
        # ``feeds``: stage index -> side ports whose records, from earlier stages, are handed to it as
        # tagged side batches before each main batch (what a ``"*.<port>"`` input does in a graph).
        self.feeds = feeds or {}
        self.pending: dict[str, list[dict[str, Any]]] = {}

    def push(self, batch: Any, out: list[Item], start: int = 0) -> None:
        """Run ``batch`` (a Batch, a list of them, None) through stages ``start``.. and append what comes out to ``out``."""
        stages = self.stages
        parts = batch if type(batch) is list or isinstance(batch, Iterator) else (batch,)
        for part in parts:
            current: Any = part
            if current is None:
                continue
            if type(current) is not Batch:  # an item of a list a stage returned (or flushed)
                if isinstance(current, Iterator):  # batches given back lazily: by the last stage, they stay lazy
                    if start == len(stages):
                        out.append(current)
                    else:
                        self.push(current, out, start)
                    continue
                raise result_invalid(stages[self.current].id, current)
            if not (len(current) or current.closes_run):  # (an empty batch may still close a run)
                continue
            for k in range(start, len(stages)):
                self.current = k
                if self.feeds:
                    self._feed(k, out)
                stage = stages[k]
                current = stage(current)
                if stage._side:
                    self._side(k, out)
                if type(current) is not Batch:
                    if type(current) is list:
                        self.push(current, out, k + 1)
                    elif current is not None:
                        raise result_invalid(stage.id, current)
                    break
                if not (len(current) or current.closes_run):
                    break
            else:
                out.append(current)

    def finish(self, out: list[Item]) -> None:
        """End of input: flush each stage in order, pushing what it releases through the rest."""
        for k, stage in enumerate(self.stages):
            self.current = k
            if self.feeds:
                self._feed(k, out)
            tail = stage.flush()
            if stage._side:
                self._side(k, out)
            self.push(tail, out, k + 1)

    def _side(self, k: int, out: list[Item]) -> None:
        side = self.stages[k].drain()
        out.append((k, side))
        if self.feeds:
            for port, records in side.items():
                self.pending.setdefault(port, []).extend(records)

    def _feed(self, k: int, out: list[Item]) -> None:
        for port in self.feeds.get(k, ()):
            records = self.pending.pop(port, None)
            if records:
                stage = self.stages[k]
                stage(Batch.side(records, port, f"<{port}>"))
                if stage._side:
                    self._side(k, out)
