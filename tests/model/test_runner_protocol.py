"""The runner contract: request, context loading, reading a runner's stdout (one object or streamed lines)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import UTC, datetime

import jsonschema
import orjson
import pytest
from conftest import EXAMPLES, ROOT
from hypothesis import given, settings
from hypothesis import strategies as st
from referencing import Registry, Resource

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.runner_facts import run_facts
from replay.pipeline.model.runner_protocol import (
    check_output,
    load_context,
    new_run_id,
    read_reply,
    runner_request,
)

ADVICE_FIELDS = {"path", "expected", "received", "howToFix"}
OUTPUT_SCHEMA = json.loads((ROOT / "schemas" / "runner-output.schema.json").read_text())
# (its runnerEvent's `type` is event.schema.json's: the bundled schemas resolve each other's $refs)
SCHEMAS = Registry().with_resources(
    (doc["$id"], Resource.from_contents(doc))
    for doc in (json.loads(p.read_text()) for p in sorted((ROOT / "schemas").glob("*.schema.json"))))


def output_validator(where: str = "") -> jsonschema.Draft202012Validator:
    """runner-output.schema.json (at ``where``, such as ``#/$defs/streamedLine``), its $refs resolved."""
    return jsonschema.Draft202012Validator({"$ref": OUTPUT_SCHEMA["$id"] + where}, registry=SCHEMAS,
                                           format_checker=jsonschema.FormatChecker())


def event(seq: int, etype: str = "user_message") -> dict:
    return {"seq": seq, "timestamp": "2026-03-01T12:00:00.000Z", "type": etype, "runId": "run_1", "payload": {"n": seq}}


# the request ------------------------------------------------------------------------------------
def test_run_ids_sort_by_start_time_and_differ():
    early = new_run_id(datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC))
    late = new_run_id(datetime(2026, 3, 1, 12, 0, 1, tzinfo=UTC))
    assert re.fullmatch(r"run_20260301T120000_[0-9a-f]{6}", early)
    assert early < late
    assert new_run_id() != new_run_id()


def test_request_carries_prompt_as_query_and_context():
    moment = datetime(2026, 3, 1, 12, 0, 0, 123000, tzinfo=UTC)
    request = runner_request("top holdings?", "run_x", moment, {"user": "u1"})
    assert request == {"prompt": "top holdings?", "query": "top holdings?", "runId": "run_x",
                       "timestamp": "2026-03-01T12:00:00.123Z", "context": {"user": "u1"}}


# context --------------------------------------------------------------------------------------
def test_context_defaults_to_empty_object():
    assert load_context(None, None) == {}


def test_context_inline_and_file(tmp_path):
    assert load_context('{"a": 1}', None) == {"a": 1}
    path = tmp_path / "ctx.json"
    path.write_text('{"b": [1, 2]}')
    assert load_context(None, str(path)) == {"b": [1, 2]}


@pytest.mark.parametrize(("inline", "file_text", "code"), [
    ('{"a": 1}', '{"b": 2}', "E_CONTEXT_CONFLICT"),
    ("{not json", None, "E_CONTEXT_JSON_INVALID"),
    (None, '{"a": 1,\n  oops}', "E_CONTEXT_JSON_INVALID"),
    ("[1, 2]", None, "E_CONTEXT_SHAPE_INVALID"),
    (None, '"text"', "E_CONTEXT_SHAPE_INVALID"),
])
def test_context_errors(tmp_path, inline, file_text, code):
    file = None
    if file_text is not None:
        file = str(tmp_path / "ctx.json")
        (tmp_path / "ctx.json").write_text(file_text)
    with pytest.raises(ReplayError) as info:
        load_context(inline, file)
    assert info.value.code == code
    assert info.value.body.keys() >= ADVICE_FIELDS
    assert info.value.exit_code == 2


def test_context_file_error_points_at_line_and_column(tmp_path):
    path = tmp_path / "ctx.json"
    path.write_text('{"a": 1,\n  oops}')
    with pytest.raises(ReplayError) as info:
        load_context(None, str(path))
    body = info.value.body
    assert body["source"] == str(path) and body["line"] == 2 and body["path"] == "--context-file"


def test_missing_context_file(tmp_path):
    with pytest.raises(ReplayError) as info:
        load_context(None, str(tmp_path / "nope.json"))
    assert info.value.code == "E_CONTEXT_FILE_NOT_FOUND"
    assert info.value.body["received"] == str(tmp_path / "nope.json")


# the output object ------------------------------------------------------------------------------
@pytest.mark.parametrize(("output", "code", "path", "received"), [
    ([1, 2], "E_RUNNER_OUTPUT_SHAPE", "$", "array"),
    ("ok", "E_RUNNER_OUTPUT_SHAPE", "$", "string"),
    ({"events": []}, "E_RUNNER_STATUS_INVALID", "$.status", "missing"),
    ({"status": "done", "events": []}, "E_RUNNER_STATUS_INVALID", "$.status", '"done"'),
    ({"status": "ok", "response": "x"}, "E_RUNNER_EVENTS_INVALID", "$.events", "missing"),
    ({"status": "ok", "response": "x", "events": {}}, "E_RUNNER_EVENTS_INVALID", "$.events", "object"),
    ({"status": "ok", "events": []}, "E_RUNNER_RESPONSE_MISSING", "$.response", "missing"),
    ({"status": "ok", "response": 42, "events": []}, "E_RUNNER_RESPONSE_MISSING", "$.response", "integer"),
    ({"status": "ok", "response": "x", "events": [event(1), 1]}, "E_RUNNER_OUTPUT_SHAPE", "$.events[1]", "integer"),
    ({"status": "ok", "response": "x", "events": [{"payload": {}}]}, "E_RUNNER_OUTPUT_SHAPE", "$.events[0]",
     "an object without `type`"),
])
def test_output_contract_violations(output, code, path, received):
    problem = check_output(output)
    assert problem is not None
    assert (problem["code"], problem["path"], problem["received"]) == (code, path, received)
    assert problem.keys() >= ADVICE_FIELDS


