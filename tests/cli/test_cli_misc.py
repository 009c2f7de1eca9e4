"""`replay --version/--help`, `replay stages`, `replay schema`, logging, and the JSON error contract."""

from __future__ import annotations

import ast
import os
import pty
import select
import subprocess
from importlib.metadata import version
from pathlib import Path

import orjson
import pytest
from conftest import EXAMPLES, REPLAY, errors_of, run_replay

from replay.pipeline.engine.errors import CATALOGUE

JOURNAL = b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r1","payload":{}}\n'


# version and help -----------------------------------------------------------------------------
@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag: str):
    done = run_replay(flag)
    assert done.returncode == 0 and done.stderr == b""
    assert done.stdout.decode().strip() == f"replay {version('agent-replay')}"


def test_help_lists_the_commands_and_shows_examples():
    done = run_replay("--help")
    assert done.returncode == 0
    text = done.stdout.decode()
    for command in ("read", "run", "stages", "schema"):
        assert f"\n  {command} " in text
    assert "Examples:" in text and "replay read" in text and "--log-level" in text


@pytest.mark.parametrize("group", [(), ("incident",), ("golden",)])
def test_each_command_s_line_in_a_listing_is_whole_or_visibly_cut(group: tuple[str, ...]):
    """A listing shows each command's first sentence, or its start and `...`: `schema`'s read "Print the bundled JSON
    Schema NAME (e.g." (click took the period of "e.g." for the sentence's end), a parenthesis opened and never closed."""
    done = run_replay(*group, "--help")
    listing = done.stdout.decode().partition("\nCommands:\n")[2].partition("\n\n")[0]
    lines = [line.split(None, 1) for line in listing.splitlines() if line.strip()]
    assert lines
    for name, summary in lines:
        assert summary.endswith("...") or summary.count("(") == summary.count(")"), (name, summary)
        assert summary.endswith("...") or summary.count("`") % 2 == 0, (name, summary)


@pytest.mark.parametrize("command", ["read", "run", "stages", "schema"])
def test_each_core_command_has_help(command: str):
    done = run_replay(command, "--help")
    assert done.returncode == 0 and done.stdout.startswith(b"Usage: replay " + command.encode())
    if command in ("read", "run"):
        assert b"Examples:" in done.stdout


def test_an_unknown_global_flag():
    done = run_replay("--frob", "read")
    assert done.returncode == 2
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_UNKNOWN_FLAG" and error["received"] == "--frob"
    assert error["path"] == "replay" and "replay read --help" in error["howToFix"]


@pytest.mark.parametrize(("args", "code", "help"), [
    (("walk",), "E_USAGE_INVALID", "replay walk --help"),  # a missing argument
    (("report", "--format", "pdf"), "E_USAGE_INVALID", "replay report --help"),  # a value not among the choices
    (("heal", "--workers", "0", "x.jsonl"), "E_USAGE_INVALID", "replay heal --help"),  # a number out of range
    (("incident", "import"), "E_USAGE_INVALID", "replay incident import --help"),
    (("heal", "--frob"), "E_UNKNOWN_FLAG", "replay heal --help"),
    (("incident", "import", "--frob"), "E_UNKNOWN_FLAG", "replay incident import --help"),
    # refused by the command itself, with the catalogue's advice
    (("script", "--override", "a.json", "--no-override", "s.jsonl"), "E_USAGE_INVALID", "replay script --help"),
    (("--log-level", "info", "heal", "--in", "x.jsonl", "y.jsonl"), "E_USAGE_INVALID", "replay heal --help"),
    # the command after `--` (it said `replay COMMAND`: the words before `--` were searched for the command's name)
    (("--", "heal", "--in", "x.jsonl", "y.jsonl"), "E_USAGE_INVALID", "replay heal --help"),
])
def test_a_usage_error_s_advice_names_the_command_typed(args: tuple[str, ...], code: str, help: str):
    """Its advice was the catalogue's "Run `replay COMMAND --help`", COMMAND left for the reader to fill in."""
    done = run_replay(*args)
    assert (done.returncode, done.stdout) == (2, b"")
    [error] = errors_of(done.stderr)
    assert error["code"] == code and f"`{help}`" in error["howToFix"] and "COMMAND" not in error["howToFix"]


