"""parse with ``fields`` (what report binds: every field a summary reads) decodes less of each line and changes no
report: the same summaries, the same diagnostics at the same positions, for real logs, generated journals and
lines made to exercise every field a summary reads (issue 11)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import orjson
import pytest
from conftest import CORPUS, EXAMPLES, ROOT, run_replay
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_screen import journals

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.inline import run_inline
from replay.pipeline.io.journals import LineCutter
from replay.pipeline.model.toolcalls import call_print
from replay.pipeline.report.model import SUMMARY_FIELDS, SUMMARY_WHOLE_TYPES
from replay.stages.parse import ParseLines, projection_decoder
from replay.stages.summarize import SummarizeRuns

# A line nested deeper than parse reads (1024 levels). On 3.12+ msgspec's depth follows the C stack: lines between
# 1025 levels and that depth (~1,500 on 3.12, ~10,000 on 3.13) are the README's known limit, so the line is deeper there.
DEEP = 1100 if sys.version_info < (3, 12) else 20_000

SPEC = (ROOT / "pipeline" / "specs" / "report.toml").read_text()


def summaries(data: bytes, fields: list[str], per_batch: int = 7,
              whole_types: tuple[str, ...] = ()) -> tuple[list[dict], list[dict]]:
    """The summary records and the diagnostics of parse (with ``fields``, and ``whole_types`` decoded whole) and
    summarize over ``data``, cut as ``read`` cuts it, at most ``per_batch`` lines a batch, fed in pieces of 300 bytes."""
    cutter = LineCutter("j.jsonl", batch_events=per_batch)
    batches = [item for k in range(0, len(data), 300) for item in cutter.feed(data[k:k + 300])] + cutter.finish()
    assert all(isinstance(batch, Batch) for batch in batches)
    done = run_inline([ParseLines(fields=fields, whole_types=list(whole_types)), SummarizeRuns(timeline=True, heal_logs=False)], batches)
    return done.records, done.side.get("errors", [])


def assert_same_report(data: bytes, per_batch: int = 7) -> None:
    whole, errors = summaries(data, [], per_batch)
    projected, projected_errors = summaries(data, list(SUMMARY_FIELDS), per_batch, SUMMARY_WHOLE_TYPES)
    assert projected_errors == errors
    assert len(projected) == len(whole)
    for got, expected in zip(projected, whole, strict=True):
        assert got == expected
        assert exactjson.typed_equal(got, expected)  # (a number a double does not hold, as written: ``==`` takes its double)


# lines that exercise every field a summary reads -------------------------------------------------------
USAGES = [{"inputTokens": 10, "outputTokens": 2}, {"input_tokens": 3, "completion_tokens": 4, "cost_usd": 0.25},
          {"promptTokens": 1.5, "costUsd": 2**70}, {"inputTokens": None, "prompt_tokens": 7}, "many",
          {"outputTokens": 3, "costUsd": exactjson.ExactNumber("0.25000000000000000000001")}, {}]
NAMES = [{"toolName": "bash"}, {"tool": "grep"}, {"name": "web"}, {"toolName": "", "name": "x"}, {"tool": 5}, {}]
IDS = [{"callId": "c1"}, {"toolCallId": "c1"}, {"id": "c2"}, {"callId": "", "id": "c1"}, {"callId": 7}, {}]
ERRORS = [{"error": {"code": "E1", "message": "boom"}}, {"error": "plain"}, {"message": "m", "code": "C"},
          {"reason": "r"}, {"error": {"code": 5}}, {"error": {"code": exactjson.ExactNumber("0.1000000000000000000001")}},
          {"code": exactjson.ExactNumber("1e-400")}, {}]
EXTRA = [{"durationMs": 12}, {"durationMs": 1.5}, {"durationMs": -1}, {"durationMs": True},
         {"content": [{"text": "long " * 20}], "args": {"deep": [[{"x": 12345678901234567890123}]]}}, {}]
# a call's arguments: a call of an id answered already with others is a new call (``OpenCalls.written_again``)
ARGS = [{"args": {"cmd": "ls"}}, {"args": {"cmd": "pwd"}}, {"arguments": {"n": 1}}, {"arguments": {"n": 1.0}}, {}]
TYPES = ["run_started", "tool_called", "tool_completed", "tool_failed", "run_failed", "run_completed",
         "assistant_message", "user_message", 5, "", "tool_start", "tool_use", "tool_end"]  # (and aliases)
RECORDS = [{"$record": "run", "runId": "r1", "artifactId": "a", "framework": "f", "prompt": "p", "status": "error",
            "error": {"code": "X", "message": "y"}, "usage": {"inputTokens": 4}},
           {"$record": "heal", "runId": "r1", "summary": {"total": 2, "byRule": {"alias": 2}}},
           {"$record": "source", "source": "other.jsonl"}]


def line(rng: random.Random, seq: int, rid: str) -> bytes:
    if rng.random() < 0.05:
        return orjson.dumps(rng.choice(RECORDS))
    payload: dict = {}
    for options in (USAGES, NAMES, IDS, ERRORS, EXTRA, ARGS):
        if rng.random() < 0.5:
            choice = rng.choice(options)
            payload.update({"usage": choice} if options is USAGES else choice)
    event = {"seq": seq if rng.random() < 0.9 else str(seq), "timestamp": f"2026-03-01T12:00:{seq % 60:02d}.{seq % 1000:03d}Z",
             "type": rng.choice(TYPES), "runId": rid, "payload": payload}
    if rng.random() < 0.05:
        event["payload"] = rng.choice(["text", None, [1]])
    if rng.random() < 0.05:
        del event["runId"]
    if rng.random() < 0.05:
        event["timestamp"] = rng.choice([1767225600, "yesterday", "2026-03-01T12:00:00+02:00"])
    text = exactjson.dumps(event)
    if rng.random() < 0.03:  # a key written twice: the last one counts, as for a whole decode
        text = text[:-1] + b',"type":"tool_failed"}'
    if rng.random() < 0.03:
        text = rng.choice([b"{not json", b"[1, 2]", b"", b'{"seq": 1e400, "type": "x"}', b'{"type": "\xff"}',
                           b'{"type": "\\ud800"}', b'{"a":' + b"[" * DEEP + b"]" * DEEP + b"}"])
    return text


# an answered call's id used again by a call of the same tool with other arguments: two calls, also projected
REUSED = b"".join(orjson.dumps({"seq": n, "timestamp": f"2026-03-01T12:00:0{n}Z", "type": kind, "runId": "r1",
                                "payload": payload}) + b"\n" for n, (kind, payload) in enumerate([
    ("run_started", {}), ("tool_called", {"callId": "c1", "toolName": "bash", "args": {"cmd": "ls"}}),
    ("tool_completed", {"callId": "c1", "output": "a"}),
    ("tool_called", {"callId": "c1", "toolName": "bash", "args": {"cmd": "pwd"}}), ("run_completed", {})], 1))


def test_a_call_of_an_answered_id_with_other_arguments_is_a_new_call_in_a_projected_summary():
    [summary], _ = summaries(REUSED, list(SUMMARY_FIELDS), 7, SUMMARY_WHOLE_TYPES)
    assert summary["toolCalls"]["total"] == 2, summary["toolCalls"]


@pytest.mark.parametrize("alias", ["tool_start", "tool_use", "tool_call"])
def test_a_call_under_an_alias_of_an_answered_id_with_other_arguments_is_a_new_call_too(alias: str):
    """A summary reads an alias of tool_called as a tool_called (``CANONICAL_TYPES``): its whole payload is kept too."""
    data = REUSED.replace(b'"tool_called"', b'"%s"' % alias.encode())
    [summary], _ = summaries(data, list(SUMMARY_FIELDS), 7, SUMMARY_WHOLE_TYPES)
    assert summary["toolCalls"]["total"] == 2, summary["toolCalls"]
    assert_same_report(data)


@st.composite
def report_journals(draw: st.DrawFn) -> bytes:
    rng = random.Random(draw(st.integers(0, 2**32)))
    out = [line(rng, seq, f"r{rng.randrange(3)}") for seq in range(1, draw(st.integers(1, 60)))]
    return b"\n".join(out) + (b"\n" if rng.random() < 0.8 else b"")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(report_journals(), st.sampled_from([1, 7, 64]))
@example(REUSED, 7)
def test_a_summary_of_the_fields_it_reads_is_the_summary_of_the_whole_events(data: bytes, per_batch: int):
    assert_same_report(data, per_batch)


@st.composite
def call_journals(draw: st.DrawFn) -> bytes:
    """A run of calls and results over two call ids and two tools, each id used again with the same arguments or
    others (``ARGS``)."""
    kinds, ids, tools = ["tool_called", "tool_completed", "tool_failed"], ["c1", "c2"], ["bash", "grep"]
    events = [("run_started", {})]
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(kinds))
        payload = {"callId": draw(st.sampled_from(ids))}
        if kind == "tool_called":
            payload |= {"toolName": draw(st.sampled_from(tools)), **draw(st.sampled_from(ARGS))}
        events.append((kind, payload))
    events.append(("run_completed", {}))
    return b"".join(orjson.dumps({"seq": n, "timestamp": f"2026-03-01T12:00:{n:02d}Z", "type": kind, "runId": "r1",
                                  "payload": payload}) + b"\n" for n, (kind, payload) in enumerate(events, 1))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(call_journals(), st.sampled_from([1, 3, 64]))
@example(REUSED, 7)
def test_a_projected_summary_pairs_calls_of_ids_used_again_as_a_whole_one(data: bytes, per_batch: int):
    assert_same_report(data, per_batch)


# A call's payload as a writer may write it (the text): whitespace anywhere JSON allows it, keys in any order and one
# written twice, characters escaped or not, halves of surrogate pairs, and numbers of every spelling: those a double
# holds (1, 1.0, 1.00, 1e0, -0.0), and those it does not (beyond 64 bits, 0.1000000000000000000001, 1e400, 1.5e-400, an
# integer of more digits than Python reads)
NUMBER_TEXTS = ["0", "-0", "1", "-1", "1.0", "1.00", "1e0", "1E+0", "10e-1", "-0.0", "0.5", "2.5e-3", "1e300", "1e-300",
                "0.1", "0.30000000000000004", "3.141592653589793", "9007199254740993", "18446744073709551615",
                "18446744073709551616", "-9223372036854775809", "123456789012345678901234567890",
                "0.1000000000000000000001", "0.10000000000000000000010", "3.14159265358979323846", "1e400", "-1E400",
                "1.5e-400", "5e-324", "4.9e-324", "1.7976931348623157e308", "1.8e308", "0e99999999999999999999",
                "1" + "0" * 4300, "1" * 4301]
STRING_TEXTS = ['"x"', '"\\u0078"', '""', '"a b"', '"\\"\\\\/\\n"', '"\\/"', '"é"', '"\\u00e9"', '"\\ud83d\\ude00"',
                '"😀"', '"\\ud800"', '"\\udfff x"', '"\\u0000"', '"tool_called"', '"1"']
SPACE = st.sampled_from(["", "", " ", "\t", "  "])


@st.composite
def json_texts(draw: st.DrawFn, depth: int = 0) -> str:
    """A JSON value's text, written as a writer may write it."""
    kind = draw(st.sampled_from(["number", "string", "literal", "array", "object", "object"] if depth < 4
                                else ["number", "string", "literal"]))
    if kind == "number":
        return draw(st.sampled_from(NUMBER_TEXTS) | st.integers(-10**20, 10**20).map(str)
                    | st.floats(allow_nan=False, allow_infinity=False).map(repr)
                    | st.decimals(allow_nan=False, allow_infinity=False, places=draw(st.integers(0, 25))).map(str))
    if kind == "string":
        return draw(st.sampled_from(STRING_TEXTS) | st.text(max_size=8).map(lambda t: orjson.dumps(t).decode()))
    if kind == "literal":
        return draw(st.sampled_from(["true", "false", "null"]))
    items = draw(st.lists(json_texts(depth + 1), max_size=4))
    if kind == "array":
        return "[" + ",".join(f"{draw(SPACE)}{item}{draw(SPACE)}" for item in items) + "]"
    keys = draw(st.lists(st.sampled_from(["a", "b", "\\u0061", "callId", "args", "n", "toolName"]),
                         min_size=len(items), max_size=len(items)))
    return "{" + ",".join(f'{draw(SPACE)}"{key}"{draw(SPACE)}:{draw(SPACE)}{item}{draw(SPACE)}'
                          for key, item in zip(keys, items, strict=True)) + "}"


