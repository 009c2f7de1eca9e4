"""Redaction: consistent keyed aliases within an import, fresh ones across imports, pointer removal, a value-free audit."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from incident_support import REFUND_EXPORT, minimal_export, write_json

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.incident.export import load_export
from replay.pipeline.model.incident.field_names import data_key, field_class
from replay.pipeline.model.incident.recheck import unredacted
from replay.pipeline.model.incident.redactor import Redactor
from replay.pipeline.model.incident.replacements import REMOVED
from replay.pipeline.model.incident.rules import judged_otherwise


def refund() -> dict[str, Any]:
    return load_export(str(REFUND_EXPORT))


def redact(incident: dict[str, Any], remove: tuple[str, ...] = (), secret: bytes | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    redactor = Redactor(secret)
    out = redactor.incident(incident, list(remove))
    return out, redactor.audit("inc_test")


def test_a_repeated_value_gets_one_alias_everywhere_in_an_import() -> None:
    out, _ = redact(refund())
    alias = out["input"]["order_id"]
    assert alias.startswith("id_") and alias != "order-1042"
    events = out["events"]
    assert events[0]["args"]["order_id"] == alias
    assert events[1]["result"]["order_id"] == alias
    assert events[2]["args"]["order_id"] == events[5]["args"]["order_id"] == alias
    assert events[4]["effect"]["order_id"] == events[7]["effect"]["order_id"] == alias
    assert events[8]["output"]["order_id"] == alias
    # the refund id of the successful call is the one the output names; the first refund's is another
    assert events[6]["result"]["refund_id"] == events[7]["effect"]["refund_id"] == events[8]["output"]["refund_id"]
    assert events[4]["effect"]["refund_id"] != events[7]["effect"]["refund_id"]
    assert out["input"]["customer_email"] == events[1]["result"]["customer"]["email"]


def test_two_imports_give_different_aliases_and_the_same_secret_the_same() -> None:
    a, _ = redact(refund())
    b, _ = redact(refund())
    assert a["input"]["order_id"] != b["input"]["order_id"]
    same1, _ = redact(refund(), secret=b"k" * 32)
    same2, _ = redact(refund(), secret=b"k" * 32)
    assert same1 == same2


def test_payload_structure_amounts_currencies_statuses_and_codes_are_kept() -> None:
    out, _ = redact(refund())
    e = out["events"]
    assert [x["type"] for x in e] == [x["type"] for x in refund()["events"]]
    assert [x.get("call_id") for x in e] == [x.get("call_id") for x in refund()["events"]]
    assert e[0]["name"] == "lookup_order" and e[2]["name"] == "issue_refund"
    assert e[2]["args"]["amount_cents"] == 4900 and e[2]["args"]["currency"] == "USD"
    assert e[1]["result"]["status"] == "returned" and e[6]["result"]["status"] == "succeeded"
    assert e[3]["ok"] is False and e[3]["error"]["code"] == "TIMEOUT"
    assert e[4]["effect"]["type"] == "refund"
    assert e[8]["output"]["status"] == "refunded"
    assert out["assertions"] == refund()["assertions"]


def test_freeform_text_and_unknown_error_text_are_removed() -> None:
    out, audit = redact(refund())
    assert out["input"]["request"] == REMOVED
    assert out["events"][3]["error"]["message"] == REMOVED
    assert audit["fields"]["freeform_text"] == 2


@pytest.mark.parametrize(("error", "kept"), [
    ("TIMEOUT", True), ("gateway_timeout", True), ("E_RATE_LIMIT", True), ("HTTP_504", True),
    ("connection reset by peer 10.0.0.7", False), ("Timeout!", False), ("order-1042 not found", False),
])
def test_known_machine_error_codes_survive_and_other_error_text_does_not(error: str, kept: bool) -> None:
    assert (Redactor().value(error, "error", "error") == error) is kept


@pytest.mark.parametrize(("error", "kept"), [("timeout", True), ("overloaded", True), ("boom", False), ("jdoe", False),
                                             ("hunter", False)])
def test_a_one_word_lowercase_error_is_kept_only_when_it_is_a_code_services_use(error: str, kept: bool) -> None:
    assert (Redactor().value(error, "error", "error") == error) is kept


@pytest.mark.parametrize(("value", "out"), [
    ("pending", "pending"), ("ORDER_NOT_FOUND", "ORDER_NOT_FOUND"), ("USD", "USD"), ("in_progress", "in_progress"),
    ("customer Jane not found", REMOVED), ("hunter2", "id_"), ("p@ssw0rd!", "id_"), ("Jane_Doe", "id_"),
])
def test_a_field_named_for_a_status_keeps_a_status_not_a_sentence_name_or_password(value: str, out: str) -> None:
    for key in ("status", "currency", "result_code", "payment_state"):
        redacted = Redactor().value({key: value})[key]
        assert redacted == out if out != "id_" else redacted.startswith("id_") and value not in redacted


def test_task_error_messages_are_error_text() -> None:
    doc = minimal_export()
    doc["events"] = [{"type": "task_error", "message": "Customer Jane Doe was angry"}]
    redactor = Redactor()
    incident = load_export_doc(doc)
    assert redactor.incident(incident)["events"][0]["message"] == REMOVED
    doc["events"] = [{"type": "task_error", "message": "REFUND_LIMIT_REACHED"}]
    assert Redactor().incident(load_export_doc(doc))["events"][0]["message"] == "REFUND_LIMIT_REACHED"


def load_export_doc(doc: dict[str, Any]) -> dict[str, Any]:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        return load_export(str(write_json(Path(folder) / "e.json", doc)))


@pytest.mark.parametrize(("key", "value", "prefix"), [
    ("customer_id", 123456789012, "id_"), ("account", 42, "id_"), ("phone", 4155550142, "pii_"),
    ("pin", 1234, "secret_"), ("field", 4242424242424242, "card_"), ("field", 123456789012, "id_"),
])
def test_numeric_sensitive_values_become_string_aliases(key: str, value: int, prefix: str) -> None:
    redactor = Redactor()
    out = redactor.value({key: value})[key]
    assert isinstance(out, str) and out.startswith(prefix)
    assert redactor.audit()["numeric_to_string"] == 1


@pytest.mark.parametrize(("key", "value"), [("amount_cents", 4900), ("quantity", 3), ("max", 1), ("total", 123456789012),
                                            ("input_tokens", 1200), ("field", 42)])
def test_amounts_and_small_numbers_are_kept(key: str, value: int) -> None:
    assert Redactor().value({key: value}) == {key: value}


@pytest.mark.parametrize(("key", "kind"), [
    ("password", "secret"), ("apiKey", "secret"), ("Authorization", "secret"), ("session_token", "secret"),
    ("email", "personal"), ("shipping_address", "personal"), ("lastName", "personal"), ("customer_name", "personal"),
    ("order_id", "identifier"), ("idempotency_key", "identifier"), ("invoice_number", "identifier"), ("customer", "identifier"),
    ("status", "keep"), ("currency", "keep"), ("refund_status", "keep"), ("tool_name", "keep"),
    ("amount_cents", "amount"), ("output_tokens", "amount"),
    ("request", "freeform"), ("notes", "freeform"), ("description", "freeform"),
    ("error", "error"), ("region", None),
    ("names", "personal"), ("first_names", "personal"), ("full_name", "personal"), ("fullNames", "personal"),
    ("emails", "personal"), ("phone_numbers", "personal"), ("addresses", "personal"), ("cities", "personal"),
    ("ips", "personal"), ("nickname", "personal"), ("givenName", "personal"), ("date_of_birth", "personal"),
    ("statuses", None), ("tool_name", "keep"), ("order_ids", "identifier"), ("items", None), ("tokens", "amount"),
    ("sessions", "secret"), ("pins", "secret"), ("otps", "secret"), ("auths", "secret"), ("jwts", "secret"),
    ("user_sessions", "secret"), ("sigs", "secret"), ("bearers", "secret"),
    # a password under a short name (it was kept in clear): pw, pass, and names ending in them
    ("pw", "secret"), ("db_pw", "secret"), ("pass", "secret"), ("db_pass", "secret"), ("smtpPass", "secret"),
    ("pass_rate", "amount"), ("bypass", None), ("compass", None), ("passed", None),
])
def test_field_names_say_what_a_value_is(key: str, kind: str | None) -> None:
    assert field_class(key) == kind


@pytest.mark.parametrize(("key", "kind"), [
    ("PRIVATEKEY", "secret"), ("privatekey", "secret"), ("PassWord", "secret"), ("passWord", "secret"),
    ("PassPhrase", "secret"), ("SESSIONID", "secret"), ("clientsecret", "secret"), ("authtoken", "secret"),
    ("PHONENUMBER", "personal"), ("CREDITCARD", "personal"), ("DATEOFBIRTH", "personal"), ("dateofbirth", "personal"),
    ("IPADDRESS", "personal"), ("MACAddress", "personal"), ("EMAILADDRESS", "personal"), ("streetaddress", "personal"),
    ("ORDERID", "identifier"), ("idempotencykey", "identifier"), ("AMOUNTCENTS", "amount"), ("maxtokens", "amount"),
    ("ERRORMESSAGE", "error"), ("TOOLNAME", "keep"),
    ("keyboard", None), ("hostname", None), ("company", None), ("capacity", None), ("valid", None), ("statuses", None),
])
def test_a_field_name_says_the_same_in_any_case_and_written_as_one_word(key: str, kind: str | None) -> None:
    """``PRIVATEKEY``, ``PHONENUMBER``, ``SESSIONID``, ``dateofbirth`` and ``PassWord`` said nothing (only their
    snake_case and camelCase spellings were known), so a plain value under them was kept; a name is split into the
    words the checks know only when all of it is such words (``keyboard`` is not ``key`` + ``board``)."""
    assert field_class(key) == kind


def test_a_value_under_an_all_capitals_credential_name_is_redacted() -> None:
    out = Redactor().value({"PRIVATEKEY": "hunter", "PHONENUMBER": 4155550142, "SESSIONID": "abc", "PassWord": "pw"})
    assert all(v.startswith(("secret_", "pii_")) for v in out.values()), out


def test_a_list_of_names_is_redacted() -> None:
    """The personal-field names count in the plural too: {"names": ["jane"]} kept "jane" (only `name` was known)."""
    redactor = Redactor()
    out = redactor.value({"names": ["jane"], "first_names": ["Jane", "Ann"], "statuses": ["ok"]})
    assert "jane" not in str(out) and "Jane" not in str(out) and "Ann" not in str(out)
    assert out["statuses"] == ["ok"]
    assert redactor.audit()["fields"]["personal_field"] == 3


def test_a_list_of_sessions_or_pins_is_redacted_as_one_is() -> None:
    """The secret-field words count in the plural as the personal ones do: {"sessions": [...]} kept its values (only
    `session` was known)."""
    redactor = Redactor()
    out = redactor.value({"sessions": ["s-7f3a9c"], "pins": ["4921"], "session": "s-1b2c3d"})
    assert "s-7f3a9c" not in str(out) and "4921" not in str(out) and "s-1b2c3d" not in str(out)


def test_values_nested_under_a_credential_or_personal_field_are_redacted_as_it_is() -> None:
    """A member of an object under ``auth``, ``api_key``, ``credentials``, ``secret`` or ``email`` whose own name says
    nothing (``value``, ``v``, ``pass``, ``primary``) is that field's too, at any depth and in arrays: they were kept
    (``{"auth": {"value": "letmein"}}`` came out as it went in). Members that say what they are still decide."""
    redactor = Redactor()
    out = redactor.value({"auth": {"value": "letmein"}, "api_key": {"v": "zzkeyzz"}, "credentials": {"pass": "hunter"},
                          "secret": {"hint": {"deeper": ["mydog"]}, "pin_code": 1234, "type": "password"},
                          "email": {"primary": "bobby", "verified": True}, "order": {"note": "x", "currency": "USD"}})
    for secret in ("letmein", "zzkeyzz", "hunter", "mydog", "bobby", "1234"):
        assert secret not in str(out)
    assert out["auth"]["value"].startswith("secret_") and out["email"]["primary"].startswith("pii_")
    assert out["secret"]["type"] == "password" and out["email"]["verified"] is True  # (their own names decide)
    assert out["order"] == {"note": REMOVED, "currency": "USD"}  # (an identifier's members are not all identifiers)


def test_an_output_equals_value_under_a_credential_field_is_redacted_as_the_output_is() -> None:
    """The rule's value is redacted as the output's value at its path, nesting included: it kept the secret (and
    the rule no longer judged as on the export)."""
    incident = load_export(str(REFUND_EXPORT))
    incident["events"][-1]["output"]["session"] = {"raw": "qqqq"}
    incident["assertions"].append({"id": "session-kept", "type": "output_equals", "path": "/session/raw", "value": "qqqq"})
    out, _ = redact(incident)
    assert out["assertions"][-1]["value"] == out["events"][-1]["output"]["session"]["raw"] != "qqqq"


def test_the_value_of_a_name_value_pair_that_names_a_credential_is_redacted() -> None:
    """HTTP headers, environment variables and query parameters as name-value pairs (``{"name": "DB_PASSWORD",
    "value": "letmein"}``, ``{"key": "pin", "value": "4921"}``) kept a short plain value: ``value`` says nothing. The
    pair's name says what it holds; a pair naming nothing private keeps its value, and the name stays the name."""
    redactor = Redactor()
    out = redactor.value({"env": [{"name": "DB_PASSWORD", "value": "letmein"}, {"name": "REGION", "value": "eu"}],
                          "query": [{"key": "pin", "value": "4921"}, {"key": "page", "value": "2"}]})
    assert "letmein" not in str(out) and "4921" not in str(out)
    assert out["env"][1]["value"] == "eu" and out["query"][1] == {"key": "page", "value": "2"}
    assert out["query"][0]["key"] == "pin"
    incident = load_export(str(REFUND_EXPORT))
    incident["events"][-1]["output"]["headers"] = [{"header": "X-Api-Key", "value": "letmein"}]
    incident["assertions"].append({"id": "h", "type": "output_equals", "path": "/headers/0/value", "value": "letmein"})
    redacted, _ = redact(incident)
    assert redacted["assertions"][-1]["value"] == redacted["events"][-1]["output"]["headers"][0]["value"] != "letmein"


