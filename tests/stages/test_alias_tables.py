"""User alias tables: a chain resolves to its end; a circle, or an alias renaming a canonical type, is refused up front."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_replay

from replay.pipeline.engine.errors import ReplayError
from replay.stages.alias import AliasEventTypes

JOURNAL = b"".join(json.dumps(e).encode() + b"\n" for e in [
    {"seq": 1, "timestamp": "2026-03-01T12:00:00Z", "type": "run_started", "runId": "r1", "payload": {}},
    {"seq": 2, "timestamp": "2026-03-01T12:00:01Z", "type": "tool_called", "runId": "r1", "payload": {"callId": "c1"}},
    {"seq": 3, "timestamp": "2026-03-01T12:00:01Z", "type": "my_end", "runId": "r1", "payload": {"callId": "c1"}},
    {"seq": 4, "timestamp": "2026-03-01T12:00:03Z", "type": "run_completed", "runId": "r1", "payload": {}},
])


def _heal(tmp_path: Path, aliases: dict) -> tuple[int, list, dict | None]:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"version": "v1", "eventAliases": aliases}))
    proc = run_replay("heal", "--rules", str(rules), "-", input=JOURNAL)
    out = [json.loads(line) for line in proc.stdout.splitlines()]
    return proc.returncode, [e["type"] for e in out if "$record" not in e], json.loads(proc.stderr)["error"] if proc.stderr else None


@pytest.mark.parametrize("renamed", [{"run_completed": "done"}, {"tool_completed": "tool_failed"}])
def test_a_rules_alias_renaming_a_canonical_type_is_refused(tmp_path: Path, renamed: dict) -> None:
    code, types, error = _heal(tmp_path, {"x": "y", **renamed})
    assert (code, types) == (2, [])
    (old, new), = renamed.items()
    assert error is not None and error["code"] == "E_HEAL_RULES_SHAPE_INVALID"
    assert error["path"] == f"$.eventAliases.{old}" and error["received"] == new and error["source"].endswith("rules.json")
    assert "howToFix" in error


def test_a_chain_resolves_to_its_end_and_a_circle_is_refused(tmp_path: Path) -> None:
    code, types, _ = _heal(tmp_path, {"my_end": "my_done", "my_done": "tool_end"})  # -> tool_end -> tool_completed
    assert (code, types) == (0, ["run_started", "tool_called", "tool_completed", "run_completed"])
    code, types, error = _heal(tmp_path, {"my_end": "other", "other": "my_end"})
    assert (code, types, error["code"], error["path"]) == (2, [], "E_HEAL_RULES_SHAPE_INVALID", "$.eventAliases.my_end")


def test_the_alias_stage_refuses_an_option_renaming_a_canonical_type() -> None:
    with pytest.raises(ReplayError) as caught:
        AliasEventTypes(aliases={"run_completed": "done"})
    assert caught.value.code == "E_CONFIG_OPTION_INVALID"
    assert caught.value.body["path"] == "aliases.run_completed"
    AliasEventTypes(aliases={"run_completed": "run_completed", "my_end": "tool_end"})  # (to itself, or a chain: fine)


@pytest.mark.parametrize("old", ["tool_unanswered", "error", "user_message"])
def test_every_canonical_type_is_protected_not_only_those_a_builtin_alias_ends_at(tmp_path: Path, old: str) -> None:
    """`{"tool_unanswered": "done"}` was accepted (the protected set was the built-in aliases' targets) while
    `{"run_completed": "done"}` was refused: every canonical type is protected, in a rules file and as an option."""
    code, types, error = _heal(tmp_path, {old: "done"})
    assert (code, types) == (2, []) and error is not None, error
    assert (error["code"], error["path"]) == ("E_HEAL_RULES_SHAPE_INVALID", f"$.eventAliases.{old}")
    with pytest.raises(ReplayError) as caught:
        AliasEventTypes(aliases={old: "done"})
    assert (caught.value.code, caught.value.body["path"]) == ("E_CONFIG_OPTION_INVALID", f"aliases.{old}")


def test_both_refusals_of_a_renamed_canonical_type_say_the_same() -> None:
    """The rules file's and the alias option's refusals were two copies of one text: one helper words both."""
    from replay.pipeline.model.healing import refuse_renamed_canonical

    with pytest.raises(ReplayError) as caught:
        refuse_renamed_canonical({"run_completed": "done"}, "E_CONFIG_OPTION_INVALID", "aliases")
    with pytest.raises(ReplayError) as option:
        AliasEventTypes(aliases={"run_completed": "done"})
    assert option.value.body == caught.value.body
