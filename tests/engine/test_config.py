"""Pipeline configs (TOML and JSON): shapes, the chain shorthand, and refusals that name the bad key."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import ROOT, errors_of, run_replay

from replay.pipeline.engine.config import graph_from_config, load_pipeline, read_config_file
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.registry import Registry
from replay.stages.dialect import MapDialect
from replay.stages.parse import ParseLines
from replay.stages.read import ReadJournal
from replay.stages.select import SelectEvents
from replay.stages.write import WriteJsonl

EXAMPLES = ROOT / "examples" / "pipelines"

GRAPH = {
    "stages": {
        "read": {"type": "read"},
        "parse": {"type": "parse", "inputs": ["read"], "route_errors": True},
        "tools": {"type": "select", "inputs": ["parse"], "types": ["tool_*"]},
        "out": {"type": "write", "inputs": ["tools"]},
        "dead": {"type": "write", "inputs": ["parse.errors"], "path": "dead.jsonl"},
    }
}


def refused(doc: dict, **kw) -> dict:
    with pytest.raises(ReplayError) as info:
        graph_from_config(doc, registry=Registry(plugins=False), **kw)
    assert info.value.exit_code == 2
    return info.value.body


def with_stage(stage_id: str, **changes) -> dict:
    doc = orjson.loads(orjson.dumps(GRAPH))
    doc["stages"][stage_id].update(changes)
    return doc


# building ----------------------------------------------------------------------------------
def test_stages_tables_build_the_declared_graph():
    graph = graph_from_config(GRAPH, paths=["a.jsonl"])
    assert list(graph.nodes) == ["read", "parse", "tools", "out", "dead"]
    assert graph.nodes["parse"].route_errors
    assert graph.nodes["tools"].stage.config["types"] == ["tool_*"]
    assert graph.nodes["dead"].stage.config["path"] == "dead.jsonl"
    assert graph.nodes["read"].stage.config["paths"] == ["a.jsonl"]  # the command line's PATHs


def test_a_read_stage_with_its_own_paths_keeps_them():
    doc = with_stage("read", paths=["fixed.jsonl"])
    graph = graph_from_config(doc)
    assert graph.nodes["read"].stage.config["paths"] == ["fixed.jsonl"]


@pytest.mark.parametrize("doc, path", [
    (with_stage("read", paths=["fixed.jsonl"]), "stages.read.paths"),
    ({"chain": [{"type": "read", "paths": ["fixed.jsonl"]}, "parse"]}, "chain[0].paths"),
])
def test_arguments_no_stage_takes_are_refused_not_ignored(doc: dict, path: str):
    """The config set the option the arguments would fill: run as it was, the files named were never read
    (and with --workers the config's own input was read once per argument)."""
    with pytest.raises(ReplayError) as info:
        graph_from_config(doc, paths=["cli.jsonl", "more.jsonl"])
    body = info.value.body
    assert body["code"] == "E_USAGE_INVALID" and body["path"] == path
    assert body["received"] == ["cli.jsonl", "more.jsonl"]


def test_a_chain_gets_read_parse_dialect_and_write_around_it():
    graph = graph_from_config({"chain": [{"type": "select", "types": ["tool_*"]}]})
    stages = [n.stage for n in graph.nodes.values()]
    assert [type(s) for s in stages] == [ReadJournal, ParseLines, MapDialect, SelectEvents, WriteJsonl]
    assert [n.inputs for n in graph.nodes.values()] == [[], ["read"], ["parse"], ["dialect"], ["select"]]


@pytest.mark.parametrize(("chain", "nodes"), [
    (["parse", "select"], ["read", "parse", "select", "write"]),  # (its own parse: the front is the chain's)
    (["dialect", "select"], ["read", "parse", "dialect", "select", "write"]),  # (not mapped twice)
    (["select", {"type": "dialect", "dialect": "codex"}], ["read", "parse", "select", "dialect", "write"]),
    (["undialect"], ["read", "parse", "undialect", "write"]),  # (a chain that writes a log back as it was)
])
def test_a_chain_that_maps_logs_itself_gets_no_dialect_added(chain, nodes):
    assert list(graph_from_config({"chain": chain}).nodes) == nodes


def test_a_chain_of_names_and_ids():
    graph = graph_from_config({"chain": ["parse", {"type": "select", "id": "only_tools", "types": ["tool_*"]}, "write"]})
    assert list(graph.nodes) == ["read", "parse", "only_tools", "write"]


def test_a_complete_chain_is_taken_as_written():
    graph = graph_from_config({"chain": [{"type": "read", "paths": ["x.jsonl"]}, "parse", "write"]})
    assert list(graph.nodes) == ["read", "parse", "write"]


def test_a_chain_of_lines_to_write_is_the_read_graph():
    # (write takes raw lines: they were written unchecked, a bad line as data; now as `replay read` has it)
    graph = graph_from_config({"chain": [{"type": "read", "paths": ["x.jsonl"], "id": "src"}, "write"]})
    assert {n.id: (n.stage.name, n.inputs) for n in graph.nodes.values()} == {
        "src": ("read", []), "parse": ("check_lines", ["src"]), "write": ("write", ["parse"]),
        "notices": ("log", ["src.notices"])}
    assert graph.nodes["src"].stage.config["mark_dropped"] is True  # (read.toml's options for read, under the chain's)


def test_toml_and_json_configs_build_the_same_graph(tmp_path: Path):
    toml = tmp_path / "p.toml"
    toml.write_text('description = "x"\nchain = [{ type = "select", types = ["user_*"] }]\n')
    js = tmp_path / "p.json"
    js.write_bytes(orjson.dumps({"description": "x", "chain": [{"type": "select", "types": ["user_*"]}]}))
    a, b = load_pipeline(str(toml)), load_pipeline(str(js))
    assert list(a.nodes) == list(b.nodes)
    assert a.nodes["select"].stage.config == b.nodes["select"].stage.config


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.iterdir() if p.suffix in (".toml", ".json")))
def test_every_example_pipeline_builds(name: str):
    graph = load_pipeline(str(EXAMPLES / name))  # (nats-heal.toml names its source: it takes no PATHs)
    assert graph.nodes


