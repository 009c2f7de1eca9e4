"""heal --in logs each field it fills into an artifact that lacks it (schemaVersion, artifactType, id, timestamp, prompt,
query, status), or replaces (an empty id or timestamp, a prompt or query not a string, a null status, toolCalls other
than its events show): a repair of rule fill_artifact_field with the field, the value written, its path and the original
replaced, counted where the run's repairs are. A runId the artifact lacks is logged once (fill_run_id), and a null field
left out (drop_empty_fields), in both modes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import errors_of, jsonl, run_replay
from heal_support import ev
from jsonschema import Draft202012Validator

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
T = "2026-03-01T12:00:00Z"
FULL = {"schemaVersion": "1.0.0", "artifactType": "replay", "id": "r1", "runId": "r1", "timestamp": T, "prompt": "p", "query": "p",
        "status": "ok", "events": [ev(1, "run_started", run="r1"), ev(2, "run_failed", run="r1")]}


def _heal_in(tmp_path: Path, doc: dict, whole_folder: bool = True) -> tuple[dict, dict, dict]:
    """heal --in (the folder, or the file) of ``doc`` as a.json: its stdout line, healed copy and heal log."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.json").write_text(json.dumps(doc))
    out = tmp_path / "out"
    done = run_replay("heal", "--in", str(src if whole_folder else src / "a.json"), "--out", str(out))
    assert done.returncode == 0 and not errors_of(done.stderr), done.stderr
    [line] = jsonl(done.stdout)
    log = json.loads((out / "a.heal-log.json").read_text())
    Draft202012Validator(json.loads((SCHEMAS / "heal-log.schema.json").read_text())).validate(log)
    return line, json.loads((out / "a.healed.json").read_text()), log


@pytest.mark.parametrize("whole_folder", [True, False])
def test_each_field_filled_is_a_repair_in_the_heal_log(tmp_path: Path, whole_folder: bool) -> None:
    lacking = {k: v for k, v in FULL.items() if k not in ("schemaVersion", "artifactType", "status")}
    line, healed, log = _heal_in(tmp_path, lacking, whole_folder)
    assert (healed["schemaVersion"], healed["artifactType"], healed["status"]) == ("1.0.0", "replay", "error")
    fills = [r for r in log["repairs"] if r["rule"] == "fill_artifact_field"]
    source = str(tmp_path / "in" / "a.json")
    assert [(r["action"], r["field"], r["value"], r["path"], r["source"], r["runId"]) for r in fills] == [
        ("changed", "schemaVersion", "1.0.0", "$.schemaVersion", source, "r1"),
        ("changed", "artifactType", "replay", "$.artifactType", source, "r1"),
        ("changed", "status", "error", "$.status", source, "r1"),
    ]
    assert log["summary"]["byRule"] == {"fill_artifact_field": 3} and log["summary"]["total"] == 3
    assert line["repairs"] == 3
    assert healed["heal"] == {"repairs": 3, "byRule": {"fill_artifact_field": 3}}
    valid = run_replay("validate", str(tmp_path / "out" / "a.healed.json"))
    assert valid.returncode == 0, valid.stderr


def test_fills_are_counted_with_the_runs_other_repairs(tmp_path: Path) -> None:
    doc = {k: v for k, v in FULL.items() if k != "status"}
    doc["events"] = [ev(1, "run_started", run="r1"), ev(5, "run_completed", run="r1")]  # renumbered: 1 repair
    line, healed, log = _heal_in(tmp_path, doc)
    assert healed["status"] == "ok"
    assert log["summary"]["byRule"] == {"fill_artifact_field": 1, "renumber": 1} and line["repairs"] == 2
    assert healed["heal"] == {"repairs": 2, "byRule": {"fill_artifact_field": 1, "renumber": 1}}
    assert [r["rule"] for r in log["repairs"]][-1] == "fill_artifact_field"


def test_a_whole_artifact_gets_no_fill(tmp_path: Path) -> None:
    line, healed, log = _heal_in(tmp_path, FULL)
    assert log["repairs"] == [] and line["repairs"] == 0 and "heal" not in healed


def _fills(log: dict) -> list[tuple]:
    return [(r["action"], r["field"], r["path"], r["value"], r.get("original", "-"))
            for r in log["repairs"] if r["rule"] == "fill_artifact_field"]


@pytest.mark.parametrize("whole_folder", [True, False])
def test_id_timestamp_prompt_and_query_filled_are_repairs(tmp_path: Path, whole_folder: bool) -> None:
    events = [ev(1, "run_started", run="r1", ts=T), ev(2, "run_completed", run="r1", ts="2026-03-01T12:00:01Z")]
    line, healed, log = _heal_in(tmp_path, {"schemaVersion": "1.0.0", "artifactType": "replay", "status": "ok",
                                            "events": events}, whole_folder)
    assert (healed["id"], healed["timestamp"], healed["prompt"], healed["query"]) == ("r1", T, "", "")
    assert _fills(log) == [("changed", "id", "$.id", "r1", "-"), ("changed", "timestamp", "$.timestamp", T, "-"),
                           ("changed", "prompt", "$.prompt", "", "-"), ("changed", "query", "$.query", "", "-")]
    by_rule = {"fill_artifact_field": 4, "fill_run_id": 1}  # (its runId too: from its events)
    assert log["summary"] == {"total": 5, "byRule": by_rule} and line["repairs"] == 5
    assert healed["heal"] == {"repairs": 5, "byRule": by_rule}
    assert log["artifactId"] == "r1"


