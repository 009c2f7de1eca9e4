"""`replay incident import` as a subprocess writes a value it aliases nowhere raw: not as an object key, not under a
neutral field, whichever comes first; a person's name as a key is aliased though a field word sits next to it; and
what the import writes, `incident inspect` and `promote` take back (found by a read-only tester: ``"balances":
{"Smith": 12}`` next to ``"last_name": "Smith"``, ``"Jane Doe (phone)"`` as a key, ``"2024-01-05_status"`` refused
as not redacted)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import run_replay
from incident_support import value_forms, write_json

RULES = [{"id": "r", "type": "required_output", "fields": ["status"]}]


def _export(input_: dict[str, Any], args: dict[str, Any], result: Any, output: dict[str, Any] | None = None,
            rules: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"schema_version": 1, "input": input_, "events": [
        {"type": "tool_call", "call_id": "x", "name": "lookup", "args": args},
        {"type": "tool_result", "call_id": "x", "ok": True, "result": result},
        {"type": "final_output", "output": output or {"status": "ok"}}], "assertions": rules or RULES}


def _import(tmp_path: Path, export: dict[str, Any]) -> tuple[dict[str, Any], dict[str, bytes]]:
    done = run_replay("incident", "import", str(write_json(tmp_path / "e.json", export)), "--out",
                      str(tmp_path / "out"), process=True)
    assert done.returncode == 0, done.stderr
    assert b"E_INCIDENT_REDACTION_CHANGED_VERDICT" not in done.stderr, done.stderr
    files = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    return orjson.loads(files["incident.json"]), {**files, "<stdout>": done.stdout, "<stderr>": done.stderr}


def _nowhere(files: dict[str, bytes], *values: str) -> None:
    for name, data in files.items():
        for value in values:
            assert not any(form in data for form in value_forms(value)), (name, value)


def _taken_back(tmp_path: Path) -> None:
    """inspect and promote accept the bundle the import wrote."""
    bundle = str(tmp_path / "out" / "incident.json")
    inspected = run_replay("incident", "inspect", bundle, "--out", str(tmp_path / "inspected"), process=True)
    assert inspected.returncode == 0, inspected.stderr
    promoted = run_replay("incident", "promote", bundle, "--to", str(tmp_path / "case.json"), process=True)
    assert promoted.returncode == 0, promoted.stderr


def test_a_value_aliased_in_the_input_is_aliased_in_the_events_before_it(tmp_path: Path) -> None:
    """The events are redacted before the input that aliases ``jdoe`` and ``Smith``: they stayed as keys and under
    ``who``."""
    export = _export({"username": "jdoe", "last_name": "Smith"}, {"who": "jdoe"},
                     {"balances": {"Smith": 12}, "logins": {"jdoe": 3}})
    bundle, files = _import(tmp_path, export)
    _nowhere(files, "jdoe", "Smith")
    user, last = bundle["input"]["username"], bundle["input"]["last_name"]
    assert user.startswith("pii_") and last.startswith("pii_")
    assert bundle["events"][0]["args"] == {"who": user}
    assert list(bundle["events"][1]["result"]["balances"]) == [last]
    assert list(bundle["events"][1]["result"]["logins"]) == [user]
    _taken_back(tmp_path)


def test_a_value_aliased_in_an_event_is_aliased_in_the_events_and_input_after_it(tmp_path: Path) -> None:
    export = _export({"who": "jdoe", "by_person": {"Smith": 1}}, {"username": "jdoe", "last_name": "Smith"},
                     {"logins": {"jdoe": 3}}, output={"status": "ok", "last_seen_by": "Smith"})
    bundle, files = _import(tmp_path, export)
    _nowhere(files, "jdoe", "Smith")
    user, last = bundle["events"][0]["args"]["username"], bundle["events"][0]["args"]["last_name"]
    assert bundle["input"] == {"who": user, "by_person": {last: 1}}
    assert list(bundle["events"][1]["result"]["logins"]) == [user]
    assert bundle["events"][2]["output"]["last_seen_by"] == last
    _taken_back(tmp_path)


def test_a_person_named_in_a_key_with_a_field_word_is_aliased(tmp_path: Path) -> None:
    """``Jane Doe`` was aliased as a key, ``Jane Doe (phone)`` and ``Maria Garcia Lopez total`` kept (one known word
    made them fields' names); ``First Name`` and ``Order Total`` are fields' names and stay."""
    contacts = {"Jane Doe": "a", "Jane Doe (phone)": "b", "Maria Garcia Lopez total": 3, "First Name": "x",
                "Order Total": 5}
    bundle, files = _import(tmp_path, _export({"q": 1}, {"q": 1}, {"contacts": contacts}))
    _nowhere(files, "Jane Doe", "Maria Garcia", "Lopez")
    names = list(bundle["events"][1]["result"]["contacts"])
    assert all(name.startswith("id_") for name in names[:3]) and names[3:] == ["First Name", "Order Total"]
    _taken_back(tmp_path)


@pytest.mark.parametrize("key", ["2024-01-05_status", "order-1042_status", "2024-01-05_total"])
def test_a_bundle_with_a_data_key_holding_a_field_word_is_taken_back(tmp_path: Path, key: str) -> None:
    """The value under ``2024-01-05_status`` was kept by the key's class (a status token up to 64 characters) while
    inspect, seeing only the alias, judged it under no name: the import wrote a bundle inspect refused
    (E_INCIDENT_NOT_REDACTED). A rule reading it judges the redacted incident as the export."""
    value: Any = 123456789012 if key.endswith("total") else "shipped-to-the-warehouse-after-manual-review"
    output = {"status": "ok", "history": {key: value}}
    rules = [*RULES, {"id": "v", "type": "output_equals", "path": f"/history/{key}", "value": value}]
    bundle, _ = _import(tmp_path, _export({"q": 1}, {"q": 1}, {"history": {key: value}}, output, rules))
    (name,) = bundle["events"][1]["result"]["history"]
    assert name.startswith("id_") and bundle["events"][1]["result"]["history"][name] != value
    assert bundle["assertions"][1]["value"] == bundle["events"][2]["output"]["history"][name]
    assert orjson.loads((tmp_path / "out" / "evaluation.json").read_bytes())["status"] == "pass"
    _taken_back(tmp_path)


@pytest.mark.parametrize("key", ["Delivery Notes (Jane)", "Maria Lopez comment", "Jane Doe error message"])
def test_free_text_under_a_key_aliased_as_a_person_s_name_is_still_removed(tmp_path: Path, key: str) -> None:
    """A key aliased for the name in it still says its value is free text (or an error's words): a one-word note
    under it was written as it was (review: ``"Delivery Notes": "leaveunderdoormat"``), and is removed."""
    bundle, files = _import(tmp_path, _export({"q": "x"}, {"a": 1}, {key: "leaveunderdoormat"}))
    _nowhere(files, "leaveunderdoormat", key.split()[0])
    result = bundle["events"][1]["result"]
    assert list(result.values()) == ["[redacted]"] and key not in result
    _taken_back(tmp_path)


@pytest.mark.parametrize("key", ["Item Count", "Payment Method", "Delivery Notes", "Unit Price (USD)", "Product SKU",
                                 "First Name", "Order Total"])
def test_a_field_name_with_spaces_made_of_common_field_words_stays_a_name(tmp_path: Path, key: str) -> None:
    bundle, _ = _import(tmp_path, _export({"q": "x"}, {"a": 1}, {key: 3}))
    assert key in bundle["events"][1]["result"]
    _taken_back(tmp_path)