def test_identifiers_a_double_does_not_hold_keep_apart() -> None:
    """Two identifiers that read as one double (``1e400`` and ``2e400``; 25 significant digits) are two values, as they
    were written: they got one alias (of the double's text), so two customers became one in the trace."""
    document = exactjson.loads(b'[{"customer_id": 1e400}, {"customer_id": 2e400},'
                               b' {"customer_id": 1234567890123456789012345.5}, {"customer_id": 1234567890123456789012345.6}]')
    out = Redactor().value(document)
    aliases = [item["customer_id"] for item in out]
    assert len(set(aliases)) == 4 and all(a.startswith("id_") for a in aliases)


def test_a_sensitive_object_key_is_aliased() -> None:
    redactor = Redactor()
    out = redactor.value({"jane.doe@example.com": {"visits": 3}})
    (key,) = out
    assert key.startswith("email_") and out[key] == {"visits": 3}
    assert redactor.audit()["object_keys_aliased"] == 1


def test_an_output_equals_value_is_redacted_like_the_output_it_compares() -> None:
    incident = refund()
    incident["assertions"].append({"id": "names-the-order", "type": "output_equals", "path": "/order_id", "value": "order-1042"})
    out, audit = redact(incident)
    assert out["assertions"][-1]["value"] == out["events"][-1]["output"]["order_id"]
    assert audit["rule_values_redacted"] == 1


