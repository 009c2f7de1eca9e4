"""`replay incident replay` with real agent processes: the example, every divergence kind, the timeout-then-success
sequence, agent failures, the output-folder and promote guarantees, the exit-code table, and no private value in any output."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import REPLAY, alive, errors_of, group_gone, jsonl, run_replay
from incident_support import (
    FINAL,
    INCIDENTS,
    LOOKUP,
    REFUND,
    REFUND_AGENT,
    REFUND_EXPORT,
    REPRODUCE,
    agent_command,
    plan_agent,
    refund_export,
    sensitive_export,
    value_forms,
    write_json,
)

FOLDER = ["evaluation.json", "incident.json", "junit.xml", "redaction.json", "replay.json", "report.html", "trace.jsonl"]
CANDIDATE = "CANDIDATE-ONLY-VALUE-5e1d"


@pytest.fixture()
def imported(tmp_path: Path) -> Path:
    done = run_replay("incident", "import", str(REFUND_EXPORT), "--out", str(tmp_path / "imported"))
    assert done.returncode == 0, done.stderr
    return tmp_path / "imported" / "incident.json"


def replay(bundle: Path, agent: str, out: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_replay("incident", "replay", str(bundle), "--agent-command", agent, "--out", str(out), *args)


def folder_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.iterdir()))


def test_the_example_agent_reproduces_the_incident(imported: Path, tmp_path: Path) -> None:
    done = replay(imported, agent_command(REFUND_AGENT), tmp_path / "replayed")
    assert done.returncode == 0, done.stderr
    (summary,) = jsonl(done.stdout)
    assert summary["summary"] == "replay MATCHED; business rules FAIL"
    assert summary["replay"] == "matched" and summary["rules"] == "fail" and summary["files"] == FOLDER
    result = orjson.loads((tmp_path / "replayed" / "replay.json").read_bytes())
    assert result["status"] == "matched" and result["consumed_calls"] == result["recorded_calls"] == 3
    assert result["agent"]["stderr_bytes_withheld"] > 0 and b"retrying" not in folder_bytes(tmp_path / "replayed")
    junit = (tmp_path / "replayed" / "junit.xml").read_text()
    assert 'failures="1"' in junit and "one-refund-per-order" in junit  # the known failure, with exit 0
    assert "replay MATCHED; business rules FAIL" in (tmp_path / "replayed" / "report.html").read_text()
    trace = jsonl((tmp_path / "replayed" / "trace.jsonl").read_bytes())
    assert {line["replay"] for line in trace} == {"matched"}


def test_the_portable_example_runner(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(INCIDENTS / "replay_example.py"), "--workdir", str(tmp_path)],
                          capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert b"replay MATCHED; business rules FAIL" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["incident-example-imported", "incident-example-replayed"]
    assert (tmp_path / "incident-example-replayed" / "report.html").exists()
    again = subprocess.run([sys.executable, str(INCIDENTS / "replay_example.py"), "--workdir", str(tmp_path)],
                           capture_output=True, timeout=120, check=False)
    assert again.returncode == 2  # fresh folders are needed on repeated runs
    assert errors_of(again.stderr)[0]["code"] == "E_INCIDENT_OUTPUT_NOT_EMPTY"


def test_repeated_identical_requests_get_the_timeout_then_the_success(imported: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "received.jsonl"
    done = replay(imported, plan_agent(REPRODUCE, transcript), tmp_path / "out")
    assert done.returncode == 0, done.stderr
    received = jsonl(transcript.read_bytes())
    assert [m["type"] for m in received] == ["task_start", "tool_result", "tool_result", "tool_result"]
    assert [m["ok"] for m in received[1:]] == [True, False, True]
    assert received[2]["error"]["code"] == "TIMEOUT" and received[2]["result"] is None
    assert received[3]["result"]["status"] == "succeeded"
    assert [m["call_id"] for m in received[1:]] == ["x1", "x2", "x3"]  # the agent's own call ids come back
    assert received[0]["input"]["request"] == "[redacted]"  # the agent sees the sanitized input only


DIVERGENCES = [
    ("extra_call", [LOOKUP, REFUND, REFUND, REFUND, FINAL]),
    ("missing_call", [LOOKUP, REFUND, FINAL]),
    ("reordered_call", [REFUND, LOOKUP, REFUND, FINAL]),
    ("changed_call", [{"call": "lookup_order", "args": {"order_id": CANDIDATE}}]),
    ("changed_call", [LOOKUP, {"call": "refund_payment", "args": {"ref": CANDIDATE}}]),
    ("changed_final_output", [LOOKUP, REFUND, REFUND, {"final": {"status": CANDIDATE}}]),
    ("changed_terminal", [LOOKUP, REFUND, REFUND, {"error": CANDIDATE}]),
    # a call after its answer (sent without waiting for a result, then exit 0): it was not read
    ("extra_call", [LOOKUP, REFUND, REFUND, FINAL,
                    {"raw": json.dumps({"type": "tool_call", "call_id": "x9", "name": "issue_refund",
                                        "args": {"order_id": CANDIDATE}})}]),
    ("changed_terminal", [LOOKUP, REFUND, REFUND, FINAL, {"error": CANDIDATE}]),
]


@pytest.mark.parametrize(("kind", "plan"), DIVERGENCES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(DIVERGENCES)])
def test_every_divergence_stops_the_replay_and_withholds_the_candidate(imported: Path, tmp_path: Path, kind: str,
                                                                       plan: list[dict[str, Any]]) -> None:
    out = tmp_path / "out"
    done = replay(imported, plan_agent([{"stderr": CANDIDATE}, {"log": CANDIDATE}, *plan]), out)
    assert done.returncode == 1
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_INCIDENT_REPLAY_DIVERGED"]
    result = orjson.loads((out / "replay.json").read_bytes())
    assert result["status"] == "diverged" and result["divergence"]["kind"] == kind
    assert jsonl(done.stdout)[0]["divergence"] == kind
    assert sorted(p.name for p in out.iterdir()) == FOLDER
    assert result["agent"]["logs_withheld"] == 1
    for blob in (folder_bytes(out), done.stdout, done.stderr):
        assert CANDIDATE.encode() not in blob


def test_the_agent_and_its_children_are_stopped_at_a_divergence(imported: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    done = replay(imported, plan_agent([{"child": str(pidfile)}, {"call": "wire_money", "args": {}}, {"sleep": 60}]),
                  tmp_path / "out")
    assert done.returncode == 1
    assert orjson.loads((tmp_path / "out" / "replay.json").read_bytes())["agent"]["status"] == "stopped"
    assert not alive(int(pidfile.read_text()))


def test_sigterm_stops_the_agent_and_its_children_as_ctrl_c_does(imported: Path, tmp_path: Path) -> None:
    """SIGTERM to replay (``kill``, ``timeout``) while the agent runs: the agent's whole process group is killed (it
    outlived replay, which SIGTERM ended at once), no output folder is left, nothing but JSON on stderr; exit 143."""
    pidfile = tmp_path / "child.pid"
    out = tmp_path / "out"
    proc = subprocess.Popen([REPLAY, "incident", "replay", str(imported), "--agent-command",
                             plan_agent([{"child": str(pidfile)}, {"sleep": 60}]), "--out", str(out)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for _ in range(1200):  # the agent has started its child and written its pid
            if (pidfile.exists() and pidfile.read_text().isdigit()) or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert pidfile.exists(), proc.stderr.read() if proc.poll() is not None else "the agent never started its child"
        child = int(pidfile.read_text())
        group = os.getpgid(child)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    gone = group_gone(group)
    if not gone:
        os.killpg(group, signal.SIGKILL)
    assert proc.returncode == 143, err
    assert all(line.startswith(b"{") for line in err.splitlines()), err
    assert gone and not alive(child)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["child.pid", "imported"]  # no folder, whole or half


@pytest.mark.parametrize(("plan", "args", "code"), [
    ([{"exit": 3}], (), "E_INCIDENT_AGENT_EXITED"),
    ([LOOKUP], (), "E_INCIDENT_AGENT_EXITED"),
    ([{"sleep": 60}], ("--timeout-ms", "500"), "E_INCIDENT_AGENT_TIMEOUT"),
    ([{"raw": f"not json {CANDIDATE}"}], (), "E_INCIDENT_AGENT_PROTOCOL_INVALID"),
    ([{"raw": '{"type": "tool_call", "name": "lookup_order"}'}], (), "E_INCIDENT_AGENT_PROTOCOL_INVALID"),
    ([{"raw": '{"type": "tool_result", "call_id": "x"}'}], (), "E_INCIDENT_AGENT_PROTOCOL_INVALID"),
    # a key written twice: only the last value would be compared (a call could match that does not)
    ([{"raw": f'{{"type": "log", "message": "{CANDIDATE}", "type": "log"}}'}], (), "E_INCIDENT_AGENT_PROTOCOL_INVALID"),
    ([{"log": "a"}, {"log": "b"}, {"log": "c"}, {"log": "d"}], ("--max-messages", "3"), "E_INCIDENT_AGENT_LIMIT_EXCEEDED"),
    ([LOOKUP, REFUND, REFUND, FINAL], ("--max-tool-calls", "2"), "E_INCIDENT_AGENT_LIMIT_EXCEEDED"),
    ([{"long": 1024 * 1024 + 10}], (), "E_INCIDENT_AGENT_LIMIT_EXCEEDED"),
])
def test_agent_failures_exit_1_with_a_complete_folder(imported: Path, tmp_path: Path, plan: list[dict[str, Any]],
                                                      args: tuple[str, ...], code: str) -> None:
    out = tmp_path / "out"
    done = replay(imported, plan_agent(plan), out, *args)
    assert done.returncode == 1
    assert [e["code"] for e in errors_of(done.stderr)] == [code]
    fix = errors_of(done.stderr)[0]["howToFix"]  # names the flag (or the option) that governs the limit hit
    assert (any(f in fix for f in args if f.startswith("--")) if args else "--max-" not in fix), fix
    result = orjson.loads((out / "replay.json").read_bytes())
    assert result["status"] == "agent_error" and result["agent"]["error"]["code"] == code
    assert sorted(p.name for p in out.iterdir()) == FOLDER
    junit = (out / "junit.xml").read_text()  # a crash, a timeout, a broken protocol: a JUnit error, not a failure
    assert '<error type="agent_error"' in junit and 'errors="1"' in junit and 'failures="1"' in junit
    assert CANDIDATE.encode() not in folder_bytes(out) + done.stderr


@pytest.mark.parametrize(("sent", "path", "what"), [
    (f'{{"type":"tool_call","call_id":"x","name":"lookup_order","args":{{"{CANDIDATE}":1,"{CANDIDATE}":2}}}}', "$.args",
     "writes a key twice in one object inside its args"),
    (f'{{"type":"tool_call","call_id":"x","name":"lookup_order","args":{{"{CANDIDATE}":{{"k":1,"k":2}}}}}}', "$.args",
     "writes a key twice in one object inside its args"),
    (f'{{"type":"final_output","output":{{"status":"ok","{CANDIDATE}":[{{"{CANDIDATE}":1,"{CANDIDATE}":2}}]}}}}', "$.output",
     "writes a key twice in one object inside its output"),
    (f'{{"type":"log","{CANDIDATE}":1,"{CANDIDATE}":2}}', "$", "writes a key twice in one object"),
    ('{"type":"tool_call","call_id":"x","name":"lookup_order","name":"issue_refund","args":{}}', "$.name",
     "writes its name key twice"),
])
def test_a_key_the_agent_writes_twice_is_named_by_the_protocol_member_it_is_in_never_by_its_name(
        imported: Path, tmp_path: Path, sent: str, path: str, what: str) -> None:
    """The path of a key written twice named it as the agent wrote it (an argument's name: candidate content, maybe a
    secret) in stderr and replay.json; it now stops at the protocol's own member the key is in."""
    out = tmp_path / "out"
    done = replay(imported, plan_agent([{"raw": sent}]), out)
    assert done.returncode == 1
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"], error["message"]) == ("E_INCIDENT_AGENT_PROTOCOL_INVALID", path, f"agent message 1 {what}")
    agent = orjson.loads((out / "replay.json").read_bytes())["agent"]
    assert agent["error"]["path"] == path
    assert CANDIDATE.encode() not in folder_bytes(out) + done.stderr


