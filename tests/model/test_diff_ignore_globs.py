"""`--ignore` paths with several `**`: matched in time linear in the payload's depth, matching what they always did."""

from __future__ import annotations

from functools import cache
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine import exactjson
from replay.pipeline.model.diff import Ignore, _here, parse_ignore


def matches(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """The reference: ``*`` one key, ``**`` any number of keys (none too)."""

    @cache
    def at(p: int, k: int) -> bool:
        if p == len(pattern):
            return k == len(path)
        if pattern[p] == "**":
            return at(p + 1, k) or (k < len(path) and at(p, k + 1))
        return k < len(path) and pattern[p] in ("*", path[k]) and at(p + 1, k + 1)

    return at(0, 0)


def reference(value: Any, pattern: tuple[str, ...], path: tuple[str, ...] = ()) -> Any:
    """``value`` without each field whose path (from the top) the pattern matches; lists are transparent."""
    if isinstance(value, list):
        return [reference(v, pattern, path) for v in value]
    if not isinstance(value, dict):
        return value
    return {k: reference(v, pattern, (*path, k)) for k, v in value.items() if not matches(pattern, (*path, k))}


KEYS = st.sampled_from(["a", "b", "zz"])
VALUES = st.recursive(st.integers(0, 3), lambda inner: st.dictionaries(KEYS, inner, max_size=3)
                      | st.lists(inner, max_size=2), max_leaves=20)
PATTERNS = st.lists(st.sampled_from(["a", "b", "zz", "*", "**"]), min_size=1, max_size=6).map(".".join)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=3), PATTERNS)
def test_an_ignore_path_leaves_out_what_it_matches(record: dict, written: str):
    pattern = parse_ignore(written)
    expected = reference(record, tuple(written.split(".")))
    assert Ignore.of([written], default=False).strip(record) == expected, pattern


def test_consecutive_double_stars_are_one():
    assert parse_ignore("**.**.**.zz") == ("**", "zz")
    assert parse_ignore("a.**.**.b.**.**") == ("a", "**", "b")
    assert parse_ignore("**.**") == ("*",)


def test_each_pattern_applies_once_at_a_level():
    assert sorted(_here([("**", "b", "**", "zz")] * 3 + [("**", "zz")] * 2)) == sorted(
        [("**", "b", "**", "zz"), ("b", "**", "zz"), ("**", "zz"), ("zz",)])


def deep(depth: int, key: str) -> dict:
    value: dict = {"zz": 0}
    for _ in range(depth):
        value = {key: value, "zz": 1}
    return {"type": "t", "payload": value}


def zz_left(value: Any) -> bool:
    return isinstance(value, dict) and ("zz" in value or any(zz_left(v) for v in value.values()))


def test_many_double_stars_on_a_deep_payload_finish():
    # each level used to multiply the patterns `**` holds: polynomial in the depth, of degree their number (minutes)
    with exactjson.deep():
        for written, key in [("**.**.**.**.**.**.zz", "k"), ("**.b.**.b.**.zz", "b")]:
            stripped = Ignore.of([written], default=False).strip(deep(300, key))
            assert not zz_left(stripped["payload"][key][key])
            assert stripped["type"] == "t"
