"""exactjson.first_unequal: where two JSON values first differ, in the first's document order (typed_equal and
same_json are it answering None; golden check names the place a number is written as another kind)."""

from __future__ import annotations

import pytest

from replay.pipeline.engine.exactjson import first_unequal, loads


@pytest.mark.parametrize(("a", "b", "by_value", "key_order", "found"), [
    ('{"a":1,"b":[1,2]}', '{"a":1,"b":[1,2]}', False, False, None),
    ('{"a":1,"b":[1,2]}', '{"a":1,"b":[1,3]}', False, False, ("$.b[1]", 2, 3)),
    ('{"a":[1],"b":2}', '{"a":[1.0],"b":2.0}', False, False, ("$.a[0]", 1, 1.0)),  # the first in document order
    ('{"a":[1],"b":2}', '{"a":[1.0],"b":2.0}', True, False, None),
    ('{"a b":{"c":true}}', '{"a b":{"c":1}}', True, False, ('$["a b"].c', True, 1)),
    ('{"a":1,"b":2}', '{"b":2,"a":1}', False, False, None),
    ('{"a":1,"b":2}', '{"b":2,"a":1}', False, True, ("$", {"a": 1, "b": 2}, {"b": 2, "a": 1})),
    ("[1,2]", "[1]", False, False, ("$", [1, 2], [1])),
])
def test_first_unequal_names_the_first_place_two_values_differ(a: str, b: str, by_value: bool, key_order: bool,
                                                               found: tuple | None) -> None:
    assert first_unequal(loads(a.encode()), loads(b.encode()), numbers_by_value=by_value, key_order=key_order) == found


def test_first_unequal_walks_any_depth_json_is_read_at() -> None:
    deep = b"[" * 1000 + b"1" + b"]" * 1000
    assert first_unequal(loads(deep), loads(deep.replace(b"1", b"1.0"))) == ("$" + "[0]" * 1000, 1, 1.0)
