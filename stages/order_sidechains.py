"""OrderSidechains: moves a sidechain record written before its parent to just after the parent, logging the move.

A sidechain (Claude Code's sub-agent conversation, ``payload.sidechain: true``) hangs off the main
conversation by ``parentId``. When a sidechain event comes before the event its ``parentId`` names
(concurrent writers, a resumed session), the events from it on are held until that parent arrives;
then the sidechain record (all its parts, and its own children with it) is put right after its
parent's record, and the rest keeps its order. A parent that never comes (it was in another file)
moves nothing: at the run's end, or after ``MAX_HELD`` events, everything held goes out in its
original order (and past ``MAX_HELD_BYTES`` of events and records held). Only sidechain events are moved; the main
chain is never reordered.
"""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.batch import Batch, Column, column_bytes, column_position
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Transform
from replay.pipeline.model.records import RECORD_KEY, has_records
from replay.pipeline.model.repairs import log_repair
from replay.pipeline.model.runs import Run, starts_run

MAX_HELD = 10_000  # events and records held for a parent, at most
MAX_HELD_BYTES = 8 << 20  # and the most they may come to


def _links(event: dict[str, Any]) -> tuple[str | None, str | None, bool]:
    eid, parent, payload = event.get("id"), event.get("parentId"), event.get("payload")
    side = isinstance(payload, dict) and payload.get("sidechain") is True
    return (eid if isinstance(eid, str) else None, parent if isinstance(parent, str) else None, side)


def _sidechains(events: list[dict[str, Any]]) -> bool:
    """Is any of ``events`` a sidechain event (``payload.sidechain: true``)?"""
    return bool([1 for e in events if type(p := e.get("payload")) is dict and p.get("sidechain") is True])


def reorder(links: list[tuple[str | None, str | None, bool]]) -> tuple[list[int], list[tuple[int, int]]]:
    """The order that puts each sidechain record after its parent's record, given (id, parentId,
    sidechain) per event in stream order; and the moves made as (event index, parent's last index)."""
    order = list(range(len(links)))
    moves: list[tuple[int, int]] = []
    for _ in range(len(links)):
        first: dict[str, int] = {}
        last: dict[str, int] = {}
        for p, k in enumerate(order):
            eid = links[k][0]
            if eid is not None:
                first.setdefault(eid, p)
                last[eid] = p
        for p, k in enumerate(order):
            eid, parent, side = links[k]
            if not side or parent is None or parent == eid or first.get(parent, -1) <= p:
                continue
            span = p + 1  # the record's other parts move with it, and so do the sidechain records right after it that
            family = {eid} if eid is not None else set()  # descend from it (its own children, theirs, ...)
            while span < len(order):
                nid, nparent, nside = links[order[span]]
                if nid is not None and nid in family:  # a part of a record of the family
                    span += 1
                elif nside and nid is not None and nid != parent and nparent in family:
                    family.add(nid)
                    span += 1
                else:
                    break
            block = order[p:span]
            rest = order[:p] + order[span:]
            at = max(q for q, j in enumerate(rest) if links[j][0] == parent) + 1
            order = rest[:at] + block + rest[at:]
            moves.append((k, rest[at - 1]))
            break
        else:
            return order, moves
    return order, moves