@pytest.mark.parametrize("output", [
    {"status": "ok", "response": "fine", "events": []},
    {"status": "error", "error": {"code": "RUNNER_TOOL_TIMEOUT", "message": "slow", "retryable": True}, "events": []},
    {"status": "error", "events": [event(1)]},  # no response needed when the run failed
])
def test_valid_outputs(output):
    assert check_output(output) is None


def test_run_facts_keep_well_typed_fields_normalise_what_has_a_normal_form_and_note_the_rest():
    given = run_facts({"status": "ok", "response": "r", "framework": "lc", "sources": ["db", 3], "usage": {"inputTokens": 1},
                       "error": 42, "events": []})
    assert given.facts == {"response": "r", "framework": "lc", "usage": {"inputTokens": 1}}
    assert [(n.field, n.original, n.received, n.kept) for n in given.notes] == [
        ("error", 42, "integer", False), ("sources", ["db", 3], "array (item [1] is integer)", False)]
    given = run_facts({"status": "error", "error": "refused", "sources": "db", "events": []})
    assert given.facts == {"error": {"message": "refused"}, "sources": ["db"]}
    assert [(n.rule, n.value) for n in given.notes] == [
        ("normalize_runner_error", {"message": "refused"}), ("normalize_runner_sources", ["db"])]
    # null is nothing said; a status-"ok" response of another type fails the run (check_output), no note
    assert run_facts({"status": "ok", "response": 3, "framework": None, "usage": None, "events": []}).notes == []
    [note] = run_facts({"status": "error", "response": 3, "error": {}, "events": []}).notes
    assert note.entry()["path"] == "$.response" and "howToFix" in note.entry()


def test_a_failed_run_without_an_error_is_noted_as_the_contract_requires_one():
    """runner-output.schema.json: status "error" requires `error`; a runner that left it out was taken without a word."""
    [note] = run_facts({"status": "error", "events": []}).notes
    assert (note.field, note.received, note.kept, note.rule) == ("error", "missing", False, "check_runner_output")
    assert note.entry()["path"] == "$.error" and note.entry()["expected"] == "object" and "howToFix" in note.entry()
    assert "no `error`" in note.message
    assert run_facts({"status": "error", "error": None, "events": []}).notes[0].received == "missing"  # null is absent
    assert run_facts({"status": "ok", "response": "r", "events": []}).notes == []  # a run that went well needs none


def test_a_fact_given_as_an_array_of_strings_or_an_empty_array_is_noted_as_an_array():
    """(Naming an array's first item that is no string crashed the capture on an array with none.)"""
    given = run_facts({"status": "ok", "response": "r", "framework": ["a", "b"], "usage": [], "events": []})
    assert given.facts == {"response": "r"}
    assert [(n.field, n.received, n.kept) for n in given.notes] == [("framework", "array", False), ("usage", "array", False)]


# reading stdout -------------------------------------------------------------------------------
def test_empty_stdout():
    reply = read_reply(b"  \n")
    assert reply.problem["code"] == "E_RUNNER_EMPTY_STDOUT"
    assert reply.problem.keys() >= ADVICE_FIELDS


def test_one_pretty_printed_object():
    output = {"status": "ok", "response": "r", "events": [event(1), event(2)]}
    reply = read_reply(json.dumps(output, indent=2).encode())
    assert reply.problem is None and reply.output == output and reply.streamed == 0
    assert [c[0] for c in reply.events] == output["events"]
    assert [c[4] for c in reply.events] == ["$.events[0]", "$.events[1]"]


@pytest.mark.parametrize(("stdout", "line"), [
    (b'{"status": "ok", "response": "r", "events": [' + b"[" * 1100 + b"]" * 1100 + b"]}\n", 1),  # one line
    (b'{"status": "ok",\n "response": "r", "events": [' + b"[" * 1100 + b"]" * 1100 + b"]}\n", 2),  # one document
    (b'{"type": "run_started", "payload": {}}\n{"type": "x", "payload": ' + b"[" * 1100 + b"]" * 1100 + b"}\n"
     b'{"status": "ok", "response": "r", "events": []}\n', 2),  # a streamed event
])
def test_output_nested_deeper_than_replay_reads_is_said_so_as_parse_says_it(stdout: bytes, line: int):
    """(It was orjson's words: "depth limit exceeded".)"""
    reply = read_reply(stdout)
    problem = reply.problem
    assert problem is not None and problem["code"] == "E_RUNNER_INVALID_JSON" and problem["line"] == line
    assert f"stdout line {line} is nested deeper than 1024 levels, the most replay reads" in problem["message"]


def test_not_json_at_all():
    reply = read_reply(b"Thinking...\nAAPL is your largest holding.\n")
    assert reply.problem["code"] == "E_RUNNER_INVALID_JSON"
    assert reply.problem["line"] == 1
    assert reply.problem["received"] == "Thinking..."
    assert reply.problem.keys() >= ADVICE_FIELDS


