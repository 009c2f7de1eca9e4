"""`replay run PIPELINE` through the real executable: the example configs, refusals, files, signals."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import orjson
import pytest
from conftest import EXAMPLES, FIXTURES, REPLAY, errors_of, jsonl, run_replay
from plugin_support import make_plugin

from replay.pipeline.engine.config import load_pipeline

PIPELINES = EXAMPLES / "pipelines"
JOURNALS = EXAMPLES / "journals"
TWO_RUNS = JOURNALS / "two-runs.jsonl"
MESSY = JOURNALS / "messy.jsonl"


def source_lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


# the example pipelines ---------------------------------------------------------------------------
def test_tools_only_chain_keeps_tool_events_and_run_records_byte_for_byte():
    done = run_replay("run", str(PIPELINES / "tools-only.toml"), str(TWO_RUNS))
    assert done.returncode == 0 and done.stderr == b""
    out = done.stdout.splitlines()
    expected = [ln for ln in source_lines(TWO_RUNS) if b'"$record"' in ln or b'"type":"tool_' in ln]
    assert out == expected
    assert [e.get("type", "$run") for e in jsonl(done.stdout)] == [
        "$run", "tool_called", "tool_completed", "$run", "tool_called", "tool_failed",
    ]


def test_a_chain_maps_another_agents_log_as_the_commands_do(tmp_path: Path):
    """A chain had read + parse in front and no dialect: a Claude Code session reached heal as raw records, which it
    renamed (`user` to `user_message`, 181 repairs over the corpus) and whose tool calls it never saw (0 tool calls)."""
    session = FIXTURES / "corpus" / "claude-code" / "representative_messages.jsonl"
    config = tmp_path / "c.toml"
    config.write_text('chain = [{type = "heal"}, {type = "summarize"}, {type = "report", format = "json"}]\n')
    chained = orjson.loads(run_replay("run", str(config), str(session)).stdout)["aggregate"]
    healed = run_replay("heal", str(session)).stdout
    direct = orjson.loads(run_replay("report", "--format", "json", input=healed).stdout)["aggregate"]
    assert chained["toolCalls"]["total"] == direct["toolCalls"]["total"] == 2
    assert chained["events"] == direct["events"] and chained["repairs"] == direct["repairs"]
    tools = tmp_path / "t.toml"
    tools.write_text('chain = [{type = "select", types = ["tool_*"]}]\n')
    assert [e["type"] for e in jsonl(run_replay("run", str(tools), str(session)).stdout) if "type" in e] == [
        "tool_called", "tool_completed", "tool_called", "tool_completed"]


def test_tools_only_chain_reads_stdin_without_paths():
    done = run_replay("run", str(PIPELINES / "tools-only.toml"), input=TWO_RUNS.read_bytes())
    assert done.returncode == 0
    assert len(jsonl(done.stdout)) == 6


def test_json_config_selects_one_run():
    done = run_replay("run", str(PIPELINES / "one-run.json"), str(TWO_RUNS))
    assert done.returncode == 0, done.stderr
    records = jsonl(done.stdout)
    assert {r["runId"] for r in records} == {"run_b"}
    assert [r.get("type") for r in records] == [None, "run_started", "user_message", "run_failed"]


@pytest.mark.parametrize("strict", [[], ["--strict"]])
def test_dead_letter_routes_parse_errors_to_a_file(tmp_path: Path, strict: list[str]):
    done = run_replay("run", *strict, str(PIPELINES / "dead-letter.toml"), str(MESSY), cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # every error was consumed by the dead-letter sink: its data (README)
    assert done.stderr == b""
    assert [e["type"] for e in jsonl(done.stdout)] == ["tool_called", "tool_completed"]
    dead = jsonl((tmp_path / "dead-letter.jsonl").read_bytes())
    assert [(d["code"], d["line"]) for d in dead] == [
        ("E_JSONL_LINE_INVALID", 3), ("E_EVENT_NOT_OBJECT", 5), ("E_JSONL_LINE_TORN", 7),
    ]
    data = MESSY.read_bytes()
    for d in dead:
        assert d["source"] == str(MESSY)
        assert data[d["offset"]:].startswith(data.split(b"\n")[d["line"] - 1])
    assert sorted(os.listdir(tmp_path)) == ["dead-letter.jsonl"]  # no temp file left behind


def test_the_same_journal_without_routing_fails_with_errors_on_stderr():
    done = run_replay("run", str(PIPELINES / "tools-only.toml"), str(MESSY))
    assert done.returncode == 1
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_JSONL_LINE_INVALID", "E_EVENT_NOT_OBJECT", "E_JSONL_LINE_TORN"]


def test_strict_makes_the_first_error_fatal():
    done = run_replay("run", "--strict", str(PIPELINES / "tools-only.toml"), str(MESSY))
    assert done.returncode == 1
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_JSONL_LINE_INVALID"]


# refusals: exit 2, a JSON error naming the key, no output at all ----------------------------------------
BAD_CONFIGS = {
    "unknown-type": ('[stages.read]\ntype = "read"\n[stages.out]\ntype = "writer"\ninputs = ["read"]\n',
                     "E_CONFIG_STAGE_TYPE_UNKNOWN", "stages.out.type"),
    "unknown-input": ('[stages.read]\ntype = "read"\n[stages.out]\ntype = "write"\ninputs = ["raed"]\n',
                      "E_CONFIG_INPUT_UNKNOWN", "stages.out.inputs[0]"),
    "unknown-option": ('chain = [{ type = "select", typess = ["x"] }]\n', "E_CONFIG_OPTION_UNKNOWN", "chain[0].typess"),
    "bad-option": ('chain = [{ type = "select", types = "tool_*" }]\n', "E_CONFIG_OPTION_INVALID", "chain[0].types"),
    "cycle": ('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
              '[stages.a]\ntype = "select"\ninputs = ["parse", "b"]\n[stages.b]\ntype = "select"\ninputs = ["a"]\n'
              '[stages.out]\ntype = "write"\ninputs = ["b"]\n', "E_CONFIG_CYCLE", None),
    "errors-unconsumed": ('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
                          'route_errors = true\n[stages.out]\ntype = "write"\ninputs = ["parse"]\n',
                          "E_CONFIG_ERRORS_UNCONSUMED", "stages.parse.route_errors"),
    "output-unconsumed": ('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n',
                          "E_CONFIG_OUTPUT_UNCONSUMED", "stages.parse"),
    "shape": ('stages = 3\n', "E_CONFIG_SHAPE_INVALID", "stages"),
    "syntax": ('[stages.read\ntype = "read"\n', "E_CONFIG_PARSE", None),
}


@pytest.mark.parametrize("name", sorted(BAD_CONFIGS))
def test_a_bad_config_is_refused_before_anything_runs(tmp_path: Path, name: str):
    text, code, path = BAD_CONFIGS[name]
    text = text.replace('type = "write"\n', 'type = "write"\npath = "out.jsonl"\n')  # prove nothing gets written
    config = tmp_path / "p.toml"
    config.write_text(text)
    done = run_replay("run", str(config), str(TWO_RUNS), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == b""
    [error] = errors_of(done.stderr)
    assert error["code"] == code
    if path:
        assert error["path"] == path
    assert os.listdir(tmp_path) == ["p.toml"]


def test_a_missing_config_file():
    done = run_replay("run", "/nonexistent/p.toml")
    assert done.returncode == 2 and errors_of(done.stderr)[0]["code"] == "E_CONFIG_NOT_FOUND"


def test_a_config_from_a_pipe_is_read(tmp_path: Path):
    """`replay run <(...) run.jsonl`: the config exists (a pipe, not a regular file) and is read once."""
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    config = b'chain = [{ type = "select", types = ["tool_*"] }]\n'
    writer = subprocess.Popen(["sh", "-c", f"cat > '{fifo}'"], stdin=subprocess.PIPE)
    try:
        writer.stdin.write(config)  # type: ignore[union-attr]
        writer.stdin.close()  # type: ignore[union-attr]
        done = run_replay("run", str(fifo), str(TWO_RUNS), timeout=30, process=True)
    finally:
        writer.kill()
        writer.wait()
    assert done.returncode == 0, done.stderr
    assert len(jsonl(done.stdout)) == 6


def test_a_json_config_from_a_pipe_is_read_as_json(tmp_path: Path):
    """`replay run <(replay stages --graph report --json) run.jsonl`: the pipe's name (/dev/fd/63) has no .json, and
    the JSON was parsed as TOML and refused ("Invalid statement"); a name that says neither is sniffed."""
    spec = run_replay("stages", "--graph", "report", "--json").stdout
    (tmp_path / "spec").write_bytes(spec)
    done = subprocess.run(["bash", "-c", f"'{REPLAY}' run <(cat '{tmp_path / 'spec'}') '{TWO_RUNS}'"], input=b"",
                          capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == run_replay("report", str(TWO_RUNS)).stdout
    (tmp_path / "bad.toml").write_bytes(spec)  # a name that says TOML is still read as TOML
    assert errors_of(run_replay("run", str(tmp_path / "bad.toml"), str(TWO_RUNS)).stderr)[0]["code"] == "E_CONFIG_PARSE"


@pytest.mark.parametrize("where, code", [("folder", "E_USAGE_INVALID"), ("-", "E_USAGE_INVALID"),
                                         ("missing/p.toml", "E_CONFIG_NOT_FOUND")])
def test_a_config_that_is_no_file_is_named_for_what_it_is(tmp_path: Path, where: str, code: str):
    (tmp_path / "folder").mkdir()
    done = run_replay("run", where, str(TWO_RUNS), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == b""
    [error] = errors_of(done.stderr)
    assert error["code"] == code and error["path"] == where
    assert "does not exist" not in error["message"] or where.startswith("missing")


def test_a_syntax_error_names_its_line(tmp_path: Path):
    config = tmp_path / "p.json"
    config.write_text('{\n  "chain": [\n    "parse"\n    "write"\n  ]\n}\n')
    [error] = errors_of(run_replay("run", str(config)).stderr)
    assert error["code"] == "E_CONFIG_PARSE" and error["line"] == 4


def test_a_missing_input_is_refused_before_any_output_or_file(tmp_path: Path):
    config = tmp_path / "p.toml"
    config.write_text('chain = [{ type = "write", path = "out.jsonl" }]\n')
    done = run_replay("run", str(config), str(TWO_RUNS), str(tmp_path / "missing.jsonl"), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == b""
    assert errors_of(done.stderr)[0]["code"] == "E_INPUT_PATH_NOT_FOUND"
    assert os.listdir(tmp_path) == ["p.toml"]


def test_several_arguments_for_a_stage_that_takes_one_path_are_refused(tmp_path: Path):
    # load_incident's path takes the command's argument: two were joined into one path, 'a.json b.json', and
    # refused as a file that does not exist; the prompt capture sends is still its words joined
    spec = run_replay("stages", "--graph", "incident-inspect").stdout
    (tmp_path / "inspect.toml").write_bytes(spec.replace(b'out = "reviewed"', b'out = "out"'))
    (tmp_path / "a.json").write_bytes(b"{}")
    (tmp_path / "b.json").write_bytes(b"{}")
    done = run_replay("run", "inspect.toml", "a.json", "b.json", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == b""
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"], error["received"]) == ("E_USAGE_INVALID", "stages.load.path", ["a.json", "b.json"])
    assert sorted(os.listdir(tmp_path)) == ["a.json", "b.json", "inspect.toml"]
    (tmp_path / "capture.toml").write_text('[stages.d]\ntype = "discover"\n[stages.w]\ntype = "write"\ninputs = ["d"]\n')
    graph = load_pipeline(str(tmp_path / "capture.toml"), paths=["what", "is", "this"])
    assert graph.nodes["d"].stage.config["prompt"] == "what is this"


@pytest.mark.parametrize("chain, path", [
    ('[{type = "report"}]', "chain[0]"),  # (a chain's inputs are implicit: the item itself is at fault)
    ('[{type = "select", types = ["x"]}, {type = "write", path = "o.jsonl"}, {type = "write", path = "p.jsonl"}]', "chain[2]"),
    ('[{type = "read"}, {type = "read"}]', "chain[1]"),
    ('[{type = "walk", at = "s", max_line_bytes = 5}]', "chain[0].max_line_bytes"),
    ('[{type = "select", types = ["x"]}, {type = "write", path = ""}]', "chain[1].path"),  # (a preflight refusal)
])
def test_a_chain_item_at_fault_is_named_as_the_chain_has_it(tmp_path: Path, chain: str, path: str):
    # the graph's checks named stages.<id>... (stages.write_2.inputs[0]): a key a chain config does not have
    (tmp_path / "p.toml").write_text(f"chain = {chain}\n")
    done = run_replay("run", "p.toml", str(TWO_RUNS), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == b""
    assert errors_of(done.stderr)[0]["path"] == path, done.stderr


def test_run_needs_a_config_argument():
    done = run_replay("run")
    assert done.returncode == 2 and errors_of(done.stderr)[0]["code"] == "E_USAGE_INVALID"


# output files ---------------------------------------------------------------------------------
def test_a_write_sink_with_a_path_writes_the_file_whole(tmp_path: Path):
    config = tmp_path / "p.toml"
    config.write_text('chain = [{ type = "select", types = ["run_*"] }, { type = "write", path = "out/runs.jsonl" }]\n')
    done = run_replay("run", str(config), str(TWO_RUNS), cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == b""
    written = (tmp_path / "out" / "runs.jsonl").read_bytes().splitlines()
    assert written == [ln for ln in source_lines(TWO_RUNS) if b'"$record"' in ln or b'"type":"run_' in ln]
    assert os.listdir(tmp_path / "out") == ["runs.jsonl"]


@pytest.mark.parametrize("how", ["path", "stdin", "directory"])
def test_a_file_sink_may_not_overwrite_an_input(tmp_path: Path, how: str):
    journal = tmp_path / "runs" / "in.jsonl"
    journal.parent.mkdir()
    journal.write_bytes(TWO_RUNS.read_bytes())
    config = tmp_path / "p.toml"
    config.write_text(f'chain = [{{ type = "write", path = "{journal}" }}]\n')
    if how == "stdin":
        with open(journal, "rb") as stdin:
            done = subprocess.run([REPLAY, "run", str(config)], stdin=stdin, capture_output=True, timeout=60)
    else:
        done = run_replay("run", str(config), str(journal if how == "path" else journal.parent))
    assert done.returncode == 2
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_CONFIG_OPTION_INVALID" and error["path"] == "chain[0].path"  # (as the config has it)
    assert journal.read_bytes() == TWO_RUNS.read_bytes()


def test_a_file_sink_may_not_overwrite_the_config_itself(tmp_path: Path):
    """The config is an input of `replay run` too: it was replaced by the events, the pipeline lost."""
    config = tmp_path / "p.toml"
    text = 'chain = [{ type = "write", path = "./sub/../p.toml" }]\n'
    config.write_text(text)
    (tmp_path / "sub").mkdir()
    done = run_replay("run", "p.toml", str(TWO_RUNS), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == b""
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_CONFIG_OPTION_INVALID" and error["path"] == "chain[0].path"
    assert config.read_text() == text


CRASHING = '''
from replay.pipeline.engine.stage import Transform

class Crash(Transform):
    summary = "Raises on every batch."

    def __call__(self, batch):
        raise RuntimeError("kaboom")
'''


def crashing_pipeline(tmp_path: Path) -> tuple[Path, Path]:
    """A plugin stage that raises on every batch, and a pipeline config of it alone: (the plugin's folder, the config)."""
    site = make_plugin(tmp_path / "site", {"crash": "replay_upper_plugin:Crash"}, module=CRASHING)
    config = tmp_path / "p.toml"
    config.write_text('chain = ["crash"]\n')
    return site, config


def test_a_stage_that_crashes_gives_a_json_error_not_a_traceback(tmp_path: Path):
    site, config = crashing_pipeline(tmp_path)
    done = run_replay("run", str(config), str(TWO_RUNS), env=plugin_env(site), process=True)
    assert done.returncode == 1
    assert b"Traceback" not in done.stderr
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_STAGE_FAILED" and error["stage"] == "crash" and "kaboom" in error["message"]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_stage_that_crashes_over_many_inputs_is_said_as_over_one(tmp_path: Path, workers: str):
    """With --workers each input is a run of its own: a stage's crash is the error one run gives, word for word (it was
    wrapped twice: "stage 'crash' failed: RuntimeError: stage 'crash' failed: RuntimeError: kaboom")."""
    site, config = crashing_pipeline(tmp_path)
    one = run_replay("run", str(config), str(TWO_RUNS), env=plugin_env(site), process=True)
    many = run_replay("run", "--workers", workers, str(config), str(TWO_RUNS), str(MESSY), env=plugin_env(site),
                      process=True)
    assert one.returncode == many.returncode == 1
    assert errors_of(many.stderr) == errors_of(one.stderr)
    assert errors_of(one.stderr)[0]["message"] == "stage 'crash' (chain[0] of the config) failed: RuntimeError: kaboom"
    loud = run_replay("--log-level", "debug", "run", "--workers", workers, str(config), str(TWO_RUNS), str(MESSY),
                      env=plugin_env(site), process=True)  # the traceback crosses from the worker (it said RuntimeError only)
    [failed] = [record for record in map(orjson.loads, loud.stderr.splitlines()) if record.get("event") == "stage.failed"]
    assert failed["stage"] == "crash" and 'raise RuntimeError("kaboom")' in failed["exception"]


BAD_STAGES = '''
from replay.pipeline.engine.stage import AsyncTransform, Transform


class InitFails(Transform):
    summary = "Raises when built."

    def __init__(self, **options):
        super().__init__(**options)
        raise RuntimeError("init kaboom")


class Returns(Transform):
    summary = "Returns what RESULT names instead of a batch."

    def __call__(self, batch):
        return RESULT


class Sends(AsyncTransform):
    summary = "Sends a dict instead of a batch."

    async def process(self, batches, out):
        async for batch in batches:
            await out.send({"a": 1})
'''


def plugin_env(site: Path) -> dict[str, str]:
    """PYTHONPATH with the plugin's folder first (and what it held before: the sources under test, in a worktree)."""
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)}


