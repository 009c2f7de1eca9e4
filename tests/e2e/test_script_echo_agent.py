"""The echo agent, record -> replay -> goldens, as real processes: the example agent and `replay golden check`.

Record: the agent runs against its scripted model and persists a session. Replay: the agent runs again
with ReplayModel serving that session's model calls. Both goldens (the stdout transcript and the
re-persisted session JSONL) must equal the recording after normalisation, and the checked-in goldens
of each scenario too.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import EXAMPLES, errors_of, jsonl, run_replay

AGENT = EXAMPLES / "echo-agent" / "agent.py"
SCENARIOS = EXAMPLES / "echo-agent" / "scenarios"


def run_agent(cwd: Path, inputs: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, str(AGENT), *args], input=inputs, capture_output=True, cwd=cwd, timeout=120,
                          check=False)


def record(tmp: Path, scenario: str) -> tuple[Path, Path]:
    """Run the agent against the scripted model; the session journal and the transcript it left."""
    done = run_agent(tmp, (SCENARIOS / scenario / "inputs.txt").read_bytes(), "--session", "recorded.jsonl")
    assert done.returncode == 0, done.stderr
    (tmp / "recorded.txt").write_bytes(done.stdout)
    return tmp / "recorded.jsonl", tmp / "recorded.txt"


def replay(tmp: Path, session: Path, inputs: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    done = run_agent(tmp, inputs, "--replay", str(session), "--session", "replayed.jsonl", *args)
    (tmp / "replayed.txt").write_bytes(done.stdout)
    return done


def golden_check(recorded: Path, new: Path) -> subprocess.CompletedProcess[bytes]:
    return run_replay("golden", "check", str(recorded), str(new))


def assert_same(recorded: Path, new: Path) -> None:
    done = golden_check(recorded, new)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert jsonl(done.stdout)[0]["same"] is True


@pytest.mark.parametrize("scenario", ["echo", "overloaded"])
def test_record_then_replay_gives_both_goldens_back(tmp_path: Path, scenario: str):
    session, transcript = record(tmp_path, scenario)
    if scenario == "overloaded":  # the thrown stream is the one thing the log cannot say: the sidecar does
        shutil.copy(SCENARIOS / scenario / "replay.override.json", tmp_path / "replay.override.json")
    done = replay(tmp_path, session, (SCENARIOS / scenario / "inputs.txt").read_bytes())
    assert done.returncode == 0, done.stderr
    assert_same(transcript, tmp_path / "replayed.txt")
    assert_same(session, tmp_path / "replayed.jsonl")
    # the two runs really differ before normalisation (a fresh session id, new timestamps)
    assert transcript.read_bytes() != (tmp_path / "replayed.txt").read_bytes()
    # and both match the goldens checked in with the scenario
    assert_same(SCENARIOS / scenario / "stdout.txt", transcript)
    assert_same(SCENARIOS / scenario / "session.jsonl", session)
    assert_same(SCENARIOS / scenario / "stdout.txt", tmp_path / "replayed.txt")
    assert_same(SCENARIOS / scenario / "session.jsonl", tmp_path / "replayed.jsonl")


def test_the_checked_in_sessions_replay_to_their_own_goldens(tmp_path: Path):
    for scenario in ("echo", "overloaded"):
        done = replay(tmp_path, SCENARIOS / scenario / "session.jsonl", (SCENARIOS / scenario / "inputs.txt").read_bytes())
        assert done.returncode == 0, done.stderr
        assert_same(SCENARIOS / scenario / "stdout.txt", tmp_path / "replayed.txt")
        assert_same(SCENARIOS / scenario / "session.jsonl", tmp_path / "replayed.jsonl")


def test_a_behaviour_change_is_the_first_difference_with_both_lines(tmp_path: Path):
    golden = SCENARIOS / "echo"
    done = replay(tmp_path, golden / "session.jsonl", b"echo hello there\nthanks\n")  # the user typed something else
    assert done.returncode == 0, done.stderr  # the model calls still match the recording
    check = golden_check(golden / "session.jsonl", tmp_path / "replayed.jsonl")
    assert check.returncode == 1
    result = jsonl(check.stdout)[0]
    assert result["same"] is False and result["line"] == 2
    assert '"input":"echo hello world"' in result["recordedLine"] and '"input":"echo hello there"' in result["newLine"]
    [error] = errors_of(check.stderr)
    assert error["code"] == "E_GOLDEN_MISMATCH" and error["line"] == 2
    check = golden_check(golden / "stdout.txt", tmp_path / "replayed.txt")
    assert check.returncode == 1 and jsonl(check.stdout)[0]["newLine"] == "> echo hello there"


def test_an_agent_that_stops_early_leaves_calls_over_and_exits_1(tmp_path: Path):
    done = replay(tmp_path, SCENARIOS / "echo" / "session.jsonl", b"echo hello world\n")
    assert done.returncode == 1
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_REPLAY_LEFTOVER" and (error["turn"], error["step"]) == (2, 0)


def test_an_agent_that_asks_for_more_goes_past_the_end_even_if_it_swallows_the_error(tmp_path: Path):
    done = replay(tmp_path, SCENARIOS / "echo" / "session.jsonl", b"echo hello world\nthanks\none more\n")
    assert done.returncode == 1
    assert b"[model error] ReplayModelError" in done.stdout  # the loop caught it as a model failure ...
    [error] = errors_of(done.stderr)  # ... and the replay still fails, naming the call
    assert error["code"] == "E_REPLAY_PAST_END" and (error["turn"], error["step"]) == (3, 0)


def test_a_thrown_stream_without_its_override_is_refused_naming_the_step(tmp_path: Path):
    session = tmp_path / "session.jsonl"
    shutil.copy(SCENARIOS / "overloaded" / "session.jsonl", session)  # no sidecar beside this copy
    done = replay(tmp_path, session, (SCENARIOS / "overloaded" / "inputs.txt").read_bytes())
    assert done.returncode == 2 and done.stdout == b""
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_SESSION_GROUP_UNFINISHED" and (error["turn"], error["step"]) == (2, 0)


def test_a_hang_override_blocks_the_call_until_the_agent_times_out(tmp_path: Path):
    sidecar = tmp_path / "hang.json"
    sidecar.write_bytes(orjson.dumps({"overrides": [{"turn": 2, "step": 0, "action": "hang"}]}))
    done = replay(tmp_path, SCENARIOS / "echo" / "session.jsonl", b"echo hello world\nthanks\n",
                  "--override", str(sidecar), "--step-timeout", "0.5")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == [b"[model error] TimeoutError: no answer within 0.5s",
                                             b"session ended: 2 turns, 3 model calls"]
    errors = [line for line in jsonl((tmp_path / "replayed.jsonl").read_bytes()) if line["type"] == "turn/error"]
    assert [(e["turn"], e["step"], e["error"]["name"]) for e in errors] == [(2, 0, "TimeoutError")]