# an agent that ends badly after a matching terminal message -----------------------------------------------------
@pytest.mark.parametrize(("end", "exit_code", "signal_name", "how"), [
    ({"exit": 3}, 3, None, "exit code 3"),
    ({"kill": "SIGKILL"}, -signal.SIGKILL, "SIGKILL", "signal SIGKILL"),
    ({"kill": "SIGTERM"}, -signal.SIGTERM, "SIGTERM", "signal SIGTERM"),
], ids=["exit-3", "SIGKILL", "SIGTERM"])
def test_an_agent_that_matches_then_exits_non_zero_or_by_a_signal_is_an_agent_error(
        imported: Path, tmp_path: Path, end: dict[str, Any], exit_code: int, signal_name: str | None, how: str) -> None:
    """The specification's "agent execution error -> 1": the agent sent every recorded call and the recorded final_output,
    then exited 3 or was killed by a signal. It was MATCHED, exit 0, with the exit code only in replay.json."""
    out = tmp_path / "out"
    done = replay(imported, plan_agent([{"stderr": CANDIDATE}, *REPRODUCE, end]), out)
    assert done.returncode == 1, done.stderr
    (error,) = errors_of(done.stderr)
    assert error["code"] == "E_INCIDENT_AGENT_EXITED", error
    assert error["message"] == f"the agent ended ({how}) after its final_output, not with exit code 0", error
    assert error["received"].startswith(how) and "exit with code 0" in error["howToFix"], error
    (summary,) = jsonl(done.stdout)
    assert (summary["replay"], summary["summary"]) == ("agent_error", "replay AGENT ERROR; business rules FAIL")
    assert "divergence" not in summary and summary["files"] == FOLDER
    result = orjson.loads((out / "replay.json").read_bytes())
    assert result["status"] == "agent_error" and result["divergence"] is None
    assert result["consumed_calls"] == result["recorded_calls"] == 3
    assert result["steps"][-1] == {"step": 4, "terminal": "final_output", "status": "matched"}
    agent = result["agent"]
    assert (agent["status"], agent["exit_code"], agent["signal"]) == ("failed", exit_code, signal_name)
    assert agent["error"]["code"] == "E_INCIDENT_AGENT_EXITED" and how in agent["error"]["message"]
    junit = (out / "junit.xml").read_text()
    # JUnit's convention: the agent that could not run to its end is an error, the rule it broke a failure
    assert '<error type="agent_error"' in junit and how in junit and 'failures="1" errors="1"' in junit
    assert "<failure type=\"agent_error\"" not in junit
    report = (out / "report.html").read_text()
    assert "replay AGENT ERROR; business rules FAIL" in report and "E_INCIDENT_AGENT_EXITED" in report and how in report
    trace = jsonl((out / "trace.jsonl").read_bytes())
    assert {line["replay"] for line in trace} == {"matched"}  # every event was reproduced; the process failed after
    assert CANDIDATE.encode() not in folder_bytes(out) + done.stdout + done.stderr


