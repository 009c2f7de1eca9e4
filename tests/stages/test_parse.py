"""The core transforms (parse, select) called directly on batches built from plain lists."""

from __future__ import annotations

import sys

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.graph import Graph
from replay.stages.check_lines import CheckLines
from replay.stages.parse import ParseLines
from replay.stages.read import ReadJournal
from replay.stages.select import SelectEvents
from replay.stages.write import WriteJsonl


def lines(*raws: bytes, tail_open: bool = False, source: str = "run.jsonl") -> Batch:
    batch = Batch.from_lines(list(raws), source)
    batch.tail_open = tail_open
    return batch


def ev(seq: int, type_: str, run: str = "r1") -> dict:
    return {"seq": seq, "timestamp": "2026-01-01T00:00:00Z", "type": type_, "runId": run, "payload": {}}


# parse -------------------------------------------------------------------------------------
def test_parse_turns_lines_into_records_and_keeps_the_bytes():
    raws = [b'{"seq":1,"type":"a"}', b'{"seq": 2, "type": "b"}']
    stage = ParseLines()
    out = stage(lines(*raws))
    assert out.events == [{"seq": 1, "type": "a"}, {"seq": 2, "type": "b"}]
    assert out.raws == raws
    assert out.to_jsonl() == b'{"seq":1,"type":"a"}\n{"seq": 2, "type": "b"}\n'
    assert stage.drain() == {}


def test_parse_reports_a_bad_line_with_its_position_and_keeps_the_rest_in_order():
    stage = ParseLines()
    out = stage(lines(b'{"seq":1}', b'{"seq":2,', b'{"seq":3}'))
    assert [e["seq"] for e in out] == [1, 3]
    assert out.lines == [1, 3]
    [error] = stage.take("errors")
    assert error["code"] == "E_JSONL_LINE_INVALID"
    assert (error["source"], error["line"], error["offset"]) == ("run.jsonl", 2, 10)
    assert error["stage"] == "parse"
    assert error["received"] == '{"seq":2,'
    assert error["column"] == 10


def test_parse_reports_the_byte_column_of_the_fault_in_non_ascii_lines():
    stage = ParseLines()
    stage(lines('{"t":"é", x}'.encode()))
    [error] = stage.take("errors")
    assert error["column"] == len('{"t":"é", '.encode()) + 1


def test_parse_reports_json_that_is_not_an_object():
    stage = ParseLines()
    out = stage(lines(b"[1,2]", b'"text"', b"42", b"null", b'{"ok":true}'))
    assert out.events == [{"ok": True}]
    errors = stage.take("errors")
    assert [e["code"] for e in errors] == ["E_EVENT_NOT_OBJECT"] * 4
    assert [e["received"] for e in errors] == ["array", "string", "integer", "null"]  # JSON's names, not Python's
    assert [e["line"] for e in errors] == [1, 2, 3, 4]


def test_parse_skips_blank_and_whitespace_lines_quietly():
    stage = ParseLines()
    out = stage(lines(b"", b"  ", b"\r", b'{"a":1}\r', b"\t"))
    assert out.events == [{"a": 1}]
    assert out.raws == [b'{"a":1}\r']
    assert stage.drain() == {}


def test_parse_reports_a_torn_last_line_and_never_emits_it():
    stage = ParseLines()
    out = stage(lines(b'{"seq":1}', b'{"seq":2,"ty', tail_open=True))
    assert out.events == [{"seq": 1}]
    [error] = stage.take("errors")
    assert error["code"] == "E_JSONL_LINE_TORN"
    assert error["offset"] == 10 and error["line"] == 2
    assert "byte 10" in error["message"]


def test_parse_keeps_a_complete_last_line_without_newline():
    out = ParseLines()(lines(b'{"seq":1}', b'{"seq":2}', tail_open=True))
    assert [e["seq"] for e in out] == [1, 2]


def test_parse_a_bad_line_that_is_not_last_is_invalid_not_torn():
    stage = ParseLines()
    stage(lines(b'{"seq":', b'{"seq":2}', tail_open=True))
    assert [e["code"] for e in stage.take("errors")] == ["E_JSONL_LINE_INVALID"]


