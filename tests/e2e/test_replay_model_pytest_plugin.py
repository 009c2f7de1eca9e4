"""The pytest plugin, from a real pytest run: `replay_session` gives a test a replay model for a session file.

A small test project is written to a temporary folder and run with `python -m pytest` in a child
process; the plugin is found through its `pytest11` entry point, as in any project that installs
replay.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import EXAMPLES

SESSION = EXAMPLES / "echo-agent" / "scenarios" / "echo" / "session.jsonl"

TESTS = '''
import io
import sys

import pytest

sys.path.insert(0, {agent_dir!r})
from agent import SessionJournal, run_session  # the example echo agent, in-process


@pytest.fixture
def anyio_backend():
    return "asyncio"  # the echo agent is written for asyncio


@pytest.mark.anyio
async def test_the_agent_replays_its_session(replay_session, tmp_path):
    model = replay_session("session.jsonl")
    out = io.StringIO()
    await run_session(model, ["echo hello world", "thanks"], SessionJournal(tmp_path / "new.jsonl"), out)
    assert "The echo tool said: hello world" in out.getvalue()


@pytest.mark.anyio
async def test_three_lines(replay_session):
    model = replay_session("session.jsonl")
    assert [c["type"] async for c in model.stream(1, 0)] == ["tool-call", "finish"]
    model.stream(1, 1), model.stream(2, 0)


@pytest.mark.anyio
async def test_stops_early(replay_session):
    model = replay_session("session.jsonl")
    async for _ in model.stream(1, 0):
        pass


@pytest.mark.anyio
async def test_asks_out_of_order(replay_session):
    model = replay_session("session.jsonl")
    model.stream(2, 0)


@pytest.mark.anyio
async def test_skipped_midway(replay_session):
    model = replay_session("session.jsonl")
    async for _ in model.stream(1, 0):
        pass
    pytest.skip("not today")


@pytest.mark.anyio
@pytest.mark.xfail(reason="known")
async def test_fails_as_expected_midway(replay_session):
    model = replay_session("session.jsonl")
    async for _ in model.stream(1, 0):
        pass
    assert False


@pytest.fixture
def model(replay_session):
    return replay_session("session.jsonl")


@pytest.fixture
def broken():
    raise RuntimeError("setup broke")


@pytest.fixture
def skips():
    pytest.skip("no service today")


def test_setup_fails_after_a_model_was_taken(model, broken):
    pass


def test_setup_skips_after_a_model_was_taken(model, skips):
    pass


@pytest.mark.anyio
async def test_swallows_the_error(replay_session):
    model = replay_session("session.jsonl")
    try:
        model.stream(1, 1)
    except Exception:
        pass
    for turn, step in model.remaining:
        model.stream(turn, step)
'''


def run_pytest(folder: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")} | {"COLUMNS": "400"}
    return subprocess.run([sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "test_agent.py"],
                          cwd=folder, capture_output=True, text=True, env=env, timeout=300,
                          check=False)


def outcome(output: str, name: str) -> list[str]:
    """The -rA summary lines about one test (PASSED / FAILED / ERROR ...)."""
    return [line for line in output.splitlines() if f"test_agent.py::{name}" in line and line.split(" ")[0].isupper()]


def test_the_fixture_in_a_real_pytest_run(tmp_path: Path):
    shutil.copy(SESSION, tmp_path / "session.jsonl")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_agent.py").write_text(textwrap.dedent(TESTS.format(agent_dir=str(EXAMPLES / "echo-agent"))))
    done = run_pytest(tmp_path)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert outcome(out, "test_the_agent_replays_its_session") == ["PASSED test_agent.py::test_the_agent_replays_its_session"]
    assert outcome(out, "test_three_lines") == ["PASSED test_agent.py::test_three_lines"]
    # calls left over: the test body passed, its teardown fails naming the first call never made
    [stops] = [line for line in outcome(out, "test_stops_early") if line.startswith("ERROR")]
    assert "E_REPLAY_LEFTOVER" in stops and "(turn 1, step 1)" in stops
    # the test itself fails on the call out of order (and is not failed again at teardown)
    [asks] = outcome(out, "test_asks_out_of_order")
    assert asks.startswith("FAILED") and "E_REPLAY_OUT_OF_ORDER" in asks and "(turn 2, step 0)" in asks
    # an error the test caught and went on from still fails it at teardown
    [swallowed] = [line for line in outcome(out, "test_swallows_the_error") if line.startswith("ERROR")]
    assert "E_REPLAY_OUT_OF_ORDER" in swallowed and "(turn 1, step 1)" in swallowed
    # a test skipped, or failing as expected, partway is not also an error at teardown
    assert outcome(out, "test_skipped_midway") == []  # (-rA names a skip by its line: no ERROR line names it)
    assert [line.split(" ")[0] for line in outcome(out, "test_fails_as_expected_midway")] == ["XFAIL"]
    # a test whose setup failed or skipped after a fixture took a model did not run: its teardown adds no leftover
    # (it did: a second ERROR, the leftover of the model's first call, beside the setup's own; for a skip, the only one)
    [broken] = outcome(out, "test_setup_fails_after_a_model_was_taken")
    assert broken.startswith("ERROR") and "setup broke" in broken
    assert outcome(out, "test_setup_skips_after_a_model_was_taken") == []
    assert "1 failed, 4 passed, 2 skipped, 1 xfailed, 3 errors" in out


def test_the_example_agent_test_passes(tmp_path: Path):
    """examples/echo-agent/test_echo_agent.py, the test the README shows, run as a user would."""
    folder = tmp_path / "echo-agent"
    shutil.copytree(EXAMPLES / "echo-agent", folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_echo_agent.py"],
                          cwd=folder, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


HANGS = '''
from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_hangs(replay_session):
    model = replay_session("session.jsonl")
    async for _ in model.stream(1, 0):
        pass
    Path("started").touch()
    async for _ in model.stream(1, 1):  # the recording's calls are left unasked when Ctrl-C stops the test
        pass
'''


def test_ctrl_c_during_a_test_ends_the_run_as_pytest_ends_it(tmp_path: Path):
    """Ctrl-C while a test that took a replay model runs (an agent waiting on a `hang`): pytest stops the run (exit 2,
    "KeyboardInterrupt"). The test has no call report, and its teardown, run as the session ends, failed it for the calls
    left unasked: pytest crashed with an internal traceback (exit 1, "Failed: replay of ... E_REPLAY_LEFTOVER")."""
    (tmp_path / "session.jsonl").write_bytes(SESSION.read_bytes())
    (tmp_path / "replay.override.json").write_text('{"overrides": [{"turn": 1, "step": 1, "action": "hang"}]}')
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_agent.py").write_text(HANGS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_agent.py"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "started").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.stdout else ""
            time.sleep(0.05)
        time.sleep(0.3)  # (it waits in the hang)
    finally:
        proc.send_signal(signal.SIGINT)
    out = proc.communicate(timeout=120)[0].decode()
    assert proc.returncode == 2, out
    assert "KeyboardInterrupt" in out and "Traceback" not in out and "E_REPLAY_LEFTOVER" not in out


NO_SESSION = '''
def test_an_empty_session(replay_session):
    model = replay_session("empty.jsonl")
    assert model.remaining == []


def test_a_log_that_is_no_session(replay_session):
    model = replay_session("claude.jsonl")
    assert model.remaining == []
'''


def test_a_file_that_is_no_session_fails_the_test_that_loads_it(tmp_path: Path):
    """An empty file, and another agent's log, were a session with no model call: the test passed, replaying nothing.
    They are no session (E_SESSION_LINE_INVALID), as `replay script` says of them."""
    from conftest import CORPUS

    (tmp_path / "empty.jsonl").write_bytes(b"")
    shutil.copy(CORPUS / "claude-code" / "session_b.jsonl", tmp_path / "claude.jsonl")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_agent.py").write_text(NO_SESSION)
    out = run_pytest(tmp_path).stdout
    for name in ("test_an_empty_session", "test_a_log_that_is_no_session"):
        [line] = outcome(out, name)
        assert line.startswith("FAILED") and ("is no session journal" in line or "is not a session journal" in line), out
    assert "2 failed" in out