def test_an_effect_count_rules_group_by_field_is_aliased_as_the_effects_keys_are_and_counted_once() -> None:
    """The rule's field name is the effects' (redacted) key, its groups stay apart (``"a1"`` and ``" a1"`` would get
    one alias), and the name counts as one key aliased for the rule, however many places use it."""
    incident = refund()
    effects = [e["effect"] for e in incident["events"] if e["type"] == "business_effect"]
    for effect, value in zip(effects, ["a1", " a1"], strict=True):
        effect["jane.doe@example.com"] = value
    incident["assertions"].append({"id": "one-per-person", "type": "effect_count", "effect_type": "refund",
                                   "group_by": "jane.doe@example.com", "max": 1})
    out, audit = redact(incident)
    name = out["assertions"][-1]["group_by"]
    assert name.startswith("email_")
    groups = [e["effect"][name] for e in out["events"] if e["type"] == "business_effect"]
    assert len(groups) == 2 and groups[0] != groups[1]
    assert audit["object_keys_aliased"] == 3  # the two effects' keys, and the rule's field


# pointers -------------------------------------------------------------------------------------------------
def test_pointers_remove_fields_before_redaction_and_star_matches_one_level() -> None:
    incident = refund()
    out, audit = redact(incident, ("/input/customer_email", "/events/*/args/currency", "/events/1/result/payment"))
    assert "customer_email" not in out["input"]
    assert all("currency" not in e["args"] for e in out["events"] if e["type"] == "tool_call")
    assert "payment" not in out["events"][1]["result"]
    assert audit["pointer_removed"] == 1 + 2 + 1