def test_parse_can_log_a_torn_tail_as_a_repair_instead_of_an_error():
    stage = ParseLines(torn_tail="repair")
    out = stage(lines(b'{"seq":1}', b'{"se', tail_open=True))
    assert len(out) == 1
    stage.flush()  # the repair follows whatever the rules log for the events before it
    side = stage.drain()
    assert "errors" not in side
    [repair] = side["repairs"]
    assert repair["rule"] == "drop_torn_line" and repair["action"] == "dropped"
    assert repair["original"] == '{"se' and repair["line"] == 2 and repair["offset"] == 10


def test_parse_passes_records_from_documents_through_and_drops_non_objects():
    batch = Batch("a.json", [{"seq": 1}, 7, {"seq": 2}], [None] * 3, [None] * 3, [None] * 3,
                  ["$[0]", "$[1]", "$[2]"])
    stage = ParseLines()
    out = stage(batch)
    assert out.events == [{"seq": 1}, {"seq": 2}]
    [error] = stage.take("errors")
    assert error["path"] == "$[1]" and error["code"] == "E_EVENT_NOT_OBJECT"


def test_parse_keeps_the_exact_bytes_of_numbers_past_64_bits():
    raw = b'{"n":123456789012345678901234567890}'
    out = ParseLines()(lines(raw))
    assert out.to_jsonl() == raw + b"\n"  # orjson reads it as a float; the untouched bytes keep every digit


def test_parse_reports_invalid_utf8():
    stage = ParseLines()
    out = stage(lines(b'{"t":"\xff"}', b'{"ok":1}'))
    assert out.events == [{"ok": 1}]
    assert [e["code"] for e in stage.take("errors")] == ["E_JSONL_LINE_INVALID"]


def test_parse_reports_a_byte_that_is_not_utf8_at_its_column():
    """orjson checks a line's UTF-8 first and says column 1: the error names the byte and its column (in bytes, as
    parse counts columns); a line with a syntax error after valid UTF-8 keeps its message and column."""
    bad = b'{"seq":1,"type":"x","payload":{"t":"caf\xe9 ok"}}'
    syntax = '{"t":"é", oops}'.encode()
    stage = ParseLines()
    out = stage(lines(b'{"ok":1}', bad, syntax, b'{"ok":2}'))
    assert out.events == [{"ok": 1}, {"ok": 2}]
    first, second = stage.take("errors")
    assert first["code"] == second["code"] == "E_JSONL_LINE_INVALID"
    column = bad.index(b"\xe9") + 1
    assert (first["line"], first["column"], first["offset"]) == (2, column, 9)
    assert first["message"] == f"line 2 is not valid JSON: byte 0xe9 at column {column} is not UTF-8 (invalid continuation byte)"
    assert "UTF-8" in first["howToFix"]
    assert (second["line"], second["column"], second["offset"]) == (3, 12, 9 + len(bad) + 1)
    assert second["message"] == "line 3 is not valid JSON: unexpected character, expected a string key at column 12"
    assert second["howToFix"] == "Fix or delete the line; other lines are still read."


def test_parse_reports_a_line_nested_deeper_than_it_reads_as_too_deep_not_as_invalid_json():
    deep = b'{"seq":1,"type":"x","payload":' + b"[" * 1100 + b"]" * 1100 + b"}"
    stage = ParseLines()
    out = stage(lines(deep, b'{"ok":1}'))
    assert out.events == [{"ok": 1}]
    [error] = stage.take("errors")
    assert error["code"] == "E_JSONL_LINE_INVALID" and (error["line"], error["offset"]) == (1, 0)
    assert error["message"] == "line 1 is nested deeper than 1024 levels, the most replay reads"
    # the outer object is level 1 (column 1), the 30 bytes before the first [ are the prefix: the [ opening level 1025
    # is at column 30 + 1024 (offset + column - 1 is that bracket)
    assert error["column"] == 30 + 1024 and "Flatten" in error["howToFix"]


@pytest.mark.parametrize(("opened", "words"), [(b"[" * 300, "unexpected end of data at column 314"),
                                               (b"[" * 1100, "nested deeper than 1024 levels")])
