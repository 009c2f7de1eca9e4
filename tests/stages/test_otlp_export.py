"""OTLP/JSON export: each run's request parses as an ExportTraceServiceRequest (opentelemetry-proto, through
protobuf's JSON mapping), with one root span, model-call and tool spans under it, their kinds, and attribute names
from the GenAI semantic conventions (corpus attribution: fixtures/corpus/SOURCES.md)."""

from __future__ import annotations

import base64
import inspect
import re
from typing import Any

import orjson
import pytest
from dialect_support import CORPUS, CORPUS_FILES, heal_dialect
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.inline import run_inline
from replay.stages.export_otlp import ExportOtlp

SAMPLE = CORPUS / "claude-code" / "representative_messages.jsonl"


def known_gen_ai_names() -> tuple[set[str], set[str]]:
    """(every gen_ai.* attribute name the conventions define, the ones replaced by another name)."""
    source = inspect.getsource(gen_ai_attributes)
    names, replaced = set(), set()
    for value, doc in re.findall(r'^GEN_AI_\w+: Final = "([^"]+)"\n"""\n(.*?)"""', source, flags=re.MULTILINE | re.DOTALL):
        names.add(value)
        if "Replaced by" in doc:
            replaced.add(value)
    return names, replaced


OPERATIONS = {v.value for v in gen_ai_attributes.GenAiOperationNameValues}
GEN_AI_NAMES, REPLACED = known_gen_ai_names()


def export(data: bytes, source: str) -> list[dict[str, Any]]:
    return heal_dialect(data, source, extra=[ExportOtlp()]).records