@pytest.mark.parametrize("flag", ["--strict", "--strict=true"])
def test_a_command_flag_put_before_the_command_is_replays_unknown_flag_not_captures(flag):
    """`replay --strict read x.jsonl`: it was capture's unknown flag (`"path": "replay capture"`, capture's flags);
    it is replay's own, with replay's flags, and the advice to put it after the command name."""
    done = run_replay(flag, "read", str(EXAMPLES / "journals" / "two-runs.jsonl"))
    assert (done.returncode, done.stdout) == (2, b"")
    [error] = errors_of(done.stderr)
    assert (error["code"], error["path"], error["received"]) == ("E_UNKNOWN_FLAG", "replay", "--strict")
    assert error["expected"] == "--log-level, --max-errors, --version, -V"
    assert "Put --strict after the command name: `replay read --strict ...`" in error["howToFix"]
    done = run_replay("--log-level", "info", "--strict", "report", str(EXAMPLES / "journals" / "two-runs.jsonl"))
    [error] = errors_of(done.stderr)
    assert error["path"] == "replay" and "`replay report --strict ...`" in error["howToFix"]


@pytest.mark.parametrize("flags", [["--runner", "RUNNER"], ["--timeout-ms", "5000"], ["--timeout-ms=5000", "--runner", "RUNNER"]])
def test_captures_flag_before_the_command_capture_is_told_where_it_goes(tmp_path, flags):
    """`replay --runner R capture "p"` was E_COMMAND_UNKNOWN "unknown command 'capture'" while its `expected` listed
    capture (hunt 23, 03). A capture flag before the command is refused (E_USAGE_INVALID), saying it goes after
    `capture` or before a prompt without it (no runner starts); `replay --runner R "p"` still captures."""
    runner = tmp_path / "runner.py"
    runner.write_text("import json, pathlib, sys\njson.load(sys.stdin)\npathlib.Path(__file__).with_name('ran').touch()\n"
                      "print(json.dumps({'status': 'ok', 'response': 'r', 'events': []}))\n")
    given = [str(runner) if a == "RUNNER" else a for a in flags]
    done = run_replay(*given, "capture", "my prompt", cwd=tmp_path, input=b"", env={"REPLAY_RUNNER": str(runner)})
    assert (done.returncode, done.stdout) == (2, b""), done.stderr
    [error] = errors_of(done.stderr)
    assert (error["code"], error["received"], error["path"]) == ("E_USAGE_INVALID", flags[0].partition("=")[0], "replay")
    assert "unknown command" not in error["message"] and "goes after `capture`" in error["message"], error
    assert f"`replay capture {' '.join(given)} 'my prompt'`" in error["howToFix"], error
    assert f"`replay {' '.join(given)} 'my prompt'`" in error["howToFix"], error
    assert not (tmp_path / "ran").exists() and not (tmp_path / ".replay").exists()
    ok = run_replay(*given, "my prompt", cwd=tmp_path, input=b"", env={"REPLAY_RUNNER": str(runner)})
    assert ok.returncode == 0 and (tmp_path / "ran").exists(), ok.stderr


@pytest.mark.parametrize(("args", "code", "received"), [
    # capture's value flag takes the next word as its value, whatever it looks like: then capture's flag before `read`
    (["--runner", "--strict", "read", "J"], "E_USAGE_INVALID", "--runner"),
    # capture's own flags, in both forms, are walked over to the flag neither has
    (["--timeout-ms=5", "--strict", "read", "J"], "E_UNKNOWN_FLAG", "--strict"),
    (["--timeout-ms", "5", "--strict", "read", "J"], "E_UNKNOWN_FLAG", "--strict"),
    # `--` ends the flags: what follows is the prompt
    (["--runner", "r.py", "--", "--strict", "read"], "E_COMMAND_UNKNOWN", ["--strict", "read"]),
    # a flag no command has, before a command
    (["--bogus", "read", "J"], "E_UNKNOWN_FLAG", "--bogus"),
    # replay's own flag, then capture's value flag with its value missing: capture's parser says so
    (["--log-level", "info", "--runner"], "E_USAGE_INVALID", None),
])
def test_the_flags_before_a_command_are_walked_as_click_parses_them(args, code, received):
    """The edge cases of the walk over leading flags (app.flags_end): the value of a value flag, `--flag=value`, `--`,
    an unknown flag, a value flag last without its value."""
    journal = str(EXAMPLES / "journals" / "two-runs.jsonl")
    done = run_replay(*[journal if a == "J" else a for a in args])
    assert (done.returncode, done.stdout) == (2, b"")
    [error] = errors_of(done.stderr)
    assert error["code"] == code, error
    if received is not None:
        assert error["received"] == ([journal if a == "J" else a for a in received] if isinstance(received, list)
                                     else received), error