def test_an_agent_that_matches_then_exits_0_still_matches(imported: Path, tmp_path: Path) -> None:
    done = replay(imported, plan_agent([*REPRODUCE, {"exit": 0}]), tmp_path / "out")
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    assert jsonl(done.stdout)[0]["replay"] == "matched"
    result = orjson.loads((tmp_path / "out" / "replay.json").read_bytes())
    assert result["status"] == "matched" and result["agent"]["status"] == "finished"
    assert (result["agent"]["exit_code"], result["agent"]["signal"], result["agent"]["error"]) == (0, None, None)
    assert 'type="agent_error"' not in (tmp_path / "out" / "junit.xml").read_text()


@pytest.mark.parametrize(("end", "code", "errors"), [
    ({"exit": 0}, 0, []),
    ({"exit": 3}, 1, ["E_INCIDENT_AGENT_EXITED"]),
    ({"kill": "SIGTERM"}, 1, ["E_INCIDENT_AGENT_EXITED"]),
], ids=["exit-0", "exit-3", "SIGTERM"])
def test_replay_gate_with_passing_rules_fails_on_an_agent_that_exits_badly(tmp_path: Path, end: dict[str, Any], code: int,
                                                                           errors: list[str]) -> None:
    """--gate adds the rules to the verdict: with every rule passing, the agent's own exit decides."""
    out = tmp_path / "out"
    done = replay(_passing_bundle(tmp_path), plan_agent([*REPRODUCE, end]), out, "--gate")
    assert done.returncode == code, done.stderr
    assert [e["code"] for e in errors_of(done.stderr)] == errors
    (summary,) = jsonl(done.stdout)
    assert summary["rules"] == "pass" and summary["replay"] == ("matched" if code == 0 else "agent_error")
    junit = (out / "junit.xml").read_text()
    assert f'failures="0" errors="{code}"' in junit and ('<error type="agent_error"' in junit) == bool(code)


