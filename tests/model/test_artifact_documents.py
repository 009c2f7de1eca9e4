"""A JSON document read as a stream: an artifact becomes its run record then its events; an array, its items."""

from __future__ import annotations

from replay.pipeline.model.artifacts import artifact_from_run, document_items
from replay.pipeline.model.events import RUN_ID_FILLED, run_record_from_artifact


def test_document_items_turn_an_artifact_into_its_run_record_then_its_events():
    events = [{"seq": i, "type": "x", "runId": "r1"} for i in range(1, 6)]
    artifact = {"schemaVersion": "1.0.0", "artifactType": "replay", "id": "art", "status": "ok", "events": events}
    batches = list(document_items(artifact, "a.json", batch_events=2))
    records = [e for b in batches for e in b]
    assert records[0]["$record"] == "run" and records[0]["runId"] == "r1" and records[0]["artifactId"] == "art"
    assert records[1:] == events
    pointers = [p for b in batches for p in b.pointers]
    assert pointers == [None] + [f"$.events[{k}]" for k in range(5)]
    assert all(b.source == "a.json" for b in batches)


def test_document_items_of_an_artifact_without_events_still_gives_its_run_record():
    batches = list(document_items({"id": "a", "status": "ok", "events": []}, "a.json"))
    assert [e["$record"] for b in batches for e in b] == ["run"]


def test_document_items_of_an_array():
    batches = list(document_items([{"seq": 1}, 2], "arr.json"))
    assert [p for b in batches for p in b.pointers] == ["$[0]", "$[1]"]
    assert list(document_items([], "empty.json")) == []


def test_an_artifact_made_from_a_run_record_read_marked_leaves_the_mark_out():
    """read marks the run record of an artifact with no runId (``RUN_ID_FILLED``) for heal's fill_run_id to log and
    take out; an artifact made of that record on a path that skipped fill_run_id leaves the internal mark out and keeps
    the run's other facts (a dialect's ``$origin``, ``model``)."""
    events = [{"seq": 1, "type": "run_started", "runId": "r1", "timestamp": "2024-01-01T00:00:00Z", "payload": {}}]
    artifact = {"id": "art", "status": "ok", "model": "m", "$origin": {"dialect": "codex"}, "events": events}
    record = run_record_from_artifact(artifact)
    assert record[RUN_ID_FILLED] == {"from": "its events"}  # (what the written artifact must not carry)
    written = artifact_from_run(record, events)
    assert RUN_ID_FILLED not in written
    assert (written["runId"], written["id"], written["model"], written["$origin"]) == ("r1", "art", "m", {"dialect": "codex"})