def test_a_pointer_to_a_result_or_error_empties_it() -> None:
    out, _ = redact(refund(), ("/events/1/result", "/events/3/error"))
    assert out["events"][1]["result"] is None and out["events"][3]["error"] is None
    assert [r["id"] for r in out["assertions"]] == [r["id"] for r in refund()["assertions"]]


def test_array_items_are_removed_from_the_end_first() -> None:
    doc = minimal_export()
    doc["input"]["items"] = [{"sku": i} for i in range(12)]
    out, _ = redact(load_export_doc(doc), ("/input/items/*/sku", "/input/items/10", "/input/items/2"))
    assert len(out["input"]["items"]) == 10 and all(item == {} for item in out["input"]["items"])


@pytest.mark.parametrize(("pointer", "code"), [
    ("input/order_id", "E_INCIDENT_REDACT_POINTER_INVALID"),
    ("/metadata/x", "E_INCIDENT_REDACT_POINTER_INVALID"),
    ("/input/~2", "E_INCIDENT_REDACT_POINTER_INVALID"),
    ("/input/company", "E_INCIDENT_REDACT_PATH_MISSING"),
    ("/events/*/args/internal_reference", "E_INCIDENT_REDACT_PATH_MISSING"),
    ("/events/99", "E_INCIDENT_REDACT_PATH_MISSING"),
    ("/input", "E_INCIDENT_REDACT_PATH_PROTECTED"),
    ("/events/0", "E_INCIDENT_REDACT_PATH_PROTECTED"),
    ("/events/*/name", "E_INCIDENT_REDACT_PATH_PROTECTED"),
    ("/events/*/call_id", "E_INCIDENT_REDACT_PATH_PROTECTED"),
    ("/events/1/ok", "E_INCIDENT_REDACT_PATH_PROTECTED"),
    ("/events/0/args", "E_INCIDENT_REDACT_PATH_PROTECTED"),
    ("/events/4/effect/type", "E_INCIDENT_REDACT_PATH_PROTECTED"),
    ("/events/8/output", "E_INCIDENT_REDACT_PATH_PROTECTED"),
    ("/assertions/0/max", "E_INCIDENT_REDACT_PATH_PROTECTED"),
    ("/assertions/*", "E_INCIDENT_REDACT_PATH_PROTECTED"),
    ("/assertions/3", "E_INCIDENT_REDACT_PATH_PROTECTED"),  # a whole rule: its verdict would be gone with it
])
def test_missing_and_protocol_paths_are_refused(pointer: str, code: str) -> None:
    with pytest.raises(ReplayError) as caught:
        redact(refund(), (pointer,))
    assert caught.value.code == code
    assert caught.value.body["path"] == "--redact"