def test_a_query_filled_from_the_prompt_is_a_repair(tmp_path: Path) -> None:
    line, healed, log = _heal_in(tmp_path, {k: v for k, v in FULL.items() if k != "query"})
    assert healed["query"] == "p"
    assert _fills(log) == [("changed", "query", "$.query", "p", "-")] and line["repairs"] == 1


BAD = {"id": "", "timestamp": "", "prompt": 5, "query": None, "status": None}


def test_a_value_replaced_is_a_repair_with_its_original(tmp_path: Path) -> None:
    line, healed, log = _heal_in(tmp_path, {**FULL, **BAD})
    assert (healed["id"], healed["timestamp"], healed["prompt"], healed["query"], healed["status"]) == (
        "r1", FULL["events"][0]["timestamp"], "", "", "error")
    assert _fills(log) == [("changed", "id", "$.id", "r1", ""),
                           ("changed", "timestamp", "$.timestamp", FULL["events"][0]["timestamp"], ""),
                           ("changed", "prompt", "$.prompt", "", 5), ("changed", "query", "$.query", "", None),
                           ("changed", "status", "$.status", "error", None)]
    assert log["summary"]["byRule"] == {"fill_artifact_field": 5} and line["repairs"] == 5
    assert healed["heal"] == {"repairs": 5, "byRule": {"fill_artifact_field": 5}}
    valid = run_replay("validate", str(tmp_path / "out" / "a.healed.json"))
    assert valid.returncode == 0, valid.stderr


def test_a_query_not_a_string_takes_the_prompt(tmp_path: Path) -> None:
    _, healed, log = _heal_in(tmp_path, {**FULL, "query": ["q"]})
    assert healed["query"] == "p" and _fills(log) == [("changed", "query", "$.query", "p", ["q"])]


LACKING_ALL = ("schemaVersion", "artifactType", "id", "timestamp", "prompt", "query", "status")


def test_filter_mode_fills_nothing_so_logs_nothing(tmp_path: Path) -> None:
    """Filter mode writes a stream: a run record has no envelope, and what the artifact lacked stays missing (nothing
    is written)."""
    target = tmp_path / "a.json"
    target.write_text(json.dumps({k: v for k, v in FULL.items() if k not in LACKING_ALL}))
    log = tmp_path / "log.jsonl"
    done = run_replay("heal", str(target), "--log", str(log))
    assert done.returncode == 0, done.stderr
    [run] = [r for r in jsonl(done.stdout) if r.get("$record") == "run"]
    assert not {*LACKING_ALL, "artifactId"} & set(run)
    assert log.read_text() == ""


def test_filter_mode_replaces_nothing_it_keeps_and_reports_the_invalid(tmp_path: Path) -> None:
    """What heal --in replaces (and logs) stays in filter mode's stream, as the artifact has it: an empty id and
    timestamp, a prompt not a string (reported: the stream is invalid); a null is left out, as a run record's is."""
    target = tmp_path / "a.json"
    target.write_text(json.dumps({**FULL, **BAD}))
    log = tmp_path / "log.jsonl"
    done = run_replay("heal", str(target), "--log", str(log))
    assert done.returncode == 1
    [run] = [r for r in jsonl(done.stdout) if r.get("$record") == "run"]
    assert (run["artifactId"], run["timestamp"], run["prompt"]) == ("", "", 5) and not {"query", "status"} & set(run)
    assert {e["code"] for e in errors_of(done.stderr)} == {"E_HEALED_ARTIFACT_INVALID"}
    assert "fill_artifact_field" not in log.read_text()


def _filter(tmp_path: Path, doc: dict) -> tuple[list[dict], list[dict]]:
    """heal (filter mode) of ``doc`` as a.json: its stream and its --log entries (each checked against the schema)."""
    target = tmp_path / "a.json"
    target.write_text(json.dumps(doc))
    log = tmp_path / "log.jsonl"
    done = run_replay("heal", str(target), "--log", str(log))
    schema = json.loads((SCHEMAS / "heal-log.schema.json").read_text())
    entries = jsonl(log.read_text())
    for entry in entries:
        Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/repair"}).validate(entry)
    return jsonl(done.stdout), entries


def _rule(entries: list[dict], rule: str) -> list[tuple]:
    return [(r["field"], r.get("path"), r.get("value", "-"), r.get("original", "-"), r["runId"])
            for r in entries if r["rule"] == rule]


NO_RUN_ID = {k: v for k, v in FULL.items() if k != "runId"}


