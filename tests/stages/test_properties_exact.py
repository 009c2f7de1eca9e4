"""Exactness as a property: for any JSON value, what heal writes for an event it did not change is the
input bytes, and for an event it changed, every field it did not touch is value-identical to the input.

Values come as JSON *text* built here (so the input has what real writers produce: integers of any size,
``-0`` and ``-0.0``, escapes of every kind, whitespace, keys written twice, nesting hundreds deep,
characters from every Unicode plane), and are compared with a parser that keeps integers exact and
tells ``-0.0`` from ``0.0`` and ``1`` from ``1.0``.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import orjson
import pytest
from conftest import run_replay
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from replay.pipeline.engine import exactjson
from replay.pipeline.model.toolcalls import CALL_ID_KEYS


def exact_value(text: bytes | str) -> Any:
    """The value as an exact parser sees it (last key wins, like every parser replay uses): integers and decimals
    exact (a float as the decimal number written, not the nearest double)."""
    return json.loads(text, parse_float=Decimal, parse_int=_exact_int)


def _exact_int(text: str) -> int | Decimal:
    """An integer, exact: as a Decimal when it has more digits than Python turns into an int (4300)."""
    return int(text) if len(text) <= 4000 else Decimal(text)


def same(a: Any, b: Any) -> bool:
    """Value identity: type and value, -0.0 apart from 0.0, numbers exact."""
    if type(a) is not type(b):
        return False
    if type(a) is Decimal:
        return a == b and a.is_signed() == b.is_signed()
    if type(a) is dict:
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


# JSON text -------------------------------------------------------------------------------------------
ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _u(cp: int) -> str:
    if cp < 0x10000:
        return f"\\u{cp:04x}"
    cp -= 0x10000
    return f"\\u{0xD800 + (cp >> 10):04X}\\u{0xDC00 + (cp & 0x3FF):04x}"  # a surrogate pair, mixed case


@st.composite
def string_text(draw: st.DrawFn) -> str:
    chars = draw(st.text(st.characters(codec="utf-8"), max_size=12))  # every plane, no lone surrogates
    out = ['"']
    for c in chars:
        how = draw(st.sampled_from(("raw", "raw", "u")))
        if c in ESCAPES and how == "raw":
            out.append(ESCAPES[c])
        elif ord(c) < 0x20 or c in ESCAPES or how == "u":
            out.append(_u(ord(c)))
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


numbers = st.one_of(
    st.integers().map(str),
    st.integers(min_value=-(2**200), max_value=2**200).map(str),  # far past 64 bits
    st.sampled_from(["-0", "0", "-0.0", "0.0", "1E2", "1e-7", "-1.5e+300", "18446744073709551616",
                     "-9223372036854775809", "9223372036854775807", "1.0", "1.50", "1e400", "-1E+400", "1.5e-400",
                     "3.14159265358979323846264", "100000000000000000000000000000.5", "2.2250738585072011e-308",
                     "4.9e-324", "0.30000000000000004", "1234567890.1234567",
                     "9" * 4301, "-" + "1" * 5000]),  # more digits than Python turns into an int
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    # any decimal, as written (more digits than a double holds, exponents beyond its range)
    st.decimals(allow_nan=False, allow_infinity=False).map(str),
)
scalars = st.one_of(numbers, string_text(), st.sampled_from(["true", "false", "null"]))
spaces = st.sampled_from(["", "", " ", "\t", "  "])


@st.composite
def object_text(draw: st.DrawFn, children: st.SearchStrategy[str]) -> str:
    keys = draw(st.lists(string_text(), max_size=4))
    if keys and draw(st.booleans()):
        keys.append(draw(st.sampled_from(keys)))  # a key written twice
    ws = draw(spaces)
    items = [f"{ws}{k}{ws}:{ws}{draw(children)}" for k in keys]
    return "{" + ",".join(items) + ws + "}"


values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4).map(lambda xs: "[" + ",".join(xs) + "]"),
        object_text(children),
    ),
    max_leaves=12,
)


@st.composite
def deep(draw: st.DrawFn) -> str:
    depth = draw(st.integers(0, 400))
    inner = draw(values)
    if draw(st.booleans()):
        return "[" * depth + inner + "]" * depth
    return '{"d":' * depth + inner + "}" * depth


@st.composite
def journal(draw: st.DrawFn) -> tuple[list[bytes], list[bool]]:
    """A run of events whose payloads and extra fields are arbitrary JSON text; some need a repair."""
    n = draw(st.integers(1, 6))
    lines, changes = [], []
    for seq in range(1, n + 1):
        # (a result that names no call answers none and is kept; a tool_called would be marked unanswered: a line more)
        etype = draw(st.sampled_from(["tool_completed", "tool_end", "llm_message", "assistant_message", "user_message"]))
        # (no call id in it: a result of an id no call made is an orphan heal drops, a line fewer)
        payload = draw(object_text(values).filter(lambda text: exactjson.loads(text).keys().isdisjoint(CALL_ID_KEYS)))
        extra = draw(st.one_of(values, deep()))
        ws = draw(spaces)
        line = (f'{{"seq":{seq},"timestamp":"2026-03-01T12:00:0{seq % 10}.000Z","type":"{etype}","runId":"r1",'
                f'"payload":{payload},{ws}"extra":{ws}{extra}}}')
        lines.append(line.encode())
        changes.append(etype in ("tool_end", "llm_message"))
    head = b'{"seq":0,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r1","payload":{}}'
    tail = f'{{"seq":{n + 1},"timestamp":"2026-03-01T12:00:09.000Z","type":"run_completed","runId":"r1","payload":{{}}}}'
    # seq 0 makes renumber rewrite every event: each one is changed, and all but seq (and an alias's type) must stay
    renumber = draw(st.booleans())
    first = head if renumber else head.replace(b'"seq":0', b'"seq":1')
    if not renumber:
        lines = [ln.replace(f'"seq":{i}'.encode(), f'"seq":{i + 1}'.encode(), 1) for i, ln in enumerate(lines, 1)]
        tail = tail.replace(f'"seq":{n + 1}', f'"seq":{n + 2}')
    else:
        changes = [True] * len(changes)
    return [first, *lines, tail.encode()], [renumber, *changes, renumber]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(journal())
def test_heal_writes_untouched_events_as_their_bytes_and_changed_ones_value_identical(case):
    lines, changed = case
    done = run_replay("heal", "--no-summary", input=b"".join(ln + b"\n" for ln in lines))
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout.split(b"\n")[:-1]
    assert len(out) == len(lines)
    for before, after, was_changed in zip(lines, out, changed, strict=True):
        if not was_changed:
            assert after == before
            continue
        a, b = exact_value(before), exact_value(after)
        touched = {"seq", "type"}
        assert {k: v for k, v in a.items() if k not in touched}.keys() == {k: v for k, v in b.items() if k not in touched}.keys()
        for key in a:
            if key not in touched:
                assert same(a[key], b[key]), key


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(values, deep()))
def test_exact_loads_and_dumps_keep_every_value(text):
    raw = text.encode()
    value = exactjson.loads(raw)
    assert same(exact_value(exactjson.dumps(value)), exact_value(raw))
    assert same(exact_value(exactjson.dumps(exactjson.loads(exactjson.dumps(value)))), exact_value(raw))


@settings(max_examples=300, deadline=None)
@given(values)
@example('{"\\u003a000000":0,"\\u003a000000":0}')  # (a key, or a string, that begins with a colon written escaped:
@example('{"a":"\\u003ax","a":"\\u003ax"}')  # written anew its ``":`` was counted as a key's end)
@example('[{"\\u003a":1,"\\u003a":2},":"]')
def test_duplicate_keys_are_found_exactly_where_they_are(text):
    raw = ('{"v":' + text + "}").encode()
    found = set()

    def pairs(items):
        keys = [k for k, _ in items]
        if len(keys) != len(set(keys)):
            found.add(True)
        return dict(items)

    json.loads(raw, object_pairs_hook=pairs, parse_int=Decimal)
    assert bool(exactjson.duplicate_keys(raw)) == bool(found)


_tricky = st.text(alphabet='\\": a\t', max_size=8)  # escaped quotes and backslashes right before `:` or a space


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_tricky, _tricky), min_size=1, max_size=5),
       st.sampled_from([(",", ":"), (", ", ": "), (",\n  ", " : "), (",", "\n:"), ("\r\n,", "\t:\t")]))
def test_duplicate_keys_are_found_whatever_escaped_quotes_the_strings_hold(items, separators):
    """Keys and texts full of `\\"` and `\\\\`: escaped quotes are told from a key's closing quote, never hiding one."""
    raw = ("{" + separators[0].join(json.dumps(k) + separators[1] + json.dumps(v) for k, v in items) + "}").encode()
    keys = [k for k, _ in items]
    assert bool(exactjson.duplicate_keys(raw)) == (len(keys) != len(set(keys)))
    assert bool(exactjson.duplicate_keys(raw, exactjson.loads(raw))) == (len(keys) != len(set(keys)))