# the audit ------------------------------------------------------------------------------------------------
def _strings(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {s for v in value.values() for s in _strings(v)}
    if isinstance(value, list):
        return {s for v in value for s in _strings(v)}
    return {value} if isinstance(value, str) else set()


def test_the_audit_has_counts_and_warnings_only() -> None:
    original = refund()
    out, audit = redact(original)
    text = orjson.dumps(audit).decode()
    originals = _strings(original) - _strings(out)  # every value (and field name) redaction changed
    assert originals
    for value in originals:
        assert value not in text
    for field in ("customer_email", "shipping_address", "processor_ref", "order_id", "amount_cents"):
        assert field not in text
    aliases = {s for s in _strings(out) if re.fullmatch(r"(id|email|card|phone|ip|pii|secret)_[0-9a-f]{16}", s)}
    assert aliases and not any(a in text for a in aliases)
    assert audit["detectors"]["email"] == 3 and audit["detectors"]["card_number"] == 1
    assert audit["distinct_aliases"] == len(aliases)
    assert any("not a guarantee" in w for w in audit["warnings"])


def test_the_secret_is_never_in_the_redactor_output() -> None:
    secret = b"0123456789abcdef0123456789abcdef"
    out, audit = redact(refund(), secret=secret)
    blob = orjson.dumps([out, audit])
    assert secret not in blob and secret.hex().encode() not in blob


# one alias a value, everywhere; what the import writes, the re-check takes back -----------------------------
def _incident(input_: dict[str, Any], args: dict[str, Any], result: Any, output: dict[str, Any],
              rules: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"schema_version": 1, "incident_id": "inc_0123456789abcdef", "effects_complete": False, "input": input_,
            "events": [{"type": "tool_call", "call_id": "c1", "name": "lookup", "args": args},
                       {"type": "tool_result", "call_id": "c1", "ok": True, "result": result, "error": None},
                       {"type": "final_output", "output": output}],
            "assertions": rules or [{"id": "r", "type": "required_output", "fields": ["status"]}]}


@pytest.mark.parametrize("aliased_first", [False, True])
def test_a_value_aliased_anywhere_is_aliased_as_a_key_and_under_a_neutral_name(aliased_first: bool) -> None:
    """``"username": "jdoe"`` and ``"last_name": "Smith"`` were aliased, ``{"Smith": 12}``, ``{"jdoe": 3}`` and
    ``"who": "jdoe"`` kept: a key was looked up only when data-shaped, a lowercase token under no name kept. Before
    or after the place that aliases it (the input is redacted last). A name the field-name words know stays."""
    private = {"username": "jdoe", "last_name": "Smith", "customer_id": "status"}
    raw = {"who": "jdoe", "balances": {"Smith": 12}, "logins": {"jdoe": 3}, "status": "ok"}
    incident = _incident(raw, private, {"status": "ok"}, {"status": "ok"}) if aliased_first else \
        _incident(private, raw, {"status": "ok"}, {"status": "ok"})
    out = Redactor().incident(incident)
    private_out, raw_out = (out["events"][0]["args"], out["input"]) if aliased_first else (out["input"], out["events"][0]["args"])
    user, last = private_out["username"], private_out["last_name"]
    assert user.startswith("pii_") and last.startswith("pii_")
    assert raw_out == {"who": user, "balances": {last: 12}, "logins": {user: raw_out["logins"][user]}, "status": "ok"}
    assert "jdoe" not in str(out) and "Smith" not in str(out)
    assert unredacted(out) is None


def test_one_value_gets_one_alias_whatever_names_it() -> None:
    """``"customer_id": "jdoe"`` (an identifier's alias) and ``"username": "jdoe"`` (a person's) gave one value two
    aliases in one import."""
    out = Redactor().incident(_incident({"username": "jdoe"}, {"customer_id": "jdoe"}, {"login": "jdoe"}, {"status": "ok"}))
    assert out["input"]["username"] == out["events"][0]["args"]["customer_id"] == out["events"][1]["result"]["login"]


@pytest.mark.parametrize(("key", "data"), [
    ("Jane Doe", True), ("Jane Doe (phone)", True), ("Maria Garcia Lopez total", True), ("order-1042 total", True),
    ("Jane Smith email", True), ("Created At", True),
    ("First Name", False), ("Order Total", False), ("Date of Birth", False), ("Shipping Address Line 2", False),
    ("Error Message", False), ("Customer Email", False), ("billing address", False), ("Phone Numbers", False),
])
def test_a_name_with_spaces_is_a_fields_only_when_the_field_words_know_every_word(key: str, data: bool) -> None:
    """One known word made a field's name of a person's: ``Jane Doe (phone)`` stayed in every file."""
    assert data_key(key) is data


@pytest.mark.parametrize(("key", "value", "prefix"), [
    ("2024-01-05_status", "shipped-to-the-warehouse-after-manual-review", "id_"), ("2024-01-05_total", 123456789012, "id_"),
    ("2024-01-05_email", "jdoe", "pii_"), ("Jane Doe (phone)", "b", "pii_"), ("order-1042_password", 7, "secret_"),
])
def test_a_value_under_an_aliased_name_is_judged_under_no_name_inside_what_the_name_said(key: str, value: Any,
                                                                                          prefix: str) -> None:
    """The import kept a long status token or a long number by the name's class, the re-check (which sees only the
    alias) judged it under no name: a bundle the import wrote was refused by inspect (E_INCIDENT_NOT_REDACTED)."""
    out = Redactor().incident(_incident({"q": 1}, {"q": 1}, {"history": {key: value}}, {"status": "ok"}))
    (name,) = out["events"][1]["result"]["history"]
    assert name.startswith("id_") and out["events"][1]["result"]["history"][name].startswith(prefix)
    assert unredacted(out) is None
    inside = Redactor().incident(_incident({"q": 1}, {"q": 1}, {"auth": {key: value}}, {"status": "ok"}))
    assert unredacted(inside) is None  # (under ``auth`` the re-check takes any member for a secret)


_KEYS = ["status", "order_id", "2024-01-05_status", "2024-01-05_total", "2024-01-05_email", "order-1042", "Jane Doe",
         "Jane Doe (phone)", "Maria Garcia Lopez total", "email", "amount", "total", "note", "error", "code", "who", "name",
         "value", "key", "x-api-key", "items", "history", "customer", "started_ms", "auth", "Order Total", "First Name",
         "phone", "reason_code", "order_1042", "cus_Nffrfeuf8nWb2c", "gpt-4o", "jdoe", "Smith", "result", "username"]
_STRINGS = ["shipped", "SHIPPED", "jdoe", "Smith", "jane.doe@example.com", "Jane Doe", "4111111111111111", "order-1042",
            "+1 415-555-0142", "10.0.0.1", "TIMEOUT", "timeout", "boom", "result", "status", "createdAt", "USD", "x" * 45,
            "a-very-long-lowercase-token-that-is-more-than-forty-chars", "1 Market St", "sk_live_abcdefghijklmnop1234",
            "12345", "123456789", "2024-01-05", "  padded  ", "", REMOVED, "id_0123456789abcdef", "X-Api-Key"]
_NUMBERS = [1, 4900, 123456789, 4111111111111111, 4111111111111111.0, 1700000000000, 0.5, -5, 12345678901234567890,
            True, None]
_values = st.recursive(st.sampled_from(_STRINGS) | st.sampled_from(_NUMBERS),
                       lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=3),
                       max_leaves=6)
