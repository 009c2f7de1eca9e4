"""Every action a heal stage can log is in ``repairs.ACTIONS`` and in the heal-log schema's enum, and those two are one
list: ensure_run_started logged `moved`, which neither had, so the heal log heal wrote failed `replay schema heal-log`
(found by a tester). The stages' actions are collected from their code, so a new one cannot drift again."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from conftest import ROOT

from replay.pipeline.model.repairs import ACTIONS

# Where an entry's action is written: ``log_repair(stage, rule, ACTION, ...)``, ``repair_entry(rule, ACTION, ...)``,
# a rule stage's ``self.repair(ACTION, ...)``, and a dict literal with a "rule" or "code" beside its "action".
CALLS = {"log_repair": 2, "repair_entry": 1, "repair": 0}
# The helpers that pass an action given to them on: no action of their own.
PASSED_ON = {("pipeline/model/runs.py", "action"), ("pipeline/model/repairs.py", "action")}


def _modules() -> list[Path]:
    return sorted([*(ROOT / "stages").glob("*.py"), *(ROOT / "pipeline").rglob("*.py")])


def _constants(trees: dict[Path, ast.Module]) -> dict[str, set[str]]:
    """Every module-level ``NAME = "text"``, by name (``REPORTED``, imported where it is used)."""
    found: dict[str, set[str]] = {}
    for tree in trees.values():
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found.setdefault(target.id, set()).add(node.value.value)
    return found


def _values(node: ast.expr, constants: dict[str, set[str]]) -> set[str] | str:
    """The strings ``node`` can be, or the name it passes on (a parameter, a variable)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        body, orelse = _values(node.body, constants), _values(node.orelse, constants)
        assert isinstance(body, set) and isinstance(orelse, set), ast.unparse(node)
        return body | orelse
    if isinstance(node, ast.Name):
        return constants.get(node.id, node.id)
    raise AssertionError(f"an action written as {ast.unparse(node)!r}: teach this test to read it")


def _action_sites(tree: ast.Module) -> list[ast.expr]:
    sites = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else \
                node.func.attr if isinstance(node.func, ast.Attribute) else None
            at = CALLS.get(name or "")
            if at is not None and (at > 0 or isinstance(node.func, ast.Attribute)) and len(node.args) > at:
                sites.append(node.args[at])
        elif isinstance(node, ast.Dict):
            keys = {k.value: v for k, v in zip(node.keys, node.values, strict=True)
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            if "action" in keys and ("rule" in keys or "code" in keys):
                sites.append(keys["action"])
    return sites


def logged_actions() -> set[str]:
    trees = {path: ast.parse(path.read_text(), str(path)) for path in _modules()}
    constants = _constants(trees)
    actions: set[str] = set()
    passed_on: set[tuple[str, str]] = set()
    for path, tree in trees.items():
        for site in _action_sites(tree):
            values = _values(site, constants)
            if isinstance(values, str):
                passed_on.add((path.relative_to(ROOT).as_posix(), values))
            else:
                actions |= values
    assert passed_on <= PASSED_ON, f"an action this test cannot read: {sorted(passed_on - PASSED_ON)}"
    return actions


def test_every_action_the_stages_log_is_one_the_schema_and_actions_allow():
    actions = logged_actions()
    assert {"moved", "inserted", "dropped", "renumbered", "changed", "reported"} <= actions  # (the scan finds them)
    assert actions <= set(ACTIONS), sorted(actions - set(ACTIONS))
    schema = json.loads((ROOT / "schemas" / "heal-log.schema.json").read_text())
    assert list(ACTIONS) == schema["$defs"]["repair"]["properties"]["action"]["enum"]
