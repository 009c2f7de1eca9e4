"""Aligning two runs: ignored fields, moved / changed / missing / extra records, the first divergence."""

from __future__ import annotations

import copy
import json
import re

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from replay.pipeline.engine import exactjson
from replay.pipeline.model.diff import (
    DEFAULT_IGNORE,
    Ignore,
    IgnorePathError,
    compared,
    describe,
    diff_runs,
    entry,
    field_changes,
    parse_ignore,
)

IGNORE = Ignore.of()


def run(*records: dict, ignore: Ignore = IGNORE) -> list:
    return [entry(r, n, ignore, line=n) for n, r in enumerate(records, start=1)]


def ev(seq: int, type_: str, ts: str = "2026-03-01T12:00:00.000Z", run_id: str = "run_a", **payload) -> dict:
    return {"seq": seq, "timestamp": ts, "type": type_, "runId": run_id, "payload": payload}


RUN = [
    {"$record": "run", "runId": "run_a", "prompt": "p", "status": "ok", "response": "done",
     "timings": {"durationMs": 12.5}},
    ev(1, "run_started"),
    ev(2, "user_message", content="p"),
    ev(3, "tool_called", toolName="lookup", callId="c1", arguments={"q": "p"}),
    ev(4, "tool_completed", toolName="lookup", callId="c1", result={"hits": 5}, durationMs=10),
    ev(5, "tool_called", toolName="search", callId="c2", arguments={"q": "x"}),
    ev(6, "tool_completed", toolName="search", callId="c2", result={"hits": 1}, durationMs=12),
    ev(7, "assistant_message", content="done"),
    ev(8, "run_completed"),
]


def other_run() -> list[dict]:
    """The same run again: other run id, ids, times and durations."""
    out = copy.deepcopy(RUN)
    for n, r in enumerate(out):
        if "runId" in r:
            r["runId"] = "run_b"
        if "timestamp" in r:
            r["timestamp"] = f"2026-04-01T00:00:0{n}.000Z"
        payload = r.get("payload", {})
        if "callId" in payload:
            payload["callId"] = payload["callId"].upper()
        if "durationMs" in payload:
            payload["durationMs"] += 7
    out[0]["timings"] = {"durationMs": 99}
    return out


# ignore paths ------------------------------------------------------------------------------------------
def test_ignore_paths_parse():
    assert parse_ignore("payload.model") == ("payload", "model")
    assert parse_ignore("$.payload.*.x") == ("payload", "*", "x")
    assert parse_ignore("**.durationMs") == ("**", "durationMs")
    for bad in ("", "a..b", ".a", "a.", "a b", "$."):
        with pytest.raises(IgnorePathError):
            parse_ignore(bad)


def test_strip_leaves_out_the_paths_at_any_depth():
    ignore = Ignore.of(["payload.model", "payload.*.secret", "**.traceId"], default=False)
    record = {"payload": {"model": "m", "keep": 1, "a": {"secret": 1, "b": 2}, "list": [{"traceId": 1, "x": 2}]},
              "traceId": "t", "model": "top-level stays"}
    assert ignore.strip(record) == {"payload": {"keep": 1, "a": {"b": 2}, "list": [{"x": 2}]}, "model": "top-level stays"}
    assert record["payload"]["model"] == "m"  # the input is not changed


def test_a_last_double_star_leaves_out_everything_below():
    # `payload.**` is any number of keys below payload: all of it (it left out nothing), `**` every field
    record = {"type": "t", "payload": {"model": "m", "a": {"b": 1}}}
    assert Ignore.of(["payload.**"], default=False).strip(record) == {"type": "t"}
    assert Ignore.of(["**"], default=False).strip(record) == {}
    assert Ignore.of(["payload.a.**.**"], default=False).strip(record) == {"type": "t", "payload": {"model": "m"}}


def test_the_default_ignores_times_ids_and_durations():
    assert {"timestamp", "runId", "seq", "**.callId", "**.durationMs"} <= set(DEFAULT_IGNORE)
    assert Ignore.of(default=False).written == ()
    assert Ignore.of(["x"]).written[-1] == "x"


