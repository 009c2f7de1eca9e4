"""`replay diff` and `golden check` agree on the fields that always differ between runs: a record that differs
from another only there is alike to both, and one that differs anywhere else is different to both."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.model.diff import Ignore
from replay.pipeline.model.varying_fields import DURATION_KEYS, RECORD_KEYS, nested_keys
from replay.pipeline.testing.goldens import first_difference

_VALUES = st.text(alphabet="abcxyz_0123", min_size=1, max_size=8)


def _value(key: str, text: str) -> object:
    return len(text) * 1.5 if key in DURATION_KEYS else text


def _alike(a: dict, b: dict) -> tuple[bool, bool]:
    """(alike to diff, alike to golden check)."""
    ignore = Ignore.of()
    by_golden = first_difference([orjson.dumps(a)], [orjson.dumps(b)])[0] is None
    return ignore.strip(a) == ignore.strip(b), by_golden


@settings(max_examples=60, deadline=None)
@given(key=st.sampled_from(nested_keys()), one=_VALUES, other=_VALUES, depth=st.integers(0, 3))
def test_a_field_that_always_differs_is_left_out_by_both_at_any_depth(key, one, other, depth):
    def record(text: str) -> dict:
        inner: dict = {key: _value(key, text), "text": "same"}
        for _ in range(depth):
            inner = {"payload": inner}
        return {"type": "assistant_message", **inner}

    assert _alike(record(one), record(other)) == (True, True)


@settings(max_examples=40, deadline=None)
@given(key=st.sampled_from(RECORD_KEYS), one=_VALUES, other=_VALUES)
def test_a_records_own_time_and_ids_are_left_out_by_both(key, one, other):
    assert _alike({"type": "t", key: one, "payload": {}}, {"type": "t", key: other, "payload": {}}) == (True, True)


@settings(max_examples=40, deadline=None)
@given(key=st.sampled_from(nested_keys()), one=_VALUES, other=_VALUES)
def test_anything_else_that_differs_differs_to_both(key, one, other):
    a = {"type": "t", "payload": {key: _value(key, "v"), "text": one}}
    b = {"type": "t", "payload": {key: _value(key, "w"), "text": one + other}}
    assert _alike(a, b) == (False, False)


def test_a_claude_code_message_id_is_one_of_them():
    a = {"type": "assistant_message", "payload": {"text": "Fixed.", "messageId": "msg_A"}}
    assert _alike(a, {**a, "payload": {**a["payload"], "messageId": "msg_B"}}) == (True, True)
