"""A last line with no newline is torn only when it is the start of a JSON text cut short (``line_refusal``)."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import line_refusal

leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                      max_leaves=8)
events = st.fixed_dictionaries({"seq": st.integers(min_value=0), "timestamp": st.just("2026-03-01T12:00:00.000Z"),
                                "type": st.text(min_size=1), "runId": st.text(min_size=1), "payload": values})


def line_of(event: dict, ascii_only: bool, spaced: bool) -> bytes:
    """One journal line (big integers and non-ASCII characters as a writer may write them)."""
    separators = (", ", ": ") if spaced else (",", ":")
    return json.dumps(event, ensure_ascii=ascii_only, separators=separators).encode()


def refused(raw: bytes) -> tuple[str, dict]:
    """The code and fields ``replay read`` gives ``raw`` as an input's last line with no newline after it."""
    try:
        exactjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return line_refusal(raw, exc, 1, 0, last=True)
    return "valid", {}


def refusal(raw: bytes) -> str:
    return refused(raw)[0]


@settings(max_examples=150, deadline=None)
@given(events, st.booleans(), st.booleans(), st.data())
def test_every_strict_prefix_of_a_line_is_torn_and_the_line_with_more_or_a_wrong_byte_is_not(
        event: dict, ascii_only: bool, spaced: bool, data: st.DataObject) -> None:
    line = line_of(event, ascii_only, spaced)
    cut = data.draw(st.integers(min_value=1, max_value=len(line) - 1), label="cut")
    assert refusal(line[:cut]) == "E_JSONL_LINE_TORN"
    junk = data.draw(st.sampled_from([b"x", b"{", b",", b"}", b' {"seq":2}', line, b"\r" + line, b"\r" + line[:cut]]))
    assert refusal(line + junk) == "E_JSONL_LINE_INVALID"
    at = data.draw(st.integers(min_value=0, max_value=cut - 1), label="at")
    wrong = data.draw(st.sampled_from([b"\x01", b"\xff", b"\x00"]), label="wrong")
    # a byte JSON takes nowhere (a control character, one that is no UTF-8) before where the line stops
    assert refusal(line[:at] + wrong + line[at + 1:cut]) == "E_JSONL_LINE_INVALID"
    assert refusal(line[:at] + wrong + line[at + 1:]) == "E_JSONL_LINE_INVALID"


@pytest.mark.parametrize(("raw", "code"), [
    (b'{"seq":2,,"type":"x"}', "E_JSONL_LINE_INVALID"),
    (b'{"seq":2,,"ty', "E_JSONL_LINE_INVALID"),  # cut off after a mistake: the mistake is still there
    (b'{"seq":NaN}', "E_JSONL_LINE_INVALID"),
    (b'{"seq":Na', "E_JSONL_LINE_INVALID"),
    (b'{"seq":tx', "E_JSONL_LINE_INVALID"),
    (b'{half', "E_JSONL_LINE_INVALID"),
    (b'{"a":1}{"a":1}', "E_JSONL_LINE_INVALID"),
    (b'{"seq":tr', "E_JSONL_LINE_TORN"),
    (b'{"seq":1e', "E_JSONL_LINE_TORN"),
    (b'{"seq":"\\u12', "E_JSONL_LINE_TORN"),
    (b'{"seq":123456789012345678901234567890', "E_JSONL_LINE_TORN"),
    ('{"type":"é'.encode()[:-1], "E_JSONL_LINE_TORN"),  # a character cut in two where the write stopped
    (b'[' * 2000, "E_JSONL_LINE_INVALID"),  # deeper than replay reads, whatever follows
])
def test_a_last_line_is_torn_only_when_it_is_the_start_of_a_json_text(raw: bytes, code: str) -> None:
    assert refusal(raw) == code


def test_a_file_with_carriage_return_line_ends_is_one_invalid_line_whose_advice_names_them() -> None:
    code, fields = refused(b'{"seq":1}\r{"seq":2}\r')
    assert code == "E_JSONL_LINE_INVALID" and fields["column"] == 11
    assert "carriage return" in fields["howToFix"] and "tr '\\r' '\\n'" in fields["howToFix"]
    assert "carriage return" not in refused(b'{"seq":1}x')[1].get("howToFix", "")
    assert "carriage return" not in refused(b'{"seq":"a\rb"}')[1].get("howToFix", "")  # (a raw CR in a string)