def test_streamed_events_then_output_object():
    lines = [orjson.dumps(event(1, "run_started")), orjson.dumps(event(2)),
             orjson.dumps({"status": "ok", "response": "r", "events": [event(3, "run_completed")]})]
    data = b"\n".join(lines) + b"\n"
    reply = read_reply(data)
    assert reply.problem is None and reply.streamed == 2
    assert [c[0]["seq"] for c in reply.events] == [1, 2, 3]
    # streamed events keep their bytes and their position in stdout
    assert reply.events[0][1:4] == (lines[0], 1, 0)
    assert reply.events[1][1:4] == (lines[1], 2, len(lines[0]) + 1)
    assert reply.events[2][2] == 3 and reply.events[2][4] == "$.events[0]"


def test_stream_that_stops_without_output_keeps_its_events():
    data = orjson.dumps(event(1, "run_started")) + b"\n" + orjson.dumps(event(2)) + b"\n"
    reply = read_reply(data)
    assert [c[0]["seq"] for c in reply.events] == [1, 2]
    assert reply.output is None
    assert reply.problem["code"] == "E_RUNNER_OUTPUT_SHAPE"
    assert reply.problem["received"] == "end of stdout"


def test_single_streamed_event_is_not_taken_for_the_output():
    reply = read_reply(orjson.dumps(event(1, "run_started")))
    assert reply.streamed == 1 and reply.output is None


def test_cut_off_last_line_is_reported_not_kept():
    data = orjson.dumps(event(1)) + b"\n" + b'{"seq": 2, "type": "tool_ca'
    reply = read_reply(data)
    assert [c[0]["seq"] for c in reply.events] == [1]
    assert reply.problem["code"] == "E_RUNNER_INVALID_JSON"
    assert "cut off" in reply.problem["message"] and reply.problem["line"] == 2


def test_second_output_object_and_non_object_lines():
    two = b'{"status": "ok", "response": "a", "events": []}\n{"status": "ok", "response": "b", "events": []}\n'
    reply = read_reply(two)  # (nothing but white space may follow the output object: E_RUNNER_INVALID_JSON, as text)
    assert reply.problem["code"] == "E_RUNNER_INVALID_JSON" and reply.output["response"] == "a"
    # it says which one the run keeps, shows the one left out, and advises one output object (the runner printed
    # one with `status` and `events`, twice: "Print an object with `status` and `events`" told it nothing)
    assert "left out" in reply.problem["message"] and '"response": "b"' in reply.problem["received"]
    assert "exactly one output object" in reply.problem["howToFix"]
    scalar = orjson.dumps(event(1)) + b"\n42\n"
    problem = read_reply(scalar).problem
    assert problem["code"] == "E_RUNNER_OUTPUT_SHAPE" and problem["line"] == 2


def test_events_streamed_then_listed_again_are_kept_once():
    """A runner that streams its events and lists them again in its output object got every event twice (two
    run_started, a run_completed in the middle of the run), with no word."""
    streamed = orjson.dumps(event(1)) + b"\n" + orjson.dumps(event(2)) + b"\n"
    again = read_reply(streamed + orjson.dumps({"status": "ok", "response": "r", "events": [event(1), event(2)]}) + b"\n")
    assert [c[0]["seq"] for c in again.events] == [1, 2] and again.listed_again == 2 and again.problem is None
    other = read_reply(streamed + orjson.dumps({"status": "ok", "response": "r", "events": [event(3)]}) + b"\n")
    assert [c[0]["seq"] for c in other.events] == [1, 2, 3] and other.listed_again == 0  # (more events: all kept)


def test_events_streamed_then_listed_again_with_one_more_are_kept_once_and_the_new_one_kept():
    """An output object listing the streamed events again and then its final one had them all kept: run_started and
    user_message twice, and validate warned of the journal capture wrote itself."""
    streamed = orjson.dumps(event(1)) + b"\n" + orjson.dumps(event(2)) + b"\n"
    reply = read_reply(streamed + orjson.dumps({"status": "ok", "response": "r", "events": [event(1), event(2), event(3)]})
                       + b"\n")
    assert [c[0]["seq"] for c in reply.events] == [1, 2, 3] and reply.listed_again == 2
    assert reply.events[2][4] == "$.events[2]"  # (where the kept one is in the output object)
    changed = read_reply(streamed + orjson.dumps({"status": "ok", "response": "r", "events": [event(1), event(9)]}) + b"\n")
    assert [c[0]["seq"] for c in changed.events] == [1, 2, 1, 9] and changed.listed_again == 0  # (not all again: kept)


def test_crlf_lines_are_read():
    data = orjson.dumps(event(1)) + b"\r\n" + b'{"status": "ok", "response": "r", "events": []}\r\n'
    reply = read_reply(data)
    assert reply.problem is None and reply.events[0][1] == orjson.dumps(event(1))