@pytest.mark.parametrize("config, path", [('chain = ["boom"]\n', "chain[0]"),
                                          ('[stages.read]\ntype = "read"\n[stages.x]\ntype = "boom"\ninputs = ["read"]\n'
                                           '[stages.write]\ntype = "write"\ninputs = ["x"]\n', "stages.x")],
                         ids=["chain", "stages"])
def test_a_plugin_whose_constructor_raises_is_named_with_its_config_path(tmp_path: Path, config: str, path: str):
    site = make_plugin(tmp_path / "site", {"boom": "replay_upper_plugin:InitFails"}, module=BAD_STAGES)
    (tmp_path / "p.toml").write_text(config)
    done = run_replay("run", str(tmp_path / "p.toml"), str(TWO_RUNS), env=plugin_env(site), process=True)
    assert done.returncode == 2 and done.stdout == b""
    assert b"Traceback" not in done.stderr
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_STAGE_LOAD_FAILED" and error["path"] == path
    assert error["stage"] == ("boom" if path.startswith("chain") else "x") and "init kaboom" in error["message"]


@pytest.mark.parametrize("stage, result, received", [
    ("Returns", '[{"a": 1}]', "dict"), ("Returns", '{"a": 1}', "dict"), ("Returns", "42", "int"),
    ("Returns", "[[]]", "list"), ("Sends", "None", "dict"),
], ids=["list-of-dicts", "dict", "int", "list-of-lists", "async-sends-dict"])
def test_a_plugin_that_gives_no_batch_is_named_not_the_stage_after_it(tmp_path: Path, stage: str, result: str,
                                                                       received: str):
    site = make_plugin(tmp_path / "site", {"bad": f"replay_upper_plugin:{stage}"},
                       module=BAD_STAGES + f"\n\nRESULT = {result}\n")
    (tmp_path / "p.toml").write_text('chain = ["bad"]\n')
    done = run_replay("run", str(tmp_path / "p.toml"), str(TWO_RUNS), env=plugin_env(site), process=True)
    assert done.returncode == 1
    assert b"Traceback" not in done.stderr
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_STAGE_RESULT_INVALID" and error["stage"] == "bad" and error["received"] == received
    assert "a Batch, a list of Batches or None" in error["message"]


