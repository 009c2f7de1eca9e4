"""Goldens: what is normalised (times, ids, durations, UUIDs and timestamps in text) and the first difference."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.testing.goldens import Normalisation, first_difference, normalise_lines

A = b'{"type":"session/start","ts":"2026-03-01T12:00:00.000Z","sessionId":"9b2f0c1e-1111-4d1a-947b-66c16ed000d0"}\n'
B = b'{"type":"session/start","ts":"2026-11-30T08:18:53.782Z","sessionId":"fa0fb499-b2f4-4d1a-947b-66c16ed000d0"}\n'


def test_times_and_ids_under_their_keys_are_normalised():
    assert normalise_lines([A]) == normalise_lines([B]) == [b'{"type":"session/start","ts":"<time>","sessionId":"<id:1>"}']
    assert first_difference([A], [B]) == (None, 1)


def test_ids_are_numbered_so_that_sameness_still_counts():
    same = [b'{"id":"x","parent":null}', b'{"id":"y","ref":{"runId":"x"}}']
    other = [b'{"id":"p","parent":null}', b'{"id":"q","ref":{"runId":"q"}}']  # refers to itself, not to the first
    assert normalise_lines(same) == [b'{"id":"<id:1>","parent":null}', b'{"id":"<id:2>","ref":{"runId":"<id:1>"}}']
    difference, _ = first_difference(same, other)
    assert difference is not None and difference.line == 2


def test_uuids_and_timestamps_inside_text_lines_are_normalised():
    recorded = [b"session fa0fb499-b2f4-4d1a-947b-66c16ed000d0 started at 2026-03-01 12:00:00Z\n"]
    new = [b"session FB84DE1F-4CD2-4335-ADBB-32AA854B334E started at 2026-11-30T08:18:53.782+01:00\n"]
    assert normalise_lines(recorded) == [b"session <id:1> started at <time>"]
    assert first_difference(recorded, new) == (None, 1)


def test_durations_are_ignored_and_extra_keys_can_be_added():
    a = [b'{"type":"tool/result","durationMs":0.001,"seed":1}']
    b = [b'{"type":"tool/result","durationMs":12.5,"seed":2}']
    assert first_difference(a, b)[0] is not None  # seed differs
    assert first_difference(a, b, Normalisation().extended(ignore_keys=["seed"])) == (None, 1)
    assert first_difference([b'{"at":1}'], [b'{"at":2}'], Normalisation().extended(time_keys=["at"])) == (None, 1)
    assert first_difference([b'{"who":"a"}'], [b'{"who":"b"}'], Normalisation().extended(id_keys=["who"])) == (None, 1)


def test_the_first_difference_has_both_lines_and_its_number():
    recorded = [b'{"type":"turn/start","turn":1,"input":"hi"}\n', b'{"type":"x","ts":"2026-03-01T12:00:00Z"}\n',
                b'{"type":"turn/end"}\n']
    new = [recorded[0], b'{"type":"y","ts":"2026-03-01T13:00:00Z"}\n', recorded[2]]
    difference, compared = first_difference(recorded, new)
    assert difference is not None and compared == 2
    assert difference.line == 2
    assert difference.recorded == recorded[1].rstrip(b"\n") and difference.new == new[1].rstrip(b"\n")
    assert difference.recorded_normalised == b'{"type":"x","ts":"<time>"}'
    assert difference.describe() == "line 2 differs after normalisation"


def test_key_order_a_missing_line_and_a_missing_newline_are_differences():
    assert first_difference([b'{"a":1,"b":2}'], [b'{"b":2,"a":1}'])[0] is not None
    shorter = first_difference([b"x\n", b"y\n"], [b"x\n"])[0]
    assert shorter is not None and shorter.line == 2 and shorter.new is None and "new file ends" in shorter.describe()
    longer = first_difference([b"x\n"], [b"x\n", b"y\n"])[0]
    assert longer is not None and longer.recorded is None
    unterminated = first_difference([b"x\n"], [b"x"])[0]
    assert unterminated is not None and "new file has no newline" in unterminated.describe()


def test_crlf_is_not_normalised_away():
    assert first_difference([b"x\r\n"], [b"x\n"])[0] is not None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["ts", "id", "text", "n"]), inner, max_size=3),
    max_leaves=10,
)


@given(st.lists(st.dictionaries(st.sampled_from(["type", "ts", "id", "text", "durationMs"]), json_values, max_size=4),
                max_size=6))
@settings(max_examples=150, deadline=None)
def test_a_journal_equals_itself_and_normalising_is_idempotent(records):
    lines = [orjson.dumps(r) + b"\n" for r in records]
    assert first_difference(lines, list(lines)) == (None, len(lines))
    once = normalise_lines(lines)
    assert normalise_lines([line + b"\n" for line in once]) == once
