"""`replay export --otlp` as a real process: one ExportTraceServiceRequest per run, one per line, to stdout or a
file written atomically (corpus attribution: tests/fixtures/corpus/SOURCES.md)."""

from __future__ import annotations

import base64

import orjson
from conftest import EXAMPLES, errors_of, jsonl, run_replay
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
    """Its advice names the flag to add (it was the catalogue's "Run `replay COMMAND --help`", a placeholder)."""
    done = run_replay("export", str(CLAUDE))
    assert done.returncode == 2 and done.stdout == b""
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_USAGE_INVALID" and "COMMAND" not in error["howToFix"]
    assert "replay export --otlp" in error["howToFix"]


def journal_line(seq: int, etype: str, stamp: str, payload: str = "{}") -> bytes:
    return (f'{{"seq":{seq},"timestamp":"{stamp}","type":"{etype}","runId":"r1","payload":{payload}}}\n').encode()


def one_call(usage: str, first: str = "2026-03-01T12:00:00.000Z", last: str = "2026-03-01T12:00:01.000Z") -> bytes:
    """A run of one model call with ``usage``, its events timed ``first`` then ``last``."""
    return (b'{"$record":"run","runId":"r1","status":"ok","framework":"example"}\n'
            + journal_line(1, "run_started", first) + journal_line(2, "user_message", first, '{"text":"hi"}')
            + journal_line(3, "assistant_message", last, f'{{"text":"yo","model":"claude-x","usage":{usage}}}')
            + journal_line(4, "run_completed", last))


def spans_by_name(stdout: bytes) -> dict:
    (request,) = [parse(line) for line in jsonl(stdout)]
    return {s.name: s for s in request.resource_spans[0].scope_spans[0].spans}


def attribute_values(span) -> dict:
    return {kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in span.attributes}


def test_token_counts_otlp_cannot_hold_as_int64_are_written_as_their_text(tmp_path):
    journal = tmp_path / "f.jsonl"
    journal.write_bytes(one_call('{"inputTokens":1e400,"outputTokens":123456789012345678901234567890,'
                                 '"cache_read_input_tokens":9223372036854775807}'))
    done = run_replay("export", "--otlp", str(journal))
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    spans = spans_by_name(done.stdout)  # every line parses as OTLP/JSON
    for name in ("invoke_agent example", "chat claude-x"):
        found = attribute_values(spans[name])
        # (input_tokens includes the cache's, as the GenAI conventions have it: 1e400 and the last int64, exactly)
        assert found["gen_ai.usage.input_tokens"] == str(10**400 + 2**63 - 1)
        assert found["gen_ai.usage.output_tokens"] == "123456789012345678901234567890"
        assert found["gen_ai.usage.cache_read.input_tokens"] == 2**63 - 1  # the last int64 is still an int


def test_times_a_fixed64_cannot_hold_are_left_out_and_counted(tmp_path):
    for first, last, start, end, left_out in [
        ("1960-03-01T12:00:01.500Z", "2026-03-01T12:00:01.000Z", 1772366401000000000, 1772366401000000000, 2),
        ("2026-03-01T12:00:00.000Z", "9999-12-31T23:59:59.999Z", 1772366400000000000, 1772366400000000000, 2),
        ("1970-01-01T00:00:01.500Z", "2554-07-21T23:34:33.709551Z", 1_500_000_000, 18446744073709551000, 0),
    ]:
        journal = tmp_path / "f.jsonl"
        journal.write_bytes(one_call('{"inputTokens":1}', first, last))
        done = run_replay("export", "--otlp", str(journal))
        assert done.returncode == 0 and done.stderr == b"", done.stderr
        root = spans_by_name(done.stdout)["invoke_agent example"]
        assert (root.start_time_unix_nano, root.end_time_unix_nano) == (start, end)
        assert attribute_values(root).get("replay.timestamps_out_of_range", 0) == left_out