def test_a_line_that_opens_many_arrays_and_ends_early_is_told_as_it_is_not_as_orjson_running_out_of_room(opened, words):
    """orjson sizes its memory from the text's length: ``[[[[`` with nothing after runs out of it ("failed to allocate
    memory") before it sees the text end, or nest too deep. Said as what it is, at its column."""
    stage = ParseLines()
    out = stage(lines(b'{"seq":1,"p":' + opened, b'{"ok":1}'))
    assert out.events == [{"ok": 1}]
    [error] = stage.take("errors")
    assert error["code"] == "E_JSONL_LINE_INVALID" and words in error["message"], error["message"]
    assert "memory" not in error["message"]


def test_parse_describes_itself():
    info = ParseLines.describe()
    assert info["type"] == "parse" and info["kind"] == "transform"
    assert "torn_tail" in info["options"] and info["ports"] == ["errors", "repairs"]


# check_lines: parse's checks, lines passed on unparsed --------------------------------------------
def test_check_lines_passes_good_lines_on_unparsed():
    raws = [b'{"seq":1}', b'{"seq": 2}']
    stage = CheckLines()
    out = stage(lines(*raws))
    assert out.events is None and out.raws == raws
    assert stage.drain() == {}


def test_check_lines_keeps_document_records_parsed():
    batch = Batch("a.json", [{"seq": 1}, 3], [None, None], [None, None], [None, None], ["$[0]", "$[1]"])
    stage = CheckLines()
    out = stage(batch)
    assert out.events is not None and out.events[0] == {"seq": 1}
    assert [(e["$record"], e["path"]) for e in out.events[1:]] == [("dropped", "$[1]")]  # (mark_dropped: in its place)
    assert [e["path"] for e in stage.take("errors")] == ["$[1]"]
    unmarked = CheckLines(mark_dropped=False)
    assert unmarked(Batch("a.json", [{"seq": 1}, 3], [None, None], [None, None], [None, None], ["$[0]", "$[1]"])).events == [{"seq": 1}]


line_samples = st.sampled_from([b'{"seq":1}', b'{"a": [1, {"b": null}]}', b"", b"  ", b"[1]", b"7", b"oops",
                                b'{"seq":', b'{"t":"\xff"}', b'{"ok":true}\r'])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(line_samples, max_size=8), max_size=5), st.booleans(), st.sampled_from(["error", "repair"]))
def test_check_lines_reports_and_keeps_exactly_what_parse_does(batches, tail_open, torn_tail):
    parse, check = ParseLines(torn_tail=torn_tail), CheckLines(torn_tail=torn_tail, mark_dropped=False)
    kept_p, kept_c = [], []
    for k, raws in enumerate(batches):
        for stage, kept in ((parse, kept_p), (check, kept_c)):
            out = stage(lines(*raws, tail_open=tail_open and k == len(batches) - 1))
            kept.extend(zip(out.raws, out.lines, strict=True))
    parse.flush(), check.flush()
    assert kept_c == kept_p
    strip = lambda side: {port: [{k: v for k, v in r.items() if k != "stage"} for r in recs] for port, recs in side.items()}  # noqa: E731
    assert strip(check.drain()) == strip(parse.drain())


@settings(max_examples=200, deadline=None)
@given(st.lists(line_samples, max_size=12), st.booleans())
def test_check_lines_puts_a_dropped_record_where_each_line_was_left_out(raws, tail_open):
    parse, check = ParseLines(), CheckLines()
    kept = parse(lines(*raws, tail_open=tail_open))
    out = check(lines(*raws, tail_open=tail_open))
    errors = parse.take("errors")
    marks = [orjson.loads(r) for r in out.raws if r.startswith(b'{"$record":"dropped"')]
    assert [r for r in out.raws if not r.startswith(b'{"$record":"dropped"')] == kept.raws
    assert [(m["code"], m["line"], m["offset"]) for m in marks] == [(e["code"], e["line"], e["offset"]) for e in errors]
    # a parse down the pipe reports each again, where it was, and keeps the same records
    again = ParseLines()
    assert again(Batch.from_lines(out.raws)).raws == kept.raws
    assert [(e["code"], e["line"], e["offset"], e["message"]) for e in again.take("errors")] == \
        [(e["code"], e["line"], e["offset"], e["message"]) for e in errors]