def test_there_are_stages_and_chain_examples():
    docs = [read_config_file(str(p)) for p in EXAMPLES.iterdir() if p.suffix in (".toml", ".json")]
    assert any("stages" in d for d in docs) and any("chain" in d for d in docs)
    dead_letter = [d for d in docs if "stages" in d and any(s.get("route_errors") for s in d["stages"].values())]
    assert dead_letter and any(s.get("type") == "write" and s.get("path") for d in dead_letter for s in d["stages"].values())


# file-level refusals -------------------------------------------------------------------------
def test_a_missing_config_file(tmp_path: Path):
    with pytest.raises(ReplayError) as info:
        read_config_file(str(tmp_path / "nope.toml"))
    assert info.value.code == "E_CONFIG_NOT_FOUND"


def test_toml_syntax_errors_carry_line_and_column(tmp_path: Path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[stages.read]\ntype = "read"\ninputs = [\n  "x",\n  oops\n]\n')
    with pytest.raises(ReplayError) as info:
        read_config_file(str(bad))
    body = info.value.body
    assert body["code"] == "E_CONFIG_PARSE" and body["line"] == 5 and body["column"] >= 1


def test_json_syntax_errors_carry_line_and_column(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "chain": [\n    "parse",,\n  ]\n}\n')
    with pytest.raises(ReplayError) as info:
        read_config_file(str(bad))
    assert info.value.body["line"] == 3


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
@pytest.mark.parametrize(("text", "path", "line"), [
    (b'{"chain":[{"type":"select","types":["x"],"types":["y"]}]}', "chain[0].types", 1),
    (b'{"chain":["parse",\n  {"type":"select","types":["x"],\n   "types":["y"]}]}', "chain[1].types", 3),
    (b'{"chain": ["parse"],\n "chain": ["write"]}', "chain", 2),
    (b'{"stages": {"a": {"type": "read"}, "a": {"type": "parse"}}}', "stages.a", 1),
])
def test_a_key_written_twice_in_a_json_config_is_refused_where_it_is(tmp_path: Path, bom: bytes, text: bytes,
                                                                     path: str, line: int):
    """Accepted before, the last value winning without a word, while TOML refuses a key written twice (E_CONFIG_PARSE
    at the second): a config is a program, and the other value may be the one meant."""
    data = bom + text
    config = tmp_path / "p.json"
    config.write_bytes(data)
    with pytest.raises(ReplayError) as info:
        read_config_file(str(config))
    body = info.value.body
    assert body["code"] == "E_CONFIG_PARSE" and body["path"] == path and body["line"] == line, body
    key = path.rsplit(".", 1)[-1].encode()
    at = body["offset"] + body["column"] - 1  # the second time the key is written, in the file
    assert data[at:].startswith(b'"' + key + b'"') and data[:at].count(b'"' + key + b'"') == 1, body


def test_a_key_written_twice_in_a_json_config_stops_run_before_output(tmp_path: Path):
    (tmp_path / "p.json").write_text('{"chain":[{"type":"select","types":["x"],"types":["y"]}]}')
    proc = run_replay("run", "p.json", str(ROOT / "examples" / "journals" / "two-runs.jsonl"), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == b"", proc.stderr
    (error,) = errors_of(proc.stderr)
    assert error["code"] == "E_CONFIG_PARSE" and error["path"] == "chain[0].types" and error["howToFix"], error


def test_a_json_config_must_be_an_object(tmp_path: Path):
    bad = tmp_path / "list.json"
    bad.write_text('["parse"]')
    with pytest.raises(ReplayError) as info:
        read_config_file(str(bad))
    assert info.value.code == "E_CONFIG_SHAPE_INVALID"


def test_a_toml_config_that_is_not_utf8(tmp_path: Path):
    bad = tmp_path / "latin.toml"
    bad.write_bytes(b'description = "caf\xe9"\n')
    with pytest.raises(ReplayError) as info:
        read_config_file(str(bad))
    assert info.value.code == "E_CONFIG_PARSE"


@pytest.mark.parametrize("name", ["p.toml", "p.json"])
def test_a_config_a_windows_editor_saved_with_a_byte_order_mark_is_read(tmp_path: Path, name: str):
    """Refused before (E_CONFIG_PARSE "Invalid statement" at line 1, column 1), while `read` skips one before a journal."""
    config = tmp_path / name
    text = '{"chain": ["parse"]}' if name.endswith(".json") else 'chain = ["parse"]\n'
    config.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert read_config_file(str(config)) == {"chain": ["parse"]}


def test_a_json_config_is_known_by_its_suffix_in_any_case(tmp_path: Path):
    """`P.JSON` was parsed as TOML: E_CONFIG_PARSE "Invalid statement" for a valid JSON config."""
    config = tmp_path / "P.JSON"
    config.write_text('{"chain": ["parse"]}')
    assert read_config_file(str(config)) == {"chain": ["parse"]}


# shape refusals ------------------------------------------------------------------------------
@pytest.mark.parametrize(("doc", "path"), [
    ({"stages": {}, "chain": ["parse"]}, "$"),
    ({}, "$"),
    ({"stage": {}}, "stage"),
    ({"stages": []}, "stages"),
    ({"stages": {"read": "read"}}, "stages.read"),
    ({"chain": []}, "chain"),
    ({"chain": [3]}, "chain[0]"),
    ({"chain": [{"type": "select", "inputs": ["x"]}]}, "chain[0].inputs"),
    ({"stages": {"read": {"kind": "read"}}}, "stages.read.type"),
])
def test_wrong_shapes_are_refused_naming_the_key(doc: dict, path: str):
    body = refused(doc)
    assert body["code"] == "E_CONFIG_SHAPE_INVALID"
    assert body["path"] == path


@pytest.mark.parametrize("description", [5, True, ["tools"], {"text": "tools"}])
def test_a_description_that_is_not_a_string_is_refused(description: object):
    """`description = 5` was accepted (nothing reads it as a number: a slip, like any option of the wrong type)."""
    body = refused({"description": description, "chain": ["parse"]})
    assert body["code"] == "E_CONFIG_SHAPE_INVALID" and body["path"] == "description", body
    assert body["expected"] == "a string" and body["received"] == (description if isinstance(description, int)
                                                                    else orjson.dumps(description).decode())


def test_a_string_description_is_taken():
    graph_from_config({"description": "tools only", "chain": ["parse"]}, registry=Registry(plugins=False))


@pytest.mark.parametrize(("value", "received"), [
    (float("inf"), "inf"), (float("-inf"), "-inf"), (float("nan"), "nan"), ([float("inf")], '["inf"]'),
])
def test_an_inf_or_nan_option_is_received_as_the_config_wrote_it(value: object, received: str):
    """TOML has inf and nan, JSON none: `max_lines = inf` was refused with "received": null."""
    stage = {"type": "select", "types": value} if isinstance(value, list) else {"type": "read", "max_line_bytes": value}
    body = refused({"chain": [stage]})
    assert body["code"] == "E_CONFIG_OPTION_INVALID" and body["received"] == received, body


def test_max_lines_inf_in_a_toml_config_is_refused_showing_inf(tmp_path: Path):
    (tmp_path / "p.toml").write_text('chain = ["parse", {type = "join_split_records", max_lines = inf}]\n')
    proc = run_replay("run", "p.toml", str(ROOT / "examples" / "journals" / "two-runs.jsonl"), cwd=tmp_path)
    (error,) = errors_of(proc.stderr)
    assert proc.returncode == 2 and error["path"] == "chain[1].max_lines" and error["received"] == "inf", error


def test_an_unknown_stage_type():
    body = refused(with_stage("tools", type="selekt"))
    assert body["code"] == "E_CONFIG_STAGE_TYPE_UNKNOWN"
    assert body["path"] == "stages.tools.type"
    assert body["received"] == "selekt" and "select" in body["expected"]


def test_an_unknown_stage_type_in_a_chain():
    body = refused({"chain": ["parse", "nope"]})
    assert body["code"] == "E_CONFIG_STAGE_TYPE_UNKNOWN" and body["path"] == "chain[1].type"


def test_an_unknown_option():
    body = refused(with_stage("tools", typs=["x"]))
    assert body["code"] == "E_CONFIG_OPTION_UNKNOWN"
    assert body["path"] == "stages.tools.typs"
    assert "types" in body["expected"]


@pytest.mark.parametrize(("stage", "key", "value"), [
    ("tools", "types", "tool_*"),
    ("tools", "types", [1, 2]),
    ("tools", "keep_run_records", "yes"),
    ("read", "max_line_bytes", True),
    ("read", "max_line_bytes", 1.5),
    ("parse", "torn_tail", "ignore"),
    ("dead", "path", 7),
])
def test_an_option_of_the_wrong_type_or_value(stage: str, key: str, value):
    body = refused(with_stage(stage, **{key: value}))
    assert body["code"] == "E_CONFIG_OPTION_INVALID"
    assert body["path"] == f"stages.{stage}.{key}"


@pytest.mark.parametrize(("stage", "key", "value", "least"), [
    ("read", "max_line_bytes", 0, "int >= 1"),  # `--max-line-bytes 0` is refused; every line was dropped
    ("read", "max_line_bytes", -1, "int >= 1"),
    ("read", "poll_seconds", -1.0, "float >= 0.001"),  # `--follow` would poll without pause
    ("read", "poll_seconds", float("nan"), "float >= 0.001"),
    ("read", "poll_seconds", float("inf"), "a finite float"),  # `--follow` would never look again
    ("read_nats", "idle_seconds", float("inf"), "a finite float"),  # (0 says never)
    ("read", "end_offset", -5, "int >= 0"),
    ("join_split_records", "max_lines", -3, "int >= 1"),  # joined nothing, silently
    ("load_incident", "max_events", 0, "int >= 1"),
    ("spawn", "timeout_ms", -1, "int >= 1"),
])
def test_a_number_below_what_its_command_flag_allows_is_refused(stage: str, key: str, value, least: str):
    body = refused({"chain": [{"type": stage, key: value}, "write"]})
    assert body["code"] == "E_CONFIG_OPTION_INVALID" and body["expected"] == least
    assert body["path"] == f"chain[0].{key}"
    assert graph_from_config({"chain": [{"type": "read", "max_line_bytes": 1, "end_offset": 0}, "parse"]}).nodes


def test_an_integer_is_accepted_where_a_float_is_expected():
    graph = graph_from_config(with_stage("read", poll_seconds=1))
    assert graph.nodes["read"].stage.config["poll_seconds"] == 1


def test_inputs_must_be_a_list_of_names():
    body = refused(with_stage("tools", inputs="parse"))
    assert body["code"] == "E_CONFIG_INPUT_UNKNOWN" and body["path"] == "stages.tools.inputs"


def test_route_errors_must_be_a_boolean():
    body = refused(with_stage("parse", route_errors="yes"))
    assert body["code"] == "E_CONFIG_OPTION_INVALID" and body["path"] == "stages.parse.route_errors"


def test_an_unknown_input():
    body = refused(with_stage("out", inputs=["tool"]))
    assert body["code"] == "E_CONFIG_INPUT_UNKNOWN" and body["path"] == "stages.out.inputs[0]"


def test_a_cycle():
    doc = with_stage("tools", inputs=["parse", "again"])
    doc["stages"]["again"] = {"type": "select", "inputs": ["tools"]}
    doc["stages"]["out2"] = {"type": "write", "inputs": ["again"]}
    assert refused(doc)["code"] == "E_CONFIG_CYCLE"


def test_routed_errors_that_nobody_consumes():
    doc = orjson.loads(orjson.dumps(GRAPH))
    del doc["stages"]["dead"]
    body = refused(doc)
    assert body["code"] == "E_CONFIG_ERRORS_UNCONSUMED"
    assert body["path"] == "stages.parse.route_errors"


def test_a_composite_s_routed_errors_that_nobody_consumes_are_named_as_the_config_has_them():
    """The error named the first inner stage (`heal/fill_run_id`, at `stages.heal/fill_run_id.route_errors`): no key of
    the config, and its example wired that inner stage's errors only."""
    stages = {"read": {"type": "read"}, "parse": {"type": "parse", "inputs": ["read"]},
              "heal": {"type": "heal", "inputs": ["parse"], "route_errors": True}, "out": {"type": "write", "inputs": ["heal"]}}
    body = refused({"stages": stages})
    assert body["code"] == "E_CONFIG_ERRORS_UNCONSUMED" and body["path"] == "stages.heal.route_errors"
    assert 'inputs = ["heal.errors"]' in body["example"]
    for taken in ("heal.errors", "*.errors"):
        dead = {"type": "write", "path": "dead.jsonl", "inputs": [taken]}
        assert graph_from_config({"stages": {**stages, "dead": dead}}, registry=Registry(plugins=False)).nodes


def test_route_errors_on_a_stage_without_an_errors_port_is_refused_as_such():
    """It was refused as errors nobody consumes, with an example (inputs = ["w.errors"]) refused in turn: no such port."""
    body = refused({"stages": {"r": {"type": "read"}, "w": {"type": "write", "inputs": ["r"], "route_errors": True}}})
    assert body["code"] == "E_CONFIG_OPTION_INVALID" and body["path"] == "stages.w.route_errors"
    assert "no errors port" in body["message"] and "example" not in body


@pytest.mark.parametrize("stage, inputs", [("parse", ["read", "read"]), ("dead", ["parse.errors", "parse.errors"])])
def test_an_input_named_twice_is_refused(stage: str, inputs: list[str]):
    """It was taken twice: every event of the stream came out twice."""
    body = refused(with_stage(stage, inputs=inputs))
    assert body["code"] == "E_CONFIG_INPUTS_INVALID" and body["path"] == f"stages.{stage}.inputs[1]"


@pytest.mark.parametrize("inputs", [["parse.errors", "*.errors"], ["*.errors", "parse.errors"], ["pa*.errors", "*.errors"]])
def test_an_input_taken_twice_through_a_pattern_is_refused(inputs: list[str]):
    """`*.errors` names parse.errors too: with parse.errors beside it, every error came out twice."""
    body = refused(with_stage("dead", inputs=inputs))
    assert body["code"] == "E_CONFIG_INPUTS_INVALID" and body["path"] == "stages.dead.inputs[1]"
    assert "parse.errors" in body["message"] and body["received"] == inputs


def test_an_input_taken_twice_through_a_composite_s_port_is_refused():
    """`heal.repairs` stands for the repairs heal takes in (parse.repairs) and its own: with parse.repairs beside it,
    parse's repairs came out twice."""
    stages = {"read": {"type": "read"}, "parse": {"type": "parse", "inputs": ["read"], "torn_tail": "repair"},
              "heal": {"type": "heal", "inputs": ["parse", "parse.repairs"]}, "out": {"type": "write", "inputs": ["heal"]},
              "log": {"type": "write", "path": "log.jsonl", "inputs": ["heal.repairs", "parse.repairs"]}}
    body = refused({"stages": stages})
    assert body["code"] == "E_CONFIG_INPUTS_INVALID" and body["path"] == "stages.log.inputs[1]"
    assert "parse.repairs" in body["message"]
    stages["log"]["inputs"] = ["heal.repairs"]
    assert graph_from_config({"stages": stages}, registry=Registry(plugins=False)).nodes


def test_an_output_that_goes_nowhere():
    doc = orjson.loads(orjson.dumps(GRAPH))
    doc["stages"]["extra"] = {"type": "select", "inputs": ["parse"]}
    body = refused(doc)
    assert body["code"] == "E_CONFIG_OUTPUT_UNCONSUMED" and body["path"] == "stages.extra"


def test_a_select_straight_after_read_needs_a_parse():
    doc = {"stages": {"read": {"type": "read"}, "sel": {"type": "select", "inputs": ["read"]},
                      "out": {"type": "write", "inputs": ["sel"]}}}
    body = refused(doc)
    assert body["code"] == "E_CONFIG_INPUTS_INVALID" and "parse" in body["message"]


def test_a_stage_id_with_a_dot_is_refused():
    doc = {"stages": {"read": {"type": "read"}, "a.b": {"type": "write", "inputs": ["read"]}}}
    assert refused(doc)["code"] == "E_CONFIG_SHAPE_INVALID"


@pytest.mark.parametrize(("chain", "path"), [
    ('[{type = "select", id = 5}]', "chain[0].id"),
    ('[{type = "select", id = "a"}, {type = "select", id = "a"}]', "chain[1].id"),
])
def test_bad_chain_ids_are_config_errors(tmp_path, chain, path):
    config = tmp_path / "c.toml"
    config.write_text(f"chain = {chain}\n")
    proc = run_replay("run", str(config), input=b"")
    assert proc.returncode == 2
    error = errors_of(proc.stderr)[0]
    assert error["code"] == "E_CONFIG_SHAPE_INVALID" and error["path"] == path


def test_a_chain_id_may_take_a_name_the_added_stages_would_use(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('chain = [{type = "select", id = "read", types = ["a"]}]\n')
    proc = run_replay("run", str(config), input=b'{"type":"a"}\n{"type":"b"}\n')
    assert proc.returncode == 0 and proc.stdout == b'{"type":"a"}\n'


def test_table_options_check_their_values(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('chain = [{type = "alias", aliases = {run_started = 5}}]\n')
    proc = run_replay("run", str(config), input=b"{}\n")
    assert proc.returncode == 2
    error = errors_of(proc.stderr)[0]
    assert error["code"] == "E_CONFIG_OPTION_INVALID" and error["path"] == "chain[0].aliases"


@pytest.mark.parametrize("doc, path", [
    ({"chain": [{"type": "diff", "ignore": ["..."]}]}, "chain[0].ignore"),
    ({"stages": {"read": {"type": "read"}, "p": {"type": "parse", "inputs": ["read"]},
                 "d": {"type": "diff", "inputs": ["p"], "ignore": ["a..b"]}}}, "stages.d.ignore"),
])
def test_an_option_its_stage_refuses_is_named_where_the_config_has_it(doc: dict, path: str):
    """The diff stage refuses an `ignore` path that is none; the error said `"path": "ignore"`, no key of the config."""
    assert refused(doc) == {**refused(doc), "code": "E_CONFIG_OPTION_INVALID", "path": path}


def test_a_fresh_copy_takes_other_command_arguments_only_where_the_first_ones_went():
    from replay.pipeline.engine.config import graph_from_config

    doc = {"stages": {"read": {"type": "read"}, "other": {"type": "read", "paths": ["fixed.jsonl"]},
                      "out": {"type": "write", "inputs": ["read", "other"]}}}
    graph = graph_from_config(doc, paths=["first.jsonl"])
    read, other = graph.nodes["read"].stage, graph.nodes["other"].stage
    assert read.config["paths"] == ["first.jsonl"] and read.args_keys == ("paths",)
    again = read.fresh(["second.jsonl", "third.jsonl"])
    assert again.config["paths"] == ["second.jsonl", "third.jsonl"] and again.id == "read"
    assert other.fresh(["second.jsonl"]).config["paths"] == ["fixed.jsonl"]
    assert read.fresh().config["paths"] == ["first.jsonl"]


@pytest.mark.parametrize(("doc", "received"), [
    ({"chain": [{"type": "select", "types": True}]}, True),
    ({"stages": {"a": {"type": 5}}}, 5),
    ({"chain": [{"type": None}]}, "null"),
    ({"stages": {"a": {"type": "parse", "inputs": [["read"]]}}}, '[["read"]]'),
    ({"stages": {"a": {"type": "parse", "inputs": {"from": "read"}}}}, '{"from":"read"}'),
])
def test_a_refused_value_is_shown_as_json_has_it_not_as_python_writes_it(doc, received):
    """`received` said `True`, `None`, `[['read']]`: Python's spelling of what the config wrote `true`, `null`,
    `[["read"]]`."""
    body = refused(doc)
    assert body["received"] == received and type(body["received"]) is type(received), body


def screened(*after: dict, fast: bool = True, mode: str = "validate") -> dict:
    """read -> screen -> parse -> ``after`` (each taking the one before) -> write."""
    stages = {"read": {"type": "read"}, "screen": {"type": "screen", "inputs": ["read"], "fast": fast, "mode": mode},
              "parse": {"type": "parse", "inputs": ["screen"]}}
    last = "parse"
    for k, stage in enumerate(after):
        stages[f"s{k}"] = {**stage, "inputs": [last]}
        last = f"s{k}"
    return {"stages": {**stages, "out": {"type": "write", "inputs": [last]}}}


@pytest.mark.parametrize("after", [
    [{"type": "select"}], [{"type": "redact"}], [{"type": "export_otlp"}], [{"type": "undialect"}],
    [{"type": "dialect", "dialect": "claude-code"}], [{"type": "heal"}, {"type": "select"}], [{"type": "diff"}],
])
def test_a_stage_that_knows_no_screened_runs_is_refused_after_a_screen(after: list[dict]):
    """The screen passes the runs that need nothing on as their lines, unparsed: a select dropped them all (no output),
    summarize and export_otlp too, undialect and a named dialect failed (AssertionError). Refused now, naming the stage;
    with the screen's fast lane off the config runs."""
    body = refused(screened(*after))
    last = f"s{len(after) - 1}"
    assert body["code"] == "E_CONFIG_INPUTS_INVALID" and body["path"] == f"stages.{last}.inputs"
    assert "'screen'" in body["message"] and "fast = false" in body["howToFix"]
    assert graph_from_config(screened(*after, fast=False), registry=Registry(plugins=False)).nodes


@pytest.mark.parametrize("after", [[], [{"type": "dialect"}, {"type": "heal"}, {"type": "validate"}], [{"type": "walk"}]])
def test_stages_that_know_screened_runs_take_them(after: list[dict]):
    assert graph_from_config(screened(*after), registry=Registry(plugins=False)).nodes


@pytest.mark.parametrize("after", [[], [{"type": "validate"}], [{"type": "heal", "skip": ["renumber"]}],
                                   [{"type": "alias"}, {"type": "ensure_terminal"}]])
def test_a_screen_that_repairs_runs_must_reach_the_rules_that_log_them(after: list[dict]):
    """A heal-mode screen repairs some runs itself (aliases, seq numbers, a missing end), and the alias,
    ensure_terminal and renumber stages log those repairs as the runs pass: without them after it, a config's
    `read -> screen -> parse -> validate -> write` wrote renumbered runs with no repair logged or counted."""
    body = refused(screened(*after, mode="heal"))
    assert body["code"] == "E_CONFIG_INPUTS_INVALID" and body["path"] == "stages.screen.mode"
    assert 'mode = "validate"' in body["howToFix"]
    assert graph_from_config(screened(*after), registry=Registry(plugins=False)).nodes  # (validate mode: runs)
    assert graph_from_config(screened(*after, mode="heal", fast=False), registry=Registry(plugins=False)).nodes


def test_a_screen_that_repairs_runs_before_heal_is_taken():
    assert graph_from_config(screened({"type": "heal"}, mode="heal"), registry=Registry(plugins=False)).nodes


def test_a_select_after_a_screen_lost_every_run_it_passed(tmp_path: Path):
    """`replay run` of read -> screen -> parse -> select wrote nothing for a journal of clean runs (exit 0)."""
    config = tmp_path / "select.json"
    config.write_bytes(orjson.dumps(screened({"type": "select"})))
    journal = ROOT / "examples" / "journals" / "two-runs.jsonl"
    result = run_replay("run", str(config), str(journal), process=True)
    assert result.returncode == 2, result.stdout
    assert [e["code"] for e in errors_of(result.stderr)] == ["E_CONFIG_INPUTS_INVALID"]
    config.write_bytes(orjson.dumps(screened({"type": "select"}, fast=False)))
    result = run_replay("run", str(config), str(journal), process=True)
    assert result.returncode == 0 and result.stdout == journal.read_bytes()


def chained(*stages: dict) -> dict:
    """read -> parse -> ``stages`` (each taking the one before), the last one's output unconsumed unless it is a sink."""
    doc: dict = {"read": {"type": "read"}, "parse": {"type": "parse", "inputs": ["read"]}}
    last = "parse"
    for k, stage in enumerate(stages):
        doc[f"s{k}"] = {**stage, "inputs": [last]}
        last = f"s{k}"
    return {"stages": doc}


@pytest.mark.parametrize("maker, made", [("walk", "walk lines"), ("diff", "a diff of two runs"),
                                         ("export_otlp", "OTLP trace requests"), ("summarize", "run summaries"),
                                         ("validate_summary", "one summary record per input")])
@pytest.mark.parametrize("then", ["select", "renumber", "redact"])
def test_a_stage_that_takes_events_is_refused_after_one_that_gives_something_else(maker: str, made: str, then: str):
    """A walk's lines, a diff, OTLP requests, summaries are no events: `select` after a walk passed on nothing, without
    a word (exit 0, no output), and `renumber` wrote walk's records as JSON in place of its text. Refused now, naming
    both stages; `write` (and `report` after `summarize`) still take them."""
    body = refused(chained({"type": maker}, {"type": then}, {"type": "write"}))
    assert body["code"] == "E_CONFIG_INPUTS_INVALID" and body["path"] == "stages.s1.inputs"
    assert body["message"] == f"stage 's1' takes events, but 's0' gives {made}: it would find none in them"
    assert body["received"] == "s0" and "write" in body["howToFix"]
    assert graph_from_config(chained({"type": maker}, {"type": "write"}), registry=Registry(plugins=False)).nodes
    assert graph_from_config(chained({"type": maker}, {"type": "log"}), registry=Registry(plugins=False)).nodes


def test_a_report_still_takes_summaries_and_only_them():
    assert graph_from_config(chained({"type": "summarize"}, {"type": "report"}), registry=Registry(plugins=False)).nodes
    body = refused(chained({"type": "walk"}, {"type": "report"}))
    assert body["code"] == "E_CONFIG_INPUTS_INVALID" and body["path"] == "stages.s1.inputs"