def test_only_events_and_run_records_are_compared():
    assert compared({"type": "x"}) and compared({"$record": "run"})
    assert not compared({"$record": "heal"}) and not compared({"$record": "source"}) and not compared([1])


# diffs ------------------------------------------------------------------------------------------------
def test_identical_runs_are_the_same_whatever_their_times_and_ids():
    result = diff_runs(run(*RUN), run(*other_run()))
    assert result.same and result.first is None and result.equal == len(RUN)
    assert result.summary()["changed"] == 0


def test_without_the_default_the_same_runs_differ():
    bare = Ignore.of(default=False)
    result = diff_runs(run(*RUN, ignore=bare), run(*other_run(), ignore=bare))
    assert not result.same


def test_reordered_tool_calls_are_moved_not_missing():
    b = other_run()
    b[3:5], b[5:7] = b[5:7], b[3:5]
    result = diff_runs(run(*RUN), run(*b))
    changes = {d["change"] for d in result.differences}
    assert changes == {"moved"}
    assert result.summary()["moved"] == 2 and result.summary()["missing"] == result.summary()["extra"] == 0
    assert result.first is not None and result.first["a"]["index"] == 4 and result.first["b"]["index"] == 4


def test_changed_records_are_named_by_what_changed():
    b = other_run()
    b[3]["payload"]["toolName"] = "find"  # a tool call to another tool
    b[5]["payload"]["arguments"] = {"q": "y"}  # same tool, other arguments
    b[6]["payload"]["result"] = {"hits": 0}  # another output
    b[7]["type"] = "assistant_reply"  # another kind of event
    b[0]["prompt"] = "q"  # another field
    result = diff_runs(run(*RUN), run(*b))
    got = [(d["change"], d["category"], d["a"]["index"], d["b"]["index"]) for d in result.differences]
    assert got == [
        ("changed", "fields", 1, 1), ("changed", "tool_name", 4, 4), ("changed", "tool_arguments", 6, 6),
        ("changed", "output", 7, 7), ("changed", "type", 8, 8),
    ]
    args = result.differences[2]["fields"]
    assert args == [{"path": "$.payload.arguments.q", "a": "x", "b": "y"}]
    assert result.first == {"a": result.differences[0]["a"], "b": result.differences[0]["b"], "change": "changed",
                            "category": "fields"}
    assert result.summary()["categories"] == {"type": 1, "tool_name": 1, "tool_arguments": 1, "output": 1, "fields": 1}


@pytest.mark.parametrize(("kind", "a", "b", "category"), [
    ("tool_called", {"name": "grep"}, {"name": "find"}, "tool_name"),
    ("tool_called", {"tool_name": "grep"}, {"tool_name": "find"}, "tool_name"),
    ("user_message", {"name": "ann"}, {"name": "bob"}, "fields"),  # only a tool record's ``name`` is a tool
    ("tool_called", {"toolName": None, "tool": "grep"}, {"toolName": None, "tool": "find"}, "fields"),  # as written
    ("tool_called", {"toolName": 5}, {"toolName": 6}, "tool_name"),
])
def test_the_tool_a_record_names_is_compared_as_written(kind, a, b, category):
    result = diff_runs(run(ev(1, kind, **a)), run(ev(1, kind, **b)))
    assert [d["category"] for d in result.differences] == [category]


def test_extra_and_missing_records():
    b = other_run()
    del b[2]  # no user message in B
    b.insert(7, ev(99, "tool_called", toolName="retry"))
    result = diff_runs(run(*RUN), run(*b))
    got = [(d["change"], d["a"] and d["a"]["kind"], d["b"] and d["b"]["kind"]) for d in result.differences]
    assert got == [("missing", "user_message", None), ("extra", None, "tool_called")]
    assert result.first["a"]["index"] == 3 and result.first["b"]["index"] == 3
    end = diff_runs(run(*RUN), run(*other_run()[:-1]))
    assert end.first == {"a": end.differences[0]["a"], "b": None, "change": "missing", "category": "missing"}