ODD_RAISES = '''
from replay.pipeline.engine.stage import Sink, Transform


class Odd(BaseException):
    pass


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no words for it")


class Raises(Transform):
    summary = "Raises what RAISED names on every batch."

    def __call__(self, batch):
        raise RAISED


class SinkRaises(Sink):
    summary = "A sink that raises what RAISED names."

    async def consume(self, batches):
        async for batch in batches:
            raise RAISED
'''


@pytest.mark.parametrize("stage", ["Raises", "SinkRaises"])
@pytest.mark.parametrize("raised, said", [("SystemExit(3)", "SystemExit: 3"), ("GeneratorExit()", "GeneratorExit"),
                                          ("Odd('odd one')", "Odd: odd one"), ("Unprintable()", "Unprintable")],
                         ids=["SystemExit", "GeneratorExit", "BaseException", "str-raises"])
def test_a_plugin_that_raises_what_is_no_exception_is_a_stage_failure_not_a_traceback(tmp_path: Path, stage: str,
                                                                                       raised: str, said: str):
    """A plugin raising SystemExit (a library calling sys.exit), GeneratorExit or its own BaseException is E_STAGE_FAILED
    naming it, exit 1, as any exception: it was a traceback (exit 3 for sys.exit(3), "Task exception was never
    retrieved"); an exception whose str() raises was E_UNHANDLED, the stage unnamed."""
    site = make_plugin(tmp_path / "site", {"odd": f"replay_upper_plugin:{stage}"}, module=ODD_RAISES + f"\nRAISED = {raised}\n")
    (tmp_path / "p.toml").write_text('chain = ["parse", "odd"]\n')
    done = run_replay("run", str(tmp_path / "p.toml"), str(TWO_RUNS), env=plugin_env(site), process=True, timeout=60)
    assert b"Traceback" not in done.stderr and b"never retrieved" not in done.stderr
    assert done.returncode == 1 and done.stdout == b""
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_STAGE_FAILED" and error["stage"] == "odd" and said in error["message"]