def test_an_error_code_or_run_id_that_is_no_string_is_written_as_its_json(tmp_path):
    """They were written as Python writes them (`['E_X', 2]`, `{'id': 7}`): text no reader of the trace can parse."""
    journal = tmp_path / "f.jsonl"
    journal.write_bytes(b'{"$record":"run","runId":{"id":7},"status":"error","framework":"example"}\n'
                        + journal_line(1, "run_started", "2026-03-01T12:00:00.000Z").replace(b'"runId":"r1",', b"")
                        + journal_line(2, "run_failed", "2026-03-01T12:00:01.000Z",
                                       '{"error":{"code":["E_X",2],"message":"m"}}').replace(b'"runId":"r1",', b""))
    done = run_replay("export", "--otlp", str(journal))
    assert done.returncode == 0, done.stderr
    found = attribute_values(spans_by_name(done.stdout)["invoke_agent example"])
    assert found["error.type"] == '["E_X",2]' and found["gen_ai.conversation.id"] == '{"id":7}'


def test_two_runs_of_one_id_in_one_input_are_two_traces(tmp_path):
    """A run journaled twice under one id (a retry), or two runs with no id, made two requests with the same trace id
    and the same span ids: a backend merges them into one trace whose spans clash."""
    journal = tmp_path / "f.jsonl"
    journal.write_bytes(one_call('{"inputTokens":1}') * 2)
    first = run_replay("export", "--otlp", str(journal))
    assert first.returncode == 0, first.stderr
    requests = [parse(line) for line in jsonl(first.stdout)]
    spans = [[s for s in r.resource_spans[0].scope_spans[0].spans] for r in requests]
    assert len(spans) == 2 and len({s[0].trace_id for s in spans}) == 2
    assert len({span.span_id for trace in spans for span in trace}) == sum(len(trace) for trace in spans)
    assert run_replay("export", "--otlp", str(journal)).stdout == first.stdout  # the same input, the same bytes


def test_a_captured_run_s_usage_is_the_run_span_s_token_count(tmp_path):
    """A run captured through a runner has its usage on the run record only (the runner protocol's `usage`): the
    run's span had no token counts at all, where `replay report` counts the run's 120 in and 40 out."""
    journal = tmp_path / "captured.jsonl"
    journal.write_bytes(b'{"$record":"run","runId":"r1","status":"ok","framework":"example",'
                        b'"usage":{"inputTokens":120,"outputTokens":40,"costUsd":0.0021}}\n'
                        + journal_line(1, "run_started", "2026-03-01T12:00:00.000Z")
                        + journal_line(2, "assistant_message", "2026-03-01T12:00:01.000Z", '{"text":"yo"}')
                        + journal_line(3, "run_completed", "2026-03-01T12:00:01.000Z"))
    done = run_replay("export", "--otlp", str(journal), process=True)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    found = attribute_values(spans_by_name(done.stdout)["invoke_agent example"])
    assert (found["gen_ai.usage.input_tokens"], found["gen_ai.usage.output_tokens"]) == (120, 40)
    report = orjson.loads(run_replay("report", "--format", "json", str(journal), process=True).stdout)
    assert report["runs"][0]["usage"]["inputTokens"] == 120 and report["runs"][0]["usage"]["outputTokens"] == 40


def test_errors_are_read_as_the_report_reads_them(tmp_path):
    """A run record's error written as a bare message is the run span's status message, and a tool's integer error
    code its digits, as `replay report` shows them (the export read errors its own way: no message, no code)."""
    journal = tmp_path / "f.jsonl"
    journal.write_bytes(b'{"$record":"run","runId":"r1","status":"error","error":"model quota exceeded","framework":"example"}\n'
                        + journal_line(1, "run_started", "2026-03-01T12:00:00.000Z")
                        + journal_line(2, "tool_called", "2026-03-01T12:00:01.000Z", '{"callId":"c1","toolName":"get"}')
                        + journal_line(3, "tool_failed", "2026-03-01T12:00:02.000Z",
                                       '{"callId":"c1","error":{"code":500,"message":"server error"}}')
                        + journal_line(4, "run_failed", "2026-03-01T12:00:03.000Z", '{"code":503,"message":"gave up"}'))
    done = run_replay("export", "--otlp", str(journal))
    assert done.returncode == 0, done.stderr
    spans = spans_by_name(done.stdout)
    assert spans["execute_tool get"].status.message == "server error"
    assert (attribute_values(spans["invoke_agent example"])["error.type"], spans["invoke_agent example"].status.message) \
        == ("503", "gave up")
    record_only = tmp_path / "g.jsonl"
    record_only.write_bytes(journal.read_bytes().split(b"\n")[0] + b"\n" + journal_line(1, "run_started", "2026-03-01T12:00:00.000Z"))
    root = spans_by_name(run_replay("export", "--otlp", str(record_only)).stdout)["invoke_agent example"]
    assert (attribute_values(root)["error.type"], root.status.message) == ("run_failed", "model quota exceeded")


