"""Every command is its shipped graph spec plus flag bindings: `replay run` of the spec does what the command does."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import orjson
import pytest
from conftest import EXAMPLES, errors_of, jsonl, run_replay

from replay.pipeline.engine.config import graph_from_config
from replay.pipeline.engine.spec import bind, load_spec, spec_names, spec_text

JOURNALS = EXAMPLES / "journals"
INPUTS = [str(JOURNALS / "broken.jsonl"), str(JOURNALS / "two-runs.jsonl"), str(JOURNALS / "messy.jsonl")]


def spec_file(tmp_path: Path, name: str) -> Path:
    """What a user gets from `replay stages --graph NAME > NAME.toml`."""
    printed = run_replay("stages", "--graph", name)
    assert printed.returncode == 0, printed.stderr
    target = tmp_path / f"{name}.toml"
    target.write_bytes(printed.stdout)
    return target


def same_run(a, b) -> None:
    assert (a.returncode, a.stdout, errors_of(a.stderr)) == (b.returncode, b.stdout, errors_of(b.stderr))


# every command whose spec runs over journals as a config, and the flags it needs to run (export says its format):
# `stages --graph NAME` offers the spec as the graph the command runs with no flags (write: its spec printed held the
# undialect stage the command takes out without --dialect, and `replay run` of it failed E_DIALECT_NO_ORIGIN)
RUN_AS_CONFIG = {"read": [], "heal": [], "validate": [], "report": [], "write": [], "export": ["--otlp"], "walk": []}


@pytest.mark.parametrize("command", sorted(RUN_AS_CONFIG))
@pytest.mark.parametrize("inputs", [INPUTS[:1], INPUTS[1:2], INPUTS], ids=["broken", "two-runs", "all"])
def test_replay_run_of_the_printed_spec_is_the_command(tmp_path: Path, command: str, inputs: list[str]) -> None:
    spec = spec_file(tmp_path, command)
    args = [a for path in inputs for a in ("--in", path)] if command == "validate" else inputs
    if command == "walk" and len(inputs) > 1:  # (the command walks one journal: several are a usage error)
        return
    same_run(run_replay("run", str(spec), *inputs), run_replay(command, *RUN_AS_CONFIG[command], *args))


@pytest.mark.parametrize("command", ["heal", "report"])
def test_the_spec_printed_as_json_is_the_same_config(tmp_path: Path, command: str) -> None:
    """`--graph NAME --json` printed the TOML, --json ignored; it is the spec as a JSON config `replay run` reads."""
    printed = run_replay("stages", "--graph", command, "--json")
    assert printed.returncode == 0, printed.stderr
    assert orjson.loads(printed.stdout) == load_spec(command)
    spec = tmp_path / f"{command}.json"
    spec.write_bytes(printed.stdout)
    same_run(run_replay("run", str(spec), *INPUTS), run_replay(command, *INPUTS))


def test_the_spec_through_a_pipe_is_the_command_through_a_pipe(tmp_path: Path) -> None:
    stream = run_replay("read", *INPUTS).stdout
    for command in ("heal", "validate", "report", "write"):
        same_run(run_replay("run", str(spec_file(tmp_path, command)), input=stream), run_replay(command, input=stream))


def test_heal_directory_mode_is_its_spec(tmp_path: Path) -> None:
    artifacts = tmp_path / "in"
    artifacts.mkdir()
    for name in ("broken.jsonl", "two-runs.jsonl"):
        shutil.copy(JOURNALS / name, artifacts / name)
    by_command = run_replay("heal", "--in", str(artifacts), "--out", str(tmp_path / "a"))
    spec = spec_file(tmp_path, "heal-dir")
    spec.write_text(spec.read_text().replace('out_dir = "healed"', f'out_dir = "{tmp_path / "b"}"'))
    by_spec = run_replay("run", str(spec), *sorted(str(p) for p in artifacts.iterdir()))
    assert by_command.returncode == by_spec.returncode == 0, by_spec.stderr
    assert by_command.stdout.replace(b"/a/", b"/b/") == by_spec.stdout
    for made in (tmp_path / "a").iterdir():
        if made.name == ".replay-manifest.json":
            continue  # the command's record of a run over many inputs (for resuming), beside the graph's files
        assert made.read_bytes() == (tmp_path / "b" / made.name).read_bytes()


def test_capture_is_its_spec(tmp_path: Path) -> None:
    env = {"REPLAY_RUNNER": str(EXAMPLES / "runners" / "echo_runner.py")}
    by_command = run_replay("capture", "What are my top holdings?", cwd=tmp_path, env=env)
    by_spec = run_replay("run", str(spec_file(tmp_path, "capture")), "What are my top holdings?", cwd=tmp_path, env=env)
    assert by_command.returncode == by_spec.returncode == 0, by_spec.stderr
    [a], [b] = jsonl(by_command.stdout), jsonl(by_spec.stdout)
    assert a["runId"] != b["runId"]  # two captures ...
    for summary in (a, b):  # ... each with its whole set of files
        assert set(summary["files"]) == {"raw", "artifact", "healed", "healLog", "journal"}
        assert (a["status"], a["events"], a["repairs"]) == (summary["status"], summary["events"], summary["repairs"])
    healed = [orjson.loads((tmp_path / s["files"]["healed"]).read_bytes()) for s in (a, b)]
    assert [e["type"] for e in healed[0]["events"]] == [e["type"] for e in healed[1]["events"]]


@pytest.mark.parametrize("name", spec_names())
def test_every_shipped_spec_is_a_valid_graph(name: str) -> None:
    graph = graph_from_config(load_spec(name))
    assert graph.nodes  # built and validated: types, options, inputs, no cycle, every output consumed
    assert spec_text(name).lstrip().startswith("#")  # a spec says in a comment what it is and which flags bind where


def test_an_unknown_graph_name_is_refused_with_the_names() -> None:
    done = run_replay("stages", "--graph", "heel")
    assert done.returncode == 2 and done.stdout == b""
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_SPEC_UNKNOWN" and "heal" in error["expected"]
    # the command the howToFix names lists the graphs (`replay stages --graph` alone is a usage error)
    listing = run_replay(*re.search(r"`replay ([^`]+)`", error["howToFix"]).group(1).split())  # type: ignore[union-attr]
    assert listing.returncode == 0 and b"heal-rules" in listing.stdout


# composites -------------------------------------------------------------------------------------
def test_a_user_config_with_type_heal_and_one_more_stage(tmp_path: Path) -> None:
    """examples/pipelines/heal.toml: heal as one stage, its repairs port to a file, then a select."""
    journal = tmp_path / "broken.jsonl"
    shutil.copy(JOURNALS / "broken.jsonl", journal)
    by_config = run_replay("run", str(EXAMPLES / "pipelines" / "heal.toml"), str(journal), cwd=tmp_path)
    by_command = run_replay("heal", "--log", str(tmp_path / "cmd-log.jsonl"), str(journal))
    assert by_config.returncode == by_command.returncode == 0, by_config.stderr
    healed = jsonl(by_command.stdout)
    assert jsonl(by_config.stdout) == [r for r in healed if r.get("$record") == "run" or r.get("type", "").startswith("tool_")]
    assert jsonl((tmp_path / "heal-log.jsonl").read_bytes()) == jsonl((tmp_path / "cmd-log.jsonl").read_bytes())


def test_the_heal_composite_expands_into_the_rules_in_their_spec_order() -> None:
    """(after ``cut_runs``, which cuts a batch of several runs where each begins: the rules take a run at a time)"""
    doc = {"stages": {"read": {"type": "read"}, "parse": {"type": "parse", "inputs": ["read"]},
                      "heal": {"type": "heal", "inputs": ["parse", "parse.repairs"]},
                      "out": {"type": "write", "inputs": ["heal"]}}}
    graph = graph_from_config(doc)
    rules = [i.split("/", 1)[1] for i in graph.nodes if i.startswith("heal/")]
    assert rules == ["cut_runs", *load_spec("heal-rules")["chain"], "heal_summary"]
    assert graph.nodes["out"].inputs == ["heal/heal_summary"]
    assert "parse.repairs" in graph.nodes["heal/heal_summary"].inputs


@pytest.mark.parametrize(("ref", "expected"), [("heal.repairs", "heal/"), ("heal.notices", "heal/check_order.notices"),
                                                ("heal.errors", "heal/alias.errors")])
def test_a_composite_port_stands_for_its_inner_ports(ref: str, expected: str) -> None:
    doc = {"stages": {"read": {"type": "read"}, "parse": {"type": "parse", "inputs": ["read"]},
                      "heal": {"type": "heal", "inputs": ["parse"]}, "out": {"type": "write", "inputs": ["heal"]},
                      "side": {"type": "write", "path": "side.jsonl", "inputs": [ref]}}}
    inputs = graph_from_config(doc).nodes["side"].inputs
    assert inputs and all(i.startswith("heal/") for i in inputs) and any(i.startswith(expected) for i in inputs)


@pytest.mark.parametrize("ref", ["heal/fill_run_id", "heal/renumber.repairs", "heal/*"])
def test_an_input_naming_a_stage_inside_a_composite_is_refused_at_its_key(tmp_path: Path, ref: str) -> None:
    """It was taken: the inner stage's output went to two consumers and errors named `stages.heal/heal_summary`."""
    config = tmp_path / "inner.toml"
    config.write_text(f'[stages.x]\ntype = "write"\npath = "x.jsonl"\ninputs = ["parse", "{ref}"]\n'  # (before the composite)
                      '[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
                      '[stages.heal]\ntype = "heal"\ninputs = ["parse"]\n[stages.out]\ntype = "write"\ninputs = ["heal"]\n')
    done = run_replay("run", str(config), INPUTS[0], cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == b"" and not (tmp_path / "x.jsonl").exists()
    [error] = errors_of(done.stderr)
    assert (error["code"], error["path"], error["received"]) == ("E_CONFIG_INPUT_UNKNOWN", "stages.x.inputs[1]", ref)
    assert "heal.repairs" in error["expected"]


def test_a_port_a_composite_does_not_have_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('[stages.read]\ntype = "read"\n[stages.heal]\ntype = "heal"\ninputs = ["read"]\n'
                      '[stages.out]\ntype = "write"\ninputs = ["heal"]\n'
                      '[stages.x]\ntype = "write"\npath = "x"\ninputs = ["heal.nope"]\n')
    done = run_replay("run", str(config), input=b"")
    assert done.returncode == 2
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_CONFIG_INPUT_UNKNOWN" and "repairs" in error["expected"]


def test_heal_options_reach_the_rules(tmp_path: Path) -> None:
    """`aliases` and `skip` on the composite change the rules it expands into."""
    doc = {"stages": {"read": {"type": "read"}, "parse": {"type": "parse", "inputs": ["read"]},
                      "heal": {"type": "heal", "inputs": ["parse"], "aliases": {"zap": "tool_called"},
                               "skip": ["dedupe"], "summary": False},
                      "out": {"type": "write", "inputs": ["heal"]}}}
    graph = graph_from_config(doc)
    assert "heal/dedupe" not in graph.nodes and "heal/heal_summary" not in graph.nodes
    assert graph.nodes["heal/alias"].stage.config["aliases"] == {"zap": "tool_called"}


# bindings ---------------------------------------------------------------------------------------
def test_bind_sets_adds_and_bypasses() -> None:
    doc = load_spec("capture")
    bound = bind(doc, set={"spawn.timeout_ms": 5, "emit.out_dir": None}, add={"x": {"type": "write", "inputs": ["parse"]}},
                 bypass=["heal"])
    stages = bound["stages"]
    assert stages["spawn"]["timeout_ms"] == 5 and "out_dir" not in stages["emit"]
    assert "heal" not in stages and stages["emit"]["inputs"] == ["parse", "spawn.raw"]
    assert doc["stages"]["heal"]  # the shipped spec is left as it was
    with pytest.raises(KeyError):
        bind(doc, set={"nope.option": 1})


# a configured graph is a value: it runs twice -------------------------------------------------------
def test_the_same_configured_graph_runs_twice_with_the_same_result(tmp_path: Path) -> None:
    import anyio

    from replay.pipeline.engine.executor import ErrorPort, run_graph

    outs = [tmp_path / "one.jsonl", tmp_path / "two.jsonl"]
    doc = bind(load_spec("heal"), set={"out.path": str(outs[0])})
    graph = graph_from_config(doc, paths=[INPUTS[0]])
    errors: list[bytes] = []
    first = anyio.run(lambda: run_graph(graph, error_port=ErrorPort(write=errors.append)))
    graph.nodes["out"].stage.given["path"] = str(outs[1])
    second = anyio.run(lambda: run_graph(graph, error_port=ErrorPort(write=errors.append)))
    assert outs[0].read_bytes() == outs[1].read_bytes() and b'"$record":"heal"' in outs[0].read_bytes()
    assert first.errors == second.errors
    # the configured stages themselves never ran: their per-run state is where it started
    assert graph.nodes["heal/renumber"].stage.run is None


def test_results_come_back_as_published_facts(tmp_path: Path) -> None:
    import anyio

    from replay.pipeline.engine.executor import ErrorPort, run_graph

    doc = bind(load_spec("report"), set={"report.path": str(tmp_path / "r.txt")})
    result = anyio.run(lambda: run_graph(graph_from_config(doc, paths=[INPUTS[1]]), error_port=ErrorPort(write=lambda b: None)))
    assert result.facts["failed_runs"] == 1  # two-runs.jsonl: run_b failed


def test_no_command_module_builds_a_graph_by_hand() -> None:
    """Commands bind flags into specs; only `replay run` (a user's config) builds a graph itself."""
    commands = Path(sys.modules["replay.pipeline.cli.app"].__file__).parent / "commands"
    for module in commands.glob("*.py"):
        text = module.read_text()
        assert "Graph()" not in text and ".add(" not in text.replace("add=", ""), module.name