events_strategy = st.lists(
    st.builds(lambda seq, etype, text: {"seq": seq, "type": etype, "runId": "run_1", "payload": {"text": text}},
              st.integers(1, 10**6), st.sampled_from(["run_started", "tool_called", "tool_end", "x"]), st.text(max_size=20)),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(events_strategy)
def test_streamed_and_single_object_forms_give_the_same_events(events):
    classic = read_reply(orjson.dumps({"status": "ok", "response": "r", "events": events}))
    streamed = read_reply(b"".join(orjson.dumps(e) + b"\n" for e in events)
                          + orjson.dumps({"status": "ok", "response": "r", "events": []}) + b"\n")
    assert classic.problem is None and streamed.problem is None
    assert [c[0] for c in classic.events] == [c[0] for c in streamed.events] == events


@settings(max_examples=150, deadline=None)
@given(events_strategy, st.data())
def test_a_stream_cut_anywhere_keeps_every_complete_event_line(events, data):
    stream = b"".join(orjson.dumps(e) + b"\n" for e in events)
    cut = data.draw(st.integers(0, len(stream)))
    reply = read_reply(stream[:cut])
    ends, end = [], 0
    for e in events:
        end += len(orjson.dumps(e))
        ends.append(end)  # where the event's JSON ends: past it, the event is whole, newline or not
        end += 1
    complete = sum(1 for e in ends if e <= cut)
    assert [c[0] for c in reply.events] == events[:complete]
    if events and cut < len(stream):
        assert reply.problem is not None  # a cut stream never passes for a finished run


# the schema -------------------------------------------------------------------------------------
def example_output(runner: str) -> dict:
    request = runner_request("What are my top holdings?", "run_test", datetime.now(UTC), {})
    done = subprocess.run([sys.executable, str(EXAMPLES / "runners" / runner)], input=orjson.dumps(request),
                          capture_output=True, check=True)
    return json.loads(done.stdout)


def test_example_runner_output_matches_the_schema():
    output = example_output("echo_runner.py")
    output_validator().validate(output)
    assert check_output(output) is None


def test_broken_example_breaks_only_its_events():
    """Capture takes the broken runner's output (the object holds); the schema flags the events heal repairs."""
    output = example_output("broken_trace_runner.py")
    assert check_output(output) is None
    errors = output_validator().iter_errors(output)
    assert sorted(list(e.absolute_path)[-1] for e in errors) == ["payload", "seq"]


def test_schema_rejects_what_the_reader_rejects():
    for bad in ([1], {"events": []}, {"status": "ok", "events": []}, {"status": "ok", "response": "r", "events": {}}):
        assert check_output(bad) is not None
        assert not output_validator().is_valid(bad)


def test_schema_accepts_each_streamed_line():
    validator = output_validator("#/$defs/streamedLine")
    validator.validate(event(1))
    validator.validate({"status": "ok", "response": "r", "events": []})
    assert not validator.is_valid({"status": "ok", "events": []})


@pytest.mark.parametrize(("last", "message", "column"), [
    (b'{"seq": 2, "type": "tool_ca', "is cut off (no newline, not valid JSON)", 28),
    (b'{"seq": 2, "text": "caf\xc3', "is cut off (no newline, not valid JSON)", 25),  # in the middle of a character
    (b'{"seq": 2, "text": "a\x00b"}', "is not valid JSON: unexpected control character in string (U+0000) at column 22", 22),
    (b'{"seq": 2, "text": "\xc3\xa9\x1b"}', "is not valid JSON: unexpected control character in string (U+001B) at column 23", 23),
    (b'{"seq": 2, "text": x', "is not valid JSON: unexpected character, expected a JSON value ('x') at column 20", 20),
    (b'{"seq": 2, "text": "\xff"}', "is not valid JSON: byte 0xff at column 21 is not UTF-8 (invalid start byte)", 21),
])
def test_a_last_line_without_newline_is_cut_off_only_when_it_is_the_start_of_a_json_text(last, message, column):
    reply = read_reply(orjson.dumps(event(1)) + b"\n" + last)
    assert reply.problem["code"] == "E_RUNNER_INVALID_JSON"
    assert reply.problem["message"] == f"stdout line 2 {message}" and reply.problem["column"] == column


PRETTY = json.dumps({"status": "ok", "response": "hé", "events": []}, indent=2).encode()


@pytest.mark.parametrize(("stdout", "line", "column", "says"), [
    (PRETTY + b"\nlog line leak\n", 6, 1, "stdout line 6 follows the output object (line 1): nothing but white space"),
    (PRETTY[:-5], 4, 12, "is cut off: stdout ends inside the output object"),
    (PRETTY[:20] + b"\xff" + PRETTY[20:], 3, 1, "byte 0xff at column 1 is not UTF-8"),
])
def test_an_output_object_over_several_lines_that_does_not_parse_is_reported_where_reading_stopped(stdout, line, column,
                                                                                                   says):
    """`json.dumps(output, indent=2)` and then a stray print, or cut off: the error was at line 1, column 2 (its `{`,
    no JSON on its own line), where nothing is wrong."""
    problem = read_reply(stdout).problem
    assert problem is not None and problem["code"] == "E_RUNNER_INVALID_JSON"
    assert (problem["line"], problem["column"]) == (line, column) and says in problem["message"], problem
    assert problem["offset"] == len(b"\n".join(stdout.split(b"\n")[:line - 1])) + (line > 1)


def test_an_output_object_over_several_lines_after_streamed_events_is_read():
    """README: stream events as lines, "then the answer object last"; pretty-printed, it was E_RUNNER_INVALID_JSON at
    its `{` when it came after an event (it was read alone only). Its array of strings has lines that are JSON alone
    (`"b"`): the object is read as the document it is, from its first line to stdout's end."""
    output = {"status": "ok", "response": "done", "sources": ["a", "b"], "events": [event(3)]}
    streamed = orjson.dumps(event(1)) + b"\n" + orjson.dumps(event(2)) + b"\n"
    reply = read_reply(streamed + json.dumps(output, indent=2).encode() + b"\n\n")
    assert reply.problem is None and reply.output == output and reply.streamed == 2
    assert [c[0] for c in reply.events] == [event(1), event(2), event(3)]
    assert [(c[2], c[4]) for c in reply.events] == [(1, None), (2, None), (3, "$.events[0]")]
    twice = read_reply(streamed + b'{\n  "status": "ok",\n  "status": "ok", "response": "r", "events": []}').duplicates
    assert twice == [{"keys": ["$.status"], "line": 5, "column": 3, "offset": len(streamed) + 20}]  # (its line's start)


def test_what_spans_lines_after_streamed_events_and_is_no_output_object_is_said_so():
    one = orjson.dumps(event(1)) + b"\n"
    pretty_event = json.dumps(event(2), indent=2).encode() + b"\n"
    leak = read_reply(one + PRETTY + b"\nlog line leak\n")  # (the output object, then more: as on one line)
    problem = leak.problem
    assert problem["code"] == "E_RUNNER_INVALID_JSON" and problem["line"] == 7, problem
    assert "follows the output object (line 2)" in problem["message"] and "last thing" in problem["howToFix"]
    assert leak.output["response"] == "hé" and [c[0] for c in leak.events] == [event(1)]
    last = read_reply(one + pretty_event).problem  # an event over several lines, and no output object
    assert last["code"] == "E_RUNNER_OUTPUT_SHAPE" and last["message"].startswith("stdout lines 2-10 are one event"), last
    before = read_reply(one + pretty_event + b'{"status": "ok", "response": "r", "events": []}\n')
    assert before.problem["code"] == "E_RUNNER_OUTPUT_SHAPE" and before.problem["line"] == 2, before.problem
    assert before.output["response"] == "r" and [c[0] for c in before.events] == [event(1)]  # (left out, the rest read)


def test_a_usage_member_that_is_no_count_is_left_out_with_a_note_and_a_null_one_is_absent():
    given = run_facts({"status": "ok", "response": "r", "events": [],
                       "usage": {"inputTokens": "12", "outputTokens": None, "costUsd": 0.5, "model": "m"}})
    assert given.facts["usage"] == {"costUsd": 0.5, "model": "m"}
    [note] = given.notes
    assert note.entry()["code"] == "E_USAGE_NOT_COUNTED" and note.entry()["field"] == "usage.inputTokens"
    assert "usage" not in run_facts({"status": "ok", "response": "r", "events": [], "usage": {"inputTokens": True}}).facts


ints = st.integers(-(2**63), 2**63 - 1)  # (what orjson writes)
not_events = st.one_of(ints, st.text(max_size=5), st.none(), st.booleans(), st.lists(ints, max_size=2))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.builds(event, st.integers(1, 99)), not_events), max_size=8))
def test_an_item_that_is_no_event_is_refused_and_left_out_listed_or_streamed_alike(items):
    """A non-object in the output object's `events` was kept (the run "ok"), while the same value streamed as a line
    failed the run (E_RUNNER_OUTPUT_SHAPE) and was left out: both forms now give the same events and the same code."""
    listed = read_reply(orjson.dumps({"status": "ok", "response": "r", "events": items}))
    streamed = read_reply(b"".join(orjson.dumps(e) + b"\n" for e in items)
                          + orjson.dumps({"status": "ok", "response": "r", "events": []}) + b"\n")
    kept = [e for e in items if isinstance(e, dict)]
    assert [c[0] for c in listed.events] == [c[0] for c in streamed.events] == kept
    code = "E_RUNNER_OUTPUT_SHAPE" if len(kept) < len(items) else None
    assert (listed.problem or {}).get("code") == (streamed.problem or {}).get("code") == code
    bad = [k for k, e in enumerate(items) if not isinstance(e, dict)]  # every one left out is said, not the first only
    assert [d["path"] for d in listed.left_out] == [f"$.events[{k}]" for k in bad]
    assert [d["line"] for d in streamed.left_out] == [k + 1 for k in bad]
    assert listed.left_out[:1] == ([listed.problem] if bad else []) and streamed.left_out[:1] == ([streamed.problem] if bad else [])