def test_a_token_count_written_as_a_float_beyond_int64_is_its_digits_not_a_double(tmp_path):
    """The GenAI token attributes are ints; a count OTLP cannot hold as an int64 is a stringValue of its digits (as
    1e400 is one of its text). `1e20` and `9223372036854775808.0` (2**63) were doubleValues, on the call's span and on
    the run's."""
    journal = tmp_path / "f.jsonl"
    journal.write_bytes(one_call('{"inputTokens":1e20,"outputTokens":9223372036854775808.0,"cache_read_input_tokens":7.0}'))
    done = run_replay("export", "--otlp", str(journal))
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    spans = spans_by_name(done.stdout)
    for name in ("invoke_agent example", "chat claude-x"):
        found = attribute_values(spans[name])
        assert found["gen_ai.usage.input_tokens"] == "100000000000000000007"  # (the cache's 7 too)
        assert found["gen_ai.usage.output_tokens"] == "9223372036854775808"
        assert found["gen_ai.usage.cache_read.input_tokens"] == 7


def test_a_token_count_written_as_a_large_float_is_the_number_written_and_sums_exactly(tmp_path):
    """`1e40` tokens were the double's binary value (10000000000000000303786028427003666890752), on the call's span and
    in the run's total beside another call's 1 too: each is the number written (as report counts it), summed exactly."""
    journal = tmp_path / "f.jsonl"
    stamp = "2026-03-01T12:00:00.000Z"
    journal.write_bytes(b'{"$record":"run","runId":"r1","status":"ok","framework":"example"}\n'
                        + journal_line(1, "run_started", stamp)
                        + b"".join(journal_line(seq, "assistant_message", stamp,
                                                f'{{"text":"yo","model":"claude-x","usage":{{"inputTokens":{count}}}}}')
                                   for seq, count in ((2, "1e40"), (3, "1")))
                        + journal_line(4, "run_completed", stamp))
    done = run_replay("export", "--otlp", str(journal))
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    (request,) = [parse(line) for line in jsonl(done.stdout)]
    spans = request.resource_spans[0].scope_spans[0].spans
    counts = {(span.name, value) for span in spans for key, value in attribute_values(span).items()
              if key == "gen_ai.usage.input_tokens"}
    assert counts == {("chat claude-x", str(10**40)), ("chat claude-x", 1), ("invoke_agent example", str(10**40 + 1))}


def test_half_a_surrogate_pair_is_written_as_its_escape_so_the_line_parses(tmp_path):
    """A JavaScript writer (Claude Code) leaves half a surrogate pair where it cut a string in an emoji: valid JSON,
    but no text protobuf takes (`Unpaired surrogate`), so the line did not parse as OTLP/JSON. Such a string is written
    with the six characters of its escape, as text reports show it."""
    journal = tmp_path / "f.jsonl"
    run_id = r"r\ud83d"
    journal.write_bytes(
        f'{{"$record":"run","runId":"{run_id}","framework":"fw\\udfff"}}\n'.encode()
        + journal_line(1, "tool_called", "2026-03-01T12:00:00.000Z", r'{"toolName":"T\ud800","callId":"c1"}').replace(b'"r1"', f'"{run_id}"'.encode())
        + journal_line(2, "tool_failed", "2026-03-01T12:00:01.000Z", r'{"callId":"c1","error":{"message":"cut \ud83d"}}').replace(b'"r1"', f'"{run_id}"'.encode()))
    done = run_replay("export", "--otlp", str(journal))
    assert done.returncode == 0, done.stderr
    spans = spans_by_name(done.stdout)  # (parses as an ExportTraceServiceRequest)
    assert set(spans) == {"invoke_agent fw\\udfff", "chat", "execute_tool T\\ud800"}
    assert spans["execute_tool T\\ud800"].status.message == "cut \\ud83d"
    assert attribute_values(spans["chat"])["gen_ai.conversation.id"] == "r\\ud83d"


def _spans(lines: list[dict]) -> dict[str, dict]:
    return {span["spanId"]: span for line in lines for span in line["resourceSpans"][0]["scopeSpans"][0]["spans"]}


