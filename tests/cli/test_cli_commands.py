"""Command routing: a typo of a command is refused, a prompt goes to capture, several words never run the runner."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay
from hypothesis import given, settings
from hypothesis import strategies as st


def test_a_mistyped_command_is_refused_with_the_command_it_resembles(tmp_path: Path) -> None:
    proc = run_replay("valdate", "--in", "x", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == b""
    (error,) = errors_of(proc.stderr)
    assert error["code"] == "E_COMMAND_UNKNOWN" and "'validate'" in error["message"]
    assert "replay capture valdate" in error["howToFix"]
    assert not (tmp_path / ".replay").exists()  # no runner was started


def test_a_word_that_is_no_command_is_a_prompt(tmp_path: Path) -> None:
    proc = run_replay("holdings", cwd=tmp_path, env={"REPLAY_RUNNER": str(EXAMPLES / "runners" / "echo_runner.py")})
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / ".replay" / "journal").is_dir()


@pytest.mark.parametrize("flags", [[], ["--runner", str(EXAMPLES / "runners" / "echo_runner.py")]])
def test_a_lone_prompt_that_names_a_file_or_folder_is_a_command_left_out(tmp_path: Path, flags: list[str]) -> None:
    """`replay run.jsonl` started the user's runner (a paid model call, with a real one) with the file's name as the
    question; `replay capture run.jsonl` still sends it."""
    env = {"REPLAY_RUNNER": str(EXAMPLES / "runners" / "echo_runner.py")}
    (tmp_path / "run.jsonl").write_bytes((EXAMPLES / "journals" / "two-runs.jsonl").read_bytes())
    (tmp_path / "runs").mkdir()
    for path in ("run.jsonl", "runs"):
        proc = run_replay(*flags, path, cwd=tmp_path, env=env)
        assert proc.returncode == 2 and proc.stdout == b""
        (error,) = errors_of(proc.stderr)
        assert error["code"] == "E_USAGE_INVALID" and f"replay capture {path}" in error["howToFix"]
        assert not (tmp_path / ".replay").exists()  # no runner was started
    assert run_replay("capture", "run.jsonl", cwd=tmp_path, env=env).returncode == 0
    assert (tmp_path / ".replay" / "journal").is_dir()


@pytest.mark.parametrize("argv", [["validate", "--max-errors", "0"], ["heal", "--log-level=debug"],
                                  ["incident", "import", "--max-errors", "0"]])
def test_replays_own_flag_after_the_command_is_told_where_it_goes(argv: list[str]) -> None:
    """The advice of E_NOTICES_SUPPRESSED is `replay --max-errors 0 ...`; written after the command (as every other
    flag is), it was only "No such option", where a flag of the command's put before it is told where it goes."""
    proc = run_replay(*argv, "x.jsonl")
    assert proc.returncode == 2 and proc.stdout == b""
    (error,) = errors_of(proc.stderr)
    flag = argv[-2] if argv[-2].startswith("--") else argv[-1].partition("=")[0]
    assert error["code"] == "E_UNKNOWN_FLAG" and f"put it before the command, `replay {flag} ..." in error["howToFix"]
    assert "put it before" not in errors_of(run_replay("validate", "--bogus", "x").stderr)[0]["howToFix"]


def test_a_closed_stdin_is_refused_before_any_output() -> None:
    import subprocess

    from conftest import REPLAY

    for command in (["read"], ["heal"], ["report"], ["validate"], ["run", str(EXAMPLES / "pipelines" / "tools-only.toml")]):
        proc = subprocess.run([REPLAY, *command], stdin=subprocess.DEVNULL, capture_output=True,
                              preexec_fn=lambda: __import__("os").close(0))
        assert proc.returncode == 2 and proc.stdout == b"", (command, proc.stderr)
        assert errors_of(proc.stderr)[0]["code"] == "E_INPUT_UNREADABLE", command


# Python replaces a directory on fd 0 by nothing: it stops at start-up ("Fatal Python error: init_sys_streams: <stdin>
# is a directory") before any code of replay runs. This runs replay's entry with a directory put on fd 0 after that
# check, as a launcher that is not Python itself hands it over.
DIRECTORY_ON_STDIN = "import os, sys; os.dup2(os.open(sys.argv[1], os.O_RDONLY), 0); sys.argv[1:2] = []; " \
                     "from replay.pipeline.cli.app import main; main()"