DEEP_PAYLOAD = '{"callId":"c1","args":' + "[" * 300 + "1.0" + "]" * 300 + "}"  # (orjson writes 255 levels, reads 1024)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(json_texts(), min_size=1, max_size=6), st.sampled_from(["", " ", "\t"]))
@example(['{"callId":"c1","args":{"a":1}}', '{ "args" : {"a":1} , "callId":"c1" }', '{"callId":"c1","args":{"a":1.0}}',
          '{"callId":"c1","args":{"a":true}}', '{"callId":"c1","args":{"a":0.1000000000000000000001}}',
          '{"callId":"c1","args":{"a":0.1}}', '{"callId":"c1","a":1,"a":2}', DEEP_PAYLOAD], "")
@example(['{"callId":"c1","n":1e400}', '{"callId":"c1","n":"\\ud800"}', '{"callId":"c1","n":1}'], " ")
def test_a_call_keeps_its_payload_as_a_whole_decode_reads_it(payloads: list[str], space: str):
    """The report's parse keeps a tool_called's whole payload (``whole_types``) as the whole line's exact decode reads
    it (``exactjson``, what parse gives without ``fields``): the same value, the same types (1, 1.0 and true three;
    a number a double does not hold as written), and so the same ``call_print``, the print that tells a call written
    again from a new call of its id. A batch of such calls, each alone, after and before other events."""
    lines = [b'{"seq":1,"timestamp":"2026-03-01T12:00:00Z","type":"run_started","runId":"r1","payload":{}}']
    lines += [(f'{{"seq":{n}{space},"type":"tool_called","runId":"r1","payload":{space}{payload}{space},"turn":1}}')
              .encode() for n, payload in enumerate(payloads, 2)]
    lines.append(b'{"seq":99,"type":"tool_completed","runId":"r1","payload":{"callId":"c1","output":[1.0]}}')
    for batch in ([Batch.from_lines(lines, "j.jsonl")], [Batch.from_lines([line], "j.jsonl") for line in lines]):
        done = run_inline([ParseLines(fields=list(SUMMARY_FIELDS), whole_types=list(SUMMARY_WHOLE_TYPES))], batch)
        assert len(done.records) == len(lines)
        for event, line in zip(done.records, lines, strict=True):
            whole = exactjson.loads(line)
            if event["type"] not in SUMMARY_WHOLE_TYPES:
                continue
            assert exactjson.typed_equal(event["payload"], whole["payload"])
            kept, written = (exactjson.dumps(value["payload"], option=orjson.OPT_SORT_KEYS) for value in (event, whole))
            assert kept == written
            assert call_print(event["payload"]) == call_print(whole["payload"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(journals())
def test_the_same_summaries_for_journals_made_to_break_every_rule(data: bytes):
    assert_same_report(data)


@pytest.mark.parametrize("path", sorted([*CORPUS.rglob("*.jsonl"), *(EXAMPLES / "journals").glob("*.jsonl")]),
                         ids=lambda p: p.name[:40])
def test_the_report_of_a_real_log_is_the_same_bytes_with_and_without_the_projection(tmp_path: Path, path: Path):
    whole = tmp_path / "whole.toml"
    whole.write_text(SPEC.replace('type = "summarize"', 'type = "summarize"\ntimeline = false', 1)
                     .replace('type = "report"', 'type = "report"\nformat = "json"', 1))
    projected = run_replay("report", "--format", "json", str(path))
    assert projected.stdout == run_replay("run", str(whole), str(path)).stdout
    assert projected.stderr == run_replay("run", str(whole), str(path)).stderr
    assert_same_report(path.read_bytes())


def test_the_projection_keeps_the_fields_named_and_records_whole():
    decoder = projection_decoder(("type", "payload.callId", "payload.usage"))
    event = decoder.decode(b'{"type": "t", "seq": 1, "payload": {"callId": "c", "usage": {"a": [1]}, "big": "x"}}')
    assert event == {"type": "t", "seq": 1, "payload": {"callId": "c", "usage": {"a": [1]}}}  # (seq: whose line it is)
    parse = ParseLines(fields=["type"])
    lines = [b'{"type": "t", "seq": 1, "runId": "r"}', b'{"$record": "run", "runId": "r", "prompt": "p"}']
    done = run_inline([parse], [Batch.from_lines(lines, "j.jsonl")])
    assert done.records == [{"type": "t", "seq": 1, "runId": "r"}, {"$record": "run", "runId": "r", "prompt": "p"}]


def test_a_line_the_projection_refuses_is_reported_where_it_is_and_the_rest_still_flow():
    lines = [b'{"type": "a", "seq": 1}', b'{"type": "b", "payload": "text"}', b"{oops", b'{"type": "c"}']
    done = run_inline([ParseLines(fields=["type", "payload.callId"])], [Batch.from_lines(lines, "j.jsonl")])
    # a payload that is no object cannot be projected: that batch is decoded whole, and the bad line reported
    assert done.records == [{"type": "a", "seq": 1}, {"type": "b", "payload": "text"}, {"type": "c"}]
    [error] = done.side["errors"]
    assert (error["code"], error["line"], error["offset"]) == ("E_JSONL_LINE_INVALID", 3, 57)


def test_parse_stages_of_one_projection_share_its_decoder():
    """A run over many inputs makes a parse stage for each: the decoder (its TypedDicts) is made once."""
    first, again = ParseLines(fields=["type", "payload.callId"]), ParseLines(fields=["type", "payload.callId"])
    assert first._projection is again._projection is not None
    assert ParseLines(fields=["type"])._projection is not first._projection