def to_proto(request: dict[str, Any]) -> ExportTraceServiceRequest:
    """OTLP/JSON writes trace and span ids as hex; protobuf's JSON mapping wants base64 for bytes."""
    body = orjson.loads(orjson.dumps(request))
    for rs in body["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return json_format.Parse(orjson.dumps(body), ExportTraceServiceRequest())


def attrs(span: Span) -> dict[str, Any]:
    out = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        value = getattr(kv.value, kind)
        out[kv.key] = [getattr(v, v.WhichOneof("value")) for v in value.values] if kind == "array_value" else value
    return out


def spans_of(request: dict[str, Any]) -> list[Span]:
    proto = to_proto(request)
    (rs,) = proto.resource_spans
    (ss,) = rs.scope_spans
    return list(ss.spans)


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_corpus_run_exports_a_valid_trace(path):
    (request,) = export(path.read_bytes(), str(path))
    spans = spans_of(request)
    (root,) = [s for s in spans if not s.parent_span_id]
    assert len(root.trace_id) == 16 and len(root.span_id) == 8
    assert attrs(root)["gen_ai.operation.name"] == "invoke_agent" and root.kind == Span.SPAN_KIND_INTERNAL
    for span in spans:
        assert span.trace_id == root.trace_id and len(span.span_id) == 8
        assert span.start_time_unix_nano <= span.end_time_unix_nano
        values = attrs(span)
        assert values["gen_ai.operation.name"] in OPERATIONS
        for key in values:
            if key.startswith("gen_ai."):
                assert key in GEN_AI_NAMES and key not in REPLACED, key
        if span is root:
            continue
        assert span.parent_span_id == root.span_id
        assert root.start_time_unix_nano <= span.start_time_unix_nano <= span.end_time_unix_nano <= root.end_time_unix_nano
        operation = values["gen_ai.operation.name"]
        if operation == "chat":
            assert span.kind == Span.SPAN_KIND_CLIENT and "gen_ai.provider.name" in values
        else:
            assert operation == "execute_tool" and span.kind == Span.SPAN_KIND_INTERNAL
            assert values["gen_ai.tool.name"] and values["gen_ai.tool.type"] == "function"
    assert len({s.span_id for s in spans}) == len(spans)


def test_model_calls_carry_their_tokens_and_the_root_the_totals():
    records = [orjson.loads(line) for line in SAMPLE.read_bytes().splitlines()]
    (request,) = export(SAMPLE.read_bytes(), "s.jsonl")
    spans = spans_of(request)
    chats = [attrs(s) for s in spans if s.kind == Span.SPAN_KIND_CLIENT]
    usage = [r["message"]["usage"] for r in records if r["type"] == "assistant"]
    assert [(c["gen_ai.usage.input_tokens"], c["gen_ai.usage.output_tokens"]) for c in chats] == \
        [(u["input_tokens"], u["output_tokens"]) for u in usage]
    assert [c["gen_ai.response.id"] for c in chats] == [r["message"]["id"] for r in records if r["type"] == "assistant"]
    assert chats[0]["gen_ai.provider.name"] == "anthropic" and chats[0]["gen_ai.request.model"] == "claude-3-sonnet-20240229"
    assert chats[1]["gen_ai.response.finish_reasons"] == ["tool_use"]
    root = attrs(spans[0])
    assert root["gen_ai.usage.output_tokens"] == sum(u["output_tokens"] for u in usage)
    assert root["gen_ai.conversation.id"] == "test_session"
    tools = [attrs(s) for s in spans if attrs(s)["gen_ai.operation.name"] == "execute_tool"]
    assert [(t["gen_ai.tool.name"], t["gen_ai.tool.call.id"]) for t in tools] == [("Edit", "tool_001"), ("Bash", "tool_002")]


def test_errors_set_the_status_and_error_type():
    parts = SAMPLE.read_bytes().splitlines()
    del parts[8]  # tool_002 never got its result
    (request,) = export(b"\n".join(parts) + b"\n", "s.jsonl")
    spans = {attrs(s).get("gen_ai.tool.call.id"): s for s in spans_of(request)}
    assert spans["tool_002"].status.code == Status.STATUS_CODE_ERROR
    assert attrs(spans["tool_002"])["error.type"] == "tool_unanswered"
    assert spans["tool_001"].status.code == Status.STATUS_CODE_UNSET
    edge = CORPUS / "claude-code" / "edge_cases.jsonl"
    (request,) = export(edge.read_bytes(), str(edge))
    failed = next(s for s in spans_of(request) if attrs(s).get("gen_ai.tool.call.id") == "tool_edge_001")
    assert failed.status.code == Status.STATUS_CODE_ERROR and attrs(failed)["error.type"] == "tool_failed"
    assert "Command not found" in failed.status.message
    root = next(s for s in spans_of(request) if not s.parent_span_id)
    # the session ends without saying how: heal closes it with its run_failed of status unknown, which is no failure
    # of the run (its span unset, as the raw log's), where a run_failed the run wrote is
    assert root.status.code == Status.STATUS_CODE_UNSET


def test_a_failed_tools_error_type_is_its_error_code_as_a_failed_runs_is():
    """A tool span's error.type was always `tool_failed`, where the run's span had the run's error code (ETIMEDOUT)."""
    head = b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r","payload":{}}\n'
    call = b'{"seq":2,"timestamp":"2026-03-01T12:00:01.000Z","type":"tool_called","runId":"r","payload":{"callId":"c1","toolName":"http_get"}}\n'
    for error, expected in [(b'{"code":"ETIMEDOUT","message":"timed out"}', "ETIMEDOUT"), (b'"boom"', "tool_failed"),
                            (b'{"code":504,"message":"gateway"}', "504")]:
        failed = b'{"seq":3,"timestamp":"2026-03-01T12:00:02.000Z","type":"tool_failed","runId":"r","payload":{"callId":"c1","error":%s}}\n' % error
        (request,) = export(head + call + failed, "r.jsonl")
        tool = next(s for s in spans_of(request) if attrs(s).get("gen_ai.tool.call.id") == "c1")
        assert tool.status.code == Status.STATUS_CODE_ERROR and attrs(tool)["error.type"] == expected, error


def test_a_run_failed_the_run_wrote_fails_its_span_and_heals_end_does_not():
    end = b'{"seq":3,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_failed","runId":"r","payload":%s%s}\n'
    head = (b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r","payload":{}}\n'
            b'{"seq":2,"timestamp":"2026-03-01T12:00:01.000Z","type":"user_message","runId":"r","payload":{}}\n')
    for payload, synthetic, code in [
        (b'{"status":"unknown","reason":"journal ended without a terminal event"}', b',"synthetic":true', Status.STATUS_CODE_UNSET),
        (b'{"status":"unknown","reason":"journal ended without a terminal event"}', b"", Status.STATUS_CODE_ERROR),
        (b'{"error":{"code":"E_BOOM","message":"boom"}}', b',"synthetic":true', Status.STATUS_CODE_ERROR),
    ]:
        (request,) = export(head + end % (payload, synthetic), "r.jsonl")
        root = next(s for s in spans_of(request) if not s.parent_span_id)
        assert root.status.code == code, (payload, synthetic)


def test_codex_tool_only_responses_are_model_calls_and_token_counts_land_on_them():
    events = [
        {"seq": 1, "timestamp": "2026-01-01T00:00:00.000Z", "type": "user_message", "runId": "r", "payload": {"text": "go"}},
        {"seq": 2, "timestamp": "2026-01-01T00:00:02.000Z", "type": "tool_called", "runId": "r",
         "payload": {"callId": "c1", "toolName": "shell"}},
        {"seq": 3, "timestamp": "2026-01-01T00:00:03.000Z", "type": "event_msg.token_count", "runId": "r",
         "payload": {"usage": {"input_tokens": 7, "output_tokens": 2}}},
        {"seq": 4, "timestamp": "2026-01-01T00:00:05.000Z", "type": "tool_completed", "runId": "r", "payload": {"callId": "c1"}},
    ]
    (request,) = run_inline([ExportOtlp()], [Batch.of(events, "r.jsonl")]).records
    chat, tool = spans_of(request)[1:]
    assert attrs(chat)["gen_ai.operation.name"] == "chat" and attrs(chat)["gen_ai.usage.input_tokens"] == 7
    assert (chat.start_time_unix_nano, chat.end_time_unix_nano) == (1767225600 * 10**9, 1767225602 * 10**9)
    assert tool.end_time_unix_nano - tool.start_time_unix_nano == 3 * 10**9


def test_a_leap_second_is_a_time_of_the_trace_counted_as_the_last_microsecond_of_its_day():
    events = [
        {"seq": 1, "timestamp": "2016-12-31T23:59:59.500Z", "type": "user_message", "runId": "r", "payload": {"text": "go"}},
        {"seq": 2, "timestamp": "2016-12-31T23:59:60.250Z", "type": "tool_called", "runId": "r",
         "payload": {"callId": "c1", "toolName": "shell"}},
        {"seq": 3, "timestamp": "2016-12-31T18:59:60.750-05:00", "type": "tool_completed", "runId": "r", "payload": {"callId": "c1"}},
        {"seq": 4, "timestamp": "2017-01-01T00:00:00.500Z", "type": "run_completed", "runId": "r", "payload": {}},
    ]
    (request,) = run_inline([ExportOtlp()], [Batch.of(events, "r.jsonl")]).records
    spans = spans_of(request)
    assert attrs(spans[0]).get("replay.timestamps_out_of_range") is None
    new_year = 1483228800 * 10**9  # 2017-01-01T00:00:00Z
    assert (spans[0].start_time_unix_nano, spans[0].end_time_unix_nano) == (new_year - 500_000_000, new_year + 500_000_000)
    (tool,) = [s for s in spans if attrs(s)["gen_ai.operation.name"] == "execute_tool"]
    assert tool.start_time_unix_nano == tool.end_time_unix_nano == new_year - 1000


def test_one_request_per_run_and_the_same_input_gives_the_same_bytes():
    data = SAMPLE.read_bytes()
    first = run_inline([ExportOtlp()], [Batch.of(heal_dialect(data, "a.jsonl").records, "<stdin>")]).records
    again = run_inline([ExportOtlp()], [Batch.of(heal_dialect(data, "a.jsonl").records, "<stdin>")]).records
    assert orjson.dumps(first) == orjson.dumps(again)
    two = heal_dialect(data, "a.jsonl").records + heal_dialect((CORPUS / "claude-code" / "session_b.jsonl").read_bytes(), "b.jsonl").records
    requests = run_inline([ExportOtlp()], [Batch.of(two, "<stdin>")]).records
    trace_ids = [r["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] for r in requests]
    assert len(requests) == 2 and len(set(trace_ids)) == 2
