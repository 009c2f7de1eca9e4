"""Replay artifacts: one run as one JSON document (``schemas/replay-artifact.schema.json``).

The stream form (a run record followed by events) and the artifact form carry the same facts:
``artifact_from_run`` builds the artifact; ``events.run_record_from_artifact`` goes the other way.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.io.journals import BATCH_EVENTS
from replay.pipeline.model.events import NOT_RUN_FACTS, RUN_FAILED, run_record_from_artifact
from replay.pipeline.model.records import HEAL_RECORD, RECORD_KEY
from replay.pipeline.model.repairs import repair_entry
from replay.pipeline.model.toolcalls import pair_tool_calls

SCHEMA_VERSION = "1.0.0"
ARTIFACT_TYPE = "replay"
# The fields ``artifact_from_run`` writes into an artifact whose input lacked them, or held a value it does not keep
# (heal --in logs each such fill or replacement as a repair of ``FILL_RULE``): its envelope, as this replay writes it,
# its id, timestamp, prompt and query, and its status, from its events.
FILLED_FIELDS = ("schemaVersion", "artifactType", "id", "timestamp", "prompt", "query", "status")
# ... and those it writes anew whatever the input held: a replacement is logged (nothing, when the input has none)
REPLACED_FIELDS = ("toolCalls",)
FILL_RULE = "fill_artifact_field"
FILL_STAGE = "write_healed"  # the stage that writes them (and logs them), heal --in's sink
LACKING = "artifact_lacking"  # its key in ``Stage.shared``: per input read, what ``note_lacking`` noted of its artifact
_WHY = {"schemaVersion": "the version this replay writes", "artifactType": "a replay artifact's",
        "id": "its run's id, else \"unknown\"", "timestamp": "its first event's",
        "prompt": "a prompt is a string; none given is \"\"", "query": "its prompt, when it gives no string",
        "status": "from its events: \"error\" when one is run_failed, else \"ok\"",
        "toolCalls": "the calls its events show, paired as heal pairs them"}
# An artifact's keys whose null ``events.run_record`` leaves out of its run record (and so of what heal writes) and
# heal's ``drop_empty_fields`` logs: all but its envelope and events (no run fact: never in the stream, null or not),
# and its runId (a missing one is named, and logged, by ``fill_run_id``). ``id`` is its run record's artifactId.
_NOT_DROPPED = frozenset({"schemaVersion", "artifactType", "events", "heal", "runId"})


@dataclass
class Noted:
    """What ``note_lacking`` noted of an artifact read: its values of ``FILLED_FIELDS``, ``REPLACED_FIELDS`` and runId
    (those it has), and its keys whose value is null (those a run record leaves out)."""

    given: dict[str, Any]
    nulls: tuple[str, ...]


def artifact_from_run(record: dict[str, Any] | None, events: list[dict[str, Any]],
                      extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The artifact of one run: its run record's facts, its events, and the tool calls they show."""
    facts = {k: v for k, v in (record or {}).items() if k != RECORD_KEY}
    first = events[0] if events else {}
    run_id = facts.get("runId") or first.get("runId")
    status = facts.get("status")
    if status is None:  # (a journal's run says its end in events only) an invalid status stays, as the stream keeps it:
        # heal does not guess it (validate after heal says E_HEALED_ARTIFACT_INVALID, as filter mode's check does)
        status = "error" if any(e.get("type") == RUN_FAILED for e in events) else "ok"
    prompt = facts.get("prompt") if isinstance(facts.get("prompt"), str) else ""
    artifact: dict[str, Any] = {
        "schemaVersion": SCHEMA_VERSION,
        "artifactType": ARTIFACT_TYPE,
        "id": facts.get("artifactId") or run_id or "unknown",
        "runId": run_id,
        "timestamp": facts.get("timestamp") or first.get("timestamp"),
        "prompt": prompt,
        "query": facts.get("query") if isinstance(facts.get("query"), str) else prompt,
        "status": status,
    }
    for key in ("response", "error", "framework", "context"):
        if facts.get(key) is not None:
            artifact[key] = facts[key]
    artifact["events"] = events
    artifact["toolCalls"] = [  # (the artifact schema asks every call a durationMs: one no time tells is 0.0 here)
        {"toolName": c["toolName"], "status": c["status"], "durationMs": 0.0 if c["durationMs"] is None else c["durationMs"]}
        for c in pair_tool_calls(events)
    ]
    for key in ("timings", "sources", "usage"):
        if facts.get(key) is not None:
            artifact[key] = facts[key]
    for key, value in facts.items():  # the run's other facts (a dialect's model, cwd, $origin): the stream keeps them
        if key not in artifact and key not in NOT_RUN_FACTS:
            artifact[key] = value
    if extra:
        artifact.update(extra)
    return {k: v for k, v in artifact.items() if v is not None}

