"""The stage registry: built-ins, third-party stages from the `replay.stages` entry points (for real)."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from conftest import errors_of, jsonl, run_replay
from plugin_support import make_plugin

from replay.pipeline.engine.config import graph_from_config
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.registry import Registry, builtin_names
from replay.pipeline.engine.stage import Stage
from replay.stages.select import SelectEvents


# built-ins ---------------------------------------------------------------------------------
def test_core_stages_are_registered():
    registry = Registry(plugins=False)
    for name in ("read", "parse", "select", "write"):
        assert name in registry.names()
    assert registry.get("select") is SelectEvents


def test_each_stage_module_registers_the_type_it_is_named_after():
    registry = Registry(plugins=False)
    for name in builtin_names():
        cls = registry.get(name)
        assert cls.name == name and cls.__module__ == f"replay.stages.{name}"


def test_every_registered_stage_loads_and_describes_itself():
    registry = Registry(plugins=False)
    described = registry.describe_all()
    assert registry.problems == []
    assert [d["type"] for d in described] == registry.names()
    for d in described:
        assert d["summary"], f"{d['type']} has no one-line summary"
        assert "\n" not in d["summary"]
        assert d["kind"] in ("source", "transform", "sink", "composite")
        for option in d["options"].values():
            assert option["help"] and option["type"]


def test_an_unknown_stage_type_lists_the_known_ones():
    with pytest.raises(ReplayError) as info:
        Registry(plugins=False).get("nope", path="stages.x.type")
    body = info.value.body
    assert body["code"] == "E_CONFIG_STAGE_TYPE_UNKNOWN" and body["path"] == "stages.x.type"
    assert "select" in body["expected"]


# third-party stages, in this process ---------------------------------------------------------
def test_a_plugin_stage_is_found_through_its_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(make_plugin(tmp_path, {"upper": "replay_upper_plugin:UpperTypes"})))
    registry = Registry()
    cls = registry.get("upper")
    assert issubclass(cls, Stage) and cls.name == "upper"  # the entry point's name becomes the type
    assert "upper" in registry.names()


def test_a_plugin_cannot_shadow_a_builtin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(make_plugin(tmp_path, {"select": "replay_upper_plugin:UpperTypes"})))
    registry = Registry()
    assert registry.get("select") is SelectEvents
    [problem] = registry.problems
    assert problem["code"] == "E_STAGE_LOAD_FAILED" and "shadow" in problem["message"]


def test_a_plugin_that_is_not_a_stage_fails_to_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(make_plugin(tmp_path, {"odd": "replay_upper_plugin:NotAStage"})))
    with pytest.raises(ReplayError) as info:
        Registry().get("odd", path="chain[0].type")
    assert info.value.code == "E_STAGE_LOAD_FAILED" and info.value.body["path"] == "chain[0].type"


def test_a_plugin_that_cannot_be_imported_is_reported_not_fatal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(make_plugin(tmp_path, {"broken": "replay_missing_module:Thing"})))
    registry = Registry()
    names = [d["type"] for d in registry.describe_all()]
    assert "broken" not in names and "select" in names
    assert [p["code"] for p in registry.problems] == ["E_STAGE_LOAD_FAILED"]


# third-party stages, for real: a subprocess that finds the plugin on PYTHONPATH ------------------
def test_replay_stages_lists_a_plugin_and_replay_run_uses_it(tmp_path: Path):
    plugin_dir = make_plugin(tmp_path / "site", {"upper": "replay_upper_plugin:UpperTypes"})
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(plugin_dir), os.environ.get("PYTHONPATH")]))}

    listed = run_replay("stages", "--json", env=env, process=True)
    assert listed.returncode == 0, listed.stderr
    described = {d["type"]: d for d in orjson.loads(listed.stdout)}
    assert described["upper"]["summary"] == "Upper-case every event type (a plugin for tests)."
    assert described["upper"]["options"]["suffix"]["type"] == "str"
    assert "select" in described

    human = run_replay("stages", env=env, process=True)
    assert b"upper" in human.stdout and b"Upper-case every event type" in human.stdout

    journal = tmp_path / "run.jsonl"
    journal.write_bytes(b'{"seq":1,"type":"tool_called"}\n{"seq":2,"type":"user_message"}\n')
    config = tmp_path / "upper.toml"
    config.write_text('chain = [{ type = "upper", suffix = "!" }]\n')
    ran = run_replay("run", str(config), str(journal), env=env, process=True)
    assert ran.returncode == 0, ran.stderr
    assert [e["type"] for e in jsonl(ran.stdout)] == ["TOOL_CALLED!", "USER_MESSAGE!"]


def test_replay_run_refuses_a_plugin_that_fails_to_load(tmp_path: Path):
    plugin_dir = make_plugin(tmp_path / "site", {"broken": "replay_missing_module:Thing"})
    config = tmp_path / "p.toml"
    config.write_text('[stages.read]\ntype = "read"\n[stages.b]\ntype = "broken"\ninputs = ["read"]\n')
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(plugin_dir), os.environ.get("PYTHONPATH")]))}
    ran = run_replay("run", str(config), env=env, input=b"", process=True)
    assert ran.returncode == 2
    [error] = errors_of(ran.stderr)
    assert error["code"] == "E_STAGE_LOAD_FAILED" and error["path"] == "stages.b.type"
    assert ran.stdout == b""


def test_a_plugin_option_may_be_a_union_and_one_of_no_type_is_the_plugin_s_fault_not_the_listing_s(tmp_path: Path):
    """`Option(int | None, ...)` crashed `replay stages` (E_UNHANDLED, nothing listed), and so did an option whose
    type is no type; now the union is a type like a tuple of types, and the other plugin is reported, not fatal."""
    plugin_dir = make_plugin(tmp_path / "site", {"limited": "replay_upper_plugin:Limited",
                                                 "badopt": "replay_upper_plugin:BadOption"})
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(plugin_dir), os.environ.get("PYTHONPATH")]))}
    listed = run_replay("stages", "--json", env=env, process=True)
    assert listed.returncode == 0, listed.stderr
    described = {d["type"]: d for d in orjson.loads(listed.stdout)}
    assert described["limited"]["options"]["limit"]["type"] == "int|None" and "select" in described
    assert "badopt" not in described
    [problem] = errors_of(listed.stderr)
    assert problem["code"] == "E_STAGE_LOAD_FAILED" and "'level'" in problem["message"]

    config = tmp_path / "p.toml"
    config.write_text('chain = [{ type = "limited", limit = 2 }]\n')
    ran = run_replay("run", str(config), env=env, input=b'{"type":"a"}\n{"type":"b"}\n{"type":"c"}\n', process=True)
    assert ran.returncode == 0, ran.stderr
    assert [e["type"] for e in jsonl(ran.stdout)] == ["a", "b"]
    config.write_text('chain = [{ type = "limited", limit = "two" }]\n')
    refused = run_replay("run", str(config), env=env, input=b"", process=True)
    assert refused.returncode == 2 and errors_of(refused.stderr)[0]["code"] == "E_CONFIG_OPTION_INVALID"
    config.write_text('chain = [{ type = "badopt", level = 2 }]\n')
    refused = run_replay("run", str(config), env=env, input=b"", process=True)
    assert refused.returncode == 2
    [error] = errors_of(refused.stderr)
    assert error["code"] == "E_STAGE_LOAD_FAILED" and error["path"] == "chain[0].type"


def test_a_plugin_option_whose_default_is_not_of_its_type_is_the_plugin_s_fault(tmp_path: Path):
    """`Option(int, "x")`: reported when the plugin loads (E_STAGE_LOAD_FAILED naming the option), not taken as a
    number that is a string by every config that leaves it out."""
    plugin_dir = make_plugin(tmp_path / "site", {"baddefault": "replay_upper_plugin:BadDefault"})
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(plugin_dir), os.environ.get("PYTHONPATH")]))}
    listed = run_replay("stages", "--json", env=env, process=True)
    assert listed.returncode == 0 and "baddefault" not in {d["type"] for d in orjson.loads(listed.stdout)}
    [problem] = errors_of(listed.stderr)
    assert problem["code"] == "E_STAGE_LOAD_FAILED" and "'depth'" in problem["message"] and "'x'" in problem["message"]
    config = tmp_path / "p.toml"
    config.write_text('chain = [{ type = "baddefault" }]\n')
    refused = run_replay("run", str(config), env=env, input=b"", process=True)
    assert refused.returncode == 2 and errors_of(refused.stderr)[0]["code"] == "E_STAGE_LOAD_FAILED"


def test_a_plugin_that_extends_a_builtin_stage_goes_by_its_own_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """It inherited the built-in's `name`: its errors named `select`, a type the config never mentioned."""
    monkeypatch.syspath_prepend(str(make_plugin(tmp_path, {"tools_only": "replay_upper_plugin:ToolsOnly"})))
    registry = Registry()
    assert registry.get("tools_only").name == "tools_only" and SelectEvents.name == "select"
    with pytest.raises(ReplayError) as info:
        graph_from_config({"chain": [{"type": "tools_only", "typo": 1}]}, registry=registry)
    assert info.value.code == "E_CONFIG_OPTION_UNKNOWN" and "'tools_only'" in info.value.body["message"]
    assert list(graph_from_config({"chain": [{"type": "tools_only"}]}, registry=registry).nodes) == [
        "read", "parse", "dialect", "tools_only", "write"]


