"""Heal-log entries: one structured record per repair, emitted on a stage's ``repairs`` port.

An entry names the rule and what it did (``changed``, ``inserted``, ``moved``, ``dropped``, ``renumbered``), the
run, where the event was in the input (source, line, offset, or a JSON path), the seq before/after
where it applies, and the original value of anything replaced. Observations that change nothing
(action ``reported``, e.g. timestamps going backwards) have the same shape but travel on a stage's
``notices`` port, so a heal log lists repairs only and healing healed output logs nothing.
See ``schemas/heal-log.schema.json``.
"""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.quota import REPORTED
from replay.pipeline.engine.stage import Stage
from replay.pipeline.io.run_files import HEAL_LOG_TYPE

# Every action a heal-log entry names: the heal-log schema's enum (a test keeps the two, and the stages', in step).
ACTIONS = ("changed", "inserted", "moved", "dropped", "renumbered", REPORTED)  # (REPORTED: a notice, which the quota counts)
DROP_TORN_LINE = "drop_torn_line"  # parse's repair of an input's cut-off last line: of its last run (the runId it logs)


def log_repair(stage: Stage, rule: str, action: str, message: str, batch: Batch | None = None, i: int | None = None,
               *, run_id: Any = None, source: str | None = None, port: str = "repairs", **fields: Any) -> None:
    """Emit one heal-log entry on ``stage``'s repairs port (or an observation on ``notices``)."""
    where = batch.where(i) if batch is not None and i is not None else {"source": source} if source is not None else {}
    stage.emit(port, repair_entry(rule, action, message, run_id=run_id, **{**where, **fields}))  # (a field over its place)


def repair_entry(rule: str, action: str, message: str, *, run_id: Any = None, **fields: Any) -> dict[str, Any]:
    """One heal-log entry: the rule, its action and run, where (``source``, ``line``, ``path``, ...) and what
    (``field``, ``value``, ...), then the message."""
    return {"rule": rule, "action": action, "runId": run_id, **fields, "message": message}


def count_in(heal: dict[str, Any] | None, entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A heal record's counts (``repairs``, ``byRule``: None, a run no rule repaired) with ``entries`` counted too."""
    if not entries:
        return heal
    by_rule = dict((heal or {}).get("byRule") or {})
    for entry in entries:
        by_rule[str(entry["rule"])] = by_rule.get(str(entry["rule"]), 0) + counts_as_repair(entry)
    return {**(heal or {}), "repairs": sum(by_rule.values()), "byRule": dict(sorted(by_rule.items()))}


def counts_as_repair(entry: dict[str, Any]) -> int:
    """How many repairs an entry stands for: one per line of the heal log ("each repair is one line");
    a renumbered stretch is one repair whatever its ``count`` of events; observations count 0."""
    return 0 if entry.get("action") == REPORTED else 1


def heal_log_document(repairs: list[dict[str, Any]], notices: list[dict[str, Any]], *, artifact_id: Any,
                      run_id: Any, source: str | None = None) -> dict[str, Any]:
    """The heal log of one artifact or journal (``schemas/heal-log.schema.json``)."""
    by_rule: dict[str, int] = {}
    for entry in repairs:
        n = counts_as_repair(entry)
        if n:
            by_rule[str(entry.get("rule"))] = by_rule.get(str(entry.get("rule")), 0) + n
    document: dict[str, Any] = {
        "schemaVersion": "1.0.0", "artifactType": HEAL_LOG_TYPE, "artifactId": artifact_id, "runId": run_id,
    }
    if source is not None:
        document["source"] = source
    document.update(repairs=repairs, notices=notices,
                    summary={"total": sum(by_rule.values()), "byRule": dict(sorted(by_rule.items()))})
    return document
