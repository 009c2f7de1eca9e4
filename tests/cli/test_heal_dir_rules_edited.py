"""`replay heal --in DIR --out OUT` run again after its rules changed (the `--rules` file edited in place, the default
`.replay/heal.rules.json` added, edited or removed) starts afresh: no healed copy made with the old rules is kept, as
the README says of any flag changed ("Changing a flag (the rules, `--no-summary`) starts afresh"). Rules unchanged,
the recorded copies are reused. Found by a read-only pass (the manifest's work key held the rules file's path only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_replay

JOURNAL = "".join(json.dumps(event) + "\n" for event in [
    {"seq": 1, "timestamp": "2026-03-01T12:00:00Z", "type": "run_started", "runId": "r", "payload": {}},
    {"seq": 2, "timestamp": "2026-03-01T12:00:01Z", "type": "my_msg", "runId": "r", "payload": {}},
    {"seq": 3, "timestamp": "2026-03-01T12:00:02Z", "type": "run_completed", "runId": "r", "payload": {}},
])


def rules(alias: str) -> str:
    return json.dumps({"version": "v1", "eventAliases": {"my_msg": alias}})


def heal(tmp_path: Path, *flags: str) -> tuple[int, str]:
    """Heal ``in`` into ``out`` (a real process, with the info log); the inputs skipped, and what `my_msg` became."""
    done = run_replay("--log-level", "info", "heal", "--in", "in", "--out", "out", *flags, cwd=tmp_path, process=True,
                      timeout=60)
    assert done.returncode == 0, done.stderr
    ended = [json.loads(line) for line in done.stderr.splitlines() if b'"skipped"' in line]
    healed = [json.loads(line) for line in (tmp_path / "out" / "a.healed.jsonl").read_text().splitlines()]
    return ended[-1]["skipped"], healed[1]["type"]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text(JOURNAL)
    return tmp_path


def test_the_rules_file_edited_in_place_heals_again(folder: Path) -> None:
    (folder / "rules.json").write_text(rules("user_message"))
    assert heal(folder, "--rules", "rules.json") == (0, "user_message")
    assert heal(folder, "--rules", "rules.json") == (1, "user_message")  # nothing changed: reused
    (folder / "rules.json").write_text(rules("assistant_message"))  # the same path, other rules
    assert heal(folder, "--rules", "rules.json") == (0, "assistant_message")
    filtered = run_replay("heal", "--rules", "rules.json", "in/a.jsonl", cwd=folder, process=True, timeout=60)
    assert b'"type":"assistant_message"' in filtered.stdout  # as filter mode heals it with the same rules


def test_the_default_rules_file_added_edited_or_removed_heals_again(folder: Path) -> None:
    assert heal(folder) == (0, "my_msg")
    (folder / ".replay").mkdir()
    default = folder / ".replay" / "heal.rules.json"
    default.write_text(rules("user_message"))  # added
    assert heal(folder) == (0, "user_message")
    assert heal(folder) == (1, "user_message")
    default.write_text(rules("assistant_message"))  # edited
    assert heal(folder) == (0, "assistant_message")
    default.unlink()  # removed
    assert heal(folder) == (0, "my_msg")
