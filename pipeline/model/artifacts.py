"""Replay artifacts: one run as one JSON document (``schemas/replay-artifact.schema.json``).

The stream form (a run record followed by events) and the artifact form carry the same facts:
``artifact_from_run`` builds the artifact; ``events.run_record_from_artifact`` goes the other way.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.io.journals import BATCH_EVENTS
from replay.pipeline.model.events import NOT_RUN_FACTS, RUN_FAILED, run_record_from_artifact
from replay.pipeline.model.records import RECORD_KEY
from replay.pipeline.model.repairs import repair_entry
from replay.pipeline.model.toolcalls import pair_tool_calls

SCHEMA_VERSION = "1.0.0"
ARTIFACT_TYPE = "replay"
# The fields ``artifact_from_run`` writes into an artifact whose input lacked them, or held a value it does not keep
# (heal --in logs each such fill or replacement as a repair of ``FILL_RULE``): its envelope, as this replay writes it,
# its id, timestamp, prompt and query, and its status, from its events.
FILLED_FIELDS = ("schemaVersion", "artifactType", "id", "timestamp", "prompt", "query", "status")
FILL_RULE = "fill_artifact_field"
LACKING = "artifact_lacking"  # its key in ``Stage.shared``: per input read, its values of FILLED_FIELDS (those it has)
_WHY = {"schemaVersion": "the version this replay writes", "artifactType": "a replay artifact's",
        "id": "its run's id, else \"unknown\"", "timestamp": "its first event's",
        "prompt": "a prompt is a string; none given is \"\"", "query": "its prompt, when it gives no string",
        "status": "from its events: \"error\" when one is run_failed, else \"ok\""}


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
    """Note (in a graph run's ``shared``) the values of ``FILLED_FIELDS`` the artifact ``document`` read from ``source``
    has (nothing for an array: no artifact); ``lacking`` tells a later stage (``write_healed``)."""
    if isinstance(document, dict):
        shared.setdefault(LACKING, {})[source] = {key: document[key] for key in FILLED_FIELDS if key in document}


def lacking(shared: dict[str, Any], source: str) -> dict[str, Any] | None:
    """The values of ``FILLED_FIELDS`` the artifact read from ``source`` had (``note_lacking``); None when none was
    noted (no artifact: nothing is filled into its copy)."""
    found: dict[str, Any] | None = shared.get(LACKING, {}).get(source)
    return found


def fill_repairs(artifact: dict[str, Any], given: dict[str, Any] | None, *, source: str,
                 run_id: Any) -> list[dict[str, Any]]:
    """The heal-log entries of the ``FILLED_FIELDS`` that ``artifact``, the healed copy of an input artifact whose
    values of them were ``given`` (``lacking``), writes anew: one each, at its JSON path, with the value written (and
    the ``original`` it replaced). (A healed copy has each: its timestamp is its first event's, which heal gives one.)"""
    if given is None:
        return []
    entries = []
    for key in FILLED_FIELDS:
        if key not in artifact or (key in given and _same(given[key], artifact[key])):
            continue
        was = {"original": given[key]} if key in given else {}
        said = f"the artifact's `{key}` is {_shown(given[key])}" if was else f"the artifact has no `{key}`"
        entries.append(repair_entry(FILL_RULE, "changed", f"{said}; set to {_shown(artifact[key])} ({_WHY[key]})",
                                    run_id=run_id, source=source, path=f"$.{key}", field=key, value=artifact[key], **was))
    return entries


def _shown(value: Any) -> str:
    return exactjson.dumps(value).decode()


def _same(given: Any, written: Any) -> bool:
    """The value an input gave is the one its copy writes (``True`` is not ``1``, nor ``1.0``)."""
    return given.__class__ is written.__class__ and given == written


def document_items(document: Any, source: str, batch_events: int = BATCH_EVENTS) -> Iterator[Batch]:
    """Records from one JSON document: an artifact (its run record, then its events) or an array."""
    if isinstance(document, dict):
        events = document["events"]
        records: list[Any] = [run_record_from_artifact(document)]
        pointers: list[str | None] = [None]
        prefix = "$.events"
    else:
        events, records, pointers, prefix = document, [], [], "$"
    for start in range(0, max(len(events), 1), batch_events):
        part = events[start:start + batch_events]
        records.extend(part)
        pointers.extend(f"{prefix}[{start + k}]" for k in range(len(part)))
        n = len(records)
        if n:
            yield Batch(source, records, [None] * n, [None] * n, [None] * n, pointers)
        records, pointers = [], []