@register("order_sidechains")
class OrderSidechains(Transform):
    summary = "Move a sidechain record that comes before its parent (parentId) to just after the parent's record."
    ports = ("errors", "repairs")
    screened_lane = "passes"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.run: Run | None = None
        self.seen: set[str] = set()  # ids of the run's events already written
        self.held: list[Column] = []
        self.held_bytes = 0  # what the held columns come to
        self.wanted: set[str] = set()  # parents the held sidechain events wait for
        self.source = "<end>"

    def __call__(self, batch: Batch) -> Batch | list[Batch]:
        if batch.clean is not None:  # whole runs without sidechains: the run in progress ends here
            released = self._release()
            self.run, self.seen = None, set()
            return [Batch.from_columns(released, self.source), batch] if released else batch
        events = batch.events
        assert events is not None
        run = self.run
        as_it_came = not self.held and not _sidechains(events)  # (nothing held, no sidechain: nothing to reorder)
        if (as_it_came and run is not None and run.source == batch.source and not has_records(events)
                and [e.get("runId") for e in events].count(run.run_id) == len(events)):
            # The usual batch: events of the run in progress, no sidechain among them. Only their ids matter.
            self.seen.update(e["id"] for e in events if type(e.get("id")) is str)
            if batch.closes_run:
                self.run, self.seen = None, set()
            return batch
        if (as_it_came and batch.closes_run and events
                and (starts_run(events[0], run, batch.source) or (run is not None and run.source == batch.source))):
            # A whole run (or its end), no sidechain among its events: nothing is held, the batch goes as it came, and
            # the run ends with it (as the loop below would find, record by record). It is of this source.
            self.run, self.seen, self.source = None, set(), batch.source
            return batch
        out: list[Column] = []
        prefix: Batch | None = None  # what the last input's run still held: it goes first, under that input's name
        untouched = not self.held  # nothing held from before, and (below) nothing held now: the batch as it came
        for i, record in enumerate(events):
            column = batch.column(i)
            rid = record.get("runId")
            if starts_run(record, self.run, batch.source):
                released = self._release()
                if released and self.run is not None and self.run.source != batch.source:
                    prefix, untouched = Batch.from_columns(released, self.run.source), not self.held
                else:
                    out += released
                self.run = Run(rid if isinstance(rid, str) else None, None, batch.source)
                self.seen = set()
                self.source = batch.source
            if RECORD_KEY in record:
                if self.held:
                    out += self._hold(column)
                else:
                    out.append(column)
                continue
            eid, parent, side = _links(record)
            if self.held and not self.wanted and eid != _links(self.held[-1][0])[0]:
                out += self._release()  # every parent arrived (with all its parts): write the held stretch
            if side and parent is not None and parent not in self.seen and parent != eid:
                self.wanted.add(parent)
            if self.wanted or self.held:
                untouched = False
                if eid is not None:
                    self.seen.add(eid)
                    self.wanted.discard(eid)
                out += self._hold(column)
                continue
            if eid is not None:
                self.seen.add(eid)
            out.append(column)
        # the run ends here, or its input waits (a live writer's pause: decided as if the run ended, not held for a
        # parent that may come much later): what waits for a parent goes now
        if batch.closes_run or batch.pause:
            untouched = untouched and not self.held
            out += self._release()
            if batch.closes_run:
                self.run, self.seen = None, set()
        if untouched and len(out) == len(events):
            return [prefix, batch] if prefix is not None else batch
        rebuilt = Batch.from_columns(out, batch.source).ends_as(batch)
        rebuilt.notes = batch.notes  # (what the rules before saw changing its events, for the check after heal)
        return [prefix, rebuilt] if prefix is not None else rebuilt

    def flush(self) -> Batch | None:
        out = self._release()
        return Batch.from_columns(out, self.source) if out else None

    def _hold(self, column: Column) -> list[Column]:
        """Hold ``column`` for a parent; past ``MAX_HELD`` or ``MAX_HELD_BYTES`` held, everything held goes out."""
        self.held.append(column)
        self.held_bytes += column_bytes(column)
        return self._release() if len(self.held) > MAX_HELD or self.held_bytes > MAX_HELD_BYTES else []

    def _release(self) -> list[Column]:
        held, self.held, self.wanted, self.held_bytes = self.held, [], set(), 0
        if not held:
            return []
        links = [_links(col[0]) if RECORD_KEY not in col[0] else (None, None, False) for col in held]
        order, moves = reorder(links)
        for k, parent in moves:
            event = held[k][0]
            record = f"sidechain record {links[k][0]!r}" if links[k][0] is not None else "a sidechain record with no id"
            log_repair(self, self.name, "changed", f"{record} came before its parent "
                       f"{links[k][1]!r}; moved it to just after the parent", run_id=event.get("runId"),
                       source=self.source, field="position", seqBefore=event.get("seq"),
                       value={"after": held[parent][0].get("seq")}, **column_position(held[k]))
        return [held[k] for k in order]
