"""`replay read a.json | replay heal` logs the runId an artifact without one (missing or empty) gets from its events,
else its id (`fill_run_id`, path `$.runId`), as `replay heal a.json` does: read marks its run record so
(`$runIdFilled`), heal logs it once and takes the mark out. The pipe logged nothing (no heal record, an empty log)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_replay

EVENTS = [{"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started", "runId": "e", "payload": {}},
          {"seq": 2, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_completed", "runId": "e", "payload": {}}]


def artifact(**fields: object) -> dict:
    return {"schemaVersion": "1.0.0", "artifactType": "replay", "id": "art", "timestamp": "2026-03-01T12:00:00.000Z",
            "prompt": "p", "query": "p", "status": "ok", **fields}


def unplaced(entry: dict) -> dict:
    """A log entry but its position: the pipe's own (`<stdin>`, line and offset) rather than the file's (a JSON path)."""
    return {k: v for k, v in entry.items() if k not in ("source", "line", "offset") and not (k == "path" and v != "$.runId")}


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


@pytest.mark.parametrize(("fields", "took"), [({"events": EVENTS}, "e"), ({"runId": "", "events": EVENTS}, "e"),
                                              ({"events": [{k: v for k, v in e.items() if k != "runId"} for e in EVENTS]},
                                               "art")])
def test_a_piped_artifact_s_run_id_is_logged_as_when_healing_the_file(tmp_path: Path, fields: dict, took: str):
    path = tmp_path / "a.json"
    path.write_text(json.dumps(artifact(**fields)))
    named = run_replay("heal", str(path), "--log", str(tmp_path / "named.jsonl"))
    read = run_replay("read", str(path))
    piped = run_replay("heal", "--log", str(tmp_path / "piped.jsonl"), input=read.stdout)
    assert named.returncode == piped.returncode == 0, piped.stderr
    assert piped.stdout == named.stdout and b"$runIdFilled" not in piped.stdout  # (the mark taken out)
    logged = lines(tmp_path / "piped.jsonl")
    assert [unplaced(entry) for entry in logged] == [unplaced(entry) for entry in lines(tmp_path / "named.jsonl")]
    run_id = [entry for entry in logged if entry.get("path") == "$.runId"]
    assert len(run_id) == 1 and run_id[0]["rule"] == "fill_run_id" and run_id[0]["value"] == took
    assert ("original" in run_id[0]) == ("runId" in fields)

    again = run_replay("heal", "--log", str(tmp_path / "again.jsonl"), input=piped.stdout)  # healed: nothing to log
    assert again.returncode == 0 and (tmp_path / "again.jsonl").read_bytes() == b""


def test_a_saved_stream_of_an_artifact_healed_in_a_folder_logs_it_too(tmp_path: Path):
    path = tmp_path / "a.json"
    path.write_text(json.dumps(artifact(events=EVENTS)))
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "s.jsonl").write_bytes(run_replay("read", str(path)).stdout)
    done = run_replay("heal", "--in", str(tmp_path / "in"), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    log = json.loads((tmp_path / "out" / "s.heal-log.json").read_bytes())
    assert "$.runId" in json.dumps(log) and b"$runIdFilled" not in (tmp_path / "out" / "s.healed.jsonl").read_bytes()
