"""`replay incident import` as a subprocess leaks nothing redaction hides: not in incident.json, trace.jsonl,
report.html or any other file it writes, not on stdout, not on stderr (keys glued into names, data used as object
keys, card numbers under amount names, refusals that quoted the export)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import EXAMPLES, errors_of, run_replay
from incident_support import minimal_export, refund_export, value_forms, write_json

STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk"
# one key of each shape the api_key detector knows
KEYS = [STRIPE, "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345", "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx",
        "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "xoxb-1234567890-AbCdEfGhIj", "AIzaSyAbCdEfGhIjKlMnOpQrStUvWxYz0123456",
        "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "glpat-AbCdEfGhIjKlMnOpQrSt", "whsec_AbCdEfGhIjKlMnOpQrStUv",
        "SK0123456789abcdef0123456789abcdef", "gsk_AbCdEfGhIjKlMnOpQrStUv", "r8_AbCdEfGhIjKlMnOpQrStUv", JWT]


def import_export(tmp_path: Path, export: dict[str, Any], *args: str) -> Any:
    path = write_json(tmp_path / "export.json", export)
    return run_replay("incident", "import", str(path), "--out", str(tmp_path / "out"), *args, process=True)


def written(tmp_path: Path, done: Any) -> dict[str, bytes]:
    """Everything the import wrote: each file of its folder, its stdout and its stderr."""
    out = tmp_path / "out"
    files = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} if out.exists() else {}
    return {**files, "<stdout>": done.stdout, "<stderr>": done.stderr}


def assert_nowhere(tmp_path: Path, done: Any, *secrets: str) -> None:
    for name, data in written(tmp_path, done).items():
        for secret in secrets:
            assert not any(form in data for form in value_forms(secret)), (name, secret)


@pytest.mark.parametrize("glue", ["_", "-"])
def test_a_key_glued_after_an_underscore_or_dash_is_found(tmp_path: Path, glue: str) -> None:
    """(?<![A-Za-z0-9_-]) before every key shape and the JWT: ``key_sk_live_...`` as an output key, ``ref_eyJ...``
    as a value were not detected, and the key was written verbatim (the value only by luck of the fallback)."""
    export = minimal_export()
    for k, key in enumerate(KEYS):
        export["events"][-1]["output"].update({f"key{glue}{key}": k, f"ref{k}": f"ref{glue}{key}"})
    done = import_export(tmp_path, export)
    assert done.returncode == 0, done.stderr
    assert_nowhere(tmp_path, done, *KEYS)
    audit = orjson.loads((tmp_path / "out" / "redaction.json").read_bytes())
    assert audit["detectors"]["jwt"] == 2 and audit["detectors"]["api_key"] >= 2 * (len(KEYS) - 1)
    assert audit["object_keys_aliased"] == len(KEYS)


@pytest.mark.parametrize("where", ["tool", "effect"])
def test_a_key_glued_into_a_tool_name_or_effect_type_is_refused(tmp_path: Path, where: str) -> None:
    export = refund_export()
    if where == "tool":
        export["events"][0]["name"] = f"lookup_{STRIPE}"
        path = "$.events[0].name"
    else:
        effect = next(e for e in export["events"] if e["type"] == "business_effect")
        effect["effect"]["type"] = f"refund-{STRIPE}"
        path = f"$.events[{export['events'].index(effect)}].effect.type"
        for rule in export["assertions"]:
            if rule.get("effect_type") == "refund":
                rule["effect_type"] = effect["effect"]["type"]
    done = import_export(tmp_path, export)
    assert done.returncode == 2
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"], error["received"]) == ("E_INCIDENT_NAME_PRIVATE", path, ["api_key"])
    assert not (tmp_path / "out").exists()
    assert_nowhere(tmp_path, done, STRIPE)


def test_a_card_number_under_an_amount_name_is_aliased_and_a_long_time_kept(tmp_path: Path) -> None:
    """A Luhn-valid 13-19 digit number under ``amount`` or ``total_cents`` was kept as an amount (under ``card`` it was
    aliased). No amount is that long: one starting as cards do (2-6) is a card; a millisecond time is kept."""
    export = minimal_export()
    export["events"][-1]["output"].update({"amount": 4111111111111111, "total_cents": 5555555555554444,
                                           "fee": 378282246310005, "started_ms": 1733456789010, "amount_cents": 4900})
    done = import_export(tmp_path, export)
    assert done.returncode == 0, done.stderr
    assert_nowhere(tmp_path, done, "4111111111111111", "5555555555554444", "378282246310005")
    output = orjson.loads((tmp_path / "out" / "incident.json").read_bytes())["events"][-1]["output"]
    assert all(output[k].startswith("card_") for k in ("amount", "total_cents", "fee"))
    assert (output["started_ms"], output["amount_cents"]) == (1733456789010, 4900)


def test_data_used_as_object_keys_is_aliased_as_the_same_value_is_elsewhere(tmp_path: Path) -> None:
    """Object keys were aliased only on a detector hit: ``{"order-1042": ..., "Jane Doe": ...}`` stayed raw next to
    ``order_id`` -> ``id_...`` and ``name`` -> ``pii_...`` (the input, with the values, is redacted after the
    events). A key holding a value aliased anywhere gets that alias; one that is data by its shape an identifier's;
    field names stay."""
    export = minimal_export()
    export["input"].update(customer={"name": "Jane Doe", "id": "cus_Nffrfeuf8nWb2c"})
    export["events"][-1]["output"].update(
        history={"order-1042": {"amount": 4900, "createdAt": 1}, "Jane Doe": {"order_id": "order-1042"},
                 "cus_Nffrfeuf8nWb2c": {"First Name": "x"}, "2024-01-05": 2, "X-Request-Id": "ok"})
    export["assertions"].append({"id": "jane-paid", "type": "output_equals", "path": "/history/Jane Doe/order_id",
                                 "value": "order-1042"})
    done = import_export(tmp_path, export)
    assert done.returncode == 0, done.stderr
    assert_nowhere(tmp_path, done, "order-1042", "Jane Doe", "Nffrfeuf8nWb2c", "2024-01-05")
    bundle = orjson.loads((tmp_path / "out" / "incident.json").read_bytes())
    order, name = bundle["input"]["order_id"], bundle["input"]["customer"]["name"]
    assert order.startswith("id_") and name.startswith("pii_")
    history = bundle["events"][-1]["output"]["history"]
    assert list(history)[:3] == [order, name, bundle["input"]["customer"]["id"]]
    assert list(history)[4] == "X-Request-Id" and list(history)[3].startswith("id_")
    assert list(history[order]) == ["amount", "createdAt"] and list(history[list(history)[2]]) == ["First Name"]
    assert bundle["assertions"][1]["path"] == f"/history/{name}/order_id"
    assert orjson.loads((tmp_path / "out" / "evaluation.json").read_bytes())["status"] == "pass"


EMAIL = "zeb@q.example"


def _export_with(put: Any) -> dict[str, Any]:
    export = minimal_export()
    put(export)
    return export


def _duplicate_key(tmp_path: Path) -> Path:
    text = orjson.dumps(minimal_export()).replace(b'"request"', f'"{EMAIL}":1,"{EMAIL}":2,"request"'.encode(), 1)
    (tmp_path / "export.json").write_bytes(text)
    return tmp_path / "export.json"


def _too_deep(tmp_path: Path) -> Path:
    deep: dict[str, Any] = {}
    for _ in range(25):
        deep = {EMAIL: deep}
    return write_json(tmp_path / "export.json", _export_with(lambda e: e["input"].update(deep=deep)))


@pytest.mark.parametrize(("make", "code", "path"), [
    (lambda e: e.update({EMAIL: 1}), "E_INCIDENT_FIELD_UNKNOWN", "$.<email>"),
    (lambda e: e["events"][0].update({EMAIL: 1}), "E_INCIDENT_FIELD_UNKNOWN", "$.events[0].<email>"),
    (lambda e: e["events"][0].update(type=EMAIL), "E_INCIDENT_EVENT_TYPE_UNKNOWN", "$.events[0].type"),
    (lambda e: e["assertions"][0].update(type=EMAIL), "E_INCIDENT_RULE_TYPE_UNKNOWN", "$.assertions[0].type"),
    (lambda e: e["assertions"][0].update({"id": EMAIL, EMAIL: 1}), "E_INCIDENT_RULE_INVALID", "$.assertions[0].<email>"),
    (lambda e: e["assertions"].append(dict(e["assertions"][0], id=STRIPE)) or e["assertions"].append(
        dict(e["assertions"][0], id=STRIPE)), "E_INCIDENT_RULE_ID_DUPLICATE", "$.assertions[2].id"),
    (lambda e: e.update(schema_version=EMAIL), "E_INCIDENT_SCHEMA_VERSION_UNSUPPORTED", "$.schema_version"),
    (_duplicate_key, "E_INCIDENT_JSON_INVALID", "$.input.<email>"),
    (_too_deep, "E_INCIDENT_NESTING_TOO_DEEP", "$.input.deep" + ".<email>" * 18),
])
def test_a_refusal_shows_no_export_content_redaction_would_hide(tmp_path: Path, make: Any, code: str, path: str) -> None:
    """Refusals quoted the export on stderr (CI logs): an unknown field's name, an event's or a rule's type, a rule
    id, schema_version, a duplicate or too-deep key in the path. They show its kind instead, keeping the position."""
    made = make(tmp_path) if make in (_duplicate_key, _too_deep) else write_json(tmp_path / "export.json", _export_with(make))
    done = run_replay("incident", "import", str(made), "--out", str(tmp_path / "out"), process=True)
    assert done.returncode == 2 and done.stdout == b""
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"]) == (code, path) and error.get("howToFix")
    assert not (tmp_path / "out").exists()
    assert_nowhere(tmp_path, done, EMAIL, STRIPE)


def test_a_case_refusal_lists_case_ids_without_private_ones(tmp_path: Path) -> None:
    """E_INCIDENT_CASE_REQUIRED listed every case id of the log: one holding an email was printed whole."""
    log = (EXAMPLES / "incidents" / "raw-logs" / "refund-run.jsonl").read_bytes().replace(b"greeting-case", EMAIL.encode())
    (tmp_path / "run.jsonl").write_bytes(log)
    rules = EXAMPLES / "incidents" / "rules.json"
    done = run_replay("incident", "import", str(tmp_path / "run.jsonl"), "--format", "runledger", "--rules", str(rules),
                      "--out", str(tmp_path / "out"), process=True)
    (error,) = errors_of(done.stderr)
    assert done.returncode == 2 and error["code"] == "E_INCIDENT_CASE_REQUIRED"
    assert error["expected"] == "one of: refund-case, <email>"
    assert_nowhere(tmp_path, done, EMAIL)