_objects = st.dictionaries(st.sampled_from(_KEYS), _values, min_size=1, max_size=4)


def _leaves(node: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _leaves(v, (*path, k))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _leaves(v, (*path, str(i)))]
    return [path] if path else []


@settings(max_examples=60, deadline=None)
@given(_objects, _objects, _values, st.sampled_from(_STRINGS), _objects, _objects, st.data())
def test_what_an_import_writes_the_recheck_takes_back(input_: dict[str, Any], args: dict[str, Any], result: Any,
                                                     error: str, effect: dict[str, Any], output: dict[str, Any],
                                                     data: st.DataObject) -> None:
    """Whatever the import writes, inspect's re-check (``unredacted``) accepts, read back as a bundle is; and the
    rules judge the redacted incident as the export (an ``output_equals`` on a value of the output, the fields it
    has)."""
    rules: list[dict[str, Any]] = [{"id": "r", "type": "required_output", "fields": sorted(output)}]
    leaves = _leaves(output)
    if leaves:
        path = data.draw(st.sampled_from(leaves))
        value: Any = output
        for step in path:
            value = value[int(step)] if isinstance(value, list) else value[step]
        rules.append({"id": "v", "type": "output_equals", "path": "".join(f"/{s}" for s in path), "value": value})
    incident = _incident(input_, args, result, output, rules)
    incident["events"][1].update(ok=False, error=error)
    incident["events"].insert(2, {"type": "business_effect", "call_id": "c1", "effect": {"type": "refund", **effect}})
    redacted = Redactor().incident(incident)
    assert unredacted(exactjson.loads(exactjson.dumps(redacted))) is None
    assert judged_otherwise(incident, redacted) == []


