"""A record that is no event (no `type`, an empty one, or one that is no string) is reported by `replay report` as
`export --otlp` and `validate` report it (E_ARTIFACT_EVENT_TYPE_INVALID at its line, exit 1), counted as an input
problem in every format, and left out of the events and the runs: it was counted as an event of type "(none)" (a
journal of only `{"a":1}` made "1 run"), with exit 0 and no word."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay

TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"
NO_EVENTS = [b'{"a":1}', b'{"type":""}', b'{"seq":3,"type":7,"runId":"run_a"}', b'{"type":null,"runId":"other"}',
             b'{"type":{"name":"tool_called"}}']
RECEIVED = ["missing", "", 7, "null", "object"]
CODE = "E_ARTIFACT_EVENT_TYPE_INVALID"


def mixed(tmp_path: Path) -> tuple[Path, Path]:
    """two-runs.jsonl with the records that are no events in the middle of its first run (lines 4 to 8), and as it is."""
    lines = TWO_RUNS.read_bytes().splitlines(keepends=True)
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"".join(lines[:3]) + b"".join(line + b"\n" for line in NO_EVENTS) + b"".join(lines[3:]))
    clean = tmp_path / "clean.jsonl"
    clean.write_bytes(TWO_RUNS.read_bytes())
    return path, clean


@pytest.mark.parametrize("fmt", ["json", "html"])  # (without a timeline: the batch's columns; with one: event by event)
def test_a_record_that_is_no_event_is_reported_counted_and_left_out(tmp_path: Path, fmt: str):
    path, clean = mixed(tmp_path)
    done = run_replay("report", "--format", fmt, str(path), process=True)
    assert done.returncode == 1
    errors = errors_of(done.stderr)
    assert [(e["code"], e["line"], e["received"]) for e in errors] == [
        (CODE, 4 + k, received) for k, received in enumerate(RECEIVED)]
    exported = errors_of(run_replay("export", "--otlp", str(path)).stderr)  # (the same error, at the same place)
    assert [{k: v for k, v in e.items() if k not in ("message", "stage")} for e in errors] == \
           [{k: v for k, v in e.items() if k not in ("message", "stage")} for e in exported]
    assert errors[0]["message"] == "the record is no event: its `type` is missing; it is left out of the report"
    assert [e["line"] for e in errors_of(run_replay("validate", str(path)).stderr) if e["code"] == CODE] == \
           [e["line"] for e in errors]
    if fmt != "json":
        assert CODE in done.stdout.decode()
        return
    doc, plain = json.loads(done.stdout), json.loads(run_replay("report", "--format", "json", str(clean)).stdout)
    assert doc["runs"] == [{**run, "source": str(path)} for run in plain["runs"]]  # (no event of a run, nor a run)
    assert doc["aggregate"]["events"] == plain["aggregate"]["events"]
    assert "(none)" not in doc["aggregate"]["events"]["byType"]
    first = [{k: e[k] for k in ("code", "source", "line", "message")} for e in errors]
    assert doc["aggregate"]["diagnostics"] == {"total": 5, "byCode": {CODE: 5}, "first": first}


def test_every_format_counts_them_as_input_problems(tmp_path: Path):
    path, _ = mixed(tmp_path)
    text = run_replay("report", str(path))
    assert text.returncode == 1 and f"input problems  5: {CODE} 5 (details on stderr)" in text.stdout.decode()
    markdown = run_replay("report", "--format", "markdown", str(path))
    assert markdown.returncode == 1
    assert f"> **5 input problems**: {CODE.replace('_', chr(92) + '_')} 5" in markdown.stdout.decode()
    junit = run_replay("report", "--format", "junit", str(path))
    assert junit.returncode == 1
    suite = ET.fromstring(junit.stdout).find("testsuite")
    assert suite is not None and suite.get("errors") == "1"
    [case] = [c for c in suite.iter("testcase") if c.get("name") == "input"]
    error = case.find("error")
    assert error is not None and error.get("message") == f"5 input problems: {CODE} 5"
    html = run_replay("report", "--format", "html", str(path))
    assert html.returncode == 1 and "<h3>Input problems</h3>" in html.stdout.decode()


def test_a_journal_of_only_a_record_that_is_no_event_has_no_run(tmp_path: Path):
    lone = tmp_path / "g.jsonl"
    lone.write_bytes(b'{"a":1}\n')
    done = run_replay("report", str(lone), process=True)
    assert done.returncode == 1
    assert done.stdout.decode().splitlines()[0] == "replay report: 0 runs (0 ok, 0 error)"
    [error] = errors_of(done.stderr)
    assert (error["code"], error["source"], error["line"], error["offset"], error["received"]) == (
        CODE, str(lone), 1, 0, "missing")
    doc = json.loads(run_replay("report", "--format", "json", str(lone)).stdout)
    assert doc["runs"] == [] and doc["aggregate"]["diagnostics"]["byCode"] == {CODE: 1}


def test_piped_through_read_it_is_reported_at_its_line_too(tmp_path: Path):
    path, _ = mixed(tmp_path)
    done = run_replay("report", "--format", "json", input=run_replay("read", str(path)).stdout)
    assert done.returncode == 1
    assert [(e["code"], e["line"]) for e in errors_of(done.stderr)] == [(CODE, 4 + k) for k in range(5)]
    assert json.loads(done.stdout)["aggregate"]["diagnostics"]["total"] == 5


def test_strict_stops_at_it_and_writes_no_report(tmp_path: Path):
    path, _ = mixed(tmp_path)
    out = tmp_path / "r.json"
    done = run_replay("report", "--strict", "--out", str(out), str(path))
    assert done.returncode == 1 and [e["code"] for e in errors_of(done.stderr)][:1] == [CODE]
    assert not out.exists()


def test_an_artifact_event_that_is_no_event_is_reported_at_its_path(tmp_path: Path):
    artifact = tmp_path / "a.artifact.json"
    artifact.write_text(json.dumps({
        "schemaVersion": "1.0.0", "artifactType": "replay", "id": "r", "timestamp": "2026-03-01T12:00:00.000Z",
        "status": "ok", "events": [{"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started",
                                    "runId": "r", "payload": {}}, {"a": 1}]}))
    done = run_replay("report", "--format", "json", str(artifact))
    assert done.returncode == 1
    [error] = errors_of(done.stderr)
    assert (error["code"], error["path"]) == (CODE, "$.events[1]")
    assert json.loads(done.stdout)["runs"][0]["events"] == {"total": 1, "byType": {"run_started": 1}}