def test_a_directory_on_stdin_is_refused_before_any_output(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "run.jsonl").write_bytes(b"")  # a journal in it, which only `replay read DIR` reads
    for command in (["read"], ["heal"], ["report"], ["validate"], ["validate", "-"], ["script"],
                    ["run", str(EXAMPLES / "pipelines" / "tools-only.toml")], ["capture"], [], ["write"],
                    ["export", "--otlp"], ["golden", "check", "run.jsonl", "-"]):
        proc = subprocess.run([sys.executable, "-c", DIRECTORY_ON_STDIN, str(tmp_path), *command], stdin=subprocess.DEVNULL,
                              capture_output=True, cwd=tmp_path, timeout=60)
        assert proc.returncode == 2 and proc.stdout == b"", (command, proc.stderr)
        (error,) = errors_of(proc.stderr)
        assert error["code"] == "E_INPUT_UNREADABLE" and error["received"] == "a directory", command
        assert not (tmp_path / ".replay").exists(), command  # capture ran no runner


# several words, reserved verbs and `help`: nothing may start the user's runner by accident ------------
MARKER_RUNNER = """\
import json, pathlib, sys
request = json.load(sys.stdin)
pathlib.Path(__file__).with_name("ran").write_text(request["prompt"])
print(json.dumps({"status": "ok", "response": "ok", "events": []}))
"""


def marker_runner(tmp_path: Path) -> Path:
    """A runner that leaves a file named `ran` (holding the prompt) beside itself when it is started."""
    runner = tmp_path / "runner.py"
    runner.write_text(MARKER_RUNNER)
    return runner


def not_built(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Make these commands' modules absent, as in a build that does not have them yet."""
    from replay.pipeline.cli import app

    for name in names:
        monkeypatch.setitem(app.COMMANDS, name, f"replay.pipeline.cli.commands.not_built_{name}:{name}")


def refused_and_nothing_ran(proc, tmp_path: Path, code: str = "E_COMMAND_UNKNOWN") -> dict:
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == b""
    (error,) = errors_of(proc.stderr)
    assert error["code"] == code
    assert not (tmp_path / "ran").exists(), "the runner was started"
    assert not (tmp_path / ".replay").exists()
    return error


@pytest.mark.parametrize("argv", [
    ["walk", "run_1"], ["diff", "a", "b"], ["incident", "import", "x"], ["export", "--otlp", "run.jsonl"],
    ["script", "session.jsonl"], ["golden", "check", "a", "b"],
], ids=lambda argv: " ".join(argv))
def test_a_command_missing_from_the_build_is_never_a_prompt(argv, tmp_path, monkeypatch):
    not_built(monkeypatch, argv[0])
    runner = marker_runner(tmp_path)
    proc = run_replay(*argv, cwd=tmp_path, env={"REPLAY_RUNNER": str(runner)})
    error = refused_and_nothing_ran(proc, tmp_path)
    assert "not part of this build" in error["message"]
    assert error["expected"].startswith("one of: ") and "capture" in error["expected"] and argv[0] not in error["expected"]


@pytest.mark.parametrize("argv", [
    ["hello", "world"], ["what", "are", "my", "holdings?"], ["stroll", "run_1"], ["What are my top holdings?", "extra"],
    ["--runner", "RUNNER", "a", "b"], ["--runner=RUNNER", "a", "b"], ["--log-level", "info", "--runner", "RUNNER", "a", "b"],
    ["--timeout-ms", "5000", "a", "--", "b"],
], ids=lambda argv: " ".join(argv))
def test_several_words_whose_first_is_no_command_are_refused(argv, tmp_path):
    runner = marker_runner(tmp_path)
    argv = [a.replace("RUNNER", str(runner)) for a in argv]
    proc = run_replay(*argv, cwd=tmp_path, env={"REPLAY_RUNNER": str(runner)})
    error = refused_and_nothing_ran(proc, tmp_path)
    assert error["expected"].startswith("one of: ") and "validate" in error["expected"] and "walk" in error["expected"]
    assert "one quoted argument" in error["message"]


@pytest.mark.parametrize("argv", [["--", "-x y"], ["--log-level", "info", "--", "-x y"], ["--runner", "RUNNER", "--", "-x y"]],
                         ids=lambda argv: " ".join(argv))
def test_a_prompt_that_starts_with_a_dash_goes_after_double_dash(argv, tmp_path):
    runner = marker_runner(tmp_path)
    argv = [a.replace("RUNNER", str(runner)) for a in argv]
    proc = run_replay(*argv, cwd=tmp_path, env={"REPLAY_RUNNER": str(runner)})
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "ran").read_text() == "-x y"


def test_a_prompt_that_starts_with_a_dash_without_double_dash_is_refused_saying_where_it_goes(tmp_path):
    runner = marker_runner(tmp_path)
    proc = run_replay("-v or -q?", cwd=tmp_path, env={"REPLAY_RUNNER": str(runner)})
    error = refused_and_nothing_ran(proc, tmp_path, "E_UNKNOWN_FLAG")
    assert "`replay -- '-v or -q?'`" in error["howToFix"]


