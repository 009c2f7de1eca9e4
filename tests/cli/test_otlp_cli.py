"""`replay export --otlp` as a real process: one ExportTraceServiceRequest per run, one per line, to stdout or a
file written atomically (corpus attribution: tests/fixtures/corpus/SOURCES.md)."""

from __future__ import annotations

import base64

import orjson
from conftest import errors_of, jsonl, run_replay
from dialect_support import CORPUS
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

CLAUDE = CORPUS / "claude-code" / "representative_messages.jsonl"


def parse(line: dict) -> ExportTraceServiceRequest:
    for rs in line["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return json_format.Parse(orjson.dumps(line), ExportTraceServiceRequest())


def test_export_after_heal_writes_one_request_per_run(tmp_path):
    read = run_replay("read", str(CLAUDE), str(CORPUS / "claude-code" / "session_b.jsonl"))
    healed = run_replay("heal", input=read.stdout)
    done = run_replay("export", "--otlp", input=healed.stdout)
    assert done.returncode == 0, done.stderr
    requests = [parse(line) for line in jsonl(done.stdout)]
    assert len(requests) == 2
    names = [[s.name for s in r.resource_spans[0].scope_spans[0].spans] for r in requests]
    assert names[0][:2] == ["invoke_agent claude-code", "chat claude-3-sonnet-20240229"]
    assert "execute_tool Bash" in names[0]


def test_export_reads_an_agent_log_directly_into_a_file(tmp_path):
    out = tmp_path / "traces.jsonl"
    path = CORPUS / "openhands" / "wrong_initial_state.json"
    done = run_replay("export", "--otlp", str(path), "--out", str(out))
    assert done.returncode == 0 and done.stdout == b""
    (request,) = [parse(line) for line in jsonl(out.read_bytes())]
    spans = request.resource_spans[0].scope_spans[0].spans
    assert sum(1 for s in spans if s.name.startswith("execute_tool")) == 3
    assert [p.name for p in tmp_path.iterdir()] == ["traces.jsonl"]  # no temp file left


def test_export_needs_a_format():
    done = run_replay("export", str(CLAUDE))
    assert done.returncode == 2 and done.stdout == b""
    assert errors_of(done.stderr)[0]["code"] == "E_USAGE_INVALID"