def note_lacking(shared: dict[str, Any], source: str, document: Any) -> None:
    """Note (in a graph run's ``shared``) what of the artifact ``document`` read from ``source`` heal writes anew or
    leaves out (nothing for an array: no artifact); ``lacking`` tells a later stage (``drop_empty_fields``,
    ``write_healed``; a runId it lacks is marked in its run record instead: ``events.RUN_ID_FILLED``)."""
    if not isinstance(document, dict):
        return
    shared.setdefault(LACKING, {})[source] = Noted(
        {key: document[key] for key in (*FILLED_FIELDS, *REPLACED_FIELDS, "runId") if key in document},
        tuple(key for key, value in document.items() if value is None and key not in _NOT_DROPPED))


def lacking(shared: dict[str, Any], source: str) -> Noted | None:
    """What ``note_lacking`` noted of the artifact read from ``source``; None when none was noted (no artifact:
    nothing is filled into its copy)."""
    found: Noted | None = shared.get(LACKING, {}).get(source)
    return found


def fill_repairs(artifact: dict[str, Any], noted: Noted | None, *, source: str,
                 run_id: Any) -> list[dict[str, Any]]:
    """The heal-log entries of the ``FILLED_FIELDS`` and ``REPLACED_FIELDS`` that ``artifact``, the healed copy of an
    input artifact ``noted`` (``lacking``), writes anew: one each, at its JSON path, with the value written (and the
    ``original`` it replaced, whole: the healed copy keeps nothing of it). (A healed copy has each filled field: its
    timestamp is its first event's, which heal gives one; a replaced one only when the input has it.)"""
    if noted is None:
        return []
    given = noted.given
    entries = []
    for key in (*FILLED_FIELDS, *REPLACED_FIELDS):
        if key not in artifact or (key in given and exactjson.typed_equal(given[key], artifact[key])) \
                or (key in REPLACED_FIELDS and key not in given):
            continue
        was = {"original": given[key]} if key in given else {}
        verb = "lists" if key in REPLACED_FIELDS else "is"
        said = f"the artifact's `{key}` {verb} {_shown(given[key], key)}" if was else f"the artifact has no `{key}`"
        entries.append(repair_entry(FILL_RULE, "changed", f"{said}; set to {_shown(artifact[key], key)} ({_WHY[key]})",
                                    run_id=run_id, source=source, path=f"$.{key}", field=key, value=artifact[key], **was))
    return entries


def _shown(value: Any, key: str) -> str:
    """A value as a message shows it: a list of tool calls by its length (the entry holds it whole)."""
    if key in REPLACED_FIELDS and isinstance(value, list):
        return f"{len(value)} call{'' if len(value) == 1 else 's'}"
    return exactjson.dumps(value).decode()


def heal_record_of(document: dict[str, Any], run_id: Any) -> dict[str, Any] | None:
    """The heal record (``{"$record": "heal", runId, repairs, byRule}``) of a healed artifact: its ``heal`` block, the
    counts heal's record of the run gave it (``healing.healed_artifact``), for run ``run_id``; None when it has none."""
    heal = document.get("heal")
    if not isinstance(heal, dict):
        return None
    counts = {key: heal[key] for key in ("repairs", "byRule") if key in heal}
    return {RECORD_KEY: HEAL_RECORD, "runId": run_id, **counts} if counts else None


def document_items(document: Any, source: str, batch_events: int = BATCH_EVENTS, *, heal: bool = False) -> Iterator[Batch]:
    """Records from one JSON document: an artifact (its run record, then its events, then, with ``heal``, the heal
    record its ``heal`` block gives, ``heal_record_of``) or an array."""
    after: list[dict[str, Any]] = []
    if isinstance(document, dict):
        events = document["events"]
        records: list[Any] = [run_record_from_artifact(document)]
        pointers: list[str | None] = [None]
        prefix = "$.events"
        record = heal_record_of(document, records[0].get("runId")) if heal else None
        after = [record] if record is not None else []
    else:
        events, records, pointers, prefix = document, [], [], "$"
    for start in range(0, max(len(events), 1), batch_events):
        part = events[start:start + batch_events]
        records.extend(part)
        pointers.extend(f"{prefix}[{start + k}]" for k in range(len(part)))
        if start + batch_events >= len(events):  # (the last batch)
            records.extend(after)
            pointers.extend("$.heal" for _ in after)
        n = len(records)
        if n:
            yield Batch(source, records, [None] * n, [None] * n, [None] * n, pointers)
        records, pointers = [], []
