"""heal --in logs each field it fills into an artifact that lacks it (schemaVersion, artifactType, id, timestamp, prompt,
query, status), or replaces (an empty id or timestamp, a prompt or query not a string, a null status): a repair of rule
fill_artifact_field with the field, the value written, its path and the original replaced, counted where the run's
repairs are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import errors_of, jsonl, run_replay
from heal_support import ev
from jsonschema import Draft202012Validator

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
T = "2026-03-01T12:00:00Z"
FULL = {"schemaVersion": "1.0.0", "artifactType": "replay", "id": "r1", "timestamp": T, "prompt": "p", "query": "p",
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
    assert log["summary"] == {"total": 4, "byRule": {"fill_artifact_field": 4}} and line["repairs"] == 4
    assert healed["heal"] == {"repairs": 4, "byRule": {"fill_artifact_field": 4}}
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
