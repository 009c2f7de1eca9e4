"""`replay capture` with a real runner (tests/fixtures/runners/say.py) whose events carry fields of another type than the
event schema's: what heal cannot repair is left out of the event with a notice, so what capture writes validates."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, errors_of, jsonl, run_replay
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SAY = str(FIXTURES / "runners" / "say.py")
OUTPUT = {"status": "ok", "response": "x", "events": []}


def say(cwd: Path, stdout: str | dict) -> subprocess.CompletedProcess:
    return run_replay("capture", "--runner", SAY, "--context", json.dumps({"stdout": stdout}), "the prompt", input=b"",
                      cwd=cwd, env={"REPLAY_RUNNER": ""})


def written(cwd: Path, done: subprocess.CompletedProcess) -> tuple[dict[str, Any], dict[str, Path]]:
    """The summary line and the files capture wrote."""
    [summary] = jsonl(done.stdout)
    return summary, {k: cwd / v for k, v in summary["files"].items()}


def validated(*paths: Path) -> list[dict[str, Any]]:
    """`replay validate PATH...`: each file's summary (the command's errors in the assertion's message)."""
    done = run_replay("validate", *map(str, paths))
    return [line for line in jsonl(done.stdout) if "valid" in line] or [{"valid": False, "stderr": done.stderr}]


def listed_and_streamed(event: dict[str, Any]) -> list[tuple[str, str | dict]]:
    """The event in the output object's `events`, and streamed on a line of its own before the output object."""
    return [("listed", {**OUTPUT, "events": [event]}), ("streamed", json.dumps(event) + "\n" + json.dumps(OUTPUT) + "\n")]


@pytest.mark.parametrize(("field", "value"), [
    ("step", {}), ("step", True), ("step", 1.5), ("step", []), ("turn", [1]), ("turn", 2.0), ("parentId", 3),
    ("parentId", {"id": "e1"}), ("synthetic", 0), ("synthetic", "yes"), ("synthetic", 1), ("$record", "run"),
    ("$record", "x"),
], ids=repr)
def test_an_event_field_of_another_type_is_left_out_with_a_notice_and_what_capture_writes_validates(tmp_path, field, value):
    """`"step": {}`, `"synthetic": 0` (...) passed capture into the healed artifact and the journal, which then failed
    their own check (E_HEALED_ARTIFACT_INVALID, exit 1); a `"$record": "run"` made the event a second run record (the
    run's own lost) and any other `$record` made it vanish without a word. Each such field is left out of its event
    now, the rest of the event kept, with an E_RUNNER_FIELD_INVALID notice, as a usage or error member of another type
    is; `<id>.artifact.json` keeps the event as the runner gave it."""
    event = {"type": "tool_called", "payload": {"tool": "t"}, "step": 1, field: value}
    for how, stdout in listed_and_streamed(event):
        (tmp_path / how).mkdir()
        done = say(tmp_path / how, stdout)
        assert done.returncode == 0 and errors_of(done.stderr) == [], (how, done.stderr)
        summary, files = written(tmp_path / how, done)
        assert summary["status"] == "ok" and "error" not in summary
        assert all(v["valid"] for v in validated(files["healed"], files["journal"])), (how, field, value)
        [notice] = [n for n in json.loads(files["healLog"].read_text())["notices"] if n.get("code") == "E_RUNNER_FIELD_INVALID"]
        assert notice["field"] == field and notice["original"] == value and notice["rule"] == "check_runner_output"
        assert notice["expected"] and notice["howToFix"] and field in notice["message"]
        assert notice.get("path") == "$.events[0]" if how == "listed" else notice.get("line") == 1
        healed = json.loads(files["healed"].read_text())["events"]
        [kept] = [e for e in healed if e["type"] == "tool_called"]
        assert field not in kept
        assert kept["payload"] == {"tool": "t"} and (field == "step" or kept["step"] == 1)
        assert json.loads(files["artifact"].read_text())["events"] == [event]  # (the run as the runner reported it)


@pytest.mark.parametrize(("field", "value", "rule"), [
    ("seq", "x", "renumber"), ("seq", 0, "renumber"), ("timestamp", 5, "fix_timestamp"), ("runId", 7, "fill_run_id"),
    ("runId", "", "fill_run_id"), ("payload", [1], "normalize_payload"), ("step", None, "drop_empty_fields"),
    ("turn", None, "drop_empty_fields"), ("synthetic", False, "drop_empty_fields"),
], ids=repr)
def test_a_field_heal_repairs_is_left_to_heal_and_logged_as_its_repair(tmp_path, field, value, rule):
    """The fields heal repairs (and logs) are no notice of capture's: the repair is in the heal log, and what capture
    writes validates."""
    done = say(tmp_path, {**OUTPUT, "events": [{"type": "tool_called", "payload": {}, field: value}]})
    assert done.returncode == 0, done.stderr
    _summary, files = written(tmp_path, done)
    log = json.loads(files["healLog"].read_text())
    assert [n for n in log["notices"] if n.get("code") == "E_RUNNER_FIELD_INVALID"] == []
    assert any(r["rule"] == rule and r.get("field") == field for r in log["repairs"]), log["repairs"]
    assert all(v["valid"] for v in validated(files["healed"], files["journal"]))


FIELDS = ["seq", "timestamp", "type", "runId", "payload", "step", "turn", "parentId", "synthetic", "$record", "extra"]
SCALARS = (st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
           | st.sampled_from(["2026-03-01T12:00:00.000Z", "run_x", "tool_called", "run_completed", "run_failed"]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
                      max_leaves=4)
EVENTS = st.lists(st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=6).map(
    lambda e: e if "type" in e and e["type"] != "" else {**e, "type": "tool_called"}), max_size=4)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=EVENTS, streamed=st.booleans())
def test_any_events_a_runner_reports_give_a_healed_artifact_and_journal_that_validate(events, streamed):
    """The property: whatever fields (of whatever type) a runner's events carry, the healed artifact and the journal
    capture writes pass `replay validate` (an event whose `type` is no event's fails the run and is left out)."""
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder)
        stdout: str | dict = ("".join(json.dumps(e) + "\n" for e in events) + json.dumps(OUTPUT) + "\n" if streamed
                              else {**OUTPUT, "events": events})
        done = say(cwd, stdout)
        _summary, files = written(cwd, done)
        assert all(v["valid"] for v in validated(files["healed"], files["journal"])), (events, done.stderr)
        assert not [e for e in errors_of(done.stderr) if e["code"] == "E_HEALED_ARTIFACT_INVALID"]