text_line = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), min_size=1, max_size=8)
after_output = st.one_of(st.builds(event, st.integers(1, 99)).map(orjson.dumps),
                         st.just(b'{"status": "ok", "response": "again", "events": []}'),
                         text_line.filter(str.strip).map(str.encode))


@settings(max_examples=150, deadline=None)
@given(events_strategy, st.lists(after_output, min_size=1, max_size=3), st.sampled_from([None, 2]))
def test_whatever_follows_the_output_object_is_refused_and_left_out(events, after, indent):
    """README: "nothing but white space may follow" the output object. An event line after a one-line output object
    was kept as a run event, without a word; text after it, or anything after a pretty-printed one, failed the run.
    Now each fails it (E_RUNNER_INVALID_JSON, at the first line after the object); the events before it are kept."""
    output = {"status": "ok", "response": "r", "events": []}
    head = b"".join(orjson.dumps(e) + b"\n" for e in events) + json.dumps(output, indent=indent).encode() + b"\n"
    reply = read_reply(head + b"\n".join(after) + b"\n")
    assert [c[0] for c in reply.events] == events and reply.output == output
    problem = reply.problem
    assert problem is not None and problem["code"] == "E_RUNNER_INVALID_JSON", problem
    assert problem["line"] == head.count(b"\n") + 1 and problem["offset"] == len(head), problem
    assert "follows the output object" in problem["message"]