def test_a_missing_field_is_told_apart_from_a_null_one():
    assert field_changes({"a": None}, {}) == [{"path": "$.a", "a": None}]
    assert field_changes({}, {"a": None}) == [{"path": "$.a", "b": None}]
    assert field_changes({"a": 1}, {"a": True}) == [{"path": "$.a", "a": 1, "b": True}]
    assert field_changes({"a b": [1, 2]}, {"a b": [1, 3]}) == [{"path": '$["a b"][1]', "a": 2, "b": 3}]


events = st.lists(st.fixed_dictionaries({
    "type": st.sampled_from(["tool_called", "tool_completed", "assistant_message"]),
    "payload": st.fixed_dictionaries({"toolName": st.sampled_from(["a", "b"]), "n": st.integers(0, 3)}),
}), max_size=12)


@settings(max_examples=200, deadline=None)
@given(events, events)
def test_every_record_is_accounted_for(a, b):
    result = diff_runs(run(*a), run(*b))
    s = result.summary()
    assert len(a) == s["equal"] + s["changed"] + s["moved"] + s["missing"]
    assert len(b) == s["equal"] + s["changed"] + s["moved"] + s["extra"]
    assert result.same == (a == b)


@settings(max_examples=200, deadline=None)
@given(events, st.randoms(use_true_random=False))
def test_a_reordering_is_only_moves(a, rng):
    b = list(a)
    rng.shuffle(b)
    result = diff_runs(run(*a), run(*b))
    assert {d["change"] for d in result.differences} <= {"moved"}
    assert diff_runs(run(*a), run(*a)).same


def test_another_question_is_no_other_output():
    a = run(ev(1, "user_message", content="p"), ev(2, "assistant_message", content="x"))
    b = run(ev(1, "user_message", content="q"), ev(2, "assistant_message", content="y"))
    assert [d["category"] for d in diff_runs(a, b).differences] == ["fields", "output"]



def test_numbers_a_double_does_not_hold_are_compared_as_written():
    """1e400 and 2e400 both read as infinity, the two long decimals as one double: they still differ, field by field."""
    a, b = (exactjson.loads(f'{{"n": {n}, "m": {m}, "same": 1e400}}')
            for n, m in (("1e400", "3.14159265358979323846"), ("2e400", "3.14159265358979323847")))
    assert [(c["path"], c["a"].text, c["b"].text) for c in field_changes(a, b)] == [
        ("$.n", "1e400", "2e400"), ("$.m", "3.14159265358979323846", "3.14159265358979323847")]
    assert field_changes(a, exactjson.loads(exactjson.dumps(a))) == []
    (difference,) = diff_runs(run({"type": "a", "payload": a}), run({"type": "a", "payload": b})).differences
    assert [c["path"] for c in difference["fields"]] == ["$.payload.n", "$.payload.m"]


