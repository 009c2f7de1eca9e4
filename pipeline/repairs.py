"""Heal-log entries: one structured record per repair, emitted on a stage's ``repairs`` port.

An entry names the rule and what it did (``changed``, ``inserted``, ``dropped``, ``renumbered``, or
``reported`` for an observation that changed nothing), the run, where the event was in the input
(source, line, offset, or a JSON path), the seq before/after where it applies, and the original value
of anything replaced. See ``schemas/heal-log.schema.json``.
"""

from __future__ import annotations

from typing import Any

from .batch import Batch
from .stage import Stage

ACTIONS = ("changed", "inserted", "dropped", "renumbered", "reported")
REPORTED = "reported"


def log_repair(stage: Stage, rule: str, action: str, message: str, batch: Batch | None = None, i: int | None = None,
               *, run_id: Any = None, source: str | None = None, **fields: Any) -> None:
    """Emit one heal-log entry on ``stage``'s repairs port."""
    entry: dict[str, Any] = {"rule": rule, "action": action, "runId": run_id}
    if batch is not None and i is not None:
        entry.update((k, v) for k, v in batch.position(i).items() if v is not None)
    elif source is not None:
        entry["source"] = source
    entry.update(fields)
    entry["message"] = message
    stage.emit("repairs", entry)


def counts_as_repair(entry: dict[str, Any]) -> int:
    """How many repairs an entry stands for (a renumbered range counts each event; reports count 0)."""
    if entry.get("action") == REPORTED:
        return 0
    count = entry.get("count", 1)
    return count if isinstance(count, int) and count > 0 else 1
