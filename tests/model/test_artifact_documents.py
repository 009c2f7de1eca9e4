"""A JSON document read as a stream: an artifact becomes its run record then its events; an array, its items."""

from __future__ import annotations

from replay.pipeline.model.artifacts import document_items


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
