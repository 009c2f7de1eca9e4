"""duplicate_keys: a line that is its value written anew (compact, as Claude Code and Codex write) is answered without
counting, every other line by counting its keys; both ways find exactly the keys written twice."""

from __future__ import annotations

import orjson
import pytest

from replay.pipeline.engine import exactjson

COMPACT_ONCE = [  # each its value written anew, byte for byte: no key can be written twice
    b'{"a":1,"b":{"c":[1,{"d":"x\\":y"}]}}',
    b'{"k\\\\":1,"t":"say \\"a\\": b"}',  # a key ending with a backslash, a text with `":` in it
    b'{"type":"user","message":{"content":[{"type":"text","text":"def f():\\n  return {\\"a\\": 1}"}]}}',
    b'{"n":123456789012345678901234567890,"k\\\\":"\\"k\\\\\\":"}',  # beyond 64 bits: an exact number
    b'{"x":' + b"[" * 300 + b"1" + b"]" * 300 + b"}",  # deeper than orjson writes
]
OTHERWISE_ONCE = [  # not their value's writing: counted
    b'{"a": 1, "b": {"c": [1, {"d": "x\\": y"}]}}',
    b'{"a" :1,"b"\n:2}',
    b'{"n":1.50,"m":"\\u00e9"}',
    b'{"n": 123456789012345678901234567890, "x": ' + b"[" * 300 + b"1" + b"]" * 300 + b"}",
]
TWICE = [
    (b'{"a":1,"a":2}', ["$.a"]),
    (b'{"a":1,"b":{"c":1,"c":1}}', ["$.b.c"]),
    (b'{"a" : 1, "a" : 2}', ["$.a"]),
    (b'{"a":"x\\":y","a":"\\":"}', ["$.a"]),  # `":` in the texts: not counted as keys
    (b'{"k\\\\":1,"k\\\\":2}', ['$["k\\\\"]']),
    (b'{"n":123456789012345678901234567890,"n":1}', ["$.n"]),
    (b'{"x":' + b"[" * 300 + b'{"y":1,"y":2}' + b"]" * 300 + b"}", None),
]


@pytest.mark.parametrize("raw", COMPACT_ONCE)
def test_a_compact_line_is_its_value_written_anew_and_has_no_key_twice(raw: bytes) -> None:
    value = exactjson.loads(raw)
    assert exactjson.dumps(value) == raw  # (the way without counting)
    assert exactjson.duplicate_keys(raw, value) == []
    assert exactjson.duplicate_keys(raw) == []


@pytest.mark.parametrize("raw", OTHERWISE_ONCE)
def test_a_line_written_otherwise_is_counted_and_has_no_key_twice(raw: bytes) -> None:
    value = exactjson.loads(raw)
    assert exactjson.dumps(value) != raw
    assert exactjson.duplicate_keys(raw, value) == []


@pytest.mark.parametrize(("raw", "paths"), TWICE)
def test_keys_written_twice_are_found_however_the_line_is_written(raw: bytes, paths: list[str] | None) -> None:
    value = exactjson.loads(raw)
    found = exactjson.duplicate_keys(raw, value)
    assert found == (paths if paths is not None else found) and len(found) == 1
    assert exactjson.duplicate_keys(raw) == found
    # the same line written compact again (the last value of each key kept) has none
    again = orjson.dumps(value) if b"[" * 300 not in raw else exactjson.dumps(value)
    assert exactjson.duplicate_keys(again, exactjson.loads(again)) == []


def test_a_value_that_is_no_json_is_counted_in_python() -> None:
    """(A key that is no string: no writing of it to compare, its keys counted as they are.)"""
    assert exactjson.duplicate_keys(b'{"1":"a"}', {1: "a"}) == []
    assert exactjson.duplicate_keys(b'{"1":"a","1":"b"}', {1: "b"}) == ['$["1"]']
