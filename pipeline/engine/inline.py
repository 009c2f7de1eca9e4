"""Run a chain of synchronous transforms in-process, without an event loop (tests, workers, notebooks)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.segment import Item, Segment
from replay.pipeline.engine.stage import Transform


@dataclass
class InlineResult:
    batches: list[Batch] = field(default_factory=list)
    side: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # port -> records, all stages together

    @property
    def records(self) -> list[dict[str, Any]]:
        return [r for b in self.batches for r in (b.events or ())]

    def to_jsonl(self) -> bytes:
        return b"".join(b.to_jsonl() for b in self.batches)

    def take(self, items: Iterable[Item]) -> None:
        for item in items:
            if type(item) is tuple:
                for port, records in item[1].items():
                    self.side.setdefault(port, []).extend(records)
            else:
                self.batches.append(item)  # type: ignore[arg-type]


def run_inline(stages: list[Transform], batches: Iterable[Batch], *, feed_side: dict[int, tuple[str, ...]] | None = None) -> InlineResult:
    """Push ``batches`` through ``stages`` in order, then flush each stage: what a fused segment of a
    running graph does (the same ``Segment``).

    ``feed_side`` maps a stage index to side ports whose records (from earlier stages) are handed to
    that stage as tagged side batches before each main batch, as a graph edge ``"*.<port>"`` would.
    """
    result = InlineResult()
    for k, stage in enumerate(stages):  # (each is told the stages after it, as a graph's check tells them: up to the
        after = stages[k + 1:]          # first that logs joins, which takes them off the batches)
        logging = next((j for j, later in enumerate(after) if later.logs_joins), len(after))
        stage.streams_into(list(after[:logging + 1]))
    segment = Segment(stages, feed_side)
    for batch in batches:
        result.take(segment.push(batch))
    result.take(segment.finish())
    return result