def test_replay_gate_with_failed_rules_reports_both_the_agent_and_the_rules(imported: Path, tmp_path: Path) -> None:
    done = replay(imported, plan_agent([*REPRODUCE, {"exit": 3}]), tmp_path / "out", "--gate")
    assert done.returncode == 1
    assert sorted(e["code"] for e in errors_of(done.stderr)) == ["E_INCIDENT_AGENT_EXITED", "E_INCIDENT_RULES_FAILED"]
    assert jsonl(done.stdout)[0]["replay"] == "agent_error"


def test_an_agent_that_matches_a_recorded_task_error_may_exit_non_zero_but_not_by_a_signal(tmp_path: Path) -> None:
    """After a task_error a non-zero exit code says what the message says (a failing process exits so): the replay of a
    failed incident matched, exit 0. Ended by a signal, it crashed or was killed whatever it said: an agent error."""
    export = {"schema_version": 1, "input": {"order_id": "o-1"}, "effects_complete": True,
              "events": [{"type": "task_error", "message": "refund failed"}],
              "assertions": [{"id": "no-tool-errors", "type": "max_tool_errors", "max": 0}]}
    done = run_replay("incident", "import", str(write_json(tmp_path / "e.json", export)), "--out", str(tmp_path / "imported"))
    assert done.returncode == 0, done.stderr
    bundle = tmp_path / "imported" / "incident.json"
    for k, end in enumerate([[], [{"exit": 1}], [{"exit": 3}]]):
        ok = replay(bundle, plan_agent([{"error": "refund failed"}, *end]), tmp_path / f"ok{k}")
        assert ok.returncode == 0 and jsonl(ok.stdout)[0]["replay"] == "matched", (end, ok.stderr)
        result = orjson.loads((tmp_path / f"ok{k}" / "replay.json").read_bytes())
        assert (result["status"], result["agent"]["exit_code"]) == ("matched", end[0]["exit"] if end else 0)
    done = replay(bundle, plan_agent([{"error": "refund failed"}, {"kill": "SIGKILL"}]), tmp_path / "out")
    assert done.returncode == 1
    (error,) = errors_of(done.stderr)
    assert error["message"] == "the agent ended (signal SIGKILL) after its task_error, not by exiting", error
    result = orjson.loads((tmp_path / "out" / "replay.json").read_bytes())
    assert (result["status"], result["agent"]["signal"]) == ("agent_error", "SIGKILL")


def test_a_diverged_final_output_stays_the_verdict_when_the_agent_then_exits_non_zero(imported: Path, tmp_path: Path) -> None:
    """Both are reported: the divergence (what the agent sent) is the replay's verdict, and its exit the agent's error."""
    out = tmp_path / "out"
    done = replay(imported, plan_agent([LOOKUP, REFUND, REFUND, {"final": {"status": CANDIDATE}}, {"exit": 3}]), out)
    assert done.returncode == 1
    assert sorted(e["code"] for e in errors_of(done.stderr)) == ["E_INCIDENT_AGENT_EXITED", "E_INCIDENT_REPLAY_DIVERGED"]
    result = orjson.loads((out / "replay.json").read_bytes())
    assert result["status"] == "diverged" and result["divergence"]["kind"] == "changed_final_output"
    assert result["agent"]["status"] == "failed" and result["agent"]["exit_code"] == 3
    assert result["agent"]["error"]["code"] == "E_INCIDENT_AGENT_EXITED"
    assert CANDIDATE.encode() not in folder_bytes(out) + done.stderr


