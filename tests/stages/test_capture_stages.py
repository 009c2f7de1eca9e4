"""The capture stages outside the capture command: in a pipeline config, and emit over any stream."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import EXAMPLES, jsonl, run_replay
from heal_support import SAME_ID_DROPPED

from replay.pipeline.io.run_files import file_stem

ECHO_PY = str(EXAMPLES / "runners" / "echo_runner.py")


def test_capture_stages_compose_in_a_pipeline_config(tmp_path):
    config = tmp_path / "capture.toml"
    config.write_text(f"""
[stages.discover]
type = "discover"
prompt = "What are my top holdings?"
runner = {json.dumps(ECHO_PY)}
context = {{ user = "u1" }}

[stages.spawn]
type = "spawn"
inputs = ["discover"]
timeout_ms = 60000

[stages.parse]
type = "parse"
inputs = ["spawn"]

[stages.emit]
type = "emit"
inputs = ["parse", "spawn.raw", "spawn.repairs"]
healed = false
out_dir = "out"
journal_dir = "journal"
""")
    done = run_replay("run", str(config), cwd=tmp_path, input=b"")
    assert done.returncode == 0, done.stderr
    [summary] = jsonl(done.stdout)
    assert set(summary["files"]) == {"raw", "artifact", "journal"}
    artifact = json.loads((tmp_path / summary["files"]["artifact"]).read_text())
    assert artifact["response"] == "Echo: What are my top holdings?" and artifact["context"] == {"user": "u1"}
    assert Path(summary["files"]["journal"]).parent == Path("journal")


def test_emit_writes_artifacts_for_a_journal_it_did_not_capture(tmp_path):
    journal = tmp_path / "two-runs.jsonl"
    lines = [
        {"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started", "runId": "run/a", "payload": {}},
        {"seq": 2, "timestamp": "2026-03-01T12:00:01.000Z", "type": "run_completed", "runId": "run/a", "payload": {}},
        {"seq": 1, "timestamp": "2026-03-02T09:00:00.000Z", "type": "run_started", "runId": "run_b", "payload": {}},
    ]
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    config = tmp_path / "emit.toml"
    config.write_text('chain = ["parse", {type = "emit", healed = false}]\n')
    done = run_replay("run", str(config), str(journal), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    first, second = jsonl(done.stdout)
    assert first["runId"] == "run/a" and first["files"]["artifact"] == ".replay/artifacts/2026-03-01/run%2Fa.artifact.json"
    assert second["files"]["journal"] == ".replay/journal/run_b.jsonl"
    assert (tmp_path / first["files"]["journal"]).read_bytes() == b"".join(
        json.dumps(line).encode() + b"\n" for line in lines[:2])  # the journal keeps the input's bytes


def test_file_stems_are_safe():
    assert file_stem("run_2026") == "run_2026" and file_stem("run.v2") == "run.v2"
    stem = file_stem("../../etc/passwd")
    assert "/" not in stem and not stem.startswith(".") and stem.endswith("etc%2Fpasswd")
    assert file_stem(None) == "run" and "/" not in file_stem("...") and not file_stem("...").startswith(".")


def test_file_stems_are_one_to_one():
    """Two run ids never share a file: x/y and x_y (and x%2Fy) stay apart."""
    ids = ["x/y", "x_y", "x%2Fy", "x y", "x.y", ".x", "x.", "é", "e\u0301", "..", "a/../b"]
    stems = [file_stem(i) for i in ids]
    assert len(set(stems)) == len(ids)


def test_emit_gives_the_heal_record_of_a_run_heal_dropped_whole_to_no_run(tmp_path):
    """Heal writes that record at the end, after the last run, and here with the last run's id: the last run's journal
    and artifact keep their own bytes and counts, not the dropped run's repair."""
    journal = tmp_path / "j.jsonl"
    journal.write_bytes(SAME_ID_DROPPED)
    config = tmp_path / "emit.toml"
    config.write_text('chain = ["parse", "heal", {type = "emit", healed = false}]\n')
    done = run_replay("run", str(config), str(journal), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    last = jsonl(done.stdout)[-1]
    assert last["runId"] == "d"
    assert (tmp_path / last["files"]["journal"]).read_bytes() == SAME_ID_DROPPED.splitlines(keepends=True)[-2] + \
        SAME_ID_DROPPED.splitlines(keepends=True)[-1]
    artifact = json.loads((tmp_path / last["files"]["artifact"]).read_text())
    assert b"runDropped" not in json.dumps(artifact).encode()
