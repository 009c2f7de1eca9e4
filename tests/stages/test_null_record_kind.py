"""A line with a ``$record`` key is a reserved record whatever the key's value (`replay schema stream`: "a reserved
record marked by the key"; an event has no such key, `replay schema event`). ``{"$record": null}`` is a record of a
kind replay does not know: every stage reads it so (``records.is_record``), it begins no run and is no event."""

from __future__ import annotations

import orjson
import pytest
from conftest import run_replay

from replay.pipeline.model.records import has_records, is_record, record_kind
from replay.pipeline.model.runs import Run, starts_run
from replay.pipeline.model.walk import kind_of

R0 = b'{"seq":%d,"timestamp":"2026-03-01T12:00:0%d.000Z","type":"%s","runId":"r0","payload":{}}'
# r0's run, a line whose "$record" is null naming r1 in the middle of it, then r0's end
NULL_IN_R0 = b"\n".join([R0 % (1, 1, b"run_started"), b'{"$record":null,"runId":"r1"}', R0 % (2, 2, b"run_completed")]) + b"\n"


def test_a_record_key_makes_a_record_whatever_its_value():
    assert is_record({"$record": None, "runId": "r1"}) and is_record({"$record": "other"}) and is_record({"$record": 7})
    assert not is_record({"seq": 1, "runId": "r1"})
    assert has_records([{"seq": 1}, {"$record": None}]) and not has_records([{"seq": 1}, {"seq": 2}])
    assert record_kind({"$record": None}) is None  # (the kind: null; ``is_record`` tells it from an event)
    assert kind_of({"$record": None, "type": "user_message"}) == "$null"


def test_a_null_record_kind_begins_no_run():
    """``starts_run`` took it for an event (it cut r0 where it named r1), the per-run stages for a record."""
    r0 = Run("r0", None, "j.jsonl")
    assert not starts_run({"$record": None, "runId": "r1"}, r0, "j.jsonl")
    assert starts_run({"$record": "run", "runId": "r1"}, r0, "j.jsonl")
    assert starts_run({"seq": 1, "runId": "r1"}, r0, "j.jsonl")


def heal_twice(data: bytes, *args: str) -> tuple[bytes, bytes]:
    first = run_replay("heal", *args, input=data)
    return first.stdout, run_replay("heal", *args, input=first.stdout).stdout


@pytest.mark.parametrize("summary", [True, False])
def test_heal_keeps_a_run_with_a_null_record_kind_in_it_one_run(summary: bool):
    """Heal cut r0 in two at the line (a run_failed invented for the first part, a run_started for the second, two
    heal records), while validate and report counted three runs and the line an event of r1. Now it is one run of
    two events, the line going with it untouched, and healing again changes nothing."""
    args = () if summary else ("--no-summary",)
    once, twice = heal_twice(NULL_IN_R0, *args)
    assert once == NULL_IN_R0 == twice  # (nothing to repair: no heal record either)
    done = run_replay("validate", input=NULL_IN_R0)
    assert orjson.loads(done.stdout)["runs"] == 1 and orjson.loads(done.stdout)["events"] == 2
    assert [e["error"]["code"] for e in map(orjson.loads, done.stderr.splitlines())] == ["E_EVENT_INVALID"]  # the kind
    report = orjson.loads(run_replay("report", "--format", "json", input=NULL_IN_R0).stdout)["aggregate"]
    assert report["runs"]["total"] == 1 and report["events"]["total"] == 2


def test_a_null_record_kind_is_no_event_to_renumber():
    """Between r0's events it takes no seq: renumber numbers r0's events 1, 2 around it, as validate counts them."""
    data = b"\n".join([R0 % (1, 1, b"run_started"), b'{"$record":null,"seq":2,"type":"user_message","runId":"r0"}',
                       R0 % (3, 3, b"run_completed")]) + b"\n"
    once, twice = heal_twice(data)
    assert once == twice
    rows = [orjson.loads(line) for line in once.splitlines()]
    assert [(r.get("seq"), "$record" in r) for r in rows if r.get("$record") != "heal"] == [(1, False), (2, True), (2, False)]


def test_heal_into_a_folder_names_its_log_after_the_run_not_a_null_record_kind(tmp_path):
    """write_healed took a line whose "$record" is null for the input's first event: the heal log named the run after
    that record's runId (r1), while heal, validate and report read the record as no event of r0's. (The record of no
    kind replay knows is still said, as `replay heal` of the file says it: E_HEALED_ARTIFACT_INVALID, exit 1.)"""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(b'{"$record":null,"runId":"r1"}\n' + NULL_IN_R0)
    done = run_replay("heal", "--in", str(folder), "--out", str(tmp_path / "out"))
    filtered = run_replay("heal", str(folder / "a.jsonl"))
    assert done.returncode == filtered.returncode == 1, done.stderr
    assert [(e["error"]["code"], e["error"]["cause"], e["error"]["line"]) for e in map(orjson.loads, done.stderr.splitlines())] == [
        (e["error"]["code"], e["error"]["cause"], e["error"]["line"]) for e in map(orjson.loads, filtered.stderr.splitlines())] == [
        ("E_HEALED_ARTIFACT_INVALID", "E_EVENT_INVALID", 1), ("E_HEALED_ARTIFACT_INVALID", "E_EVENT_INVALID", 3)]
    log = orjson.loads((tmp_path / "out" / "a.heal-log.json").read_bytes())
    assert log["runId"] == "r0"


def test_an_incident_import_of_a_replay_journal_skips_a_null_record_kind(tmp_path):
    """The import counted a line whose "$record" is null as an event of a run of its own: one with no runId was
    refused (E_INCIDENT_FIELD_MISSING), one naming another run made the journal two runs (E_INCIDENT_CASE_REQUIRED)."""
    from replay.pipeline.model.incident.export import load_export

    rules = tmp_path / "rules.json"
    rules.write_bytes(b'[{"id": "no-errors", "type": "max_tool_errors", "max": 0}]')
    run = b'{"$record":"run","runId":"r0","prompt":"p","status":"ok","response":"x"}\n'
    end = R0 % (1, 1, b"run_completed") + b"\n"
    for null in (b'{"$record":null}\n', b'{"$record":null,"runId":"r1"}\n'):
        journal = tmp_path / "j.jsonl"
        journal.write_bytes(run + null + end)
        incident = load_export(str(journal), format="replay", rules_path=str(rules))
        assert incident["input"] == {"prompt": "p"}