def test_an_agent_message_nested_too_deep_is_named_so(imported: Path, tmp_path: Path) -> None:
    """A line nested deeper than replay reads may well be JSON: it is refused as nested too deep, not as invalid JSON."""
    deep = "[" * 1100 + "]" * 1100
    done = replay(imported, plan_agent([{"raw": '{"type": "final_output", "output": ' + deep + "}"}]), tmp_path / "out")
    assert done.returncode == 1
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_INCIDENT_AGENT_PROTOCOL_INVALID"
    assert "nested deeper than 1024 levels" in error["message"] and "not valid JSON" not in error["message"], error
    assert error["received"].startswith("more than 1024 levels"), error


def test_a_relative_agent_program_is_looked_for_where_spawn_agent_starts_it(imported: Path, tmp_path: Path) -> None:
    """With `cwd` set, the check before anything runs finds a relative program where starting it does, in that folder:
    it refused one that is only there (and would have run), and passed one that is only in replay's folder (which
    then failed to start, an agent error)."""
    agent_dir, here = tmp_path / "agent", tmp_path / "here"
    here.mkdir()
    script = f"#!/bin/sh\nexec {sys.executable} {REFUND_AGENT} \"$@\"\n"
    config = tmp_path / "run.toml"
    config.write_text(f"""
[stages.load]
type = "load_incident"
format = "bundle"
path = {json.dumps(str(imported))}

[stages.agent]
type = "spawn_agent"
inputs = ["load"]
command = ["bin/agent"]
cwd = {json.dumps(str(agent_dir))}

[stages.match]
type = "match"
inputs = ["agent"]

[stages.evaluate]
type = "evaluate"
inputs = ["match"]

[stages.folder]
type = "write_incident"
inputs = ["evaluate"]
out = {json.dumps(str(tmp_path / "out"))}

[stages.summary]
type = "write"
inputs = ["folder"]
""")
    missing = run_replay("run", str(config), cwd=here)
    assert missing.returncode == 2 and errors_of(missing.stderr)[0]["code"] == "E_CONFIG_OPTION_INVALID", missing.stderr
    assert errors_of(missing.stderr)[0]["path"] == "stages.agent.cwd"
    assert errors_of(missing.stderr)[0]["message"].endswith(f"{str(agent_dir)!r} does not exist")  # (not 'is not a folder')
    agent_dir.mkdir()
    for folder in (here, agent_dir):
        (folder / "bin").mkdir()
        (folder / "bin" / "agent").write_text(script)
        (folder / "bin" / "agent").chmod(0o755)
        done = run_replay("run", str(config), cwd=here)
        if folder == here:  # only in replay's folder: refused before anything runs, as starting it would fail
            assert done.returncode == 2 and errors_of(done.stderr)[0]["code"] == "E_INCIDENT_AGENT_COMMAND_INVALID", done.stderr
            assert not (tmp_path / "out").exists()
            (folder / "bin" / "agent").unlink()
        else:  # only in the agent's folder: it runs
            assert done.returncode == 0, done.stderr
            assert jsonl(done.stdout)[0]["replay"] == "matched", done.stdout


def test_an_agent_the_system_cannot_execute_is_an_agent_error(imported: Path, tmp_path: Path) -> None:
    """Executable, but no format the system runs (no #! line, no ELF): only starting it tells (ENOEXEC), an agent
    execution error (the incident specification's exit 1), the output folder written."""
    unrunnable = tmp_path / "agent.bin"
    unrunnable.write_bytes(b"\x00\x01 not a program")
    unrunnable.chmod(0o755)
    done = replay(imported, json.dumps([str(unrunnable)]), tmp_path / "out")
    assert done.returncode == 1 and errors_of(done.stderr)[0]["code"] == "E_INCIDENT_AGENT_START_FAILED"
    assert orjson.loads((tmp_path / "out" / "replay.json").read_bytes())["status"] == "agent_error"


def test_an_agent_program_that_is_not_executable_is_an_invalid_command(imported: Path, tmp_path: Path) -> None:
    """As one not found on PATH (which skips files that are not executable): the incident specification's "Invalid
    input, output path, or command" exits 2, and nothing runs or is written."""
    not_executable = tmp_path / "agent.txt"
    not_executable.write_text("just text")
    done = replay(imported, json.dumps([str(not_executable)]), tmp_path / "out")
    (error,) = errors_of(done.stderr)
    assert (done.returncode, error["code"]) == (2, "E_INCIDENT_AGENT_COMMAND_INVALID")
    assert "not executable" in error["message"] and "chmod +x" in error["howToFix"]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ['"python agent.py"', "[]", '["python", 3]', "not json", '["no-such-program-4f2a"]'])
