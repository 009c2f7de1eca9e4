"""replay's own config files in a folder are not read as journals.

`cp examples/rules/heal.rules.json .replay/ && replay report .replay` exited 1 with an E_JSONL_LINE_INVALID per line of
the pretty-printed rules, and `replay validate .replay` reported artifact-schema errors for it; a session's override
sidecar (replay.override.json) beside its journal did the same to `replay read` of the scenario's folder. A folder walk
passes over them as it passes over capture's .raw.json and .heal-log.json side files."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import EXAMPLES, jsonl, run_replay

from replay.pipeline.io.journals import is_journal_name


def replay_folder(tmp_path: Path) -> Path:
    (tmp_path / ".replay" / "journal").mkdir(parents=True)
    shutil.copy(EXAMPLES / "journals" / "two-runs.jsonl", tmp_path / ".replay" / "journal" / "two-runs.jsonl")
    shutil.copy(EXAMPLES / "rules" / "heal.rules.json", tmp_path / ".replay" / "heal.rules.json")
    return tmp_path


def test_the_documented_heal_rules_file_does_not_break_commands_run_on_replay_folder(tmp_path):
    cwd = replay_folder(tmp_path)
    done = run_replay("report", ".replay", cwd=cwd)
    assert done.returncode == 0 and b"E_JSONL_LINE_INVALID" not in done.stderr, done.stderr
    assert done.stdout.startswith(b"replay report: 2 runs")
    done = run_replay("validate", ".replay", cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert [s["source"] for s in jsonl(done.stdout)] == [".replay/journal/two-runs.jsonl"]
    done = run_replay("read", ".replay", cwd=cwd)
    assert done.returncode == 0 and not done.stderr, done.stderr
    done = run_replay("heal", ".replay", cwd=cwd)
    assert done.returncode == 0, done.stderr


def test_a_session_override_sidecar_is_not_read_as_a_journal():
    done = run_replay("read", str(EXAMPLES / "echo-agent" / "scenarios" / "overloaded"))
    assert done.returncode == 0 and b"replay.override.json" not in done.stdout + done.stderr, done.stderr


def test_config_files_are_skipped_by_their_whole_name_only():
    assert not is_journal_name(".replay/heal.rules.json") and not is_journal_name("s/replay.override.json")
    assert is_journal_name("my-heal.rules.json") and is_journal_name("heal.rules.jsonl")
