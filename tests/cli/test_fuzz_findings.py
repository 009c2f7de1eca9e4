"""Regression tests for what `make fuzz` and the exactness property tests found (issue 7)."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, errors_of, run_replay
from fuzz import harness

BAD_CODES = {"E_UNHANDLED", "E_STAGE_FAILED"}


@pytest.mark.parametrize("etype", ['{"a":1}', "[1,2]"])
@pytest.mark.parametrize("command", [("heal",), ("report",), ("report", "--format", "json"), ("validate",)])
def test_an_event_type_that_is_an_object_or_an_array_is_reported_not_a_crash(etype, command):
    """Found by atheris: pair_tool_calls (and ensure_terminal, synthesize_assistant_message, the report's
    tool-call pairing) looked an unhashable `type` up in a set: TypeError, E_STAGE_FAILED."""
    data = (b'{"$record":"run","runId":"r1","status":"ok","response":"hi"}\n'
            b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r1","payload":{}}\n'
            b'{"seq":2,"timestamp":"2026-03-01T12:00:01.000Z","type":' + etype.encode() + b',"runId":"r1","payload":{}}\n')
    assert_no_crash(command, data)


def test_the_fuzzers_first_finding_replays_clean():
    """The input atheris saved (a Claude Code fixture mutated into a run record and events with an object type)."""
    replay_finding("unhashable-type.bin")


@pytest.mark.parametrize("command", [("heal",), ("heal", "--dialect", "claude-code"), ("heal", "--dialect", "codex"),
                                     ("report",)])
def test_a_dialect_record_whose_type_is_an_object_is_no_crash(command):
    """Found by atheris: dialect detection (and the Claude Code and Codex mappers) looked an unhashable `type`
    up in a set."""
    data = (b'{"type":{"a":1},"uuid":"u1","sessionId":"s1","timestamp":"2026-03-01T12:00:00.000Z"}\n'
            b'{"type":"user","uuid":"u2","sessionId":"s1","timestamp":"2026-03-01T12:00:01.000Z",'
            b'"message":{"role":"user","content":"hi"}}\n'
            b'{"type":["x"],"payload":{"type":"message"},"timestamp":"2026-03-01T12:00:02.000Z"}\n')
    assert_no_crash(command, data)


def test_the_fuzzers_second_finding_replays_clean():
    replay_finding("unhashable-dialect-type.bin")


def assert_no_crash(command: tuple[str, ...], data: bytes) -> None:
    done = run_replay(*command, input=data)
    codes = {e["code"] for e in errors_of(done.stderr)}
    assert not codes & BAD_CODES, done.stderr
    assert done.returncode in (0, 1)


def replay_finding(name: str) -> None:
    """A saved fuzzer input through every target again: the stages, and each command (its first byte picks one)."""
    data = (FIXTURES / "fuzz" / name).read_bytes()
    harness.one(data)
    for which in range(len(harness.COMMANDS)):
        harness.cli(data[1:], which)