UNDECLARED_PORT = '''
from replay.pipeline.engine.stage import Transform


class Undeclared(Transform):
    summary = "Emits on a port it does not declare."
    ports = ("errors", "repairs")

    def __call__(self, batch):
        self.emit("repair", {"rule": "mine"})  # (a typo of its own port)
        return batch


class NotARecord(Transform):
    summary = "Emits a string where a record (a dict) belongs."
    ports = ("errors", "repairs")

    def __call__(self, batch):
        self.emit(PORT, "not a record")
        return batch
'''


def test_a_plugin_that_emits_on_a_port_it_does_not_declare_is_named(tmp_path: Path):
    """Records sent on a port the stage does not declare can reach no one (no config may wire it): they were dropped
    without a word, exit 0; now the stage is named, with the port and the ports it has."""
    site = make_plugin(tmp_path / "site", {"undeclared": "replay_upper_plugin:Undeclared"}, module=UNDECLARED_PORT)
    (tmp_path / "p.toml").write_text('chain = ["undeclared"]\n')
    done = run_replay("run", str(tmp_path / "p.toml"), str(TWO_RUNS), env=plugin_env(site), process=True)
    assert b"Traceback" not in done.stderr
    assert done.returncode == 1 and done.stdout == b""
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_STAGE_RESULT_INVALID" and error["stage"] == "undeclared"
    assert error["received"] == "repair" and error["expected"] == "one of its ports: errors, repairs"