def test_an_invalid_agent_command_is_refused_before_anything_runs(imported: Path, tmp_path: Path, command: str) -> None:
    done = replay(imported, command, tmp_path / "out")
    assert done.returncode == 2 and errors_of(done.stderr)[0]["code"] == "E_INCIDENT_AGENT_COMMAND_INVALID"
    assert not (tmp_path / "out").exists()


def test_replay_gate_fails_on_the_rules_even_when_the_replay_matched(imported: Path, tmp_path: Path) -> None:
    done = replay(imported, agent_command(REFUND_AGENT), tmp_path / "out", "--gate")
    assert done.returncode == 1
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_INCIDENT_RULES_FAILED"]
    assert jsonl(done.stdout)[0]["replay"] == "matched"


def test_replay_refuses_a_used_output_folder_without_running_the_agent(imported: Path, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    pidfile = tmp_path / "ran.pid"
    done = replay(imported, plan_agent([{"child": str(pidfile)}]), tmp_path / "out")
    assert done.returncode == 2 and errors_of(done.stderr)[0]["code"] == "E_INCIDENT_OUTPUT_NOT_EMPTY"
    assert not pidfile.exists()  # the agent never started
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["keep.txt"]


def test_a_promoted_fixture_replays_as_a_regression_test(imported: Path, tmp_path: Path) -> None:
    fixture = tmp_path / "cases" / "refund-incident.json"
    assert run_replay("incident", "promote", str(imported), "--to", str(fixture)).returncode == 0
    ok = replay(fixture, agent_command(REFUND_AGENT), tmp_path / "ci")
    assert ok.returncode == 0 and jsonl(ok.stdout)[0]["replay"] == "matched"
    gated = replay(fixture, agent_command(REFUND_AGENT), tmp_path / "ci-gate", "--gate")
    assert gated.returncode == 1
    fixed = replay(fixture, plan_agent([LOOKUP, REFUND, FINAL]), tmp_path / "ci-fixed")  # a fix takes another path
    assert fixed.returncode == 1 and jsonl(fixed.stdout)[0]["divergence"] == "missing_call"
    fixture.write_bytes(fixture.read_bytes().replace(b'"TIMEOUT"', b'"OK"'))
    edited = replay(fixture, agent_command(REFUND_AGENT), tmp_path / "ci-edited")
    assert edited.returncode == 2 and errors_of(edited.stderr)[0]["code"] == "E_INCIDENT_CHECKSUM_MISMATCH"
    assert not (tmp_path / "ci-edited").exists()


# the exit-code table of the specification -----------------------------------------------------------------
def _passing_bundle(tmp_path: Path) -> Path:
    doc = refund_export()
    doc["assertions"] = [{"id": "status", "type": "output_equals", "path": "/status", "value": "refunded"}]
    out = tmp_path / "passing"
    assert run_replay("incident", "import", str(write_json(tmp_path / "p.json", doc)), "--out", str(out)).returncode == 0
    return out / "incident.json"


EXIT_TABLE = [
    ("valid import with a recorded rule violation", 0),
    ("valid inspect with a recorded rule violation", 0),
    ("replay matching a failed incident", 0),
    ("replay --gate with passing rules", 0),
    ("inspect --gate with failed rules", 1),
    ("replay --gate with failed rules", 1),
    ("replay divergence", 1),
    ("agent execution error", 1),
    ("agent execution error after a matching output", 1),
    ("invalid input", 2),
    ("invalid output path", 2),
    ("invalid agent command", 2),
    ("invalid command", 2),
]


@pytest.mark.parametrize(("row", "code"), EXIT_TABLE, ids=[r for r, _ in EXIT_TABLE])
def test_exit_code_table(imported: Path, tmp_path: Path, row: str, code: int) -> None:
    out = str(tmp_path / "result")
    agent = agent_command(REFUND_AGENT)
    runs = {
        "valid import with a recorded rule violation": lambda: run_replay("incident", "import", str(REFUND_EXPORT), "--out", out),
        "valid inspect with a recorded rule violation": lambda: run_replay("incident", "inspect", str(imported), "--out", out),
        "replay matching a failed incident": lambda: replay(imported, agent, Path(out)),
        "replay --gate with passing rules": lambda: replay(_passing_bundle(tmp_path), agent, Path(out), "--gate"),
        "inspect --gate with failed rules": lambda: run_replay("incident", "inspect", str(imported), "--out", out, "--gate"),
        "replay --gate with failed rules": lambda: replay(imported, agent, Path(out), "--gate"),
        "replay divergence": lambda: replay(imported, plan_agent([LOOKUP, FINAL]), Path(out)),
        "agent execution error": lambda: replay(imported, plan_agent([{"exit": 1}]), Path(out)),
        "agent execution error after a matching output": lambda: replay(imported, plan_agent([*REPRODUCE, {"exit": 1}]), Path(out)),
        "invalid input": lambda: run_replay("incident", "import", str(imported), "--out", out),
        "invalid output path": lambda: run_replay("incident", "inspect", str(imported), "--out", str(imported)),
        "invalid agent command": lambda: replay(imported, '["python", "agent.py"', Path(out)),
        "invalid command": lambda: run_replay("incident", "reimport", str(imported)),
    }
    done = runs[row]()
    assert done.returncode == code, done.stderr
    if code == 2:
        assert done.stdout == b"" and not Path(out).exists()
    else:
        assert Path(out).is_dir() and (Path(out) / "incident.json").exists()


# nothing private leaves redaction ------------------------------------------------------------------------
def test_no_original_sensitive_value_is_in_any_output_file(tmp_path: Path) -> None:
    doc, originals = sensitive_export()
    export = write_json(tmp_path / "sensitive-export.json", doc)
    outputs: list[bytes] = []
    done = run_replay("incident", "import", str(export), "--out", str(tmp_path / "imported"))
    assert done.returncode == 0, done.stderr
    outputs += [done.stdout, done.stderr]
    bundle = tmp_path / "imported" / "incident.json"
    for args in (("inspect", str(bundle), "--out", str(tmp_path / "inspected")),
                 ("promote", str(bundle), "--to", str(tmp_path / "fixture" / "case.json")),
                 ("replay", str(bundle), "--agent-command", plan_agent([{"call": "lookup", "args": {}}]), "--out", str(tmp_path / "replayed"))):
        ran = run_replay("incident", *args)
        assert ran.returncode in (0, 1), ran.stderr
        outputs += [ran.stdout, ran.stderr]
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p != export]
    assert {p.name for p in files} >= {*FOLDER, "case.json"}
    blobs = [p.read_bytes() for p in files] + outputs
    leaks = [(v[:40], p.name) for v in originals for p, blob in zip(files + [Path("stdio")] * len(outputs), blobs, strict=True)
             if any(form in blob for form in value_forms(v))]
    assert leaks == []
    audit = orjson.loads((tmp_path / "imported" / "redaction.json").read_bytes())
    assert all(count > 0 for count in audit["detectors"].values())


