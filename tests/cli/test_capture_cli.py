"""`replay capture` end to end with the real executable: prompt forms, refusals, runner failures, files written."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import pty
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from conftest import EXAMPLES, FIXTURES, REPLAY, ROOT, alive, errors_of, group_gone, jsonl, run_replay
from process_support import catches, unread
from referencing import Registry, Resource

from replay.pipeline.engine.interrupts import BUILT_IN_NOT_STOPPED

RUNNERS = FIXTURES / "runners"
SAY = str(RUNNERS / "say.py")
ECHO_PY = str(EXAMPLES / "runners" / "echo_runner.py")
ECHO_MJS = str(EXAMPLES / "runners" / "echo_runner.mjs")
CRASH = str(EXAMPLES / "runners" / "streaming_crash_runner.py")
ADVICE_FIELDS = {"path", "expected", "received", "howToFix"}
SCHEMAS = [json.loads(p.read_text()) for p in (ROOT / "schemas").glob("*.schema.json")]
REGISTRY = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in SCHEMAS)
ARTIFACT_VALIDATOR = jsonschema.Draft202012Validator(
    {"$ref": "https://agent-replay.dev/schemas/replay-artifact.schema.json"}, registry=REGISTRY,
    format_checker=jsonschema.FormatChecker(),
)
NO_RUNNER_ENV = {"REPLAY_RUNNER": ""}


def capture(cwd: Path, *args: str, input: bytes | None = b"", env: dict | None = None) -> subprocess.CompletedProcess:
    return run_replay(*args, input=input, cwd=cwd, env={**NO_RUNNER_ENV, **(env or {})})


def say(cwd: Path, stdout, *extra: str, exit: int = 0, stderr: str | None = None) -> subprocess.CompletedProcess:
    context = {"stdout": stdout, "exit": exit} | ({"stderr": stderr} if stderr is not None else {})
    return capture(cwd, "capture", "--runner", SAY, "--context", json.dumps(context), *extra, "the prompt")


def only_error(done: subprocess.CompletedProcess) -> dict:
    [error] = errors_of(done.stderr)
    return error


def summary_of(done: subprocess.CompletedProcess) -> dict:
    [line] = jsonl(done.stdout)
    return line


def load(path: str | Path) -> dict:
    return json.loads(Path(path).read_text())


# refusals: exit 2, nothing run, nothing written ------------------------------------------------------
def refused(done: subprocess.CompletedProcess, cwd: Path, code: str) -> dict:
    assert done.returncode == 2, done.stderr
    assert done.stdout == b""
    error = only_error(done)
    assert error["code"] == code
    assert error.keys() >= ADVICE_FIELDS, error
    assert not (cwd / ".replay" / "artifacts").exists() and not (cwd / ".replay" / "journal").exists()
    return error


@pytest.mark.parametrize(("args", "code"), [
    (("capture", "--bogus", "p"), "E_UNKNOWN_FLAG"),
    (("p", "--bogus"), "E_UNKNOWN_FLAG"),
    (("capture", "--timeout-ms", "soon", "p"), "E_TIMEOUT_INVALID"),
    (("capture", "--timeout-ms", "0", "p"), "E_TIMEOUT_INVALID"),
    (("capture", "--timeout-ms", "1.5", "p"), "E_TIMEOUT_INVALID"),
    (("capture", "--timeout-ms", "\u00b2", "p"), "E_TIMEOUT_INVALID"),  # a digit to str.isdigit, not to int(): E_UNHANDLED
    (("capture", "--timeout-ms", "\u0661\u0660\u0660\u0660", "p"), "E_TIMEOUT_INVALID"),  # Arabic-Indic 1000
    (("capture", "   "), "E_PROMPT_REQUIRED"),
    (("capture", ""), "E_PROMPT_REQUIRED"),
    (("   ",), "E_PROMPT_REQUIRED"),
    (("",), "E_PROMPT_REQUIRED"),  # (`replay ""` was E_COMMAND_UNKNOWN "No such command ''.": a blank prompt too)
    (("--runner", ECHO_PY, ""), "E_PROMPT_REQUIRED"),
    (("capture", "--runner", ECHO_PY), "E_PROMPT_REQUIRED"),  # (stdin, empty, is read once the runner is found)
    (("capture",), "E_PROMPT_REQUIRED"),  # (stdin an empty file: no prompt, known without reading it; a pipe is read
    # once the runner is found: test_bare_replay_order.py)
    (("capture", "--context", "{}", "--context-file", "ctx.json", "p"), "E_CONTEXT_CONFLICT"),
    (("capture", "--context", "{broken", "p"), "E_CONTEXT_JSON_INVALID"),
    (("capture", "--context", "[1]", "p"), "E_CONTEXT_SHAPE_INVALID"),
    (("capture", "--context-file", "missing.json", "p"), "E_CONTEXT_FILE_NOT_FOUND"),
    (("capture", "p"), "E_RUNNER_NOT_FOUND"),
    (("capture", "--runner", "nope.py", "p"), "E_RUNNER_PATH_NOT_FOUND"),
    (("capture", "--runner", "runner.ts", "p"), "E_RUNNER_UNSUPPORTED_EXTENSION"),
    (("capture", "--runner", "not-executable", "p"), "E_RUNNER_NOT_EXECUTABLE"),
])
def test_refusals(tmp_path, args, code):
    (tmp_path / "ctx.json").write_text("{}")
    (tmp_path / "runner.ts").write_text("export {}\n")
    (tmp_path / "not-executable").write_text("#!/bin/sh\n")
    refused(capture(tmp_path, *args), tmp_path, code)


def test_a_context_with_a_key_written_twice_is_refused_at_the_second_as_a_config_is(tmp_path):
    """The context went to the runner with the last value of the key, without a word, where a pipeline config, a heal
    rules file or an override sidecar with a key written twice is refused: the other value may be the one meant."""
    (tmp_path / "ctx.json").write_bytes(b'\xef\xbb\xbf{"x": {"b": 1,\n "b": 2}}')
    inline = refused(capture(tmp_path, "capture", "--runner", SAY, "--context", '{"a": 1, "a": 2}', "p"), tmp_path,
                     "E_CONTEXT_JSON_INVALID")
    assert (inline["path"], inline["line"], inline["column"]) == ("$.a", 1, 10)
    in_file = refused(capture(tmp_path, "capture", "--runner", SAY, "--context-file", "ctx.json", "p"), tmp_path,
                      "E_CONTEXT_JSON_INVALID")
    assert (in_file["path"], in_file["source"], in_file["line"], in_file["column"], in_file["offset"]) == ("$.x.b", "ctx.json", 2, 2, 18)


def test_a_prompt_or_context_that_is_not_utf8_is_refused_where_its_bad_byte_is(tmp_path):
    """A prompt argument holding a byte that is not UTF-8 (a Latin-1 terminal's 'café') failed inside the graph
    (E_STAGE_FAILED, exit 1); on stdin it was sent to the runner with U+FFFD in its place, without a word; in --context it
    was E_UNHANDLED, and in --context-file 'not valid JSON ... at column 1'. Each is refused now, at the byte, nothing run."""
    (tmp_path / "ctx.json").write_bytes(b'{"a": "caf\xe9"}')
    env = {**os.environ, **NO_RUNNER_ENV}
    cases = [  # argv as bytes, stdin, code, (line, column) of the bad byte
        ([b"capture", b"--runner", SAY.encode(), b"caf\xe9 au lait"], b"", "E_PROMPT_INVALID", (1, 4)),
        ([b"capture", b"--runner", SAY.encode()], b"one line\n\xff two\n", "E_PROMPT_INVALID", (2, 1)),
        ([b"capture", b"--runner", SAY.encode(), b"--context", b'{"a": "caf\xe9"}', b"p"], b"", "E_CONTEXT_JSON_INVALID", (1, 11)),
        ([b"capture", b"--runner", SAY.encode(), b"--context-file", b"ctx.json", b"p"], b"", "E_CONTEXT_JSON_INVALID", (1, 11)),
    ]
    for argv, stdin, code, (line, column) in cases:
        done = subprocess.run([REPLAY.encode(), *argv], input=stdin, capture_output=True, cwd=tmp_path, env=env, timeout=60)
        error = refused(done, tmp_path, code)
        assert (error["line"], error["column"]) == (line, column), error
        assert "is not UTF-8" in error["message"], error


def test_unknown_flag_names_the_known_ones(tmp_path):
    error = refused(capture(tmp_path, "capture", "--runer", "x.py", "p"), tmp_path, "E_UNKNOWN_FLAG")
    assert error["received"] == "--runer" and "--runner" in error["expected"]


def test_refusal_order_context_before_runner(tmp_path):
    # no runner exists either, but the bad context is what the user hears about first
    refused(capture(tmp_path, "capture", "--context", "[]", "p"), tmp_path, "E_CONTEXT_SHAPE_INVALID")


def test_node_runner_without_node_is_refused(tmp_path):
    (tmp_path / ".replay").mkdir()
    shutil.copy(ECHO_MJS, tmp_path / ".replay" / "runner.mjs")
    bare = tmp_path / "bin"
    bare.mkdir()
    done = run_replay("p", cwd=tmp_path, input=b"", env={**NO_RUNNER_ENV, "PATH": str(bare)})
    error = refused(done, tmp_path, "E_RUNNER_START_FAILED")
    assert error["expected"] == "`node` on PATH"


def test_a_dangling_runner_link_is_named_as_passed_over(tmp_path):
    """`.replay/runner.py` linking to nothing was skipped without a word ("none of them in ..."), where a folder of that
    name was said to be passed over: both are named, with why."""
    (tmp_path / ".replay").mkdir()
    (tmp_path / ".replay" / "runner.py").symlink_to("/nonexistent")
    error = refused(capture(tmp_path, "hi"), tmp_path, "E_RUNNER_NOT_FOUND")
    assert "1 passed over" in error["message"]
    assert error["received"].endswith("; .replay/runner.py is a symbolic link to '/nonexistent', which does not exist")


# runner failures: exit 1, the run still written -------------------------------------------------------
def failed(done: subprocess.CompletedProcess, code: str, cwd: Path) -> tuple[dict, dict]:
    """The run failed after it started: exit 1, one error, and every file written with status error."""
    assert done.returncode == 1, done.stderr
    error = only_error(done)
    assert error["code"] == code
    assert error.keys() >= ADVICE_FIELDS, error
    summary = summary_of(done)
    assert summary["status"] == "error" and summary["error"] == code
    summary["files"] = {k: str(cwd / v) for k, v in summary["files"].items()}
    raw = load(summary["files"]["raw"])
    assert raw["error"]["code"] == code
    healed = load(summary["files"]["healed"])
    assert healed["status"] == "error" and healed["error"]["code"] == code
    assert healed["events"][-1]["type"] == "run_failed"
    return summary, raw


@pytest.mark.parametrize(("stdout", "code", "path"), [
    ("", "E_RUNNER_EMPTY_STDOUT", "$"),
    ("Thinking... AAPL is your largest holding.", "E_RUNNER_INVALID_JSON", "$"),
    ([{"status": "ok"}], "E_RUNNER_OUTPUT_SHAPE", "$"),
    ({"status": "done", "response": "r", "events": []}, "E_RUNNER_STATUS_INVALID", "$.status"),
    ({"status": "ok", "response": "r", "events": {"seq": 1}}, "E_RUNNER_EVENTS_INVALID", "$.events"),
    ({"status": "ok", "events": []}, "E_RUNNER_RESPONSE_MISSING", "$.response"),
])
def test_output_contract_failures(tmp_path, stdout, code, path):
    _summary, raw = failed(say(tmp_path, stdout), code, tmp_path)
    assert only_error(say(tmp_path, stdout))["path"] == path
    assert raw["stdout"] == (stdout if isinstance(stdout, str) else json.dumps(stdout))


def test_non_zero_exit_keeps_what_the_runner_said(tmp_path):
    output = {"status": "ok", "response": "half an answer", "events": [
        {"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started", "runId": "__RUN_ID__", "payload": {}}]}
    summary, raw = failed(say(tmp_path, output, exit=3, stderr="Traceback: boom\n"), "E_RUNNER_EXIT_NON_ZERO", tmp_path)
    assert raw["process"]["exitCode"] == 3 and raw["stderr"] == "Traceback: boom\n"
    healed = load(summary["files"]["healed"])
    assert healed["response"] == "half an answer"
    assert [e["type"] for e in healed["events"]] == ["run_started", "assistant_message", "run_failed"]


def test_runner_that_cannot_start(tmp_path):
    runner = tmp_path / "runner"
    runner.write_text("#!/nonexistent/interpreter\n")
    runner.chmod(0o755)
    _summary, raw = failed(capture(tmp_path, "capture", "--runner", "runner", "p"), "E_RUNNER_START_FAILED", tmp_path)
    assert raw["process"]["pid"] is None and raw["process"]["startError"]


def test_help_says_which_exit_a_runner_that_cannot_start_gets(tmp_path):
    """A runner found but that the system cannot start exits 1 with its files written (the seed: the raw capture is
    always written first; as incident replay's agent that cannot start), while the help put "no usable runner" under
    exit 2. It now says which case gets which code: node missing is found before anything runs (2)."""
    runner = tmp_path / "r2"
    runner.write_text("#!/nonexistent/interp\n")
    runner.chmod(0o755)
    failed(capture(tmp_path, "--runner", "./r2", "hi"), "E_RUNNER_START_FAILED", tmp_path)
    shown = " ".join(run_replay("capture", "--help").stdout.decode().split())
    one, two = shown.split("; 1 when ", 1)[1].split("; 2 when ", 1)
    assert "E_RUNNER_START_FAILED" in one and "could not start" in one
    assert "nothing was run or written" in two and "node not on PATH" in two.split(". ")[0]


def test_timeout_kills_runner_and_grandchild_and_keeps_the_streamed_event(tmp_path):
    pid_file = tmp_path / "pids"
    done = capture(tmp_path, "capture", "--runner", str(RUNNERS / "sleeper_with_grandchild.py"), "--timeout-ms", "1000",
                   "--context", json.dumps({"pidFile": str(pid_file)}), "p")
    summary, raw = failed(done, "E_RUNNER_TIMEOUT", tmp_path)
    runner, grandchild = map(int, pid_file.read_text().split())
    assert not alive(runner) and not alive(grandchild)
    assert raw["process"]["timedOut"] is True and raw["process"]["signal"] == "SIGTERM"
    assert load(summary["files"]["artifact"])["events"][0]["type"] == "run_started"
    # the end heal gives the run is when it ended (the run record's timings), not its last event's time: a report of
    # the killed run shows the second it ran, not 0ms
    healed = load(summary["files"]["healed"])
    assert healed["events"][-1]["type"] == "run_failed" and healed["events"][-1]["timestamp"] == healed["timings"]["endedAt"]
    report = json.loads(run_replay("report", "--format", "json", summary["files"]["healed"]).stdout)
    assert report["runs"][0]["durationMs"] >= 1000


def test_stdout_cap(tmp_path):
    done = capture(tmp_path, "capture", "--runner", str(RUNNERS / "flood_stdout.py"), "--max-output-bytes", "5000", "p")
    _summary, raw = failed(done, "E_RUNNER_OUTPUT_TOO_LARGE", tmp_path)
    assert raw["stdoutTruncated"] is True and len(raw["stdout"].encode()) == 5000


def test_crash_halfway_keeps_every_streamed_event(tmp_path):
    summary, raw = failed(capture(tmp_path, "capture", "--runner", CRASH, "search this"), "E_RUNNER_EXIT_NON_ZERO", tmp_path)
    streamed = [json.loads(line) for line in raw["stdout"].splitlines()]
    assert [e["type"] for e in streamed] == ["run_started", "user_message", "tool_called"]
    assert "RuntimeError" in raw["stderr"]
    assert load(summary["files"]["artifact"])["events"] == streamed
    healed = load(summary["files"]["healed"])
    assert healed["events"][:3] == streamed
    # the tool call that never returned is marked unanswered (no result is invented), then the run fails
    assert [(e["type"], e.get("synthetic")) for e in healed["events"][3:]] == [("tool_unanswered", True), ("run_failed", True)]
    journal = Path(summary["files"]["journal"]).read_bytes().splitlines()
    assert journal[1:4] == [line.encode() for line in raw["stdout"].splitlines()]  # the runner's own bytes


@pytest.mark.parametrize("exit", [1, 0])
def test_a_line_cut_off_when_the_runner_crashed_is_a_dropped_line_in_the_heal_log(tmp_path, exit):
    """A runner that dies mid-line leaves its last line cut off: it was left out of the artifacts without a word (the
    run's error is the crash; exit 0 too: the error named the line, the heal log did not). `replay heal` logs such a
    line as a `drop_torn_line` repair, and so does capture: the line, its offset and its bytes."""
    stdout = '{"type": "run_started", "payload": {}}\n{"type": "tool_ca'
    code = "E_RUNNER_EXIT_NON_ZERO" if exit else "E_RUNNER_INVALID_JSON"
    summary, raw = failed(say(tmp_path, stdout, exit=exit), code, tmp_path)
    assert raw["stdout"] == stdout
    log = load(summary["files"]["healLog"])
    [torn] = [r for r in log["repairs"] if r["rule"] == "drop_torn_line"]
    assert torn["action"] == "dropped" and (torn["line"], torn["offset"]) == (2, 39), torn
    assert torn["original"] == '{"type": "tool_ca' and torn["runId"] == summary["runId"]
    assert log["summary"]["byRule"]["drop_torn_line"] == 1 and summary["repairs"] == log["summary"]["total"]
    heal = jsonl(Path(summary["files"]["journal"]).read_bytes())[-1]
    assert heal["$record"] == "heal" and heal["byRule"]["drop_torn_line"] == 1


def test_runner_reporting_its_own_failure_is_a_successful_capture(tmp_path):
    output = {"status": "error", "error": {"code": "RUNNER_TOOL_TIMEOUT", "message": "slow", "retryable": True},
              "events": []}
    done = say(tmp_path, output)
    assert done.returncode == 0, done.stderr
    assert errors_of(done.stderr) == []
    summary = summary_of(done)
    assert summary["status"] == "error" and summary["error"] == "RUNNER_TOOL_TIMEOUT"


# the happy path --------------------------------------------------------------------------------
@pytest.mark.parametrize("runner", [ECHO_PY, pytest.param(ECHO_MJS, marks=pytest.mark.skipif(
    shutil.which("node") is None, reason="needs node"))], ids=["python", "node"])
def test_end_to_end_with_the_example_runners(tmp_path, runner):
    done = capture(tmp_path, "--runner", runner, "What are my top holdings?")
    assert done.returncode == 0, done.stderr
    summary = summary_of(done)
    run_id = summary["runId"]
    assert re.fullmatch(r"run_\d{8}T\d{6}_[0-9a-f]{6}", run_id) and summary["artifactId"] == run_id
    day = run_id[4:8] + "-" + run_id[8:10] + "-" + run_id[10:12]
    folder = Path(".replay") / "artifacts" / day
    assert summary["files"] == {
        "raw": str(folder / f"{run_id}.raw.json"), "artifact": str(folder / f"{run_id}.artifact.json"),
        "healed": str(folder / f"{run_id}.healed.json"), "healLog": str(folder / f"{run_id}.heal-log.json"),
        "journal": str(Path(".replay") / "journal" / f"{run_id}.jsonl"),
    }
    files = {k: tmp_path / v for k, v in summary["files"].items()}
    raw = load(files["raw"])
    assert raw["input"]["prompt"] == raw["input"]["query"] == "What are my top holdings?"
    assert raw["input"]["runId"] == run_id and raw["process"]["exitCode"] == 0 and "echo runner" in raw["stderr"]
    for name in ("artifact", "healed"):
        artifact = load(files[name])
        ARTIFACT_VALIDATOR.validate(artifact)
        assert artifact["response"] == "Echo: What are my top holdings?"
        assert artifact["toolCalls"] == [{"toolName": "lookup", "status": "ok", "durationMs": artifact["toolCalls"][0]["durationMs"]}]
    log = load(files["healLog"])
    assert log["artifactType"] == "heal-log" and log["runId"] == run_id and log["summary"]["total"] == 0
    # the journal is a canonical stream `replay read` passes through unchanged
    journal = files["journal"].read_bytes()
    again = run_replay("read", str(files["journal"]))
    assert again.returncode == 0 and again.stdout == journal
    assert jsonl(journal)[0]["$record"] == "run"
    assert not list(tmp_path.rglob("*.tmp"))


def test_prompt_from_stdin_with_no_arguments(tmp_path):
    (tmp_path / ".replay").mkdir()
    shutil.copy(ECHO_PY, tmp_path / ".replay" / "runner.py")
    done = capture(tmp_path, input=b"What are my top holdings?\n")
    assert done.returncode == 0, done.stderr
    assert load(tmp_path / summary_of(done)["files"]["healed"])["prompt"] == "What are my top holdings?"


def test_no_prompt_with_stdin_closed_is_said_to_be_so(tmp_path):
    """It was refused as "no prompt argument and stdin is a terminal"."""
    done = subprocess.run(["sh", "-c", 'exec "$0" capture --runner "$1" <&-', REPLAY, SAY], capture_output=True,
                          cwd=tmp_path, env={**os.environ, **NO_RUNNER_ENV}, timeout=60)
    error = refused(done, tmp_path, "E_PROMPT_REQUIRED")
    assert error["received"] == "no prompt argument and stdin is closed", error


def test_a_prompt_on_stdin_that_starts_with_a_byte_order_mark_is_sent_without_it(tmp_path):
    """A prompt saved by a Windows editor (`replay < prompt.txt`) starts with a byte order mark, which reached the runner
    as U+FEFF at the prompt's start; a mark alone is no prompt. A byte that is not UTF-8 after it is at its file offset."""
    (tmp_path / ".replay").mkdir()
    shutil.copy(ECHO_PY, tmp_path / ".replay" / "runner.py")
    done = capture(tmp_path, input=b"\xef\xbb\xbfWhat are my top holdings?\r\n")
    assert done.returncode == 0, done.stderr
    assert load(tmp_path / summary_of(done)["files"]["raw"])["input"]["prompt"] == "What are my top holdings?"
    (tmp_path / "empty" / ".replay").mkdir(parents=True)
    shutil.copy(ECHO_PY, tmp_path / "empty" / ".replay" / "runner.py")
    refused(capture(tmp_path / "empty", input=b"\xef\xbb\xbf\n"), tmp_path / "empty", "E_PROMPT_REQUIRED")
    error = refused(capture(tmp_path / "empty", input=b"\xef\xbb\xbfab\xff"), tmp_path / "empty", "E_PROMPT_INVALID")
    assert (error["line"], error["column"], error["offset"]) == (1, 3, 3), error


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupt_while_the_prompt_is_read_from_stdin_ends_replay_at_once(tmp_path, sig, code):
    """`slow-producer | replay`: Ctrl-C (or SIGTERM) while replay waited for the rest of the prompt on stdin was not
    seen until stdin ended (replay kept waiting); then the run was cancelled. It ends replay at once (130, 143), no
    runner starts and nothing is written."""
    marker = tmp_path / "runner-started"
    runner = tmp_path / "runner.py"
    runner.write_text(f"open({str(marker)!r}, 'w').close()\n")
    process = subprocess.Popen([REPLAY, "capture", "--runner", str(runner)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
                               env={**os.environ, **NO_RUNNER_ENV})
    try:
        assert process.stdin is not None
        process.stdin.write(b"What are my")  # the rest never comes: stdin stays open
        process.stdin.flush()
        deadline = time.monotonic() + 30  # replay started (it catches ``sig``) and waits on stdin (it read what came)
        while not (catches(process.pid, sig) and not unread(process.stdin)):
            assert time.monotonic() < deadline and process.poll() is None, "replay never waited on stdin"
            time.sleep(0.02)
        process.send_signal(sig)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail(f"replay still waits on stdin 10 s after {sig.name}")
    finally:
        if process.poll() is None:
            process.kill()
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == code, stderr
    assert not marker.exists() and not (tmp_path / ".replay").exists()


@pytest.mark.parametrize("args", [
    ("capture", "--runner", ECHO_PY, "top", "holdings"),
    ("--runner", ECHO_PY, "top holdings"),
    ("top holdings", "--runner", ECHO_PY),
])
def test_prompt_argument_forms(tmp_path, args):
    done = capture(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    assert load(tmp_path / summary_of(done)["files"]["healed"])["prompt"] == "top holdings"


def test_piped_prompt_with_flags_only(tmp_path):
    done = capture(tmp_path, "--runner", ECHO_PY, input=b"top holdings")
    assert done.returncode == 0, done.stderr
    assert load(tmp_path / summary_of(done)["files"]["healed"])["prompt"] == "top holdings"


def test_no_arguments_on_a_terminal_shows_help(tmp_path):
    leader, follower = pty.openpty()
    try:
        done = subprocess.run([REPLAY], stdin=follower, capture_output=True, cwd=tmp_path, timeout=60,
                              env={**os.environ, **NO_RUNNER_ENV})
    finally:
        os.close(leader)
        os.close(follower)
    assert done.returncode == 0
    assert b"Usage: replay" in done.stdout and b"capture" in done.stdout
    assert not (tmp_path / ".replay").exists()


def test_runner_found_in_the_project_and_from_the_environment(tmp_path):
    (tmp_path / ".replay").mkdir()
    shutil.copy(ECHO_PY, tmp_path / ".replay" / "runner.py")
    done = capture(tmp_path, "p")
    assert done.returncode == 0 and load(tmp_path / summary_of(done)["files"]["raw"])["runner"]["foundBy"] == ".replay/runner.py"
    done = capture(tmp_path, "p", env={"REPLAY_RUNNER": CRASH})
    assert load(tmp_path / summary_of(done)["files"]["raw"])["runner"]["foundBy"] == "REPLAY_RUNNER"


def test_context_reaches_the_runner(tmp_path):
    output = {"status": "ok", "response": "from context", "events": []}
    (tmp_path / "ctx.json").write_text(json.dumps({"stdout": output, "user": "u1"}))
    done = capture(tmp_path, "capture", "--runner", SAY, "--context-file", "ctx.json", "p")
    assert done.returncode == 0, done.stderr
    files = summary_of(done)["files"]
    assert load(tmp_path / files["healed"])["response"] == "from context"  # say.py printed what the context held
    assert load(tmp_path / files["raw"])["input"]["context"]["user"] == "u1"
    assert load(tmp_path / files["healed"])["context"]["user"] == "u1"


def test_out_directory(tmp_path):
    done = capture(tmp_path, "--runner", ECHO_PY, "--out", "captures", "p")
    assert done.returncode == 0, done.stderr
    files = summary_of(done)["files"]
    assert all(Path(files[k]).parent == Path("captures") for k in ("raw", "artifact", "healed", "healLog"))
    assert Path(files["journal"]).parent == Path(".replay") / "journal"
    assert all((tmp_path / f).is_file() for f in files.values())


def test_no_heal(tmp_path):
    done = capture(tmp_path, "--runner", str(EXAMPLES / "runners" / "broken_trace_runner.py"), "--no-heal", "p")
    assert done.returncode == 0, done.stderr
    summary = summary_of(done)
    assert set(summary["files"]) == {"raw", "artifact", "journal"} and "repairs" not in summary
    records = jsonl((tmp_path / summary["files"]["journal"]).read_bytes())
    assert [r.get("type") for r in records[1:]] == ["user_message", "tool_called", "tool_called", "tool_end", "llm_message"]
    assert not any(r.get("$record") == "heal" for r in records)


@pytest.mark.parametrize(("sig", "code", "said"), [(signal.SIGINT, 130, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM"),
                                                   (signal.SIGHUP, 129, "SIGHUP")])
def test_ctrl_c_stops_the_runner_and_keeps_what_it_streamed(tmp_path, sig, code, said):
    """A real runner that streams one event and then sleeps, a real SIGINT: the runner and its grandchild
    are stopped, and the raw capture, artifact, healed artifact and journal hold the streamed event,
    marked interrupted; exit 130. SIGTERM (``kill``, ``timeout``) and SIGHUP (a closed terminal) do the
    same, the runner's group getting that signal; exit 128 + the signal (143, 129)."""
    pid_file = tmp_path / "pids"
    process = subprocess.Popen(
        [REPLAY, "capture", "--runner", str(RUNNERS / "sleeper_with_grandchild.py"),
         "--context", json.dumps({"pidFile": str(pid_file)}), "p"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
        env={**os.environ, **NO_RUNNER_ENV},
    )
    try:
        for _ in range(1200):  # wait until the runner and its grandchild exist (the event is printed next)
            if pid_file.exists() or process.poll() is not None:
                break
            time.sleep(0.05)
        assert pid_file.exists(), process.stderr.read() if process.poll() is not None else "runner never started"
        process.send_signal(sig)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    runner, grandchild = map(int, pid_file.read_text().split())
    gone = group_gone(runner)  # the runner leads its own group (session)
    if not gone:
        os.killpg(runner, signal.SIGKILL)
    assert process.returncode == code, stderr
    assert gone and not alive(runner) and not alive(grandchild)
    assert all(line.startswith(b"{") for line in stderr.splitlines()), stderr
    [error] = errors_of(stderr)
    assert error["code"] == "E_CAPTURE_INTERRUPTED" and f"({said})" in error["message"]
    assert error["received"].startswith(f"{sig.name} after ")
    summary = summary_of(subprocess.CompletedProcess([], code, stdout, stderr))
    assert summary["status"] == "error" and summary["error"] == "E_CAPTURE_INTERRUPTED"
    files = summary["files"]
    raw = load(tmp_path / files["raw"])
    assert raw["process"]["interrupted"] is True and raw["error"]["code"] == "E_CAPTURE_INTERRUPTED"
    healed = load(tmp_path / files["healed"])
    assert healed["status"] == "error" and healed["error"]["code"] == "E_CAPTURE_INTERRUPTED"
    assert [e["type"] for e in healed["events"]][:1] == ["run_started"] and healed["events"][-1]["type"] == "run_failed"
    journal = jsonl((tmp_path / files["journal"]).read_bytes())
    assert journal[0]["$record"] == "run" and journal[0]["error"]["code"] == "E_CAPTURE_INTERRUPTED"
    streamed = raw["stdout"].splitlines()
    assert len(streamed) == 1 and json.loads(streamed[0])["type"] == "run_started"  # the streamed line, kept
    assert raw["streamedEvents"] == 1 and raw["process"]["signal"] in (sig.name, "SIGKILL")
    assert load(tmp_path / files["artifact"])["events"] == [json.loads(streamed[0])]
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


STUBBORN_RUNNER = """
import json, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)  # stopped only by the SIGKILL after the grace period
sys.stdin.read()
print(json.dumps({"type": "user_message", "payload": {"text": "hi"}}), flush=True)
open("runner-started", "w").close()  # (in replay's folder: the test's sign that the run is under way)
time.sleep(120)
"""


def interrupt_and_wait(process: subprocess.Popen[bytes]) -> tuple[bytes, bytes, float]:
    """Ctrl-C to ``process``: what it printed, and how long it took to end after the signal."""
    process.send_signal(signal.SIGINT)
    sent = time.monotonic()
    stdout, stderr = process.communicate(timeout=60)
    return stdout, stderr, time.monotonic() - sent


def test_the_interrupt_is_timed_when_it_came_not_when_the_runner_was_gone(tmp_path):
    """E_CAPTURE_INTERRUPTED said 'SIGINT after N ms' with N the runner's whole run: for a runner that ignores SIGINT,
    the signal's time plus the 2 s grace before SIGKILL."""
    runner = tmp_path / "stubborn.py"
    runner.write_text(STUBBORN_RUNNER)
    started = time.monotonic()
    process = subprocess.Popen([REPLAY, "capture", "--runner", str(runner), "p"], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, env={**os.environ, **NO_RUNNER_ENV})
    try:
        deadline = started + 60  # (waited for, not slept: a loaded machine may take seconds to get there)
        while not (tmp_path / "runner-started").exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.02)
        time.sleep(0.5)  # the runner printed its line and sleeps
        ran_ms = (time.monotonic() - started) * 1000  # how long replay had run when the signal came, at most
        _, stderr, stopped = interrupt_and_wait(process)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    [error] = errors_of(stderr)
    after_ms = int(error["received"].removeprefix("SIGINT after ").removesuffix(" ms"))
    assert stopped > 1.5  # the grace period passed before the runner was killed
    # when the signal came, not when the runner was gone (2 s of grace later); a second of slack for a loaded machine
    assert after_ms <= ran_ms + 1000, error


DEAF_RUNNER = """
import json, os, signal, subprocess, sys, time
request = json.load(sys.stdin)
context = request["context"]
for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(number, signal.SIG_IGN)  # (inherited by the child: it ignores them too)
child = subprocess.Popen(["sleep", "600"])  # in the runner's process group
def hear(number, frame):  # the runner hears an interrupt and goes on: only SIGKILL stops it
    with open(context["heard"], "a") as log:
        log.write(signal.Signals(number).name + "\\n")
for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(number, hear)
for step, kind in enumerate(("user_message", "tool_called", "tool_completed")):
    print(json.dumps({"type": kind, "payload": {"step": step}}), flush=True)
with open(context["pidFile"], "w") as pids:
    pids.write(f"{os.getpid()} {child.pid}")
while True:
    time.sleep(1)
"""

# Makes the capture's files hang while they are written (`sitecustomize`, first on PYTHONPATH): a staged temp file
# half written, then an hour's sleep in emit's worker thread; "WRITING" on stderr says it got there.
HANGING_WRITE = """
import sys, time

from replay.pipeline.io.staging import atomic_output
from replay.stages import emit


def write_file(path, data):
    with atomic_output(path) as handle:
        handle.write(data[: len(data) // 2])
        handle.flush()
        sys.stderr.write("WRITING\\n")
        sys.stderr.flush()
        time.sleep(3600)


emit.write_file = write_file
"""


def start_deaf_capture(tmp_path: Path, env: dict | None = None) -> tuple[subprocess.Popen[bytes], Path, Path]:
    """`replay capture` of DEAF_RUNNER, once the runner has streamed its three events: replay, its pid file, the file
    the runner logs the interrupts it hears in."""
    runner, pid_file, heard = tmp_path / "deaf.py", tmp_path / "pids", tmp_path / "heard"
    runner.write_text(DEAF_RUNNER)
    process = subprocess.Popen(
        [REPLAY, "capture", "--runner", str(runner), "--context",
         json.dumps({"pidFile": str(pid_file), "heard": str(heard)}), "p"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
        env={**os.environ, **NO_RUNNER_ENV, **(env or {})},
    )
    for _ in range(1200):  # (a readiness wait, not a speed measure)
        if (pid_file.exists() and pid_file.read_text()) or process.poll() is not None:
            break
        time.sleep(0.05)
    assert pid_file.exists() and pid_file.read_text(), process.communicate() if process.poll() is not None else "no runner"
    return process, pid_file, heard


def interrupt_twice(process: subprocess.Popen[bytes], first: signal.Signals, heard: Path) -> None:
    """``first``, and once the runner heard it (replay now waits out its grace before SIGKILL), Ctrl-C."""
    process.send_signal(first)
    for _ in range(1200):
        if (heard.exists() and heard.read_text()) or process.poll() is not None:
            break
        time.sleep(0.01)
    assert heard.exists() and heard.read_text().split() == [first.name], process.poll()
    process.send_signal(signal.SIGINT)


@contextlib.contextmanager
def reaped(process: subprocess.Popen[bytes]) -> Iterator[None]:
    """Whatever happens in the block, ``process`` is gone after it (killed if it still runs)."""
    try:
        yield
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def ended_with_its_group(process: subprocess.Popen[bytes], code: int, stderr: bytes, pid_file: Path) -> None:
    """replay exited ``code``, and the runner's group (the runner and its child) is gone."""
    gone, runner, child = stop_group(pid_file)
    assert process.returncode == code, stderr
    assert gone and not alive(runner) and not alive(child)


def stop_group(pid_file: Path) -> tuple[bool, int, int]:
    """Was the runner's group gone (then the runner and its child are too)? Kills what is left, for the next test."""
    runner, child = map(int, pid_file.read_text().split())
    gone = group_gone(runner)  # the runner leads its own group (session)
    if not gone:
        os.killpg(runner, signal.SIGKILL)
    return gone, runner, child


@pytest.mark.parametrize(("first", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_second_ctrl_c_kills_the_runner_at_once_and_still_writes_what_it_streamed(tmp_path, first, code):
    """Users press Ctrl-C twice. The second came while replay gave the runner (which ignores it) its 2 s to stop, and
    interrupted replay itself: exit 130 with nothing on stderr and no files, every event streamed lost. It kills the
    runner's group at once and the files are written as after one Ctrl-C (E_CAPTURE_INTERRUPTED), exit 128 + the
    first interrupt (130; 143 when a SIGTERM came first)."""
    process, pid_file, heard = start_deaf_capture(tmp_path)
    with reaped(process):
        interrupt_twice(process, first, heard)
        stdout, stderr = process.communicate(timeout=60)
    ended_with_its_group(process, code, stderr, pid_file)
    assert heard.read_text().split() == [first.name]  # (the second Ctrl-C was replay's alone: the runner was killed)
    assert all(line.startswith(b"{") for line in stderr.splitlines()), stderr
    [error] = errors_of(stderr)
    assert error["code"] == "E_CAPTURE_INTERRUPTED" and error["received"].startswith(f"{first.name} after "), error
    summary = summary_of(subprocess.CompletedProcess([], code, stdout, stderr))
    assert summary["status"] == "error" and summary["error"] == "E_CAPTURE_INTERRUPTED", summary
    files = summary["files"]
    raw = load(tmp_path / files["raw"])
    streamed = [json.loads(line) for line in raw["stdout"].splitlines()]
    assert [e["type"] for e in streamed] == ["user_message", "tool_called", "tool_completed"]
    assert raw["streamedEvents"] == 3 and raw["process"]["interrupted"] is True
    assert raw["process"]["signal"] == "SIGKILL" and raw["error"]["code"] == "E_CAPTURE_INTERRUPTED"
    assert load(tmp_path / files["artifact"])["events"] == streamed
    healed = load(tmp_path / files["healed"])
    assert healed["status"] == "error" and healed["error"]["code"] == "E_CAPTURE_INTERRUPTED"
    assert [e["payload"] for e in healed["events"] if e["type"] in ("tool_called", "tool_completed")] == \
        [{"step": 1}, {"step": 2}]
    journal = jsonl((tmp_path / files["journal"]).read_bytes())
    assert journal[0]["$record"] == "run" and journal[0]["error"]["code"] == "E_CAPTURE_INTERRUPTED"
    assert [e["type"] for e in journal[1:] if e.get("type") in ("user_message", "tool_called", "tool_completed")] == \
        ["user_message", "tool_called", "tool_completed"]
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.parametrize(("third", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_when_writing_hangs_after_a_second_ctrl_c_a_further_interrupt_still_ends_replay(tmp_path, third, code):
    """The last resort stays: after the second Ctrl-C the files are written whatever further interrupts come, unless
    writing hangs: an interrupt then ends replay once its 2 s grace is over (E_STAGE_NOT_STOPPED naming the stage,
    exit 128 + that interrupt), with no temp file left behind."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(HANGING_WRITE)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    process, pid_file, heard = start_deaf_capture(tmp_path, {"PYTHONPATH": path})
    with reaped(process):
        interrupt_twice(process, signal.SIGINT, heard)
        assert process.stderr is not None
        said = b""
        while not said.endswith(b"WRITING\n"):  # (the runner was killed, and writing its files hangs now)
            line = process.stderr.readline()
            assert line, said
            said += line
        process.send_signal(third)
        rest, stderr = process.communicate(timeout=60)
        stderr = said + stderr
    ended_with_its_group(process, code, stderr, pid_file)
    codes = [e["code"] for e in errors_of(stderr)]
    assert codes == ["E_CAPTURE_INTERRUPTED", "E_STAGE_NOT_STOPPED"], stderr
    assert errors_of(stderr)[1]["stage"] == "emit"  # (replay's own stage: a bug to report, not a plugin to fix)
    assert errors_of(stderr)[1]["howToFix"] == BUILT_IN_NOT_STOPPED
    assert rest == b"" and not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_a_raw_control_character_in_a_last_line_without_newline_is_named_where_it_is_not_called_cut_off(tmp_path):
    """The line is whole but invalid (a raw NUL inside a string): it was "stdout line 1 is cut off"."""
    stdout = '{"status": "ok", "response": "a\u0000b", "events": []}'
    failed(say(tmp_path, stdout), "E_RUNNER_INVALID_JSON", tmp_path)
    error = only_error(say(tmp_path, stdout))
    assert error["message"] == "stdout line 1 is not valid JSON: unexpected control character in string (U+0000) at column 32"
    assert (error["line"], error["column"], error["offset"]) == (1, 32, 0)


def test_a_prompt_that_is_not_utf8_is_refused_at_the_bad_bytes_byte_column_and_its_lines_offset(tmp_path):
    """ERROR_CODES.md: ``column`` counts bytes from the line's start and ``offset`` is the line's start, so the bad byte
    is at offset + column - 1. After characters of two bytes ('é') the prompt's refusal counted characters (column 5 for
    byte 7) and gave the bad byte's own offset."""
    prompt = b"x\n\xc3\xa9t\xc3\xa9 \xff\n"
    done = subprocess.run([REPLAY, "capture", "--runner", SAY], input=prompt, capture_output=True, cwd=tmp_path,
                          env={**os.environ, **NO_RUNNER_ENV}, timeout=60)
    error = refused(done, tmp_path, "E_PROMPT_INVALID")
    assert (error["line"], error["column"], error["offset"]) == (2, 7, 2), error
    assert prompt[error["offset"] + error["column"] - 1] == 0xFF
    assert "column 7" in error["message"], error


# A byte order mark (what a Windows tool may start its output or a file with) is no JSON, and read, heal, validate,
# the heal rules file, a config, an override sidecar and an incident export all skip one; a runner's stdout and a
# --context-file were refused for it (E_RUNNER_INVALID_JSON / E_CONTEXT_JSON_INVALID "BOM is not supported").
BOM = "\ufeff"


@pytest.mark.parametrize("stdout", [
    BOM + json.dumps({"status": "ok", "response": "r", "events": [{"type": "run_started", "payload": {}}]}),
    BOM + json.dumps({"status": "ok", "response": "r", "events": [{"type": "run_started", "payload": {}}]}, indent=2),
    BOM + '{"type": "run_started", "payload": {}}\n{"status": "ok", "response": "r", "events": []}\n',
])
def test_a_runner_output_that_starts_with_a_byte_order_mark_is_read(tmp_path, stdout):
    done = say(tmp_path, stdout)
    assert done.returncode == 0, done.stderr
    summary = summary_of(done)
    assert summary["status"] == "ok" and summary["events"] == 3, summary  # run_started, assistant_message, run_completed
    assert load(tmp_path / summary["files"]["raw"])["stdout"] == stdout  # the raw capture keeps stdout as it was


def test_the_raw_capture_keeps_the_exact_bytes_of_output_that_is_not_utf8(tmp_path):
    """stdout and stderr as the runner wrote them, though JSON text cannot hold a byte that is not UTF-8: the text (with
    U+FFFD there) and the bytes themselves in base64. (The bytes were lost: U+FFFD only.)"""
    stdout = b'{"status": "ok", "response": "caf\xe9", "events": []}\n'
    stderr = b"log: \xff\xfe done\n"
    runner = tmp_path / "bytes_runner.py"
    runner.write_text("import sys\nsys.stdin.read()\n"
                      f"sys.stderr.buffer.write({stderr!r})\nsys.stdout.buffer.write({stdout!r})\n")
    done = capture(tmp_path, "capture", "--runner", str(runner), "the prompt")
    raw = load(tmp_path / summary_of(done)["files"]["raw"])
    assert base64.b64decode(raw["stdoutBase64"]) == stdout and base64.b64decode(raw["stderrBase64"]) == stderr
    assert raw["stdout"] == stdout.decode("utf-8", "replace") and raw["stderr"] == stderr.decode("utf-8", "replace")
    clean = say(tmp_path, json.dumps({"status": "ok", "response": "r", "events": []}))
    assert "stdoutBase64" not in load(tmp_path / summary_of(clean)["files"]["raw"])  # (UTF-8: the text is the bytes)


def test_the_end_of_stderr_kept_starts_at_a_character_so_utf8_stays_text_only(tmp_path):
    """The raw capture keeps stderr's last 1 MiB: cut there, a two-byte character lost its first byte, so the runner's
    valid UTF-8 showed U+FFFD and came in base64 too, as bytes it never wrote so. The cut is at a character now."""
    runner = tmp_path / "loud_runner.py"
    runner.write_text("import sys, json\nsys.stdin.read()\n"  # 1,400,002 bytes of UTF-8: the 1 MiB cut falls in an é
                      "sys.stderr.write('a' + '\u00e9' * 700000 + '\\n')\n"
                      "print(json.dumps({'status': 'ok', 'response': 'r', 'events': []}))\n")
    done = capture(tmp_path, "capture", "--runner", str(runner), "the prompt")
    assert done.returncode == 0, done.stderr
    raw = load(tmp_path / summary_of(done)["files"]["raw"])
    assert raw["stderrTruncated"] is True and raw["stderrBytes"] == 1_400_002
    assert "stderrBase64" not in raw and "\ufffd" not in raw["stderr"]
    assert raw["stderr"] == "\u00e9" * ((1 << 20) // 2 - 1) + "\n"  # (1 MiB but the byte of the é it would halve)


def test_stdout_cut_at_its_cap_ends_at_a_character(tmp_path):
    """Past --max-output-bytes the runner is killed and what fits is kept: not the first byte of a character it cuts.
    (What it kept is no JSON, a line left out: said too, after the run's error, as it is when the runner exits 0.)"""
    done = say(tmp_path, "\u00e9" * 10_000, "--max-output-bytes", "5001")
    assert done.returncode == 1 and [e["code"] for e in errors_of(done.stderr)] == [
        "E_RUNNER_OUTPUT_TOO_LARGE", "E_RUNNER_INVALID_JSON"], done.stderr
    raw = load(tmp_path / summary_of(done)["files"]["raw"])
    assert raw["error"]["code"] == "E_RUNNER_OUTPUT_TOO_LARGE"
    assert raw["stdoutTruncated"] is True and "stdoutBase64" not in raw and raw["stdout"] == "\u00e9" * 2500


def test_a_pretty_printed_output_object_after_streamed_events_is_the_runs_answer(tmp_path):
    """A streamed event, then the output object as `json.dumps(output, indent=2)` prints it: E_RUNNER_INVALID_JSON at
    its `{`, exit 1, the answer lost (the same object alone was read)."""
    event = {"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started", "runId": "__RUN_ID__", "payload": {}}
    output = {"status": "ok", "response": "done", "sources": ["a", "b"], "events": []}
    done = say(tmp_path, json.dumps(event) + "\n" + json.dumps(output, indent=2) + "\n")
    assert done.returncode == 0 and errors_of(done.stderr) == [], done.stderr
    summary = summary_of(done)
    assert summary["status"] == "ok", summary
    raw = load(tmp_path / summary["files"]["raw"])
    assert raw["streamedEvents"] == 1 and raw["error"] is None
    healed = load(tmp_path / summary["files"]["healed"])
    assert (healed["response"], healed["sources"]) == ("done", ["a", "b"])
    assert healed["events"][0] == {**event, "runId": summary["runId"]}


def test_a_fault_after_a_byte_order_mark_is_at_its_place_in_stdout(tmp_path):
    stdout = BOM + '{"type": "run_started", "payload": {}}\n{"status": "ok", oops}\n'
    error = only_error(say(tmp_path, stdout))
    assert (error["code"], error["line"], error["column"], error["offset"]) == ("E_RUNNER_INVALID_JSON", 2, 18, 42), error
    assert stdout.encode()[error["offset"] + error["column"] - 1:].startswith(b"oops")
    stdout = BOM + '{\n  "status": "ok",\n  oops\n}\n'  # one output object over several lines
    error = only_error(say(tmp_path, stdout))
    assert (error["code"], error["line"], error["column"], error["offset"]) == ("E_RUNNER_INVALID_JSON", 3, 3, 23), error
    assert stdout.encode()[error["offset"] + error["column"] - 1:].startswith(b"oops")


def test_a_context_file_that_starts_with_a_byte_order_mark_is_read(tmp_path):
    output = {"status": "ok", "response": "from context", "events": []}
    (tmp_path / "ctx.json").write_text(BOM + json.dumps({"stdout": output, "user": "u1"}), encoding="utf-8")
    done = capture(tmp_path, "capture", "--runner", SAY, "--context-file", "ctx.json", "p")
    assert done.returncode == 0, done.stderr
    assert load(tmp_path / summary_of(done)["files"]["raw"])["input"]["context"]["user"] == "u1"
    data = (BOM + '{"user": "u1",\n  oops}').encode()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "ctx.json").write_bytes(data)
    error = refused(capture(tmp_path / "bad", "capture", "--runner", SAY, "--context-file", "ctx.json", "p"),
                    tmp_path / "bad", "E_CONTEXT_JSON_INVALID")
    assert (error["line"], error["column"], error["offset"]) == (2, 3, 18), error
    assert data[error["offset"] + error["column"] - 1:].startswith(b"oops")


@pytest.mark.parametrize("in_the_way", [".replay/artifacts", ".replay"])
def test_a_file_where_the_default_artifacts_folder_goes_is_refused_before_the_runner_starts(tmp_path, in_the_way):
    """As `--out afile/x` is (E_OUTPUT_UNWRITABLE, exit 2, nothing run): with no --out, a file at .replay/artifacts let the
    runner run, then every file failed (E_OUTPUT_WRITE_FAILED, exit 1) and what the runner said was lost."""
    (tmp_path / in_the_way).parent.mkdir(exist_ok=True)
    (tmp_path / in_the_way).write_text("in the way\n")
    marker = tmp_path / "ran"
    runner = tmp_path / "runner.py"
    runner.write_text(f"import sys; sys.stdin.read(); open({str(marker)!r}, 'w').close(); "
                      "print('{\"status\": \"ok\", \"response\": \"r\", \"events\": []}')\n")
    done = capture(tmp_path, "--runner", str(runner), "p")
    assert done.returncode == 2, done.stderr
    assert only_error(done)["code"] == "E_OUTPUT_UNWRITABLE" and done.stdout == b""
    assert not marker.exists()


@pytest.mark.parametrize(("name", "text"), [
    ("pyproject.toml", '\ufeff[tool.replay]\nrunner = "say.py"\n'),  # saved by a Windows editor
    ("package.json", '\ufeff{"scripts": {"replay:runner": "python3 say.py"}}'),  # npm reads it too
])
def test_a_project_file_that_starts_with_a_byte_order_mark_still_names_the_runner(tmp_path, name, text):
    """The runner it named was not found (E_RUNNER_NOT_FOUND): the file was read as no TOML / no JSON and passed over."""
    shutil.copy(SAY, tmp_path / "say.py")
    (tmp_path / name).write_text(text, encoding="utf-8")
    output = {"status": "ok", "response": "r", "events": []}
    done = capture(tmp_path, "--context", json.dumps({"stdout": output}), "p")
    assert done.returncode == 0, done.stderr
    assert summary_of(done)["status"] == "ok"


@pytest.mark.parametrize("text", ['tool = "x"\n', "tool = 3\n", '[tool]\nreplay = "x"\n'])
def test_a_pyproject_whose_tool_table_is_no_table_is_passed_over(tmp_path, text):
    """Another tool's business, as a pyproject.toml that is no TOML is: it ended in E_UNHANDLED (AttributeError)."""
    (tmp_path / "pyproject.toml").write_text(text)
    refused(capture(tmp_path, "p"), tmp_path, "E_RUNNER_NOT_FOUND")


def test_a_context_file_from_a_pipe_is_read(tmp_path):
    """`--context-file <(make-context)` (a pipe) was refused as a file that "does not exist" (E_CONTEXT_FILE_NOT_FOUND),
    as --override <(...) is read for `replay script`."""
    output = {"status": "ok", "response": "r", "events": []}
    context = json.dumps({"stdout": output, "user": "u1"})
    done = subprocess.run(["bash", "-c", 'exec "$0" capture --runner "$1" --context-file <(printf %s "$2") p', REPLAY, SAY,
                           context], capture_output=True, cwd=tmp_path, env={**os.environ, **NO_RUNNER_ENV}, timeout=60)
    assert done.returncode == 0, done.stderr
    assert load(tmp_path / summary_of(done)["files"]["raw"])["input"]["context"]["user"] == "u1"


def test_a_context_file_that_is_a_folder_is_called_one(tmp_path):
    """It was "context file 'ctx' does not exist"."""
    (tmp_path / "ctx").mkdir()
    error = refused(capture(tmp_path, "capture", "--runner", SAY, "--context-file", "ctx", "p"), tmp_path, "E_USAGE_INVALID")
    assert "is a directory" in error["message"] and error["path"] == "--context-file", error