def test_a_complete_invalid_last_line_is_invalid_not_torn_in_either_mode():
    for mode in ("error", "repair"):
        stage = ParseLines(torn_tail=mode)
        out = stage(lines(b'{"seq":1}', b"NaN", tail_open=False))
        assert len(out) == 1
        side = stage.drain()
        assert [e["code"] for e in side["errors"]] == ["E_JSONL_LINE_INVALID"] and "repairs" not in side
        assert side["errors"][0]["offset"] == 10


def test_check_lines_output_may_only_go_to_stages_that_take_raw_lines():
    graph = Graph.chain(ReadJournal(), CheckLines(), SelectEvents(), WriteJsonl())
    with pytest.raises(ReplayError) as info:
        graph.validate()
    assert info.value.code == "E_CONFIG_INPUTS_INVALID"
    Graph.chain(ReadJournal(), CheckLines(), WriteJsonl()).validate()


# select ------------------------------------------------------------------------------------
def parsed(*records: dict) -> Batch:
    batch = Batch.from_lines([orjson.dumps(r) for r in records])
    batch.events = list(records)
    return batch


def test_select_keeps_types_matching_globs():
    batch = parsed(ev(1, "run_started"), ev(2, "tool_called"), ev(3, "tool_completed"), ev(4, "user_message"))
    out = SelectEvents(types=["tool_*"])(batch)
    assert [e["seq"] for e in out] == [2, 3]
    assert out.raws == [batch.raws[1], batch.raws[2]]  # untouched bytes move with their events


def test_select_excludes_after_including():
    batch = parsed(ev(1, "tool_called"), ev(2, "tool_failed"), ev(3, "user_message"))
    out = SelectEvents(types=["tool_*"], exclude=["*_failed"])(batch)
    assert [e["seq"] for e in out] == [1]


def test_select_returns_the_same_batch_when_everything_is_kept():
    batch = parsed(ev(1, "a"), ev(2, "b"))
    assert SelectEvents()(batch) is batch


def test_select_one_run_keeps_its_run_record():
    batch = parsed({"$record": "run", "runId": "r1"}, ev(1, "a", "r1"), {"$record": "run", "runId": "r2"}, ev(1, "a", "r2"))
    out = SelectEvents(run_id="r2")(batch)
    assert out.events == [{"$record": "run", "runId": "r2"}, ev(1, "a", "r2")]


def test_select_can_drop_run_records():
    batch = parsed({"$record": "run", "runId": "r1"}, ev(1, "a"))
    out = SelectEvents(keep_run_records=False)(batch)
    assert out.events == [ev(1, "a")]


def test_select_treats_a_missing_or_odd_type_as_the_empty_name():
    batch = parsed({"seq": 1}, {"seq": 2, "type": 5}, {"seq": 3, "type": ["x"]})
    assert len(SelectEvents(types=["*"])(batch)) == 3
    assert len(SelectEvents(types=["tool_*"])(batch)) == 0


def test_select_over_many_batches_matches_a_plain_filter():
    stage = SelectEvents(types=["tool_*", "run_*"], exclude=["run_failed"])
    types = ["run_started", "tool_called", "tool_completed", "user_message", "run_failed", "x"] * 50
    records = [ev(i + 1, t) for i, t in enumerate(types)]
    kept = [e for k in range(0, len(records), 7) for e in stage(parsed(*records[k:k + 7]))]
    assert kept == [e for e in records if e["type"] in ("run_started", "tool_called", "tool_completed")]


@pytest.mark.parametrize("stage", [ParseLines(), CheckLines(), SelectEvents()])
def test_transforms_have_nothing_to_flush(stage):
    assert stage.flush() is None