@pytest.mark.parametrize("port", ["errors", "repairs"])
@pytest.mark.parametrize("routed", [False, True])
def test_a_plugin_that_emits_what_is_no_record_is_named(tmp_path: Path, port: str, routed: bool):
    """A side port carries records, JSON objects: a string there was `E_STAGE_FAILED` with Python's words ("'str' object
    has no attribute 'get'") when it reached the error port, and written as a line where a config routed it."""
    site = make_plugin(tmp_path / "site", {"notarecord": "replay_upper_plugin:NotARecord"},
                       module=UNDECLARED_PORT.replace("PORT", repr(port)))
    config = ('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
              '[stages.p]\ntype = "notarecord"\ninputs = ["parse"]\n'
              '[stages.out]\ntype = "write"\ninputs = ["p"]\n')
    if routed:
        config += f'[stages.side]\ntype = "write"\npath = "{tmp_path / "side.jsonl"}"\ninputs = ["p.{port}"]\n'
    (tmp_path / "p.toml").write_text(config)
    done = run_replay("run", str(tmp_path / "p.toml"), str(TWO_RUNS), env=plugin_env(site), process=True)
    assert b"Traceback" not in done.stderr and done.returncode == 1
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_STAGE_RESULT_INVALID" and error["stage"] == "p" and error["received"] == "str"
    assert not (tmp_path / "side.jsonl").exists()


