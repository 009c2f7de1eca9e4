"""A folder of captures counts each captured run once, whichever of capture's files a command meets.

Capture writes one run as ``<id>.artifact.json``, ``<id>.healed.json`` and ``.replay/journal/<id>.jsonl``. `report
.replay/artifacts` counted 2 runs for two captures, but `read .replay/artifacts | heal | report` counted 4 (each
artifact and its healed copy), `report .replay` 4 (the journal copies too) and `read .replay | heal | report` 6."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import EXAMPLES, jsonl, run_replay

from replay.pipeline.io.journals import ORIGINAL, captured_once

ECHO = str(EXAMPLES / "runners" / "echo_runner.py")


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cwd = tmp_path_factory.mktemp("captures")
    for prompt in ("one", "two"):
        done = run_replay("capture", "--runner", ECHO, prompt, cwd=cwd, input=b"", env={"REPLAY_RUNNER": ""})
        assert done.returncode == 0, done.stderr
    return cwd


def runs_reported(cwd: Path, *args: str, stdin: bytes = b"") -> int:
    done = run_replay("report", "--format", "json", *args, cwd=cwd, input=stdin)
    assert done.returncode == 0, done.stderr
    return len(json.loads(done.stdout)["runs"])


def stdout_of(cwd: Path, *args: str, stdin: bytes = b"") -> bytes:
    done = run_replay(*args, cwd=cwd, input=stdin)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("folder", [".replay/artifacts", ".replay"])
def test_every_way_to_report_a_folder_of_captures_counts_each_run_once(captured, folder):
    assert runs_reported(captured, folder) == 2
    assert runs_reported(captured, "--in", folder) == 2
    read = stdout_of(captured, "read", folder)
    records = jsonl(read)
    assert [r["source"].endswith(".healed.json") for r in records if r.get("$record") == "source"] == [True, True]
    assert len([r for r in records if r.get("$record") == "run"]) == 2
    assert runs_reported(captured, stdin=stdout_of(captured, "heal", stdin=read)) == 2
    assert runs_reported(captured, stdin=stdout_of(captured, "heal", folder)) == 2


def test_a_journal_copy_counts_when_no_artifact_of_its_run_was_walked(captured):
    assert runs_reported(captured, ".replay/journal") == 2


def test_validate_still_checks_every_file_capture_wrote(captured):
    """validate judges files, not runs: the artifact as the runner reported it, its healed copy and the journal each."""
    summaries = jsonl(stdout_of(captured, "validate", ".replay"))
    assert len(summaries) == 6 and all(s["valid"] for s in summaries)


def test_heal_directory_mode_heals_the_original_once(captured, tmp_path):
    out = jsonl(stdout_of(captured, "heal", "--in", ".replay", "--out", str(tmp_path / "healed")))
    assert [Path(line["source"]).name.endswith(".artifact.json") for line in out] == [True, True]


def test_captured_once_keeps_the_healed_copy_or_the_original_and_drops_the_journal_copy_of_a_walked_run():
    found = ["d/.replay/artifacts/x.artifact.json", "d/.replay/artifacts/x.healed.json", "d/.replay/artifacts/y.artifact.json",
             "d/.replay/journal/x.jsonl", "d/.replay/journal/y.jsonl", "d/.replay/journal/z.jsonl", "d/other/x.jsonl"]
    assert captured_once(found) == ["d/.replay/artifacts/x.healed.json", "d/.replay/artifacts/y.artifact.json",
                                    "d/.replay/journal/z.jsonl", "d/other/x.jsonl"]
    assert captured_once(found, keep=ORIGINAL)[:2] == ["d/.replay/artifacts/x.artifact.json", "d/.replay/artifacts/y.artifact.json"]
