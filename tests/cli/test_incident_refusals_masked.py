"""Refusals of `replay incident` (as processes) quote nothing redaction would hide: a case id, run id or call id of a
log that an import refuses, a name or value edited into a bundle that inspect, replay or promote refuses, a key a
``--redact`` wildcard expanded to. They name where and what kind, as a refusal of an export's nested field does (found
by a read-only leak hunt: each was printed verbatim on stderr)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import errors_of, run_replay
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from incident_support import REFUND_EXPORT, minimal_export, sensitive_values, value_forms, write_json

EMAIL, KEY = "jane@victim.com", "sk_live_ABCDEFGHIJKLMNOPQRST"
RULES = [{"id": "r", "type": "max_tool_errors", "max": 0}]


def _lines(*records: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def _runledger_twice(secret: str) -> tuple[bytes, str]:
    start = {"type": "task_start", "case_id": secret, "input": {"q": 1}}
    return _lines(start, start, {"type": "final_output", "case_id": secret, "output": {"a": 1}}), "runledger"


def _runledger_no_start(secret: str) -> tuple[bytes, str]:
    return _lines({"type": "final_output", "case_id": secret, "output": {"a": 1}}), "runledger"


def _journal_unanswered(secret: str) -> tuple[bytes, str]:
    return _lines({"$record": "run", "runId": "r1", "prompt": "hi"},
                  {"type": "tool_called", "runId": "r1", "payload": {"callId": secret, "toolName": "t", "arguments": {}}},
                  {"type": "tool_unanswered", "runId": "r1", "payload": {"callId": secret}}), "replay"


def _journal_synthetic_end(secret: str) -> tuple[bytes, str]:
    return _lines({"$record": "run", "runId": secret, "prompt": "hi"},
                  {"type": "run_failed", "runId": secret, "payload": {"error": "x"}, "synthetic": True}), "replay"


def _journal_no_prompt(secret: str) -> tuple[bytes, str]:
    return _lines({"type": "run_completed", "runId": secret, "payload": {"output": {"a": 1}}}), "replay"


LOGS: dict[Callable[[str], tuple[bytes, str]], str] = {
    _runledger_twice: "E_INCIDENT_TASK_START_DUPLICATE", _runledger_no_start: "E_INCIDENT_TASK_START_MISSING",
    _journal_unanswered: "E_INCIDENT_RESULT_MISSING", _journal_synthetic_end: "E_INCIDENT_TERMINAL_MISSING",
    _journal_no_prompt: "E_INCIDENT_TASK_START_MISSING"}


def _import_log(tmp_path: Path, make: Callable[[str], tuple[bytes, str]], secret: str) -> Any:
    data, form = make(secret)
    (tmp_path / "log.jsonl").write_bytes(data)
    write_json(tmp_path / "rules.json", RULES)
    return run_replay("incident", "import", str(tmp_path / "log.jsonl"), "--format", form, "--rules",
                      str(tmp_path / "rules.json"), "--out", str(tmp_path / "out"), process=True)


def _shows_none(done: Any, *secrets: str) -> None:
    for secret in secrets:
        for form in value_forms(secret):
            assert form not in done.stdout and form not in done.stderr, secret


@pytest.mark.parametrize("make", list(LOGS), ids=[m.__name__ for m in LOGS])
@pytest.mark.parametrize(("secret", "shown"), [(EMAIL, "<email>"), (KEY, "<api key>")])
def test_an_import_refusal_masks_the_case_run_or_call_id(tmp_path: Path, make: Any, secret: str, shown: str) -> None:
    done = _import_log(tmp_path, make, secret)
    assert done.returncode == 2 and done.stdout == b"" and not (tmp_path / "out").exists()
    (error,) = errors_of(done.stderr)
    assert error["code"] == LOGS[make] and f"'{shown}'" in error["message"], error
    _shows_none(done, secret)


# edited bundles -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("imported") / "out"
    done = run_replay("incident", "import", str(REFUND_EXPORT), "--out", str(out), process=True)
    assert done.returncode == 0, done.stderr
    return orjson.loads((out / "incident.json").read_bytes())


def _unknown_field(bundle: dict[str, Any], secret: str) -> None:
    bundle[secret] = 1


def _kind(bundle: dict[str, Any], secret: str) -> None:
    bundle["kind"] = secret


def _schema_version(bundle: dict[str, Any], secret: str) -> None:
    bundle["schema_version"] = secret


def _audit_key(bundle: dict[str, Any], secret: str) -> None:
    bundle["redaction"][secret] = 3


EDITS = {_unknown_field: ("E_INCIDENT_FIELD_UNKNOWN", "$.{}"), _kind: ("E_INCIDENT_BUNDLE_INVALID", "$.kind"),
         _schema_version: ("E_INCIDENT_SCHEMA_VERSION_UNSUPPORTED", "$.schema_version"),
         _audit_key: ("E_INCIDENT_NOT_REDACTED", "$.redaction.{}")}
COMMANDS = {"inspect": ("--out", "{out}"), "promote": ("--to", "{out}.json"),
            "replay": ("--agent-command", json.dumps(["false"]), "--out", "{out}")}


def _edited_bundle_run(tmp_path: Path, bundle: dict[str, Any], edit: Any, secret: str, command: str) -> Any:
    edited = json.loads(json.dumps(bundle))
    edit(edited, secret)
    write_json(tmp_path / "edited.json", edited)
    args = [a.format(out=tmp_path / "o") for a in COMMANDS[command]]
    return run_replay("incident", command, str(tmp_path / "edited.json"), *args, process=True)


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("edit", list(EDITS), ids=[e.__name__ for e in EDITS])
@pytest.mark.parametrize(("secret", "shown"), [(EMAIL, "<email>"), (KEY, "<api key>")])
def test_a_refusal_of_an_edited_bundle_masks_the_name_or_value(tmp_path: Path, imported: dict[str, Any], edit: Any,
                                                               command: str, secret: str, shown: str) -> None:
    done = _edited_bundle_run(tmp_path, imported, edit, secret, command)
    assert done.returncode == 2 and done.stdout == b"", done.stderr
    assert not (tmp_path / "o").exists() and not (tmp_path / "o.json").exists()
    (error,) = errors_of(done.stderr)
    code, path = EDITS[edit]
    assert (error["code"], error["path"]) == (code, path.format(shown)), error
    _shows_none(done, secret)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(secret=st.sampled_from([v for values in sensitive_values().values() for v in values]),
       place=st.sampled_from([*LOGS, *EDITS]))
def test_no_private_value_a_refusal_is_about_reaches_stderr(tmp_path: Path, imported: dict[str, Any], secret: str,
                                                            place: Any) -> None:
    """Every labelled sensitive value (keys, tokens, emails, cards, IP addresses, phone numbers), in each of the places
    above: the refusal names where it is and never shows it."""
    done = _import_log(tmp_path, place, secret) if place in LOGS else _edited_bundle_run(
        tmp_path, imported, place, secret, "inspect")
    assert done.returncode == 2 and done.stdout == b""
    (error,) = errors_of(done.stderr)
    assert error["code"] == (LOGS[place] if place in LOGS else EDITS[place][0])
    _shows_none(done, secret)


# --redact -------------------------------------------------------------------------------------------------
def test_a_protected_path_a_wildcard_expanded_to_is_shown_masked(tmp_path: Path) -> None:
    export = minimal_export()
    export["events"][-1]["output"] = {"a": {EMAIL: 1, "plain": 2}}
    export["assertions"] = [{"id": "r", "type": "output_equals", "path": "/a", "value": {EMAIL: 1, "plain": 2}}]
    write_json(tmp_path / "export.json", export)
    done = run_replay("incident", "import", str(tmp_path / "export.json"), "--redact", "/assertions/*/value/*",
                      "--out", str(tmp_path / "out"), process=True)
    assert done.returncode == 2 and done.stdout == b"" and not (tmp_path / "out").exists()
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["received"]) == ("E_INCIDENT_REDACT_PATH_PROTECTED", "/assertions/0/value/<email>")
    _shows_none(done, EMAIL)