def test_a_long_run_goes_in_several_requests_of_one_trace_holding_the_same_spans(tmp_path, monkeypatch):
    """A run's spans were all held until its end: the export of one run of 200,000 events took 779 MiB (3 GiB for
    800,000). Past 2,000 spans held, the finished ones go out in a request of their own: the same spans, ids,
    parents and times as one request would hold, the run's own span (and its totals) in the last request."""
    from replay.pipeline.report import otlp

    events = [{"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started", "runId": "r1", "payload": {}}]
    for k in range(2500):
        at = f"2026-03-01T12:{k // 60 % 60:02d}:{k % 60:02d}"
        events += [{"type": "user_message", "timestamp": at + ".100Z", "payload": {"text": "go"}},
                   {"type": "assistant_message", "timestamp": at + ".200Z", "payload": {"usage": {"inputTokens": 3}}},
                   {"type": "tool_called", "timestamp": at + ".300Z", "payload": {"callId": f"c{k}", "toolName": "bash"}},
                   {"type": "tool_completed", "timestamp": at + ".400Z", "payload": {"callId": f"c{k}"}}]
    events.append({"type": "tool_called", "timestamp": "2026-03-01T14:00:00.000Z",
                   "payload": {"callId": "open", "toolName": "bash"}})  # (never answered: in the last request)
    events.append({"type": "run_completed", "timestamp": "2026-03-01T14:00:01.000Z", "payload": {}})
    journal = tmp_path / "long.jsonl"
    journal.write_bytes(b"".join(orjson.dumps({**e, "seq": n, "runId": "r1"}) + b"\n" for n, e in enumerate(events, 1)))
    done = run_replay("export", "--otlp", str(journal))
    assert done.returncode == 0, done.stderr
    lines = jsonl(done.stdout)
    assert len(lines) == 3 and all(parse(orjson.loads(orjson.dumps(line))) for line in lines)
    monkeypatch.setattr(otlp, "SPANS_PER_REQUEST", 10**9)
    [whole] = jsonl(run_replay("export", "--otlp", str(journal)).stdout)
    assert _spans(lines) == _spans([whole]) and len(_spans(lines)) == 5003  # (the run, 2,501 model calls, 2,501 tools)
    root = lines[-1]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert "parentSpanId" not in root and root["name"].startswith("invoke_agent")
    assert {line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] for line in lines} == {root["traceId"]}


def trace_ids(done) -> list[str]:
    assert done.returncode == 0, done.stderr
    return [line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] for line in jsonl(done.stdout)]


def test_one_file_gives_one_trace_id_however_it_is_named(tmp_path):
    """The ids were hashed from the path as typed: `two-runs.jsonl`, `./two-runs.jsonl`, its absolute path or a path
    from another folder gave other trace ids for the same runs, so exporting again from elsewhere made every trace
    twice. A local file's ids come from its resolved path; `replay.source` still shows it as it was named."""
    here = tmp_path / "here"
    here.mkdir()
    journal = here / "two-runs.jsonl"
    journal.write_bytes((EXAMPLES / "journals" / "two-runs.jsonl").read_bytes())
    (tmp_path / "link.jsonl").symlink_to(journal)
    named = [("two-runs.jsonl", here), ("./two-runs.jsonl", here), (str(journal), tmp_path),
             ("here/two-runs.jsonl", tmp_path), ("../here/two-runs.jsonl", here), ("link.jsonl", tmp_path)]
    ids = {name: trace_ids(run_replay("export", "--otlp", name, cwd=cwd, process=True)) for name, cwd in named}
    assert len(ids["two-runs.jsonl"]) == 2 and len(set(ids["two-runs.jsonl"])) == 2
    assert all(found == ids["two-runs.jsonl"] for found in ids.values()), ids
    done = run_replay("export", "--otlp", "./two-runs.jsonl", cwd=here)
    assert b'"replay.source","value":{"stringValue":"./two-runs.jsonl"}' in done.stdout
    # stdin stays "<stdin>": the same bytes piped give the same ids wherever they come from, other ones than the file's
    piped = trace_ids(run_replay("export", "--otlp", input=journal.read_bytes()))
    assert piped == trace_ids(run_replay("export", "--otlp", input=journal.read_bytes(), cwd=here))
    assert not set(piped) & set(ids["two-runs.jsonl"])
