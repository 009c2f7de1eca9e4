"""`replay heal --in DIR --out OUT` and an input it could not read this time (a journal that became a FIFO, which the
walk does not open; a link to nothing): its earlier healed copy and heal log stay, and stay recorded in the manifest,
so they go when the input is gone for good, as the outputs of any input gone do (they were left behind for ever)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import EXAMPLES, run_replay

TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"
OUTPUTS = ["b.heal-log.json", "b.healed.jsonl"]
ARTIFACT = {"schemaVersion": "1.0.0", "artifactType": "replay", "id": "b1", "runId": "b1",
            "timestamp": "2026-03-01T12:00:00.000Z", "prompt": "p", "query": "p", "status": "ok",
            "events": [{"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started", "runId": "b1",
                        "payload": {}}]}


def heal(tmp_path: Path):
    done = run_replay("heal", "--in", str(tmp_path / "in"), "--out", str(tmp_path / "out"), process=True, timeout=60)
    return done


def recorded(tmp_path: Path) -> list[str]:
    manifest = json.loads((tmp_path / "out" / ".replay-manifest.json").read_bytes())
    return sorted(entry["input"] for entry in manifest["inputs"])


def b_outputs(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "out").iterdir() if p.name.startswith("b."))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("unread", ["fifo", "dangling link"])
def test_the_healed_copy_of_an_input_not_read_stays_recorded_until_the_input_is_gone(tmp_path: Path, unread: str):
    (tmp_path / "in").mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / "in" / name).write_bytes(TWO_RUNS.read_bytes())
    first = heal(tmp_path)
    assert first.returncode == 0, first.stderr
    assert b_outputs(tmp_path) == OUTPUTS and recorded(tmp_path) == ["a.jsonl", "b.jsonl"]
    before = {name: (tmp_path / "out" / name).read_bytes() for name in OUTPUTS}

    b = tmp_path / "in" / "b.jsonl"
    b.unlink()
    if unread == "fifo":
        os.mkfifo(b)  # (the walk never opens it: it could wait for a writer for ever)
    else:
        b.symlink_to(tmp_path / "nowhere.jsonl")
    again = heal(tmp_path)  # (a real process: the walk's warning, and no wait on the FIFO)
    assert (b"read.not_a_file" if unread == "fifo" else b"E_INPUT_UNREADABLE") in again.stderr, again.stderr
    assert b_outputs(tmp_path) == OUTPUTS  # kept as they were
    assert {name: (tmp_path / "out" / name).read_bytes() for name in OUTPUTS} == before
    assert recorded(tmp_path) == ["a.jsonl", "b.jsonl"]  # and still the manifest's (it forgot them)

    third = heal(tmp_path)  # nothing changed: the same again
    assert b_outputs(tmp_path) == OUTPUTS and recorded(tmp_path) == ["a.jsonl", "b.jsonl"], third.stderr

    b.unlink()  # the input gone for good: its outputs go, as any gone input's do (they stayed for ever)
    gone = heal(tmp_path)
    assert gone.returncode == 0, gone.stderr
    assert b_outputs(tmp_path) == [] and recorded(tmp_path) == ["a.jsonl"]


def outputs_of(tmp_path: Path, name: str) -> list[dict]:
    manifest = json.loads((tmp_path / "out" / ".replay-manifest.json").read_bytes())
    return next(entry["outputs"] for entry in manifest["inputs"] if entry["input"] == name)


def test_the_healed_copy_of_an_artifact_cut_off_since_stays_recorded_until_it_is_gone(tmp_path: Path):
    # read this time, but refused (cut off mid-write: E_ARTIFACT_JSON_INVALID, nothing written for it): the manifest
    # recorded it with no outputs, so its earlier healed copy and heal log were never removed, and read as current
    (tmp_path / "in").mkdir()
    artifact = tmp_path / "in" / "b.json"
    artifact.write_text(json.dumps(ARTIFACT))
    (tmp_path / "in" / "a.jsonl").write_bytes(TWO_RUNS.read_bytes())
    assert heal(tmp_path).returncode == 0
    written = outputs_of(tmp_path, "b.json")
    assert sorted(out["path"] for out in written) == ["b.heal-log.json", "b.healed.json"]

    artifact.write_bytes(artifact.read_bytes()[:60])  # rewritten, cut off mid-write
    for _ in range(2):  # (refused, then the same again from the manifest)
        again = heal(tmp_path)
        assert again.returncode == 1 and b"E_ARTIFACT_JSON_INVALID" in again.stderr, again.stderr
        assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.name.startswith("b.")) == \
            ["b.heal-log.json", "b.healed.json"]  # kept, and still recorded: made from its earlier version
        assert outputs_of(tmp_path, "b.json") == [{**out, "earlier": True} for out in written]
    # a folder holding both: the cut-off input is read (and refused), its earlier healed copy is no copy of it
    both = run_replay("read", str(tmp_path), process=True, timeout=60)
    assert b"E_ARTIFACT_JSON_INVALID" in both.stderr, both.stderr

    artifact.unlink()  # gone for good: its outputs go
    gone = heal(tmp_path)
    assert gone.returncode == 0, gone.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.name.startswith("b.")) == []
    assert recorded(tmp_path) == ["a.jsonl"]