_STEP = re.compile(r'\.([A-Za-z_$][A-Za-z0-9_$]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


def _apply(value, change):
    """``value`` with one change of field_changes made: the field set to ``b``, or taken out when b lacks it."""
    steps = [name or (int(index) if index else json.loads(quoted)) for name, index, quoted in _STEP.findall(change["path"][1:])]
    if not steps:
        return change["b"]
    holder = value
    for step in steps[:-1]:
        holder = holder[step]
    if "b" in change:
        holder[steps[-1]] = change["b"]
    else:
        del holder[steps[-1]]
    return value


def _as_json(value):
    """The value as JSON, for comparing with its types: ``-0.0`` reads as ``0.0`` (they are equal numbers, and
    field_changes takes them as the same; no string here holds ``-0.0``)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).replace(b"-0.0", b"0.0")


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, -0.0, 1.0, 2.5]) | st.sampled_from(["", "x", "y"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "c d"]), inner, max_size=3),
    max_leaves=12)


@settings(max_examples=400)
@given(_JSON, _JSON)
@example({"a": [-0.0, 1]}, {"a": [0.0, True]})
@example({"a": 1, "c d": {}}, {"b": [1.0], "c d": {"a": None}})
def test_field_changes_are_exactly_what_turns_one_value_into_the_other(a, b):
    """Made one by one on ``a``, the changes give ``b`` (JSON types kept: 1, 1.0 and true differ); each one names
    a field whose two sides differ; a value has no change from a copy of itself."""
    changes = field_changes(a, b)
    patched = copy.deepcopy(a)
    for change in changes:
        patched = _apply(patched, change)
        assert "a" not in change or "b" not in change or _as_json(change["a"]) != _as_json(change["b"]) or \
            type(change["a"]) is not type(change["b"])
    assert _as_json(patched) == _as_json(b)
    assert field_changes(a, copy.deepcopy(a)) == []


def test_a_long_value_that_differs_far_in_shows_where():
    """The text line cut each value 60 characters in: two long texts that differ later read the same."""
    text = "The quick brown fox jumps over the lazy dog and then keeps running until the answer is 42."
    line = describe({"change": "changed", "category": "output", "a": {"index": 1, "kind": "m"}, "b": {"index": 1, "kind": "m"},
                     "fields": [{"path": "$.text", "a": text, "b": text.replace("42", "41")}]})
    shown = line.split("$.text: ", 1)[1]
    before, after = shown.split(" -> ")
    assert before != after and before.startswith("…") and "42" in before and "41" in after
    short = describe({"change": "changed", "category": "output", "a": {"index": 1, "kind": "m"}, "b": {"index": 1, "kind": "m"},
                      "fields": [{"path": "$.n", "a": 1, "b": 2}, {"path": "$.x", "b": "new"}]})
    assert short.endswith('$.n: 1 -> 2; $.x: (none) -> "new"')


def test_a_cut_string_keeps_its_closing_quote_and_a_document_record_its_path_after_a_colon():
    """A string cut at 60 characters still reads as a string (``"Please…"``, not ``"Please…``), whether one side or
    both; a record of a JSON document is at ``#N:$path`` as a journal's is at ``#N:line``."""
    long = "Please create a simple 2048 game. No need to run it. Please make sure it works."
    line = describe({"change": "changed", "category": "fields", "a": {"index": 1, "kind": "$run", "pointer": "$"},
                     "b": {"index": 1, "kind": "$run", "line": 1}, "fields": [{"path": "$.query", "b": long}]})
    assert line.endswith('$.query: (none) -> "Please create a simple 2048 game. No need to run it. Please…"')
    assert "a#1:$ " in line and "b#1:1 " in line
    both = describe({"change": "changed", "category": "output", "a": {"index": 1, "kind": "m"}, "b": {"index": 1, "kind": "m"},
                     "fields": [{"path": "$.q", "a": "A " + long, "b": "B " + long}]})
    before, after = both.split("$.q: ", 1)[1].split(" -> ")
    assert before.endswith('…"') and after.endswith('…"'), both
    extra = describe({"change": "extra", "category": "extra", "a": None,
                      "b": {"index": 2, "kind": "run_started", "pointer": "$.events[0]"}})
    assert "b#2:$.events[0]" in extra


def test_where_the_runs_part_records_of_one_kind_face_each_other():
    """A stretch where the runs part paired records by place: b's extra tool call faced a's assistant message (a change
    of type) and b's assistant message, which is a's changed, was extra."""
    a = run(ev(1, "run_started"), ev(2, "assistant_message", text="hi"), ev(3, "run_completed"))
    b = run(ev(1, "run_started"), ev(2, "tool_called", toolName="ls"), ev(3, "tool_completed", output="a.py"),
            ev(4, "assistant_message", text="hello"), ev(5, "run_completed"))
    result = diff_runs(a, b)
    assert [(d["change"], d["a"] and d["a"]["kind"], d["b"] and d["b"]["kind"]) for d in result.differences] == [
        ("extra", None, "tool_called"), ("extra", None, "tool_completed"),
        ("changed", "assistant_message", "assistant_message")]
    # what is left between records of one kind still faces by place: a change of type
    c = run(ev(1, "run_started"), ev(2, "user_message", text="q"), ev(3, "run_completed"))
    assert [(d["change"], d["category"]) for d in diff_runs(a, c).differences] == [("changed", "type")]


def test_a_mapped_events_original_record_is_left_out():
    one = {**ev(1, "user_message", text="q"), "$origin": {"format": "openhands", "record": {"timestamp": "t1", "id": 4}}}
    other = {**one, "$origin": {"format": "openhands", "record": {"timestamp": "t2", "id": 9}}}
    assert diff_runs(run(one), run(other)).same
