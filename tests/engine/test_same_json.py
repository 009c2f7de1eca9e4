"""exactjson.same_json: one JSON value, numbers by their value as written, exactly (incident replay's matching)."""

from __future__ import annotations

import pytest

from replay.pipeline.engine.exactjson import loads, same_json


@pytest.mark.parametrize(("a", "b", "same"), [
    ("4900", "4900.0", True),
    ("1", "1.0", True),
    ("12.5", "1.25e1", True),
    ("0", "-0.0", True),
    ("1e400", "10e399", True),  # no double holds them: compared as written
    ("1e400", "2e400", False),  # both read as infinity
    ("9007199254740993", "9007199254740992.0", False),  # a big integer is not the double nearest it
    ("9007199254740993", "9007199254740993", True),
    ("100000000000000000001", "1e20", False),
    ("3.14159265358979323846", "3.141592653589793", False),
    ("true", "1", False),
    ("false", "0", False),
    ("1", "true", False),
    ('"1"', "1", False),
    ("null", "0", False),
    ('{"a":[1,2.50,{"b":3}]}', '{"a":[1.0,2.5,{"b":3.0}]}', True),
    ('{"a":1}', '{"a":1,"b":1}', False),
    ("[1,2]", "[1]", False),
])
def test_same_json_compares_numbers_by_value_and_nothing_else(a: str, b: str, same: bool) -> None:
    assert same_json(loads(a.encode()), loads(b.encode())) is same
    assert same_json(loads(b.encode()), loads(a.encode())) is same
