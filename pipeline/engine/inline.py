"""Run a chain of synchronous transforms in-process, without an event loop (tests, workers, notebooks)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from replay.pipeline.engine.batch import Batch
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


def run_inline(stages: list[Transform], batches: Iterable[Batch], *, feed_side: dict[int, tuple[str, ...]] | None = None) -> InlineResult:
    """Push ``batches`` through ``stages`` in order, then flush each stage, like a fused segment does.

    ``feed_side`` maps a stage index to side ports whose records (from earlier stages) are handed to
    that stage as tagged side batches before each main batch, as a graph edge ``"*.<port>"`` would.
    """
    result = InlineResult()
    feeds = feed_side or {}
    pending: dict[str, list[dict[str, Any]]] = {}

    def collect(stage: Transform) -> None:
        for port, records in stage.drain().items():
            result.side.setdefault(port, []).extend(records)
            pending.setdefault(port, []).extend(records)

    def push(start: int, batch: Batch | list[Batch] | None) -> None:
        parts = batch if isinstance(batch, list) else [batch]
        for part in parts:
            if part is None or not len(part):
                continue
            current: Batch | list[Batch] | None = part
            for k in range(start, len(stages)):
                for port in feeds.get(k, ()):
                    if pending.get(port):
                        stages[k](Batch.side(pending.pop(port), port, f"<{port}>"))
                current = stages[k](current)  # type: ignore[arg-type]
                collect(stages[k])
                if isinstance(current, list):
                    push(k + 1, current)
                    break
                if current is None or not len(current):
                    break
            else:
                result.batches.append(current)  # type: ignore[arg-type]

    for batch in batches:
        push(0, batch)
    for k, stage in enumerate(stages):
        for port in feeds.get(k, ()):
            if pending.get(port):
                stage(Batch.side(pending.pop(port), port, f"<{port}>"))
        tail = stage.flush()
        collect(stage)
        push(k + 1, tail)
    return result
