"""A folder of captures counts each captured run once, whichever of capture's files a command meets.

Capture writes one run as ``<id>.artifact.json``, ``<id>.healed.json`` and ``.replay/journal/<id>.jsonl``. `report
.replay/artifacts` counted 2 runs for two captures, but `read .replay/artifacts | heal | report` counted 4 (each
artifact and its healed copy), `report .replay` 4 (the journal copies too) and `read .replay | heal | report` 6."""

from __future__ import annotations

import json
import shutil
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


@pytest.fixture
def captured_and_healed(captured, tmp_path) -> Path:
    """The seed's workflow: runs captured, then `replay heal --in .replay/artifacts --out .replay/healed`."""
    cwd = tmp_path / "work"
    shutil.copytree(captured, cwd)  # (the module's captures stay as they are for the other tests)
    stdout_of(cwd, "heal", "--in", ".replay/artifacts", "--out", ".replay/healed")
    return cwd


def test_a_run_captured_and_healed_counts_once_as_its_heal_out_copy(captured_and_healed):
    """`report --in .replay` counted 4 runs for 2 captures healed as the seed shows (capture's healed copy and heal's
    each): the copy heal --out wrote, which OUT's manifest ties to the artifact it healed, is the run."""
    cwd = captured_and_healed
    assert runs_reported(cwd, "--in", ".replay") == 2
    assert runs_reported(cwd, ".replay") == 2
    sources = [r["source"] for r in jsonl(stdout_of(cwd, "read", ".replay")) if r.get("$record") == "source"]
    assert [Path(s).parent.parent.name for s in sources] == ["healed", "healed"] and all(s.endswith(".healed.json") for s in sources)
    assert runs_reported(cwd, "--in", ".replay/artifacts") == 2 and runs_reported(cwd, "--in", ".replay/healed") == 2
    out = jsonl(stdout_of(cwd, "heal", "--in", ".replay", "--out", "again"))  # (heal still heals each original once)
    assert [Path(line["source"]).parent.parent.name for line in out] == ["artifacts", "artifacts"]


def test_a_copy_healed_from_another_version_of_its_input_is_not_hidden(captured_and_healed):
    """A name shared is not a run shared: an artifact rewritten after heal (another run under that name) is not the one
    its heal --out copy was healed from, and both count."""
    cwd = captured_and_healed
    first, second = sorted((cwd / ".replay" / "artifacts").glob("*/*.artifact.json"))
    first.write_bytes(second.read_bytes())
    assert runs_reported(cwd, "--in", ".replay") == 3
    (cwd / ".replay" / "healed" / ".replay-manifest.json").unlink()  # (nothing ties a copy to its input: all count)
    assert runs_reported(cwd, "--in", ".replay") == 4