def test_a_plugin_named_with_a_dot_can_be_used_in_a_chain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An entry point may be named `acme.upper`; a chain item without an id was given that name as its id,
    and refused (E_CONFIG_SHAPE_INVALID at `stages.acme.upper`, a key the config does not have)."""
    monkeypatch.syspath_prepend(str(make_plugin(tmp_path, {"acme.upper": "replay_upper_plugin:UpperTypes"})))
    graph = graph_from_config({"chain": [{"type": "acme.upper"}, {"type": "acme.upper"}]}, registry=Registry())
    assert list(graph.nodes) == ["read", "parse", "dialect", "acme_upper", "acme_upper_2", "write"]


UNDESCRIBABLE = '''
from replay.pipeline.engine.stage import Option, Transform


class DescribeRaises(Transform):
    summary = "Its description raises."

    @classmethod
    def describe(cls):
        raise RuntimeError("describe kaboom")

    def __call__(self, batch):
        return batch


class SetDefault(Transform):
    summary = "An option whose default JSON cannot write."
    options = {"tags": Option(set, frozenset({"a"}), "tags")}

    def __call__(self, batch):
        return batch
'''


@pytest.mark.parametrize("flag", [[], ["--json"]], ids=["text", "json"])
def test_a_plugin_that_cannot_be_described_is_reported_and_the_others_listed(tmp_path: Path, flag: list[str]):
    """A plugin whose describe() raises, or whose option's default JSON cannot write, is an E_STAGE_LOAD_FAILED problem
    naming it on stderr, and every other stage is listed (it was E_UNHANDLED, exit 1, nothing listed)."""
    plugin_dir = make_plugin(tmp_path / "site", {"describes": "replay_upper_plugin:DescribeRaises",
                                                 "setdefault": "replay_upper_plugin:SetDefault"}, module=UNDESCRIBABLE)
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(plugin_dir), os.environ.get("PYTHONPATH")]))}
    listed = run_replay("stages", *flag, env=env, process=True)
    assert listed.returncode == 0, listed.stderr
    problems = errors_of(listed.stderr)
    assert [(p["code"], p["received"]) for p in problems] == [
        ("E_STAGE_LOAD_FAILED", "replay_upper_plugin:DescribeRaises"), ("E_STAGE_LOAD_FAILED", "replay_upper_plugin:SetDefault")]
    assert "describe kaboom" in problems[0]["message"] and "set" in problems[1]["message"]
    assert b"select" in listed.stdout and b"describes" not in listed.stdout and b"setdefault" not in listed.stdout