# stages ---------------------------------------------------------------------------------------
def test_stages_json_describes_every_stage_for_machines():
    done = run_replay("stages", "--json")
    assert done.returncode == 0 and done.stderr == b""
    described = orjson.loads(done.stdout)
    by_type = {d["type"]: d for d in described}
    assert {"read", "parse", "select", "write"} <= set(by_type)
    for d in described:
        assert set(d) >= {"type", "kind", "summary", "ports", "options"}
        assert d["summary"] and "\n" not in d["summary"]
    assert by_type["select"]["options"]["types"] == {
        "type": "list", "default": ["*"], "help": by_type["select"]["options"]["types"]["help"], "required": False,
    }
    assert by_type["parse"]["options"]["torn_tail"]["choices"] == ["error", "repair"]
    assert by_type["read"]["kind"] == "source" and by_type["write"]["kind"] == "sink"


def test_stages_for_humans_give_one_line_per_stage_and_its_options():
    done = run_replay("stages")
    assert done.returncode == 0
    text = done.stdout.decode()
    described = orjson.loads(run_replay("stages", "--json").stdout)
    for d in described:
        [line] = [ln for ln in text.splitlines() if ln.startswith(d["type"] + " ")]
        assert d["summary"] in line
        for option in d["options"]:
            assert f"    {option} = " in text  # (a config key, not a flag)
    assert "side ports: errors, repairs" in text  # parse's extra port is shown


# schema ---------------------------------------------------------------------------------------
def test_schema_lists_the_bundled_schemas():
    done = run_replay("schema")
    assert done.returncode == 0
    names = done.stdout.decode().split()
    assert "event" in names and "stream" in names