def test_the_sensitive_export_really_holds_the_values(tmp_path: Path) -> None:
    doc, originals = sensitive_export()
    blob = orjson.dumps(doc)
    assert all(orjson.dumps(v)[1:-1] in blob for v in originals)
    assert os.path.getsize(write_json(tmp_path / "e.json", doc)) < 4 * 1024 * 1024


def test_the_fixed_example_agent_takes_another_path_and_diverges_there(imported: Path, tmp_path: Path) -> None:
    done = replay(imported, agent_command(REFUND_AGENT, "--fixed"), tmp_path / "fixed")
    assert done.returncode == 1
    result = orjson.loads((tmp_path / "fixed" / "replay.json").read_bytes())
    assert result["divergence"]["kind"] == "changed_call" and result["divergence"]["step"] == 3
    assert result["divergence"]["received"] == {"withheld": True, "same_name": False}
    assert result["agent"]["status"] == "stopped"  # list_refunds was never answered, let alone run


AGENT_LOGGING_BEFORE_IT_READS = """
import json, sys
sys.stdin.readline()
print(json.dumps({"type": "tool_call", "call_id": "1", "name": "fetch", "args": {"q": "x"}}), flush=True)
for _ in range(900):  # ~300 KB of log lines before it reads the result: more than a pipe holds
    print(json.dumps({"type": "log", "message": "working " * 40}), flush=True)
json.loads(sys.stdin.readline())
print(json.dumps({"type": "final_output", "output": {"status": "done"}}), flush=True)
"""


def test_a_large_tool_result_reaches_an_agent_that_logs_before_it_reads(tmp_path: Path) -> None:
    """replay wrote a tool_result and only then read the agent's lines again: a result larger than the pipe holds, to an
    agent that logs (on stdout, as the protocol has it) before it reads the result, left both waiting on each other
    until the timeout, an agent error."""
    export = {"schema_version": 1, "input": {"order_id": "o-1"}, "effects_complete": True,
              "events": [{"type": "tool_call", "call_id": "a", "name": "fetch", "args": {"q": "x"}},
                         {"type": "tool_result", "call_id": "a", "ok": True,
                          "result": {"items": [{"status": "ok", "page": k} for k in range(20_000)]}},
                         {"type": "final_output", "output": {"status": "done"}}],
              "assertions": [{"id": "done", "type": "output_equals", "path": "/status", "value": "done"}]}
    done = run_replay("incident", "import", str(write_json(tmp_path / "big.json", export)), "--out", str(tmp_path / "imported"))
    assert done.returncode == 0, done.stderr
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT_LOGGING_BEFORE_IT_READS)
    started = time.monotonic()
    done = replay(tmp_path / "imported" / "incident.json", agent_command(agent), tmp_path / "replayed", "--timeout-ms", "20000")
    assert done.returncode == 0, done.stderr
    assert jsonl(done.stdout)[0]["replay"] == "matched"
    assert time.monotonic() - started < 15


AGENT_CRASHING_WITH_A_HELPER = """
import subprocess, sys
sys.stdin.readline()
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])  # a helper: inherits stdout, same group
sys.exit(3)
"""