# an event's `type`, and the members of a runner's `error` ----------------------------------------------
json_scalars = st.one_of(st.none(), st.booleans(), ints, st.text(max_size=4))
type_values = st.one_of(json_scalars, st.lists(json_scalars, max_size=2), st.dictionaries(st.text(max_size=2), ints, max_size=1))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.builds(event, st.integers(1, 99)), type_values.map(lambda t: {"type": t, "payload": {}})),
                max_size=6))
def test_an_event_whose_type_is_no_non_empty_string_is_refused_and_left_out_listed_or_streamed_alike(items):
    """An event with "type": "", 5 or ["a"] was taken (only the key was looked for): into the journal and the healed copy,
    which capture then refused itself (E_HEALED_ARTIFACT_INVALID, the summary still "ok"). README: each event "is an
    object with a `type`: a line or an item that is not fails the run (E_RUNNER_OUTPUT_SHAPE ...) and is left out";
    event.schema.json's `type` (runner-output.schema.json's runnerEvent refers to it) is a non-empty string."""
    listed = read_reply(orjson.dumps({"status": "ok", "response": "r", "events": items}))
    lines = [orjson.dumps(e) + b"\n" for e in items]
    streamed = read_reply(b"".join(lines) + orjson.dumps({"status": "ok", "response": "r", "events": []}) + b"\n")
    kept = [e for e in items if isinstance(e["type"], str) and e["type"]]
    assert [c[0] for c in listed.events] == [c[0] for c in streamed.events] == kept
    bad = next((k for k, e in enumerate(items) if e not in kept), None)
    if bad is None:
        assert listed.problem is None and streamed.problem is None
        return
    assert listed.problem["code"] == streamed.problem["code"] == "E_RUNNER_OUTPUT_SHAPE"
    assert listed.problem["path"] == f"$.events[{bad}]" and streamed.problem["line"] == bad + 1, streamed.problem
    assert streamed.problem["offset"] == sum(map(len, lines[:bad]))
    assert "`type`" in listed.problem["received"] and listed.problem["received"] == streamed.problem["received"]
    assert output_validator().is_valid({"status": "ok", "response": "r", "events": items}) is False  # the schema agrees


def test_the_schema_holds_an_events_type_to_a_non_empty_string_as_the_reader_does():
    validator = output_validator("#/$defs/streamedLine")
    for etype in ("", 5, ["a"], None):
        assert not validator.is_valid({"type": etype})
        reply = read_reply(orjson.dumps({"type": etype}) + b'\n{"status": "ok", "response": "r", "events": []}\n')
        assert reply.problem["code"] == "E_RUNNER_OUTPUT_SHAPE" and reply.problem["line"] == 1 and reply.events == []
        assert reply.output == {"status": "ok", "response": "r", "events": []}
    assert validator.is_valid({"type": "x"})


@pytest.mark.parametrize(("error", "kept", "member", "received"), [
    ({"code": 5, "message": "m"}, {"message": "m"}, "code", "integer"),
    ({"code": "X", "message": 3}, {"code": "X"}, "message", "integer"),
    ({"code": "X", "message": "m", "retryable": "yes"}, {"code": "X", "message": "m"}, "retryable", "string"),
])
def test_an_error_member_of_another_type_is_left_out_with_a_notice_the_rest_kept(error, kept, member, received):
    """A runner's `error` was kept whole whatever its members held: capture then refused its own healed copy
    (E_HEALED_ARTIFACT_INVALID at $.error.code, exit 1). Each member is held to validation's MEMBERS, as usage's are."""
    given = run_facts({"status": "error", "error": {**error, "detail": {"n": 1}}, "events": []})
    assert given.facts == {"error": {**kept, "detail": {"n": 1}}}  # (a member MEMBERS does not name is kept as it is)
    [note] = given.notes
    entry = note.entry()
    assert (entry["code"], entry["field"], entry["path"]) == ("E_RUNNER_FIELD_INVALID", f"error.{member}", f"$.error.{member}")
    assert entry["original"] == error[member] and entry["received"] == received and not note.kept
    assert entry["expected"] == ("boolean" if member == "retryable" else "string") and "howToFix" in entry
    assert f"`error.{member}` is a" in note.message and "left out of the run record's error" in note.message


def test_an_error_of_nothing_but_members_of_another_type_says_nothing_and_a_null_member_is_absent():
    given = run_facts({"status": "error", "error": {"code": 5, "retryable": "yes"}, "events": []})
    assert "error" not in given.facts and [n.entry()["field"] for n in given.notes] == [
        "error.code", "error.retryable", "error"]  # (the last: the run record cannot say why it failed, as with none)
    assert given.notes[-1].received == "missing"
    [note] = run_facts({"status": "error", "error": 42, "events": []}).notes  # (of another type: its own note says so)
    assert (note.field, note.received) == ("error", "integer")
    given = run_facts({"status": "error", "error": {"code": None, "message": "m"}, "events": []})
    assert given.facts == {"error": {"message": "m"}} and given.notes == []