# check_lines' fast check (msgspec, whole batch) accepts exactly what parse accepts ----------------------
jsonish = st.one_of(
    st.binary(max_size=40),
    st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.lists(st.sampled_from([b"{", b"}", b"[", b"]", b'"a"', b":", b",", b"1", b"-0", b"1e400", b"1.5E+3", b"true",
                              b"null", b'"\\ud800"', b'"\\u00e9"', b'"\xc3\xa9"', b'"\xff"', b" ", b"\t", b"\r", b"\x0c",
                              b'"\x01"', b"NaN", b'"\\"', b"01", b"1.", b".5", b"\x00"]), max_size=12).map(b"".join),
)


@settings(max_examples=2000, deadline=None)
@given(st.lists(jsonish, min_size=1, max_size=4))
def test_the_fast_check_of_check_lines_accepts_only_what_parse_accepts(raws):
    raws = [r.replace(b"\n", b" ") for r in raws]
    from replay.pipeline.io.journals import decode_each_line
    from replay.stages.check_lines import _OBJECTS

    stage = ParseLines()
    out = stage(lines(*raws))
    parse_accepts = len(out) == len(raws) and not stage.take("errors")
    if decode_each_line(_OBJECTS, Batch.from_lines(raws)) is not None:
        assert parse_accepts, raws


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="msgspec's depth follows the C stack on 3.12+ (a known limit)")
@pytest.mark.parametrize("limit", [1000, 2048, 20_000])
@pytest.mark.parametrize("depth", [900, 1023, 1024, 1100, 3000])
def test_the_fast_checks_refuse_a_line_nested_deeper_than_parse_reads_whatever_the_recursion_limit(limit, depth):
    """msgspec nests as deep as the recursion limit leaves room for; raised (hypothesis raises it to 2048), it would
    take lines orjson refuses, and a fast lane would pass a line the slow one reports."""
    from replay.pipeline.io.journals import decode_each_line
    from replay.stages.check_lines import _OBJECTS

    raws = [b'{"type": "a"}', b'{"deep": ' + b"[" * depth + b"]" * depth + b"}"]
    stage = ParseLines()
    parse_accepts = len(stage(lines(*raws))) == 2 and not stage.take("errors")
    assert parse_accepts == (depth < 1024)
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        fast = decode_each_line(_OBJECTS, Batch.from_lines(raws))
    finally:
        sys.setrecursionlimit(before)
    assert fast is None or parse_accepts
    if limit > 1000 and depth == 900:
        assert fast is not None  # (what parse reads the fast check still takes)
    assert sys.getrecursionlimit() == before


def test_a_dropped_record_with_a_code_replay_does_not_report_is_an_invalid_record_not_a_stage_failure(tmp_path):
    """Found this stop: a `{"$record": "dropped"}` line whose `code` is none of replay's (edited, or another tool's)
    was reported again under that code, which the engine refuses from a stage: heal, validate and report stopped
    with E_STAGE_FAILED blaming parse, and heal wrote none of the valid events. It is now an E_EVENT_INVALID at
    `$.code`, the valid events flow, and each command exits 1 as for any bad record; a known code is unchanged."""
    from conftest import run_replay

    event = b'{"seq":1,"timestamp":"2026-01-01T00:00:00Z","type":"run_started","runId":"r","payload":{}}\n'
    for code, reported in (("E_BOGUS", "E_EVENT_INVALID"), ("E_JSONL_LINE_INVALID", "E_JSONL_LINE_INVALID")):
        path = tmp_path / f"{code}.jsonl"
        path.write_bytes(orjson.dumps({"$record": "dropped", "code": code, "message": "m", "line": 3,
                                       "received": "zz", "howToFix": "h"}) + b"\n" + event)
        for command in ("heal", "validate", "report"):
            done = run_replay(command, str(path))
            errors = [orjson.loads(line)["error"] for line in done.stderr.splitlines() if line.startswith(b'{"error"')]
            assert done.returncode == 1, (command, done.stderr)
            assert [e["code"] for e in errors] == [reported], (command, errors)
            assert errors[0]["stage"] == "parse" and errors[0]["line"] == 3
            if code == "E_BOGUS":
                assert errors[0]["path"] == "$.code" and errors[0]["received"] == "E_BOGUS", errors
            if command == "heal":
                assert orjson.loads(done.stdout.splitlines()[0])["type"] == "run_started"
