"""Half of a surrogate pair in a JSON string (``"\\ud83d"``): valid JSON that orjson and msgspec refuse, and that a
JavaScript writer (Claude Code is one) leaves where it cut a string inside an emoji. replay reads it, keeps it and
writes it back as the same escape; whatever else is wrong with such a line is still said where it is."""

from __future__ import annotations

import json
import os
import re

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import printable
from replay.pipeline.engine.text import utf8
from replay.pipeline.io.run_files import file_stem
from replay.pipeline.report.render_text import clean

HIGH, LOW = "\ud83d", "\ude00"


@pytest.mark.parametrize("text", [rb'{"a":"cut \ud83d"}', rb'{"a":"\udc00 alone"}', rb'{"\ud83d":[1,"\uDFFF"]}',
                                  rb'["\ud83d\u0041"]', rb'{"a":"\ud83d","big":123456789012345678901234567890}',
                                  rb'["\ud83d",1e400]'])
def test_a_lone_half_is_read_as_that_code_point_and_written_back_as_its_escape(text: bytes):
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(text)  # (what replay reads with: the reason for all this)
    value = exactjson.loads(text)
    assert value == json.loads(text)  # (the standard library's reading: JSON's grammar takes any \uXXXX)
    again = exactjson.dumps(value)
    again.decode("utf-8")  # valid UTF-8: the half is written as its escape, never as bytes
    assert exactjson.loads(again) == value
    assert sorted(again.lower().split(b"\\")[1:]) == sorted(text.lower().replace(rb"\u0041", b"a").split(b"\\")[1:])


@pytest.mark.parametrize(("text", "message"), [
    (rb'{"a":"\ud83d", }', "trailing comma"),
    (rb'{"a":"\ud83d","b":NaN}', "unexpected character"),
    (rb'{"a":"\ud83d"', "unexpected end of data"),
    (rb'[[[["\ud83d"', "unexpected end of data"),
    (b'{"a":"\\ud83d","b":"\xff"}', "str is not valid UTF-8"),
])
def test_whatever_else_is_wrong_is_still_said_where_it_is(text: bytes, message: str):
    swapped = text.replace(rb"\ud83d", rb"\u0020")
    with pytest.raises(orjson.JSONDecodeError) as plain:
        orjson.loads(swapped)
    with pytest.raises(orjson.JSONDecodeError) as caught:
        exactjson.loads(text)
    assert message in caught.value.msg and (caught.value.msg, caught.value.pos) == (plain.value.msg, plain.value.pos)


# (a high half right before a low one is a pair: written as two escapes, it is read back as the one character)
_texts = st.text(st.characters(codec=None, categories=("Cs", "Ll", "So", "Cc", "Zs")), max_size=12).filter(
    lambda s: not re.search("[\ud800-\udbff][\udc00-\udfff]", s))


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.one_of(_texts, st.integers(), st.booleans(), st.none()),
                    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_texts, inner, max_size=3)),
                    max_leaves=12))
def test_any_value_with_halves_is_written_as_utf8_and_read_back_the_same(value):
    written = exactjson.dumps(value)
    written.decode("utf-8")
    assert exactjson.loads(written) == value
    assert json.loads(written) == value


def test_text_shown_or_named_never_fails_on_a_half():
    assert utf8(f"a{HIGH}b") == b"a\\ud83db" and utf8("x\udcff") == b"x\xff"  # (a name's byte that is not UTF-8)
    assert printable(f"run {LOW}") == "run \\ude00"
    assert clean(f"t{HIGH}") == "t\\ud83d"
    stem = file_stem(f"r{HIGH}")
    assert stem.isascii() and stem != file_stem(f"r{LOW}") and stem != file_stem("r\\ud83d")
    assert file_stem(os.fsdecode(b"x\xff")) == "x%FF"  # (a name's byte as it was: the ids of files stay as they were)


def test_an_otlp_id_of_a_name_not_in_utf8_is_as_it_was():
    import hashlib

    from replay.pipeline.report.otlp import _hex

    name = os.fsdecode(b"runs/\xff.jsonl")
    assert _hex("trace", name, size=16) == hashlib.blake2b(f"trace\x00{name}".encode("utf-8", "surrogateescape"),
                                                         digest_size=16).hexdigest()
    assert _hex("trace", f"r{HIGH}", size=16) != _hex("trace", f"r{LOW}", size=16)


def test_the_rest_of_a_value_with_a_half_is_written_as_orjson_writes_it():
    value = {"small": 1e-7, "big": 2**70, "pi": 3.14159, "t": f"x{HIGH}", "deep": [[[[1e-7]]]]}
    written = exactjson.dumps(value)
    assert written == orjson.dumps({**value, "big": 0, "t": "x"}).replace(b'"big":0', b'"big":1180591620717411303424') \
        .replace(b'"t":"x"', b'"t":"x\\ud83d"')
    deep: object = 1e-7
    for _ in range(300):  # (deeper than orjson writes: the standard library writes it, numbers as orjson would)
        deep = [deep]
    assert exactjson.dumps(deep).count(b"1e-7") == 1
