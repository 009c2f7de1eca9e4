"""validation's OPTIONAL_EVENT_FIELDS (the optional event fields validate checks and capture leaves out of a runner's event when
of another type) against `replay schema event`, which states them: the same fields, and the same values of each."""

from __future__ import annotations

from typing import Any

import orjson
from conftest import ROOT
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from replay.pipeline.model.validation import OPTIONAL_EVENT_FIELDS

EVENT = orjson.loads((ROOT / "schemas" / "event.schema.json").read_bytes())
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=4),
                    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner, max_size=2),
                    max_leaves=3)


def test_the_fields_are_the_event_schemas_optional_typed_fields() -> None:
    optional = [key for key in EVENT["properties"] if key not in EVENT["required"]]
    assert list(OPTIONAL_EVENT_FIELDS) == optional


@given(value=JSON)
def test_each_field_takes_the_values_the_event_schema_takes(value: Any) -> None:
    """(but an integer written as a float, 2.0: JSON Schema's integer takes it, validate does not, as for seq)"""
    for key, (_, ok, _) in OPTIONAL_EVENT_FIELDS.items():
        by_schema = Draft202012Validator(EVENT["properties"][key]).is_valid(value)
        if isinstance(value, float) and value.is_integer():
            assert not ok(value)
            continue
        assert ok(value) == by_schema, (key, value)
