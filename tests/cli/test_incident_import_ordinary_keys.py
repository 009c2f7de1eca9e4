"""`replay incident import` as a subprocess leaves ordinary names alone: array indices in a rule's path, field names
equal to a value redacted elsewhere, and field names with digits in them (``2fa_enabled``, ``iso_3166_alpha2``) are
written as they are, and the rules judge the redacted incident as they judge the export."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import run_replay
from incident_support import minimal_export, write_json

from replay.pipeline.model.incident.field_names import data_key


def _import(tmp_path: Path, export: dict[str, Any]) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    path = write_json(tmp_path / "export.json", export)
    done = run_replay("incident", "import", str(path), "--out", str(tmp_path / "out"), process=True)
    assert done.returncode == 0, done.stderr
    assert b"E_INCIDENT_REDACTION_CHANGED_VERDICT" not in done.stderr, done.stderr
    out = tmp_path / "out"
    return (done, orjson.loads((out / "incident.json").read_bytes()),
            orjson.loads((out / "evaluation.json").read_bytes()))


def test_an_array_index_in_a_rule_path_is_never_aliased(tmp_path: Path) -> None:
    """``0`` redacted as a value (``user_id: 0``) turned the index of ``/items/0/status`` into an alias: the rule
    read nothing and failed on the redacted incident while it passed on the export."""
    export = minimal_export()
    export["input"]["user_id"] = 0
    export["events"][-1]["output"] = {"status": "pending", "items": [{"status": "ok"}]}
    export["assertions"].append({"id": "first-ok", "type": "output_equals", "path": "/items/0/status", "value": "ok"})
    _, bundle, evaluation = _import(tmp_path, export)
    assert bundle["input"]["user_id"].startswith("id_")
    assert bundle["assertions"][-1]["path"] == "/items/0/status"
    assert evaluation["status"] == "pass"


def test_a_field_name_equal_to_a_value_redacted_elsewhere_stays(tmp_path: Path) -> None:
    """``"name": "result"`` and ``"first_name": "items"`` aliased the output's ``result`` and ``items`` keys."""
    export = minimal_export()
    export["input"].update(name="result", first_name="items")
    export["events"][-1]["output"] = {"status": "pending", "result": "done", "items": [{"status": "ok"}]}
    export["assertions"] += [{"id": "has-result", "type": "required_output", "fields": ["result", "items"]},
                             {"id": "first-ok", "type": "output_equals", "path": "/items/0/status", "value": "ok"}]
    _, bundle, evaluation = _import(tmp_path, export)
    assert bundle["input"]["name"].startswith("pii_") and bundle["input"]["first_name"].startswith("pii_")
    assert list(bundle["events"][-1]["output"]) == ["status", "result", "items"]
    assert bundle["assertions"][1]["fields"] == ["result", "items"]
    assert bundle["assertions"][2]["path"] == "/items/0/status"
    assert evaluation["status"] == "pass"


NAMES = ["2fa_enabled", "iso_3166_alpha2", "timestamp_ISO8601", "ISO8601", "level_1000", "year2024", "fy2024", "gpt-4o",
         "utf8mb4", "x509v3", "sha256", "i18n", "createdAt", "X-Request-Id", "line2", "v1.2", "iso3166alpha2code"]


def test_field_names_with_digits_are_kept_end_to_end(tmp_path: Path) -> None:
    export = minimal_export()
    export["events"][-1]["output"] = {"status": "pending", "settings": {name: True for name in NAMES}, "2fa_enabled": True}
    export["assertions"].append({"id": "2fa", "type": "required_output", "fields": ["2fa_enabled"]})
    _, bundle, evaluation = _import(tmp_path, export)
    assert list(bundle["events"][-1]["output"]["settings"]) == NAMES
    assert bundle["assertions"][-1]["fields"] == ["2fa_enabled"]
    assert evaluation["status"] == "pass"


@pytest.mark.parametrize("name", NAMES)
def test_a_field_name_with_digits_is_no_data(name: str) -> None:
    assert not data_key(name)


@pytest.mark.parametrize("key", [
    "order-1042", "order_1042", "INV-2024-0001", "ticket#5512", "cus_Nffrfeuf8nWb2c", "ch_3MmlLrLkdIwHu7ix0snN0B15",
    "2024-01-05", "2024-01-05T10:00:00Z", "01/05/2024", "123e4567-e89b-12d3-a456-426614174000",
    "507f1f77bcf86cd799439011", "123456789", "Jane Doe",
])
def test_an_opaque_token_as_a_key_is_data(key: str) -> None:
    assert data_key(key)
