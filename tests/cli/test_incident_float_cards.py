"""`replay incident import` and `inspect` as processes: a card number or a long identifier written as a JSON float
(``4111111111111111.0``, ``4.111111111111111e15``) is judged as the integer it is (found by a read-only leak hunt: it
was kept verbatim in incident.json, report.html and evaluation.json, and inspect accepted a bundle holding one)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import errors_of, run_replay
from incident_support import value_forms

CARD = "4111111111111111"
EXPORT = """{"schema_version": 1,
 "input": {"paid_with": 4111111111111111.0, "b": 4.111111111111111e15, "c": 4111111111111111, "d": 41111111111111110e-1,
           "ref": 1234567890.0, "total_cents": 4.9e3},
 "events": [{"type": "final_output", "output": {"status": "ok", "paid": 0.4111111111111111E16, "account": 98765432100e-1}}],
 "assertions": [{"id": "r", "type": "output_equals", "path": "/paid", "value": 4111111111111111.00}]}"""
FORMS = (CARD, "4111111111111111.0", "4.111111111111111e15", "41111111111111110", "4111111111111111e", "1234567890",
         "9876543210", "0.4111111111111111")


def test_a_card_written_as_a_float_is_aliased_in_every_file(tmp_path: Path) -> None:
    (tmp_path / "export.json").write_text(EXPORT)
    done = run_replay("incident", "import", str(tmp_path / "export.json"), "--out", str(tmp_path / "out"), process=True)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    files = {p.name: p.read_bytes() for p in out.iterdir()}
    assert {"incident.json", "report.html", "evaluation.json", "trace.jsonl"} <= set(files)
    for name, data in {**files, "<stdout>": done.stdout, "<stderr>": done.stderr}.items():
        for form in FORMS:
            assert not any(f in data for f in value_forms(form)), (name, form)
    bundle = orjson.loads(files["incident.json"])
    given = bundle["input"]
    assert given["paid_with"] == given["b"] == given["c"] == given["d"] == bundle["events"][0]["output"]["paid"]
    assert given["paid_with"].startswith("card_") and given["ref"].startswith("id_") and given["total_cents"] == 4900.0
    assert bundle["assertions"][0]["value"] == given["c"]  # (the rule compares the card as the output holds it)
    assert orjson.loads(files["evaluation.json"])["status"] == "pass"


@pytest.mark.parametrize(("member", "number"), [("paid_with", "4111111111111111.0"), ("b", "4.111111111111111e15"),
                                                ("id_0123456789abcdef", "4111111111111111.0")])
def test_inspect_refuses_a_bundle_holding_a_card_written_as_a_float(tmp_path: Path, member: str, number: str) -> None:
    """Under a field's name, and under an aliased key, where only the number itself tells."""
    (tmp_path / "export.json").write_text(EXPORT)
    done = run_replay("incident", "import", str(tmp_path / "export.json"), "--out", str(tmp_path / "out"), process=True)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "out" / "incident.json").read_text()
    edited = text.replace('"input": {', f'"input": {{\n    "{member}": {number},', 1) if member not in text else None
    if edited is None:  # (a member the import wrote: its alias swapped for the number)
        bundle = orjson.loads(text)
        edited = text.replace(f'"{member}": "{bundle["input"][member]}"', f'"{member}": {number}', 1)
    assert edited != text
    (tmp_path / "edited.json").write_text(edited)
    done = run_replay("incident", "inspect", str(tmp_path / "edited.json"), "--out", str(tmp_path / "i"), process=True)
    assert done.returncode == 2 and not (tmp_path / "i").exists()
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"]) == ("E_INCIDENT_NOT_REDACTED", f"$.input.{member}")
    assert number.encode() not in done.stderr and CARD.encode() not in done.stderr