STOPS_EARLY = '''
from replay.pipeline.engine.stage import AsyncTransform, Sink


class SinkStops(Sink):
    summary = "A sink that takes one batch and returns."

    async def consume(self, batches):
        async for batch in batches:
            return


class AsyncStops(AsyncTransform):
    summary = "An async transform that returns without reading its input."

    async def process(self, batches, out):
        return
'''


@pytest.mark.parametrize("stage, chain, copies", [("SinkStops", '["parse", "early"]', 5000), ("AsyncStops", '["early"]', 5000),
                                                  ("AsyncStops", '["early"]', 1)], ids=["sink", "async", "async-small"])
def test_a_plugin_that_returns_before_its_input_ended_is_named(tmp_path: Path, stage: str, chain: str, copies: int):
    """A sink or async transform that stops taking its input: E_UNHANDLED "BrokenResourceError: " (no stage named) when
    the input did not fit the channels, exit 0 with the rest dropped when it did; now the stage is named either way
    (a sink that returns once it took the one batch there was took its input whole: exit 0)."""
    site = make_plugin(tmp_path / "site", {"early": f"replay_upper_plugin:{stage}"}, module=STOPS_EARLY)
    (tmp_path / "p.toml").write_text(f"chain = {chain}\n")
    journal = tmp_path / "big.jsonl"
    journal.write_bytes(TWO_RUNS.read_bytes() * copies)
    done = run_replay("run", str(tmp_path / "p.toml"), str(journal), env=plugin_env(site), process=True, timeout=60)
    assert b"Traceback" not in done.stderr
    assert done.returncode == 1 and done.stdout == b""
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_STAGE_FAILED" and error["stage"] == "early" and "before its input ended" in error["message"]
    if stage == "SinkStops":
        journal.write_bytes(TWO_RUNS.read_bytes())  # one batch, taken
        done = run_replay("run", str(tmp_path / "p.toml"), str(journal), env=plugin_env(site), process=True, timeout=60)
        assert (done.returncode, done.stderr) == (0, b"")


# pipes and signals -------------------------------------------------------------------------------
def test_a_pipeline_into_head_ends_quietly(tmp_path: Path):
    journal = tmp_path / "big.jsonl"
    line = source_lines(TWO_RUNS)[3]
    journal.write_bytes((line + b"\n") * 200_000)
    done = subprocess.run(
        f"'{REPLAY}' run '{PIPELINES / 'tools-only.toml'}' '{journal}' | head -1; exit ${{PIPESTATUS[0]}}",
        shell=True, capture_output=True, timeout=120, executable="/bin/bash",
    )
    assert done.returncode == 0 and done.stderr == b""
    assert done.stdout == line + b"\n"