# an event printed over several lines -------------------------------------------------------------------
payloads = st.recursive(st.one_of(json_scalars, st.just({})), lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)), max_leaves=6)
printed_events = st.tuples(st.builds(lambda seq, p: {"seq": seq, "type": "tool_called", "payload": {"p": p}},
                                     st.integers(1, 99), payloads), st.sampled_from([None, 2, 4]))


@settings(max_examples=150, deadline=None)
@given(st.lists(printed_events, max_size=6), st.sampled_from([None, 2]))
def test_an_event_printed_over_several_lines_is_left_out_and_the_rest_of_the_stream_read(printed, indent):
    """README: only the answer object may span lines; an event that is none as a line "fails the run ... and is left
    out; the answer object and the events before it are kept". A pretty-printed event on stdout's first line made
    capture read all of stdout as one broken output object: no event, no answer (found by a read-only tester, hunt 23).
    Each event printed over several lines is now left out at its first line, every one-line event and the answer kept."""
    output = {"status": "ok", "response": "r", "events": []}
    lines, first_bad = [], None
    for ev, ind in printed:
        if ind is not None and first_bad is None:
            first_bad = len(lines) + 1
        lines.extend(json.dumps(ev, indent=ind).split("\n"))
    stdout = "\n".join(lines + json.dumps(output, indent=indent).split("\n")).encode() + b"\n"
    reply = read_reply(stdout)
    assert reply.output == output
    assert [c[0] for c in reply.events] == [ev for ev, ind in printed if ind is None]
    problem = reply.problem
    if first_bad is None:
        assert problem is None, problem
    else:
        assert problem is not None and problem["code"] == "E_RUNNER_OUTPUT_SHAPE" and problem["line"] == first_bad, problem
        assert "printed over several lines" in problem["message"], problem


def test_what_is_printed_over_several_lines_and_is_no_event_is_named_and_left_out():
    stdout = b'[\n  1,\n  2\n]\n{\n  "type": 5\n}\n' + orjson.dumps(event(1)) + b'\n{"status": "ok", "response": "r", "events": []}\n'
    reply = read_reply(stdout)
    assert reply.problem["message"].startswith("stdout lines 1-4 are an array printed over several lines"), reply.problem
    assert [c[0] for c in reply.events] == [event(1)] and reply.output["response"] == "r"
    alone = read_reply(json.dumps(event(1), indent=2).encode())  # (an event alone, no output object: as before)
    assert alone.problem["message"].startswith("stdout lines 1-9 are one event") and not alone.events


# a line that is no JSON and closes what it opens; a log line in a stream ------------------------------------
tricky_text = st.text(st.sampled_from('ab{}[]"\\,: é\n'), max_size=12)
answers = st.builds(lambda response, extra: {"status": "ok", "response": response, "events": [], "x": extra},
                    tricky_text, st.recursive(tricky_text, lambda inner: st.one_of(
                        st.lists(inner, max_size=3), st.dictionaries(tricky_text, inner, max_size=3)), max_leaves=5))
one_line_faults = st.sampled_from([b"{'type': 'debug'}", b'{"type": "x",}', b'{"v": NaN}', b'{"t": "caf\xe9"}',
                                   b'["a",]', b'{"a": "}{[" ]', b'{"a": 1}}'])


@settings(max_examples=150, deadline=None)
@given(answers, st.sampled_from([1, 2, 4]), one_line_faults, st.sampled_from([0, 1, 2]))
def test_a_one_line_fault_is_left_out_alone_wherever_it_is_and_an_output_object_over_lines_still_read(output, indent, bad, at):
    """A first line that opens `{` and is no JSON made the whole of stdout one broken output object (hunt 25): every
    event and the answer lost. Only a line that leaves open what it opens begins a document over several lines; the
    output object pretty-printed (any strings in it: brackets, quotes, back slashes) is still read as one."""
    lines = [orjson.dumps(event(1)), orjson.dumps(event(2))]
    lines.insert(at, bad)
    reply = read_reply(b"\n".join(lines) + b"\n" + json.dumps(output, indent=indent).encode() + b"\n")
    assert reply.output == output and [c[0] for c in reply.events] == [event(1), event(2)]
    assert reply.problem["code"] == "E_RUNNER_INVALID_JSON" and reply.problem["line"] == at + 1, reply.problem
    assert "output object" not in reply.problem["message"], reply.problem
    assert reply.left_out == [reply.problem]  # (left out, said by capture whatever ended the runner)
    alone = read_reply(json.dumps(output, indent=indent).encode())  # (the output object alone, over several lines)
    assert alone.problem is None and alone.output == output


def test_a_log_line_is_neither_an_event_nor_the_output_object_and_one_with_a_status_is_the_output_object():
    answer = {"status": "ok", "response": "r", "events": [event(3)]}
    log = {"level": "info", "msg": "agent starting"}
    reply = read_reply(b"\n".join(orjson.dumps(v) for v in (event(1), log, event(2), answer)) + b"\n")
    assert reply.output == answer and [c[0] for c in reply.events] == [event(1), event(2), event(3)]
    assert reply.left_out == [reply.problem] and reply.problem["code"] == "E_RUNNER_OUTPUT_SHAPE", reply.problem
    assert reply.problem["line"] == 2 and '"level"' in reply.problem["received"], reply.problem
    pretty = read_reply(orjson.dumps(event(1)) + b"\n" + json.dumps(log, indent=2).encode() + b"\n" + orjson.dumps(answer))
    assert pretty.output == answer and pretty.problem["message"].startswith("stdout lines 2-5 are an object without `type`")
    first = read_reply(json.dumps(log, indent=2).encode() + b"\n" + orjson.dumps(answer))  # (on stdout's first line)
    assert first.output == answer and first.problem["line"] == 1, first.problem
    # one with a `status` (or `response`, `events`) is the output object, wrong as it is: what follows it is said
    shaped = read_reply(b"\n".join(orjson.dumps(v) for v in ({"type": 5}, {"status": 200}, answer)) + b"\n")
    assert shaped.output == {"status": 200} and [p["code"] for p in shaped.left_out] == [
        "E_RUNNER_OUTPUT_SHAPE", "E_RUNNER_INVALID_JSON"] and shaped.left_out[1]["line"] == 3
    alone = read_reply(orjson.dumps(log))  # (all of stdout one document: the output object, whatever its members)
    assert alone.output == log and alone.problem["code"] == "E_RUNNER_STATUS_INVALID"