def test_several_words_after_double_dash_are_refused_with_a_hint_that_runs(tmp_path):
    runner = marker_runner(tmp_path)
    proc = run_replay("--", "-x", "y", cwd=tmp_path, env={"REPLAY_RUNNER": str(runner)})
    error = refused_and_nothing_ran(proc, tmp_path)
    hint = error["howToFix"].split("`")[3]
    assert hint == "replay -- '-x y'"
    assert run_replay(*shlex.split(hint)[1:], cwd=tmp_path, env={"REPLAY_RUNNER": str(runner)}).returncode == 0
    assert (tmp_path / "ran").read_text() == "-x y"


@pytest.mark.parametrize("verb", ["test", "init", "import", "inspect", "promote", "replay", "version"])
def test_a_reserved_verb_alone_is_never_a_prompt(verb, tmp_path):
    runner = marker_runner(tmp_path)
    proc = run_replay(verb, cwd=tmp_path, env={"REPLAY_RUNNER": str(runner)})
    error = refused_and_nothing_ran(proc, tmp_path)
    assert "reserved" in error["message"] and f"replay capture {verb}" in error["howToFix"]


def test_a_command_name_after_capture_flags_is_not_a_prompt(tmp_path):
    runner = marker_runner(tmp_path)
    proc = run_replay("--runner", str(runner), "walk", cwd=tmp_path)
    refused_and_nothing_ran(proc, tmp_path, "E_USAGE_INVALID")


@pytest.mark.parametrize("argv", [
    ["hello"], ["What are my top holdings?"], ["--runner", "RUNNER", "p"], ["--log-level", "info", "--runner", "RUNNER", "p"],
    ["--log-level=warning", "--runner=RUNNER", "--timeout-ms", "60000", "p"], ["capture", "several", "words"],
], ids=lambda argv: " ".join(argv))
def test_one_argument_that_is_no_command_is_a_prompt(argv, tmp_path):
    runner = marker_runner(tmp_path)
    argv = [a.replace("RUNNER", str(runner)) for a in argv]
    proc = run_replay(*argv, cwd=tmp_path, env={"REPLAY_RUNNER": str(runner)})
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "ran").read_text() == " ".join(a for a in argv if a in ("hello", "p", "several", "words")
                                                      or " " in a)


def test_replay_help_prints_the_help_as_the_seed_says(tmp_path):
    proc = run_replay("help", cwd=tmp_path, env={"REPLAY_RUNNER": str(marker_runner(tmp_path))})
    assert proc.returncode == 0 and proc.stderr == b""
    assert proc.stdout.startswith(b"Usage: replay [OPTIONS] COMMAND [ARGS]...")
    assert b"  help " in proc.stdout and b"  capture " in proc.stdout
    assert not (tmp_path / "ran").exists()


def test_replay_help_command_prints_that_commands_help(tmp_path):
    proc = run_replay("help", "heal", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith(b"Usage: replay heal [OPTIONS] [PATHS]...")
    nested = run_replay("help", "incident", "import", cwd=tmp_path)
    assert nested.returncode == 0 and nested.stdout.startswith(b"Usage: replay incident import ")
    unknown = run_replay("help", "nosuch", cwd=tmp_path)
    assert unknown.returncode == 2 and errors_of(unknown.stderr)[0]["code"] == "E_COMMAND_UNKNOWN"


# the words of a command line, as click reads them ------------------------------------------------------
ARGS = st.lists(st.sampled_from(["p", "q", "-", "--", "-h", "--runner", "--runner=r.py", "--out", "--no-heal",
                                 "--no-heal=1", "--max-output-bytes", "--bogus", "-x"]), max_size=7)


@settings(max_examples=300, deadline=None)
@given(ARGS)
def test_the_words_of_a_capture_line_are_the_ones_click_gives_its_prompt(args):
    import click

    from replay.pipeline.cli.app import cli, positional_words
    from replay.pipeline.engine.errors import ReplayError

    ctx = click.Context(cli, info_name="replay", help_option_names=["-h", "--help"])
    capture = cli.get_command(ctx, "capture")
    try:
        opts, _, _ = capture.make_parser(click.Context(capture, info_name="capture", parent=ctx)).parse_args(list(args))
    except (click.UsageError, ReplayError):  # a flag capture lacks, a value missing or given to a switch, a value
        return  # flag given twice (command.OnceEach): the line is refused
    prompt = opts.get("prompt")  # no words: click's "unset"
    assert positional_words(capture, ctx, args) == (list(prompt) if isinstance(prompt, tuple) else [])
