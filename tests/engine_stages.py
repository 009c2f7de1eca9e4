"""Small stages for engine tests: a list source, a collecting sink and a few transforms.

Those that take each batch on its own say so (``keeps_run_state = False``): a test may give them several streams.
They are probes: a test reads what they saw after the run, so each runs as itself (``fresh`` returns
the same object) instead of as the fresh copy a real stage runs as.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.stage import AsyncTransform, Option, Output, Sink, Source, Stage, Transform


class Probe:
    def fresh(self, args: list[str] | None = None) -> Stage:
        return self  # type: ignore[return-value]


class ListSource(Probe, Source):
    """Sends the given records in batches of ``size``; counts what it has sent."""

    name = "list_source"
    options = {"records": Option(list, [], "records"), "size": Option(int, 2, "batch size")}

    def __init__(self, records: list[Any] | None = None, size: int = 2, **options: Any) -> None:
        super().__init__(**options)
        self.records = list(records or [])
        self.size = size
        self.sent = 0

    async def produce(self, out: Output) -> None:
        for k in range(0, len(self.records), self.size):
            await out.send(Batch.of(self.records[k:k + self.size], source=self.id))
            self.sent += 1


class EndlessSource(Probe, Source):
    """Sends one-record batches until cancelled (for backpressure and interruption tests)."""

    name = "endless"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.sent = 0

    async def produce(self, out: Output) -> None:
        while True:
            await out.send(Batch.of([{"n": self.sent}]))
            self.sent += 1


class Collect(Probe, Sink):
    """Keeps every record it receives, in order, and the batches' ports."""

    name = "collect"
    keeps_run_state = False  # (each batch on its own: it may take several streams)

    def __init__(self, gate: anyio.Event | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.records: list[Any] = []
        self.ports: list[str | None] = []
        self.gate = gate

    async def consume(self, batches: AsyncIterator[Batch]) -> None:
        if self.gate is not None:
            await self.gate.wait()
        async for batch in batches:
            self.records.extend(batch.events or [])
            self.ports.append(batch.port)


class AddField(Probe, Transform):
    """Sets ``field`` to ``value`` on every record (a changed copy, as the protocol asks)."""

    name = "add_field"
    keeps_run_state = False  # (each batch on its own: it may take several streams)
    options = {"field": Option(str, "tag", "field"), "value": Option((str, int), "x", "value")}

    def __call__(self, batch: Batch) -> Batch:
        for i, record in enumerate(batch.events or ()):
            batch.replace(i, {**record, self.config["field"]: self.config["value"]})
        return batch


class RejectOdd(Probe, Transform):
    """Drops records whose ``n`` is odd, reporting each on the errors port."""

    name = "reject_odd"
    keeps_run_state = False  # (each batch on its own: it may take several streams)

    def __call__(self, batch: Batch) -> Batch:
        keep = []
        for i, record in enumerate(batch.events or ()):
            if record.get("n", 0) % 2:
                self.error("E_EVENT_INVALID", f"odd n {record['n']}", batch, i, received=record["n"])
            else:
                keep.append(i)
        return batch.select(keep)


class CountAtEnd(Probe, Transform):
    """Passes records through and adds one ``{"count": n}`` record at end of stream."""

    name = "count_at_end"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.count = 0

    def __call__(self, batch: Batch) -> Batch:
        self.count += len(batch)
        return batch

    def flush(self) -> Batch:
        return Batch.of([{"count": self.count}])


class Explode(Probe, Transform):
    """Raises on the record whose ``n`` equals ``at`` (a stage bug)."""

    name = "explode"
    keeps_run_state = False  # (each batch on its own: it may take several streams)
    options = {"at": Option(int, 0, "n to fail on")}

    def __call__(self, batch: Batch) -> Batch:
        for record in batch.events or ():
            if record.get("n") == self.config["at"]:
                raise ValueError("boom")
        return batch


class AuditTrail(Probe, Transform):
    """Emits one record per event on a side port named ``audit``."""

    name = "audit_trail"
    keeps_run_state = False  # (each batch on its own: it may take several streams)
    ports = ("errors", "audit")

    def __call__(self, batch: Batch) -> Batch:
        for record in batch.events or ():
            self.emit("audit", {"saw": record.get("n")})
        return batch


class DoubleAsync(Probe, AsyncTransform):
    """An I/O-style transform: yields to the loop per batch and sends each record twice."""

    name = "double_async"
    keeps_run_state = False  # (each batch on its own: it may take several streams)

    async def process(self, batches: AsyncIterator[Batch], out: Output) -> None:
        async for batch in batches:
            await anyio.lowlevel.checkpoint()
            doubled = [r for r in batch.events or () for _ in (0, 1)]
            await out.send(Batch.of(doubled))


def numbers(n: int) -> list[dict[str, int]]:
    return [{"n": k} for k in range(n)]