def wait_for(predicate, what: str, limit: float = 60.0) -> None:
    """Poll until ``predicate()`` holds (a readiness wait, not a timing assertion)."""
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


@pytest.mark.parametrize("existing", [False, True], ids=["new-file", "existing-file"])
def test_ctrl_c_while_writing_a_file_leaves_no_temp_and_no_partial_file(tmp_path: Path, existing: bool):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    if existing:
        (out_dir / "result.jsonl").write_bytes(b"previous\n")
    config = tmp_path / "p.toml"
    config.write_text(f'chain = [{{ type = "write", path = "{out_dir / "result.jsonl"}" }}]\n')
    proc = subprocess.Popen([REPLAY, "run", str(config)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    line = source_lines(TWO_RUNS)[1] + b"\n"
    proc.stdin.write(line * 5000)
    proc.stdin.flush()
    wait_for(lambda: any(name.endswith(".tmp") for name in os.listdir(out_dir)), "the temp output file")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert b"Traceback" not in err
    if existing:
        assert os.listdir(out_dir) == ["result.jsonl"]
        assert (out_dir / "result.jsonl").read_bytes() == b"previous\n"  # untouched
    else:
        assert os.listdir(out_dir) == []


def test_ctrl_c_while_reading_stdin_in_a_pipeline():
    proc = subprocess.Popen([REPLAY, "run", str(PIPELINES / "tools-only.toml")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    tool_line = source_lines(TWO_RUNS)[3] + b"\n"
    proc.stdin.write(tool_line)
    proc.stdin.flush()
    assert proc.stdout.readline() == tool_line
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err == b""


def test_every_example_pipeline_runs_on_the_example_journals(tmp_path: Path):
    for config in sorted(PIPELINES.iterdir()):
        if 'type = "read_nats"' in config.read_text():
            continue  # a live stream: run against a real NATS server in tests/e2e/test_nats_stream.py
        done = run_replay("run", str(config), str(TWO_RUNS), cwd=tmp_path)
        assert done.returncode == 0, (config.name, done.stderr)
        assert done.stdout and all(orjson.loads(line) for line in done.stdout.splitlines())


@pytest.mark.parametrize("chain, stage", [
    ('["summarize", { type = "report", format = "json" }]', "report"),  # one report per file, not one of them all
    ('[{ type = "diff" }]', "diff"),  # each file alone: "diff compares two runs; the input holds 1"
    ('[{ type = "walk", at = "step-1" }]', "walk"),  # E_STEP_NOT_FOUND in every file the step is not in
])
def test_workers_refuse_a_graph_whose_result_is_of_all_the_inputs_together(tmp_path: Path, chain: str, stage: str):
    """--workers runs the graph once per input; `run --help` promises the bytes of --workers 1, which such a graph
    does not give: it is refused (with one input it runs, as once per input is once)."""
    config = tmp_path / "p.toml"
    config.write_text(f"chain = {chain}\n")
    hello = FIXTURES / "walk" / "hello.jsonl"
    done = run_replay("run", str(config), str(hello), str(TWO_RUNS), "--workers", "2")
    assert done.returncode == 2 and done.stdout == b""
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_USAGE_INVALID" and error["received"] == stage
    assert error["path"] == ("chain[1]" if stage == "report" else "chain[0]")  # the chain item, not stages.<id>
    one, alone = (run_replay("run", str(config), str(hello), *more) for more in (["--workers", "2"], []))
    assert (one.returncode, one.stdout) == (alone.returncode, alone.stdout)


def test_the_help_s_parallel_example_runs(tmp_path: Path):
    """`replay run --help` shows a pipeline run over a folder with --workers: it runs (a pipeline that writes a file,
    such as examples/pipelines/heal.toml, is refused there), with the output of one worker."""
    epilog = run_replay("run", "--help").stdout.decode()
    [example] = [line.split()[1:] for line in epilog.splitlines() if "--workers 4" in line and "runs/" in line]
    assert example[:1] == ["run"] and example[-2] == ">"
    runs = tmp_path / "runs"
    runs.mkdir()
    for journal in ["two-runs.jsonl"]:
        (runs / journal).write_bytes((EXAMPLES / "journals" / journal).read_bytes())
    args = [str(EXAMPLES.parent / a) if a.startswith("examples/") else a for a in example[1:-2]]
    four = run_replay("run", *args, cwd=tmp_path, process=True)
    one = run_replay("run", *[a if a != "4" else "1" for a in args], cwd=tmp_path, process=True)
    assert four.returncode == one.returncode == 0, four.stderr
    assert four.stdout == one.stdout and b'"tool_called"' in four.stdout


def test_two_stages_writing_one_file_are_refused_before_anything_runs(tmp_path: Path):
    """One would replace what the other wrote (the same path spelt two ways, a link to it: one file)."""
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "same.jsonl")
    config = tmp_path / "two.toml"
    config.write_text('[stages.read]\ntype = "read"\n[stages.p]\ntype = "parse"\ninputs = ["read"]\n'
                      '[stages.tools]\ntype = "select"\ninputs = ["p"]\ntypes = ["tool_*"]\n'
                      '[stages.msgs]\ntype = "select"\ninputs = ["p"]\ntypes = ["*_message"]\n'
                      f'[stages.a]\ntype = "write"\npath = "{tmp_path / "same.jsonl"}"\ninputs = ["tools"]\n'
                      f'[stages.b]\ntype = "write"\npath = "{tmp_path / "link.jsonl"}"\ninputs = ["msgs"]\n')
    done = run_replay("run", str(config), str(EXAMPLES / "journals" / "two-runs.jsonl"))
    assert done.returncode == 2 and done.stdout == b""
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_CONFIG_OPTION_INVALID" and error["path"] == "stages.b.path" and "'a' and 'b'" in error["message"]
    assert not (tmp_path / "same.jsonl").exists()


def test_log_level_debug_shows_the_traceback_of_a_stage_that_crashed(tmp_path: Path):
    """E_STAGE_FAILED's howToFix says to rerun with `--log-level debug` for details: that run logs the traceback
    (inside one JSON record on stderr), which the default level leaves out."""
    site, config = crashing_pipeline(tmp_path)
    quiet = run_replay("run", str(config), str(TWO_RUNS), env=plugin_env(site), process=True)
    loud = run_replay("--log-level", "debug", "run", str(config), str(TWO_RUNS), env=plugin_env(site), process=True)
    assert quiet.returncode == loud.returncode == 1
    assert b"raise RuntimeError" not in quiet.stderr
    [failed] = [record for record in map(orjson.loads, loud.stderr.splitlines()) if record.get("event") == "stage.failed"]
    assert failed["stage"] == "crash" and 'raise RuntimeError("kaboom")' in failed["exception"]


@pytest.mark.parametrize("args", [
    ["run", "empty-path.toml", str(TWO_RUNS)],
    ["export", "--otlp", "--out", "", str(TWO_RUNS)],
    ["script", str(EXAMPLES / "echo-agent" / "scenarios" / "echo" / "session.jsonl"), "--out", ""],
    ["heal", "--log", "", str(TWO_RUNS)],  # (it healed to stdout and wrote no log, exit 0)
])
def test_an_empty_output_path_is_refused_before_anything_runs(tmp_path: Path, args: list[str]):
    """A path "" named the current folder: the whole input was read, then the rename failed (EBUSY, exit 1)."""
    (tmp_path / "empty-path.toml").write_text('chain = [{ type = "write", path = "" }]\n')
    done = run_replay(*args, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == b""
    [error] = errors_of(done.stderr)
    assert error["received"] == ""
    assert "leave it out" not in error["howToFix"]  # (no --log writes no log)
    flag = {"export": "--out", "script": "--out", "heal": "--log"}.get(args[0])
    if flag is not None:  # named as the user typed it
        assert (error["code"], error["path"], error["message"]) == ("E_USAGE_INVALID", flag,
                                                                    f"{flag} is empty: it names no file"), error
        assert f"`{flag} " in error["howToFix"]
    else:  # as the config wrote it
        assert error["code"] == "E_CONFIG_OPTION_INVALID"  # (a config's option: a config file's error)
        assert error["path"] == "chain[0].path" and "stage 'write'" in error["message"] and "`path`" in error["howToFix"]
    assert sorted(os.listdir(tmp_path)) == ["empty-path.toml"]


@pytest.mark.parametrize("args", [
    ["run", "folder-path.toml", str(TWO_RUNS)],
    ["export", "--otlp", "--out", "folder", str(TWO_RUNS)],
    ["script", str(EXAMPLES / "echo-agent" / "scenarios" / "echo" / "session.jsonl"), "--out", "folder"],
])
def test_an_output_path_that_is_a_folder_is_refused_before_anything_runs(tmp_path: Path, args: list[str]):
    """It was found out by the rename, after the whole input was read (E_OUTPUT_WRITE_FAILED, EISDIR, exit 1)."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder-path.toml").write_text('chain = [{ type = "write", path = "folder" }]\n')
    done = run_replay(*args, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == b""
    [error] = errors_of(done.stderr)
    # (an output flag's folder is an output that cannot be written; a config's, its stage option's wrong value)
    assert error["code"] == ("E_CONFIG_OPTION_INVALID" if args[0] == "run" else "E_OUTPUT_UNWRITABLE")
    assert error["received"] == "folder"
    assert os.listdir(tmp_path / "folder") == []
