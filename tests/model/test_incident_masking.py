"""What an import refusal shows of the export: names as written, private ones as their kind, in paths too."""

from __future__ import annotations

import pytest

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.incident.masking import masked, masked_error, masked_path


@pytest.mark.parametrize(("value", "shown"), [
    ("outptu", "outptu"), ("tool_cal", "tool_cal"), ("createdAt", "createdAt"), ("2", "2"), (1, 1), (2.5, 2.5),
    ("zeb@q.example", "<email>"), ("lookup_sk_live_4eC39HqLyjWDarjtT1zdp7dc", "<api key>"), ("order-1042", "<identifier>"),
    ("Jane Doe", "<text>"), (4111111111111111, "<number>"), ([1], "array"),
])
def test_masked_keeps_names_and_hides_what_redaction_would(value: object, shown: object) -> None:
    assert masked(value) == shown


def test_masked_path_masks_member_names_in_either_form() -> None:
    assert masked_path('$.input["zeb@q.example"][3].order_id') == "$.input.<email>[3].order_id"
    assert masked_path('$.a["First Name"]["Jane Doe"].order_1042') == '$.a["First Name"].<text>.<identifier>'
    assert masked_path("$.events[0].type") == "$.events[0].type"


def test_masked_error_rewrites_path_and_message_alike() -> None:
    error = ReplayError("E_INCIDENT_JSON_INVALID", 'x.json: key input["zeb@q.example"] is written twice in one object',
                        path='$.input["zeb@q.example"]', line=1, howToFix="Write each key once.")
    body = masked_error(error).body
    assert (body["message"], body["path"], body["line"]) == ("x.json: key input.<email> is written twice in one object",
                                                             "$.input.<email>", 1)