# what is left out is said whatever ended the runner; a document stdout ends inside is torn -------------------
def test_each_line_that_is_no_json_is_left_out_and_said_not_only_the_first():
    """A line that is no JSON was the run's problem only (``Reply.note``): when the runner then crashed or timed out,
    the process's failure was the run's error and the line went unsaid (hunt 26, e/02); a second such line went unsaid
    always. Each is now one of ``left_out`` (which capture says whatever ended the runner), the first the run's problem."""
    lines = [orjson.dumps(event(1)), b"{'type': 'debug', 'msg': 'step 1'}", orjson.dumps(event(2)), b'{"type": "x",}',
             b"Thinking..."]
    reply = read_reply(b"\n".join(lines) + b"\n")
    assert [c[0] for c in reply.events] == [event(1), event(2)] and reply.torn is None
    assert [(p["code"], p["line"], p["offset"]) for p in reply.left_out] == [
        ("E_RUNNER_INVALID_JSON", n, len(b"\n".join(lines[:n - 1])) + 1) for n in (2, 4, 5)], reply.left_out
    assert reply.problem is reply.left_out[0]


STARTED_LINE = orjson.dumps(event(1, "run_started")) + b"\n"
CUT_ANSWER = json.dumps({"status": "ok", "response": "partial answer", "events": []}, indent=2).encode()[:-25]


@pytest.mark.parametrize("before", [b"", STARTED_LINE], ids=["alone", "after-an-event"])
@pytest.mark.parametrize("cut", [CUT_ANSWER, b'{\n  "status": "ok",\n  "response": "partial answer",\n',
                                 b'{\n  "status": "ok",\n  "response": "caf\xc3'],
                         ids=["mid-line", "after-a-newline", "mid-character"])
def test_a_document_over_several_lines_that_stdout_ends_inside_is_torn_as_a_cut_off_last_line_is(before, cut):
    """A runner killed while it printed its answer pretty-printed (hunt 26, e/01): a last line cut off so was torn (a
    drop_torn_line repair in capture's heal log); over several lines, its fault was the run's problem only, unsaid when
    the timeout or the crash was the run's error. It is torn now, from its first line to stdout's end (a newline ends no
    document; nor a character cut in two), not one of ``left_out``; the run's problem still says where it stops."""
    reply = read_reply(before + cut)
    first = 2 if before else 1
    assert reply.torn == {"line": first, "offset": len(before), "original": cut.decode("utf-8", "replace")}, reply.torn
    last = first + cut.rstrip().count(b"\n")
    assert reply.torn_said == (f"stdout's last lines {first}-{last} (from byte {len(before)}) are one "
                               "document that stdout ends inside: the write was cut off"), reply.torn_said
    assert reply.left_out == [] and reply.events == ([] if not before else reply.events[:1])
    problem = reply.problem
    assert problem["code"] == "E_RUNNER_INVALID_JSON" and "is cut off: stdout ends inside the output object" in problem["message"]
    if not cut.endswith(b"\xc3"):  # (the error is where the writing stopped: the document's last line, as the repair says)
        assert problem["line"] == last and problem["message"].startswith(f"stdout line {last} "), problem
    one_line = read_reply(before + b'{"status": "ok", "response": "partial ans')  # (the same on one line, as ever)
    assert one_line.torn is not None and one_line.left_out == [] and "has no newline" in one_line.torn_said


def test_a_document_over_several_lines_with_a_fault_in_it_is_left_out_and_said_once_the_lines_after_it_read_on():
    """A pretty-printed answer with a NaN in it (Python's json.dumps writes one): left out and said where reading it
    stopped, its lines to there no line of their own; the lines after it are read one by one, as ever."""
    broken = json.dumps({"status": "ok", "usage": {"cost": float("nan")}, "events": []}, indent=2).encode()
    answer = orjson.dumps({"status": "ok", "response": "r", "events": []})
    reply = read_reply(STARTED_LINE + broken + b"\n" + orjson.dumps(event(2)) + b"\n" + answer + b"\n")
    assert reply.torn is None and reply.output == json.loads(answer)
    assert [c[0] for c in reply.events] == [event(1, "run_started"), event(2)]
    said = [(p["code"], p["line"]) for p in reply.left_out]
    assert said[0] == ("E_RUNNER_INVALID_JSON", 5) and "reading the output object that begins on line 2" in \
        reply.left_out[0]["message"], reply.left_out
    assert all(line > 5 for _code, line in said[1:]), said  # (lines 2-4 are the document's: no error of their own)
    assert reply.problem is reply.left_out[0]