def test_the_redactor_refuses_a_kept_name_holding_private_data_itself() -> None:
    """An incident that reaches redaction without an import's check (a user graph's redact stage, a bundle read back)
    is refused as the import refuses it: a tool's name holding an email would be written as it is."""
    incident = refund()
    incident["events"][0]["name"] = "jane.doe@example.com"
    with pytest.raises(ReplayError) as caught:
        redact(incident, ("/input/customer_email",))
    assert (caught.value.code, caught.value.body["path"]) == ("E_INCIDENT_NAME_PRIVATE", "$.events[0].name")


@settings(max_examples=40, deadline=None)
@given(_objects, _objects, _values, st.data())
def test_redaction_leaves_the_incident_it_was_given_and_gives_the_same_bytes_again(input_: dict[str, Any], args: dict[str, Any],
                                                                                   result: Any, data: st.DataObject) -> None:
    """The --redact pointers are taken out of a copy (once), never out of the incident given; with one secret, the same
    incident and pointers redact to the same bytes and the same audit, each pointer's removal counted once."""
    incident = _incident(input_, args, result, {"status": "ok"})
    pointers_ = sorted({"/input/" + k.replace("~", "~0").replace("/", "~1") for k in data.draw(st.lists(st.sampled_from(sorted(input_))))})
    given_bytes = exactjson.dumps(incident)
    first, audit = redact(incident, tuple(pointers_), secret=bytes(32))
    assert exactjson.dumps(incident) == given_bytes
    again, audit_again = redact(incident, tuple(pointers_), secret=bytes(32))
    assert exactjson.dumps(first) == exactjson.dumps(again) and audit == audit_again
    assert audit["pointer_removed"] == len(pointers_)
    assert not set(first["input"]) & {p[len("/input/"):].replace("~1", "/").replace("~0", "~") for p in pointers_}