def test_an_agent_that_exits_while_a_helper_holds_its_stdout_is_an_exit_not_a_timeout(tmp_path: Path, imported: Path) -> None:
    """The conversation read the agent's stdout to its end: a helper process the agent started holds it open, so an
    agent that crashed (exit 3) was reported after the whole --timeout-ms as E_INCIDENT_AGENT_TIMEOUT."""
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT_CRASHING_WITH_A_HELPER)
    started = time.monotonic()
    done = replay(imported, agent_command(agent), tmp_path / "replayed", "--timeout-ms", "60000")
    assert time.monotonic() - started < 30
    assert done.returncode == 1
    (error,) = errors_of(done.stderr)
    assert error["code"] == "E_INCIDENT_AGENT_EXITED" and "exit code 3" in error["message"], error
    assert orjson.loads((tmp_path / "replayed" / "replay.json").read_bytes())["agent"]["exit_code"] == 3


def test_an_agent_program_that_is_a_folder_is_named_a_folder(imported: Path, tmp_path: Path) -> None:
    """A path to a folder was refused as 'was not found', though something is there: the refusal says what it is."""
    (tmp_path / "agents").mkdir()
    done = replay(imported, json.dumps([str(tmp_path / "agents")]), tmp_path / "out")
    (error,) = errors_of(done.stderr)
    assert (done.returncode, error["code"]) == (2, "E_INCIDENT_AGENT_COMMAND_INVALID")
    assert error["message"].endswith("is a folder, not a program") and "chmod" not in error["howToFix"], error
    assert not (tmp_path / "out").exists()
    os.mkfifo(tmp_path / "pipe")
    (error,) = errors_of(replay(imported, json.dumps([str(tmp_path / "pipe")]), tmp_path / "out").stderr)
    assert error["message"].endswith("is a pipe, a device or a socket, not a program"), error


# Numbers a double does not hold are kept as written (README, "Nothing lost"); two that are written differently are
# different values, though both read as the same double: 1e400 and 2e400 as infinity, 20 significant digits rounded.
# (1e400 is an integer of 401 digits, which redaction aliases as an identifier unless a name says amount: ``total``.)
EXACT_CALL = '{"type":"tool_call","call_id":"z1","name":"calc","args":{"x":3.14159265358979323846}}'
EXACT_FINAL = '{"type":"final_output","output":{"status":"done","total":1e400}}'


@pytest.mark.parametrize(("call", "final", "outcome", "kind"), [
    (EXACT_CALL, EXACT_FINAL, "matched", None),
    (EXACT_CALL.replace("846", "847"), EXACT_FINAL, "diverged", "changed_call"),
    (EXACT_CALL, EXACT_FINAL.replace("1e400", "2e400"), "diverged", "changed_final_output"),
])
def test_numbers_a_double_does_not_hold_match_only_as_written(tmp_path: Path, call: str, final: str, outcome: str,
                                                              kind: str | None) -> None:
    export = tmp_path / "exact.json"
    export.write_text('{"schema_version":1,"input":{},"events":['
                      '{"type":"tool_call","call_id":"c1","name":"calc","args":{"x":3.14159265358979323846}},'
                      '{"type":"tool_result","call_id":"c1","ok":true,"result":{"y":1}},'
                      '{"type":"final_output","output":{"status":"done","total":1e400}}],'
                      '"assertions":[{"id":"total-present","type":"required_output","fields":["total"]}]}')
    done = run_replay("incident", "import", str(export), "--out", str(tmp_path / "imported"))
    assert done.returncode == 0, done.stderr
    done = replay(tmp_path / "imported" / "incident.json", plan_agent([{"raw": call}, {"raw": final}]), tmp_path / "replayed")
    (summary,) = jsonl(done.stdout)
    assert summary["replay"] == outcome and summary.get("divergence") == kind, done.stderr
    assert done.returncode == (0 if outcome == "matched" else 1)


def test_an_agent_whose_output_starts_with_a_byte_order_mark_is_read(imported: Path, tmp_path: Path) -> None:
    """A .NET or PowerShell agent may start its stdout with a UTF-8 byte order mark, as capture reads a runner's and read
    a journal's; it was 'agent message 1 is not valid JSON' (an agent error, exit 1)."""
    plan = [{"raw": "\ufeff" + json.dumps({"type": "log", "message": "starting"})}, *REPRODUCE]
    done = replay(imported, plan_agent(plan), tmp_path / "replayed")
    assert done.returncode == 0, done.stderr
    assert jsonl(done.stdout)[0]["replay"] == "matched"


@pytest.mark.parametrize("value", ["0", "-5", "soon", "1.5", "\u00b2"])
def test_an_invalid_timeout_is_refused_as_capture_refuses_one(imported: Path, tmp_path: Path, value: str) -> None:
    """ERROR_CODES.md: E_TIMEOUT_INVALID is an invalid --timeout-ms; incident replay's was E_USAGE_INVALID."""
    done = replay(imported, agent_command(REFUND_AGENT), tmp_path / "replayed", "--timeout-ms", value)
    assert done.returncode == 2 and not (tmp_path / "replayed").exists(), done.stderr
    [error] = errors_of(done.stderr)
    assert (error["code"], error["path"], error["received"]) == ("E_TIMEOUT_INVALID", "--timeout-ms", value), error
