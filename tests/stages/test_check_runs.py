"""check_runs in validate: a run that is not whole is warned of (at its line), never failed; a whole run, and another
agent's log, are not; the screen's fast lane takes no run it would warn of."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES, errors_of, run_replay

from replay.pipeline.model.artifacts import artifact_from_run


def event(seq: int, kind: str, run: str = "r", second: int | None = None) -> dict:
    return {"seq": seq, "timestamp": f"2026-03-01T12:00:{(seq if second is None else second):02}.000Z", "type": kind,
            "runId": run, "payload": {}}


def whole(run: str) -> list[dict]:
    return [event(1, "run_started", run), event(2, "user_message", run), event(3, "assistant_message", run),
            event(4, "run_completed", run)]


def journal(tmp_path: Path, events: list[dict]) -> Path:
    path = tmp_path / "j.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return path


def warnings(stderr: bytes) -> list[tuple[str, int | None, str]]:
    """(rule, line, the message's first words) of each warning."""
    return [(w["rule"], w.get("line"), " ".join(w["message"].split()[:4]))
            for w in map(orjson.loads, stderr.splitlines()) if "rule" in w]


@pytest.mark.parametrize(("events", "said"), [
    (whole("r"), []),
    ([event(1, "user_message"), event(2, "run_completed")], [("check_runs", 1, "the run begins with")]),
    ([*whole("r")[:3], event(4, "run_started"), event(5, "run_completed")], [("check_runs", 4, "a second run_started in")]),
    ([*whole("r"), event(5, "user_message"), event(6, "run_failed")], [("check_runs", 5, "the run goes on")]),
    (whole("r")[:3], [("check_runs", 3, "the run has no")]),
    ([event(1, "run_started"), event(2, "tool_start"), event(3, "run_completed")], [("check_runs", 2, "type 'tool_start' is an")]),
    ([event(1, "run_started"), event(2, "user_message", second=9), event(3, "run_completed")], [("check_order", 3, "timestamp 2026-03-01T12:00:03.000Z is earlier")]),
    ([{"$record": "run", "runId": "r"}], [("check_runs", None, "the run record has")]),
    # a run record's status and the run's end: what they say alike draws nothing, what they contradict a warning
    ([{"$record": "run", "runId": "r", "status": "ok"}, *whole("r")], []),
    ([{"$record": "run", "runId": "r", "status": "error"}, *whole("r")[:3], event(4, "run_failed")], []),
    ([{"$record": "run", "runId": "r", "status": "error"}, *whole("r")], [("check_runs", 5, "the run ends with")]),
    ([{"$record": "run", "runId": "r", "status": "ok"}, *whole("r")[:3], event(4, "run_failed")],
     [("check_runs", 5, "the run ends with")]),
    ([{"$record": "run", "runId": "r", "status": "error", "error": {"code": "E_RUNNER_TIMEOUT"}}, *whole("r")],
     [("check_runs", 5, "the run ends with")]),
])
def test_validate_warns_of_a_run_that_is_not_whole_and_stays_valid(tmp_path: Path, events: list[dict], said: list) -> None:
    done = run_replay("validate", str(journal(tmp_path, events)))
    assert done.returncode == 0 and orjson.loads(done.stdout)["valid"] is True
    assert warnings(done.stderr) == said and errors_of(done.stderr) == []


@pytest.mark.parametrize(("error", "capture"), [(None, False), ({"code": "RUNNER_TOOL_TIMEOUT"}, False),
                                                ({"code": "E_RUNNER_EXIT_NON_ZERO", "message": "m"}, True)])
def test_a_status_its_events_contradict_blames_no_one_unless_the_error_is_captures(tmp_path, error, capture) -> None:
    """It said "the runner contradicts itself" also of a status "error" capture gave a run whose runner exited non-zero
    after its events completed (hunt 23, 04): neutral now, and naming capture's error when the record has one."""
    record = {"$record": "run", "runId": "r", "status": "error", **({"error": error} if error else {})}
    done = run_replay("validate", str(journal(tmp_path, [record, *whole("r")])))
    [said] = [w["message"] for w in map(orjson.loads, done.stderr.splitlines()) if w.get("rule") == "check_runs"]
    assert "contradicts itself" not in said and "the events and the run record disagree" in said
    assert ("is capture's" in said) == capture, said


def test_a_run_among_whole_ones_in_one_batch_is_judged_not_passed_on_unread(tmp_path: Path) -> None:
    """The screen passes whole runs of a batch on unparsed: a run with a second run_started in the middle, or one
    going on after its end, among them was taken for whole and never warned of."""
    events = [*whole("a"), *whole("b")[:2], event(3, "run_started", "b"), event(4, "run_completed", "b"), *whole("c"),
              *whole("d"), event(5, "user_message", "d"), *whole("e")]
    done = run_replay("validate", str(journal(tmp_path, events)))
    assert done.returncode == 0
    assert [(w[0], w[1]) for w in warnings(done.stderr)] == [("check_runs", 7), ("check_runs", 17)]


def test_another_agents_log_is_not_judged_for_a_shape_its_format_does_not_write(tmp_path: Path) -> None:
    done = run_replay("validate", str(FIXTURES / "corpus" / "claude-code" / "representative_messages.jsonl"))
    assert [w for w in warnings(done.stderr) if w[0] == "check_runs"] == []


def test_a_type_that_is_no_string_is_validates_error_not_a_failed_stage(tmp_path: Path) -> None:
    bad = {**event(2, "x"), "type": {"not": "a type"}}
    done = run_replay("validate", str(journal(tmp_path, [event(1, "run_started"), bad, event(3, "run_completed")])))
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_ARTIFACT_EVENT_TYPE_INVALID"] and done.returncode == 1


def test_what_heal_writes_of_a_run_whose_run_started_came_second_draws_no_warning(tmp_path: Path) -> None:
    """Heal inserted a run_started before the run's first event and kept the run's own: validate then warned of a
    second run_started in heal's own output. The run's own is moved to its start now."""
    path = journal(tmp_path, [event(1, "user_message"), event(2, "run_started"), event(3, "run_completed")])
    healed = run_replay("heal", str(path))
    assert healed.returncode == 0
    assert [orjson.loads(line)["type"] for line in healed.stdout.splitlines() if b'"$record"' not in line] == [
        "run_started", "user_message", "run_completed"]
    path.write_bytes(healed.stdout)
    assert [w for w in warnings(run_replay("validate", str(path)).stderr) if w[0] == "check_runs"] == []


def test_heal_and_validate_name_a_timestamp_going_back_by_the_seq_the_input_gave_it(tmp_path: Path) -> None:
    """Heal's check_order ran after renumber: its notice gave the renumbered seq (2) where validate's gave the input's
    (7), for the same line."""
    path = journal(tmp_path, [event(1, "run_started"), event(7, "user_message", second=9), event(8, "assistant_message"),
                              event(9, "run_completed")])
    said = {command: [(w["line"], w["seqBefore"]) for w in map(orjson.loads, run_replay(command, str(path)).stderr.splitlines())
                      if w.get("rule") == "check_order"] for command in ("heal", "validate")}
    assert said["heal"] == said["validate"] == [(3, 8)]


def test_an_artifact_is_judged_as_its_records_at_their_json_paths(tmp_path: Path) -> None:
    """validate reads a .json artifact whole (the artifact schema); the run checks said nothing of it, where the same run
    as a journal drew warnings: a capture's .artifact.json with no run_started, a type heal renames, an end its status
    contradicts, a time going back."""
    events = [event(1, "user_message"), event(2, "tool_start", second=0), event(3, "run_completed")]
    artifact = artifact_from_run({"$record": "run", "runId": "r", "status": "error", "error": {"message": "m"}}, events)
    path = tmp_path / "r.artifact.json"
    path.write_bytes(orjson.dumps(artifact))
    done = run_replay("validate", str(path))
    assert done.returncode == 0 and orjson.loads(done.stdout)["valid"] is True, done.stderr
    said = [(w["rule"], w.get("path"), " ".join(w["message"].split()[:4]))
            for w in map(orjson.loads, done.stderr.splitlines())]
    assert said == [("check_order", "$.events[1]", "timestamp 2026-03-01T12:00:00.000Z is earlier"),
                    ("check_runs", "$.events[0]", "the run begins with"),
                    ("check_runs", "$.events[1]", "type 'tool_start' is an"),
                    ("check_runs", "$.events[2]", "the run ends with")]
    whole_run = tmp_path / "whole.json"
    whole_run.write_bytes(orjson.dumps(artifact_from_run({"$record": "run", "runId": "r", "status": "ok"}, whole("r"))))
    done = run_replay("validate", str(whole_run), str(path))
    assert done.returncode == 0 and len(done.stderr.splitlines()) == 4  # (the whole run draws nothing, the other as above)


def test_an_artifact_the_schema_refuses_is_its_errors_alone(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(orjson.dumps(artifact_from_run({"$record": "run", "runId": "r", "status": "ok"}, whole("r"))
                                  | {"events": [1, "two", whole("r")[0]]}))
    done = run_replay("validate", str(path))
    assert done.returncode == 1 and errors_of(done.stderr) and all("rule" not in line for line in map(orjson.loads, done.stderr.splitlines()))