@pytest.mark.parametrize("name", ["event", "event.schema.json", "stream"])
def test_schema_prints_a_json_schema(name: str):
    done = run_replay("schema", name)
    assert done.returncode == 0
    schema = orjson.loads(done.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_the_event_schema_accepts_a_canonical_event():
    import jsonschema

    schema = orjson.loads(run_replay("schema", "event").stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(orjson.loads(JOURNAL), schema)


def test_an_unknown_schema_is_refused():
    done = run_replay("schema", "nope")
    assert done.returncode == 2 and done.stdout == b""
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_SCHEMA_UNKNOWN" and "event" in error["expected"]


# logging ------------------------------------------------------------------------------------
def test_logs_are_json_lines_on_stderr_when_it_is_not_a_terminal():
    done = run_replay("--log-level", "debug", "read", input=JOURNAL)
    assert done.returncode == 0
    assert done.stdout == JOURNAL  # data only on stdout
    records = [orjson.loads(line) for line in done.stderr.splitlines()]
    events = [r["event"] for r in records]
    assert "graph.start" in events and "graph.done" in events
    assert {r["level"] for r in records} <= {"debug", "info"}
    assert all("timestamp" in r for r in records)


def test_the_log_level_filters():
    info = run_replay("--log-level", "info", "read", input=JOURNAL)
    assert [orjson.loads(line)["event"] for line in info.stderr.splitlines()] == ["graph.done"]
    quiet = run_replay("read", input=JOURNAL)  # the default level is warning
    assert quiet.stderr == b""


def test_logs_are_human_readable_on_a_terminal():
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen([REPLAY, "--log-level", "debug", "read"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=follower)
        out, _ = proc.communicate(JOURNAL, timeout=60)
        os.close(follower)
        follower = -1
        text = b""
        while select.select([leader], [], [], 5)[0]:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed
                break
            if not chunk:
                break
            text += chunk
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert proc.returncode == 0 and out == JOURNAL
    assert b"graph.done" in text
    assert not text.lstrip().startswith(b"{")  # console format, not JSON


def test_a_bad_log_level_is_a_usage_error():
    done = run_replay("--log-level", "loud", "read", input=b"")
    assert done.returncode == 2
    assert errors_of(done.stderr)[0]["code"] == "E_USAGE_INVALID"


def modules_loaded_by(args: list[str], modules: list[str]) -> tuple[list[str], int]:
    """Which of ``modules`` a fresh interpreter has loaded after running ``replay ARGS``, and its exit code."""
    probe = (
        "import sys\n"
        "from replay.pipeline.cli.app import run_cli\n"
        f"code = run_cli({args!r})\n"
        f"print(repr(([m for m in {modules!r} if m in sys.modules], code)))\n"
    )
    done = subprocess.run([str(Path(REPLAY).parent / "python"), "-c", probe], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return ast.literal_eval(done.stdout.decode().strip())  # type: ignore[no-any-return]


def test_a_quiet_read_does_not_load_what_it_does_not_use():
    """Start-up time counts: structlog, importlib.metadata and other commands load only when needed."""
    heavy = ["structlog", "importlib.metadata", "replay.pipeline.cli.commands.capture", "replay.stages.spawn"]
    assert modules_loaded_by(["read", "/dev/null"], heavy) == ([], 0)


def test_heal_in_one_process_does_not_load_multiprocessing():
    """Worker processes (--workers) load it when they start, not every heal (~7 ms of each start-up)."""
    assert modules_loaded_by(["heal", "/dev/null"], ["multiprocessing"]) == ([], 0)


# the error contract ---------------------------------------------------------------------------
@pytest.mark.parametrize("args", [
    ["read", "/nonexistent.jsonl"],
    ["run", "/nonexistent.toml"],
    ["schema", "nope"],
    ["read", "--max-line-bytes", "-1"],
])
def test_every_refusal_is_one_json_object_on_stderr(args: list[str]):
    done = run_replay(*args, input=b"")
    assert done.returncode == 2 and done.stdout == b""
    lines = done.stderr.splitlines()
    assert len(lines) == 1
    body = orjson.loads(lines[0])
    assert list(body) == ["error"]
    assert body["error"]["code"] in CATALOGUE and body["error"]["message"]
    assert body["error"]["howToFix"]


def test_an_error_in_data_carries_its_position(tmp_path: Path):
    journal = tmp_path / "r.jsonl"
    journal.write_bytes(JOURNAL + b"{oops\n")
    done = run_replay("read", str(journal))
    assert done.returncode == 1
    [error] = errors_of(done.stderr)
    assert {"source", "line", "offset", "column"} <= set(error)
    assert (error["line"], error["offset"]) == (2, len(JOURNAL))


def test_stages_lists_options_as_config_keys_not_flags():
    """`replay stages` printed `--aliases=dict`, `--torn_tail=str`: no command takes such flags; they are the keys of a
    stage in a `replay run` config."""
    listed = run_replay("stages")
    assert listed.returncode == 0
    text = listed.stdout.decode()
    assert "    aliases = dict (default {}): " in text and '    torn_tail = str (default "error"): ' in text
    assert "--aliases" not in text and "--torn_tail" not in text


def test_stages_lists_the_keys_every_stage_takes_in_a_config():
    """`route_errors` (examples/pipelines/dead-letter.toml uses it, E_CONFIG_ERRORS_UNCONSUMED names it) was nowhere in
    `replay stages`; `type` and `inputs` neither."""
    text = run_replay("stages").stdout.decode()
    tail = text[text.index("every stage also takes, in a config:"):]
    assert all(f"    {key} = " in tail for key in ("type", "inputs", "route_errors"))


def test_a_stage_given_raw_lines_is_told_how_to_put_a_parse_between(tmp_path):
    """The advice was the catalogue's ("Sources take no inputs; transforms and sinks need at least one"), about
    another fault than the message's."""
    config = tmp_path / "c.toml"
    config.write_text('[stages.read]\ntype = "read"\n[stages.a]\ntype = "select"\ninputs = ["read"]\n'
                      '[stages.out]\ntype = "write"\ninputs = ["a"]\n')
    [error] = errors_of(run_replay("run", str(config), str(tmp_path / "x.jsonl")).stderr)
    assert error["code"] == "E_CONFIG_INPUTS_INVALID" and "`parse`" in error["howToFix"] and "Sources" not in error["howToFix"]