def test_a_number_a_double_does_not_hold_is_written_as_read_whatever_the_default() -> None:
    for text in (b'{"n":[1e400,3.14159265358979323846]}', b'{"n":[1e400,123456789012345678901234567890]}',
                 b'{"n":[1e400,' + b"9" * 5000 + b"]}", b'{"n":[2,-' + b"9" * 4301 + b"]}"):
        for default in (None, str):
            assert exactjson.dumps(exactjson.loads(text), default=default) == text


@pytest.mark.parametrize(("text", "again"), [
    (b'{"t":1712345678.0101345}', False),  # a writer's shortest form of a double (time.time()) reads back as written
    (b'{"t":0.30000000000000004,"n":1234567890123456}', False),  # (an integer of 16 digits fits in 64 bits)
    (b'{"a":3.14159265358979323846264}', True),  # more digits than a double keeps
    (b'{"a":1.5e-400}', True),  # below a double's range
    (b'{"a":-12345678901234567890}', True),  # beyond 64 bits
    (b'{"s":"1.2.3.4.5.6.7.8.9.0"}', True),  # not one number: decoded again, to be sure
])
def test_a_line_is_decoded_again_only_for_a_number_orjson_would_not_read_as_written(text: bytes, again: bool):
    assert exactjson.needs_exact(text) is again
    assert exactjson.exact_lines([text], [orjson.loads(text)])[0] == exactjson.loads(text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(values, deep()), min_size=1, max_size=6))
def test_lines_loaded_together_are_each_line_loaded_alone(texts):
    """loads_lines (the screen's repair lane: orjson per line, the check for rounded numbers once over them all) reads
    each line as loads does: the same values, written back as the same bytes."""
    raws = [text.encode() for text in texts]
    try:
        alone = [exactjson.loads(raw) for raw in raws]
    except orjson.JSONDecodeError as exc:
        with pytest.raises(type(exc)):
            exactjson.loads_lines(raws)
        return
    together = exactjson.loads_lines(raws)
    assert [type(v) for v in together] == [type(v) for v in alone]
    assert [exactjson.dumps(v) for v in together] == [exactjson.dumps(v) for v in alone]
