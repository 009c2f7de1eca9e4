"""The incident stages on their own: redact, evaluate, match and load_incident with lists; spawn_agent with real agents; all in user configs."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import EXAMPLES, errors_of, jsonl, run_replay
from incident_support import PLAN_AGENT, REFUND_AGENT, REFUND_EXPORT, REPRODUCE

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.inline import run_inline
from replay.pipeline.model.incident.records import AGENT_EXIT, AGENT_MESSAGE, EVALUATION, INCIDENT, REPLAY
from replay.stages.evaluate import EvaluateRules
from replay.stages.load_incident import LoadIncident
from replay.stages.match import MatchAgent
from replay.stages.redact import RedactRecords
from replay.stages.spawn_agent import SpawnAgent


def loaded(**options: Any) -> dict[str, Any]:
    return LoadIncident(path=str(REFUND_EXPORT), **options).load()


def redacted() -> dict[str, Any]:
    return run_inline([RedactRecords()], [Batch.of([loaded()])]).records[0]


def test_load_incident_sends_one_unredacted_incident_record_with_a_new_id() -> None:
    record = loaded()
    assert record["$record"] == INCIDENT and record["redaction"] is None
    assert record["incident_id"].startswith("inc_") and record["incident_id"] != loaded()["incident_id"]
    assert record["input"]["order_id"] == "order-1042"


def test_load_incident_refuses_before_sending_anything(tmp_path: Path) -> None:
    (tmp_path / "e.json").write_text("{}")
    with pytest.raises(ReplayError) as caught:
        LoadIncident(path=str(tmp_path / "e.json")).load()
    assert caught.value.code == "E_INCIDENT_SCHEMA_VERSION_UNSUPPORTED"


def test_redact_gives_each_incident_a_fresh_secret_and_its_audit() -> None:
    result = run_inline([RedactRecords()], [Batch.of([loaded(), loaded()])])
    first, second = result.records
    assert first["input"]["order_id"] != second["input"]["order_id"]
    assert first["redaction"]["incident_id"] == first["incident_id"]
    assert first["redaction"]["detectors"]["email"] == 3


def test_redact_applies_pointers_to_incidents() -> None:
    out = run_inline([RedactRecords(remove=["/input/customer_email"])], [Batch.of([loaded()])]).records[0]
    assert "customer_email" not in out["input"] and out["redaction"]["pointer_removed"] == 1


JOURNAL = EXAMPLES / "journals" / "two-runs.jsonl"


def _journal() -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in JOURNAL.read_bytes().splitlines()]


def test_redact_works_on_any_records_with_one_secret_per_run_and_an_audit_at_the_end() -> None:
    stage = RedactRecords(remove=["/payload/args"])
    out = run_inline([stage], [Batch.of(_journal())]).records
    audit = out[-1]
    assert audit["$record"] == "redaction" and audit["pointer_removed"] == 2
    events = [r for r in out if "seq" in r]
    assert [e["type"] for e in events] == [r["type"] for r in _journal() if "seq" in r]  # protocol fields kept
    assert events[0]["timestamp"] == "2026-03-01T12:00:00.000Z"
    tool = next(e for e in events if e["type"] == "tool_called")
    assert tool["payload"]["toolName"] == "bash" and "args" not in tool["payload"]
    called = [e["payload"]["callId"] for e in events if e["type"] in ("tool_called", "tool_completed")]
    assert called[0] == called[1] != "c1"  # the same value, the same alias, within a run
    again = run_inline([stage], [Batch.of(_journal())]).records  # the stage ran again: a new secret
    assert [e for e in again if "seq" in e][2]["payload"]["callId"] != called[0]
    user = next(e for e in events if e["type"] == "user_message")
    assert user["payload"]["text"] == "[redacted]"


def test_redact_walks_a_record_as_deep_as_parse_reads() -> None:
    """A value 1024 levels deep (what parse reads) is redacted, not a RecursionError."""
    deep: dict[str, Any] = {"email": "jane.doe@example.com"}
    for _ in range(1022):  # the record is level 1, its payload 2, ..., the object holding `email` 1024
        deep = {"a": deep}
    out = run_inline([RedactRecords()], [Batch.of([{"type": "x", "payload": deep}])]).records[0]
    for _ in range(1023):
        out = out.get("payload") or out["a"]
    assert out["email"].startswith("email_")


def test_evaluate_sends_the_evaluation_after_each_incident_and_gates_on_request() -> None:
    incident = redacted()
    out = run_inline([EvaluateRules()], [Batch.of([incident, {"other": 1}])])
    assert [r.get("$record") for r in out.records] == [INCIDENT, EVALUATION, None]
    assert out.records[1]["status"] == "fail" and out.side.get("errors") is None
    gated = run_inline([EvaluateRules(gate=True)], [Batch.of([incident])])
    (error,) = gated.side["errors"]
    assert error["code"] == "E_INCIDENT_RULES_FAILED" and error["failed"] == ["one-refund-per-order"]


def _transcript(*messages: dict[str, Any], status: str = "finished") -> list[dict[str, Any]]:
    return [{"$record": AGENT_MESSAGE, "message": m} for m in messages] + [
        {"$record": AGENT_EXIT, "status": status, "messages": len(messages), "tool_calls": 0, "logs_withheld": 0,
         "stderr_bytes_withheld": 0, "exit_code": 0, "signal": None, "error": None}]


def test_match_sends_a_verdict_and_drops_the_candidate_transcript() -> None:
    incident = loaded()
    lookup = {"type": "tool_call", "call_id": "a", "name": "lookup_order", "args": {"order_id": "order-1042"}}
    refund = {"type": "tool_call", "call_id": "b", "name": "issue_refund",
              "args": {"order_id": "order-1042", "amount_cents": 4900, "currency": "USD"}}
    final = {"type": "final_output", "output": incident["events"][-1]["output"]}
    out = run_inline([MatchAgent()], [Batch.of([incident, *_transcript(lookup, refund, refund, final)])])
    assert [r["$record"] for r in out.records] == [INCIDENT, REPLAY]
    assert out.records[1]["status"] == "matched" and "errors" not in out.side
    diverged = run_inline([MatchAgent()], [Batch.of([incident, *_transcript(lookup, final)])])
    assert diverged.records[1]["divergence"]["kind"] == "missing_call"
    assert diverged.side["errors"][0]["code"] == "E_INCIDENT_REPLAY_DIVERGED"
    kept = run_inline([MatchAgent(keep_transcript=True)], [Batch.of([incident, *_transcript(lookup, final)])])
    assert [r["$record"] for r in kept.records] == [INCIDENT, AGENT_MESSAGE, AGENT_MESSAGE, AGENT_EXIT, REPLAY]


def test_match_reports_a_failed_agent_as_an_agent_error_not_a_divergence() -> None:
    out = run_inline([MatchAgent()], [Batch.of([loaded(), *_transcript(status="failed")])])
    assert out.records[1]["status"] == "agent_error" and out.records[1]["divergence"] is None
    assert "errors" not in out.side  # spawn_agent reported the agent's failure itself


def test_match_reports_an_agent_failed_after_a_matching_terminal_as_an_agent_error() -> None:
    """spawn_agent fails an agent that exits non-zero (or by a signal) after its terminal message: the verdict is no
    longer matched; a terminal message that diverged stays the verdict (the failure is spawn_agent's own error)."""
    incident = loaded()
    lookup = {"type": "tool_call", "call_id": "a", "name": "lookup_order", "args": {"order_id": "order-1042"}}
    refund = {"type": "tool_call", "call_id": "b", "name": "issue_refund",
              "args": {"order_id": "order-1042", "amount_cents": 4900, "currency": "USD"}}
    final = {"type": "final_output", "output": incident["events"][-1]["output"]}
    out = run_inline([MatchAgent()], [Batch.of([incident, *_transcript(lookup, refund, refund, final, status="failed")])])
    verdict = out.records[1]
    assert verdict["status"] == "agent_error" and verdict["divergence"] is None and "errors" not in out.side
    assert verdict["steps"][-1]["terminal"] == "final_output" and verdict["consumed_calls"] == 3
    changed = {"type": "final_output", "output": {"status": "other"}}
    out = run_inline([MatchAgent()], [Batch.of([incident, *_transcript(lookup, refund, refund, changed, status="failed")])])
    assert out.records[1]["status"] == "diverged" and out.records[1]["divergence"]["kind"] == "changed_final_output"
    assert [e["code"] for e in out.side["errors"]] == ["E_INCIDENT_REPLAY_DIVERGED"]


# spawn_agent runs real processes --------------------------------------------------------------------------
pytestmark = pytest.mark.anyio


async def _spawn(command: list[str], record: dict[str, Any], **options: Any) -> tuple[list[dict[str, Any]], dict[str, list[Any]]]:
    stage = SpawnAgent(command=command, **options)
    batch = await stage.replay(record, "<test>")
    return list(batch.events or ()), stage.drain()


async def test_spawn_agent_answers_the_example_agent_from_the_recording() -> None:
    record = redacted()
    out, side = await _spawn([sys.executable, str(REFUND_AGENT)], record)
    assert [r["$record"] for r in out] == [AGENT_MESSAGE] * 4 + [AGENT_EXIT]
    assert out[-1]["status"] == "finished" and out[-1]["tool_calls"] == 3 and out[-1]["stderr_bytes_withheld"] > 0
    assert out[3]["message"]["output"] == record["events"][-1]["output"]
    assert side == {}


async def test_spawn_agent_stops_the_agent_at_a_call_it_cannot_answer() -> None:
    plan = orjson.dumps([{"call": "delete_everything", "args": {}}, {"sleep": 30}]).decode()
    out, side = await _spawn([sys.executable, str(PLAN_AGENT), plan], redacted())
    assert out[-1]["status"] == "stopped" and out[-1]["tool_calls"] == 1 and side == {}


async def test_spawn_agent_reports_an_agent_failure_on_its_error_port(tmp_path: Path) -> None:
    plan = orjson.dumps([{"exit": 3}]).decode()
    out, side = await _spawn([sys.executable, str(PLAN_AGENT), plan], redacted())
    assert out[-1]["status"] == "failed" and out[-1]["exit_code"] == 3
    assert side["errors"][0]["code"] == "E_INCIDENT_AGENT_EXITED"


async def test_spawn_agent_plan_reproducing_the_incident_finishes() -> None:
    out, side = await _spawn([sys.executable, str(PLAN_AGENT), orjson.dumps(REPRODUCE).decode()], redacted())
    assert out[-1]["status"] == "finished" and side == {}


@pytest.mark.parametrize(("end", "exit_code", "signal"), [({"exit": 3}, 3, None), ({"kill": "SIGKILL"}, -9, "SIGKILL"),
                                                          ({"kill": "SIGTERM"}, -15, "SIGTERM"), ({"exit": 0}, 0, None)])
async def test_spawn_agent_fails_an_agent_that_ends_badly_after_its_terminal_message(end: dict[str, Any], exit_code: int,
                                                                                     signal: str | None) -> None:
    plan = orjson.dumps([*REPRODUCE, end]).decode()
    out, side = await _spawn([sys.executable, str(PLAN_AGENT), plan], redacted())
    assert (out[-1]["exit_code"], out[-1]["signal"]) == (exit_code, signal)
    if exit_code == 0:
        assert out[-1]["status"] == "finished" and out[-1]["error"] is None and side == {}
        return
    assert out[-1]["status"] == "failed" and [r["$record"] for r in out] == [AGENT_MESSAGE] * 4 + [AGENT_EXIT]
    (error,) = side["errors"]
    assert error["code"] == out[-1]["error"]["code"] == "E_INCIDENT_AGENT_EXITED"
    how = f"exit code {exit_code}" if signal is None else f"signal {signal}"
    assert error["message"] == out[-1]["error"]["message"] == f"the agent ended ({how}) after its final_output, not with exit code 0"


async def test_spawn_agent_stopping_an_agent_that_lingers_after_its_terminal_message_is_no_failure() -> None:
    """Past kill_grace_ms after its terminal message replay kills the agent's group itself: that SIGKILL is replay's."""
    plan = orjson.dumps([*REPRODUCE, {"sleep": 30}]).decode()
    out, side = await _spawn([sys.executable, str(PLAN_AGENT), plan], redacted(), kill_grace_ms=200)
    assert (out[-1]["status"], out[-1]["signal"], out[-1]["error"]) == ("finished", "SIGKILL", None) and side == {}


@pytest.mark.parametrize(("sent", "problem"), [
    ('{"type":"tool_call","call_id":"x9","name":"lookup_order","name":"issue_refund","args":{}}', "writes its name key twice"),
    ('{"type":"tool_call","name":"lookup_order","args":{}}', "is a tool_call without a non-empty string call_id"),
])
async def test_a_message_after_the_terminal_one_is_checked_as_every_other_message_is(sent: str, problem: str) -> None:
    """What the agent sends in the grace after its terminal message went through a parse of its own, which took a key
    written twice (its last value) or a tool_call with no call_id as a message: the run finished, with no error."""
    plan = orjson.dumps([*REPRODUCE, {"raw": sent}]).decode()
    out, side = await _spawn([sys.executable, str(PLAN_AGENT), plan], redacted())
    assert out[-1]["status"] == "failed" and out[-1]["messages"] == 5
    (error,) = side["errors"]
    assert error["code"] == out[-1]["error"]["code"] == "E_INCIDENT_AGENT_PROTOCOL_INVALID"
    assert error["message"] == f"agent message 5 {problem}"


# user configs ------------------------------------------------------------------------------------------
def test_redact_is_a_stage_a_user_config_can_use(tmp_path: Path) -> None:
    config = tmp_path / "redact.toml"
    config.write_text('chain = [{ type = "redact", remove = ["/payload/args"] }]\n')
    done = run_replay("run", str(config), str(JOURNAL))
    assert done.returncode == 0, done.stderr
    records = jsonl(done.stdout)
    assert records[-1]["$record"] == "redaction"
    assert b"List the files in /tmp" not in done.stdout and b"ls /tmp" not in done.stdout


@pytest.mark.parametrize("pointer", ["payload/args", "/payload/a~2"])
def test_a_remove_entry_that_is_no_pointer_is_refused_before_anything_runs(tmp_path: Path, pointer: str) -> None:
    """It failed the stage at the first record: E_STAGE_FAILED 'PointerSyntaxError: ...', exit 1, not a config refusal."""
    config = tmp_path / "redact.toml"
    config.write_text(f'chain = [{{ type = "redact", remove = ["/payload/x", "{pointer}"] }}]\n')
    done = run_replay("run", str(config), str(JOURNAL))
    assert done.returncode == 2 and done.stdout == b"", done.stderr
    (error,) = errors_of(done.stderr)
    assert error["code"] == "E_CONFIG_OPTION_INVALID" and error["path"].endswith(".remove[1]") and error["received"] == pointer


def test_load_redact_evaluate_in_a_user_config_without_the_folder_writer(tmp_path: Path) -> None:
    config = tmp_path / "incident.toml"
    config.write_text(f"""
[stages.load]
type = "load_incident"
path = {orjson.dumps(str(REFUND_EXPORT)).decode()}
[stages.redact]
type = "redact"
inputs = ["load"]
[stages.judge]
type = "evaluate"
inputs = ["redact"]
gate = true
[stages.out]
type = "write"
inputs = ["judge"]
""")
    done = run_replay("run", str(config))
    assert done.returncode == 1  # the gate failed: one refund too many
    incident, evaluation = jsonl(done.stdout)
    assert incident["$record"] == INCIDENT and evaluation["$record"] == EVALUATION
    assert b"order-1042" not in done.stdout and b"jane.doe@example.com" not in done.stdout
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_INCIDENT_RULES_FAILED"]


def test_write_incident_into_a_parent_folder_names_the_folder_after_the_file(tmp_path: Path) -> None:
    spec = run_replay("stages", "--graph", "incident-import").stdout.decode()
    (tmp_path / "into.toml").write_text(spec.replace('out = "imported"', 'into = "imported"'))
    done = run_replay("run", "into.toml", str(REFUND_EXPORT), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (line,) = jsonl(done.stdout)
    assert line["source"] == str(REFUND_EXPORT) and line["out"] == "imported/refund-export"
    assert sorted(p.name for p in (tmp_path / "imported" / "refund-export").iterdir()) == line["files"]
    again = run_replay("run", "into.toml", str(REFUND_EXPORT), cwd=tmp_path)  # without write_dir: never replaced
    assert again.returncode == 2 and errors_of(again.stderr)[0]["code"] == "E_INCIDENT_OUTPUT_NOT_EMPTY"
    (tmp_path / "both.toml").write_text(spec.replace('out = "imported"', 'out = "imported"\ninto = "more"'))
    both = run_replay("run", "both.toml", str(REFUND_EXPORT), cwd=tmp_path)
    assert both.returncode == 2 and errors_of(both.stderr)[0]["code"] == "E_CONFIG_OPTION_INVALID"


def test_the_incident_stages_are_listed() -> None:
    done = run_replay("stages", "--json")
    names = {s["type"] for s in orjson.loads(done.stdout)}
    assert {"load_incident", "redact", "evaluate", "spawn_agent", "match", "write_incident", "promote_incident"} <= names


async def test_spawn_agent_names_an_agent_still_running_after_closing_its_output() -> None:
    plan = orjson.dumps([{"close_stdout": True}, {"sleep": 30}]).decode()
    out, side = await _spawn([sys.executable, str(PLAN_AGENT), plan], redacted(), kill_grace_ms=200)
    error = side["errors"][0]
    assert error["code"] == "E_INCIDENT_AGENT_EXITED" and out[-1]["status"] == "failed"
    assert "still running" in error["message"] and "still running" in error["received"]
    assert "None" not in error["message"] + error["received"]


@pytest.mark.parametrize(("make", "what"), [
    (lambda p: p.write_bytes(b""), "is a file, not a folder"),
    (lambda p: os.mkfifo(p), "is a pipe, a device or a socket, not a folder"),  # (was only "is not a folder")
    (lambda p: None, "does not exist"),
])
def test_spawn_agent_names_what_its_cwd_is_instead_of_a_folder(tmp_path: Path, make: Any, what: str) -> None:
    """The words are `describe_kind`'s, as every other refusal of a path of the wrong kind."""
    cwd = tmp_path / "cwd"
    make(cwd)
    with pytest.raises(ReplayError) as caught:
        SpawnAgent(command=[sys.executable], cwd=str(cwd)).preflight([])
    assert caught.value.code == "E_CONFIG_OPTION_INVALID"
    assert caught.value.message.endswith(f"the agent's folder {str(cwd)!r} {what}"), caught.value.body