@pytest.mark.parametrize("whole_folder", [True, False])
def test_a_run_id_taken_from_the_events_is_logged_once(tmp_path: Path, whole_folder: bool) -> None:
    line, healed, log = _heal_in(tmp_path, NO_RUN_ID, whole_folder)
    assert healed["runId"] == "r1"
    assert _rule(log["repairs"], "fill_run_id") == [("runId", "$.runId", "r1", "-", "r1")]
    assert log["summary"] == {"total": 1, "byRule": {"fill_run_id": 1}} and line["repairs"] == 1
    assert healed["heal"] == {"repairs": 1, "byRule": {"fill_run_id": 1}}


def test_a_run_id_taken_from_the_id_or_replacing_an_empty_one_is_logged(tmp_path: Path) -> None:
    events = [{k: v for k, v in e.items() if k != "runId"} for e in FULL["events"]]
    _, healed, log = _heal_in(tmp_path, {**FULL, "runId": "", "id": "art", "events": events})
    assert healed["runId"] == "art"
    [entry] = [r for r in log["repairs"] if r["rule"] == "fill_run_id" and r.get("path") == "$.runId"]
    assert (entry["value"], entry["original"]) == ("art", "") and "the artifact's id" in entry["message"]


def test_a_run_id_nothing_names_is_still_logged_once(tmp_path: Path) -> None:
    events = [{k: v for k, v in e.items() if k != "runId"} for e in FULL["events"]]
    _, healed, log = _heal_in(tmp_path, {k: v for k, v in FULL.items() if k not in ("runId", "id")} | {"events": events})
    named = [r for r in log["repairs"] if r["rule"] == "fill_run_id" and "run record" in r["message"]]
    assert len(named) == 1 and named[0]["value"] == healed["runId"] == "a"  # (the file name)


def test_filter_mode_logs_a_run_id_taken_from_the_events(tmp_path: Path) -> None:
    stream, entries = _filter(tmp_path, NO_RUN_ID)
    assert stream[0]["runId"] == "r1"
    assert _rule(entries, "fill_run_id") == [("runId", "$.runId", "r1", "-", "r1")]
    assert stream[-1] == {"$record": "heal", "runId": "r1", "repairs": 1, "byRule": {"fill_run_id": 1}}


NULLS = {"response": None, "error": None, "usage": None, "model": None}


@pytest.mark.parametrize("whole_folder", [True, False])
def test_null_fields_left_out_are_logged(tmp_path: Path, whole_folder: bool) -> None:
    line, healed, log = _heal_in(tmp_path, {**FULL, **NULLS, "status": None}, whole_folder)
    assert not set(NULLS) & set(healed)
    assert _rule(log["repairs"], "drop_empty_fields") == [(k, f"$.{k}", "-", None, "r1") for k in NULLS]
    # the null status is replaced (fill_artifact_field, with its original): logged once, not left out too
    assert _fills(log) == [("changed", "status", "$.status", "error", None)]
    assert log["summary"]["byRule"] == {"drop_empty_fields": 4, "fill_artifact_field": 1} and line["repairs"] == 5
    assert healed["heal"] == {"repairs": 5, "byRule": {"drop_empty_fields": 4, "fill_artifact_field": 1}}


def test_filter_mode_logs_null_fields_left_out(tmp_path: Path) -> None:
    stream, entries = _filter(tmp_path, {**FULL, **NULLS, "status": None})
    assert not {*NULLS, "status"} & set(stream[0])
    assert _rule(entries, "drop_empty_fields") == [(k, f"$.{k}", "-", None, "r1") for k in ("status", *NULLS)]
    assert stream[-1]["byRule"] == {"drop_empty_fields": 5}


CALLS = [ev(1, "run_started", run="r1"), ev(2, "tool_called", run="r1", payload={"callId": "c1", "toolName": "t"}),
         ev(3, "tool_completed", run="r1", payload={"callId": "c1", "toolName": "t"}), ev(4, "run_completed", run="r1")]


def test_tool_calls_replaced_are_logged_with_the_original(tmp_path: Path) -> None:
    own = [{"toolName": "made_up", "status": "ok", "durationMs": 5}]
    line, healed, log = _heal_in(tmp_path, {**FULL, "events": CALLS, "toolCalls": own})
    [entry] = [r for r in log["repairs"] if r["field"] == "toolCalls"]
    assert entry["rule"] == "fill_artifact_field" and entry["path"] == "$.toolCalls"
    assert entry["original"] == own and entry["value"] == healed["toolCalls"] != own
    assert line["repairs"] == 1 and healed["heal"] == {"repairs": 1, "byRule": {"fill_artifact_field": 1}}


def test_tool_calls_the_events_show_or_none_given_are_no_repair(tmp_path: Path) -> None:
    _, healed, _ = _heal_in(tmp_path, {**FULL, "events": CALLS})
    again = tmp_path / "again"
    again.mkdir()
    line, _, log = _heal_in(again, {**FULL, "events": CALLS, "toolCalls": healed["toolCalls"]})
    assert log["repairs"] == [] and line["repairs"] == 0
