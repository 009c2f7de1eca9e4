"""``replay export --otlp`` agrees with ``replay report`` on a run's exact token totals and on a tool result without its
call, and writes no request of more than ``SPANS_PER_REQUEST`` spans, calls never answered included. Real processes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
from conftest import jsonl, run_replay


def _write(path: Path, events: list[tuple[str, dict]]) -> Path:
    path.write_bytes(b"".join(
        orjson.dumps({"seq": n, "timestamp": _at(n), "type": kind, "runId": "r1", "payload": {}})
        .replace(b'"payload":{}', b'"payload":' + (payload if isinstance(payload, bytes) else orjson.dumps(payload)))
        + b"\n" for n, (kind, payload) in enumerate(events, 1)))
    return path


def _at(second: int) -> str:
    return (datetime(2026, 3, 1, 12, tzinfo=UTC) + timedelta(seconds=second)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _spans(stdout: bytes) -> list[dict]:
    return [span for line in jsonl(stdout) for span in line["resourceSpans"][0]["scopeSpans"][0]["spans"]]


def _attrs(span: dict) -> dict:
    return {kv["key"]: next(iter(kv["value"].values())) for kv in span["attributes"]}


def test_a_token_count_beyond_a_double_sums_exactly_with_the_others_as_report_counts(tmp_path):
    """1e400 output tokens and 1 more: the run's span said "inf" (the doubles' sum), where report counts 10**400 + 1.
    A call's own two usage objects (one response written in two parts) add up so too; a lone 1e400 stays its text."""
    journal = _write(tmp_path / "big.jsonl", [
        ("run_started", {}),
        ("assistant_message", b'{"text":"a","model":"gpt-4o","messageId":"m1","usage":{"input_tokens":5,"output_tokens":1e400}}'),
        ("assistant_message", b'{"text":"a","model":"gpt-4o","messageId":"m1","usage":{"input_tokens":1,"output_tokens":2}}'),
        ("assistant_message", b'{"text":"b","model":"gpt-4o","usage":{"input_tokens":10,"output_tokens":1e400}}'),
        ("assistant_message", b'{"text":"c","model":"gpt-4o","usage":{"input_tokens":10,"output_tokens":1}}'),
        ("run_completed", {})])
    done = run_replay("export", "--otlp", str(journal), process=True)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    spans = _spans(done.stdout)
    outputs = [_attrs(span)["gen_ai.usage.output_tokens"] for span in spans]
    report = json.loads(run_replay("report", "--format", "json", str(journal), process=True).stdout, parse_int=str)
    assert report["runs"][0]["usage"]["outputTokens"] == str(2 * 10**400 + 3)
    assert outputs == [str(2 * 10**400 + 3), str(10**400 + 2), "1e400", "1"]


def test_a_tool_result_without_its_call_is_a_span_of_its_own_as_report_counts_it(tmp_path):
    """A tool_failed whose call id no call has: report counts a failed call and lists its error; the export wrote
    nothing of it (no span, no ERROR anywhere). A result naming neither id nor tool is an `unknown` call; a result of a
    call answered already is still that call written again (no span). A result of a call id waits for a call of that
    id that may come later in the run (a result written before its call): the run's end tells it none came, and its
    span, as report's row of it, comes after the calls."""
    journal = _write(tmp_path / "orphan.jsonl", [
        ("run_started", {}),
        ("tool_failed", {"callId": "c9", "toolName": "bash", "error": "boom"}),
        ("tool_called", {"callId": "c1", "toolName": "get"}),
        ("tool_completed", {"callId": "c1"}),
        ("tool_completed", {"callId": "c1"}),
        ("tool_completed", {}),
        ("run_completed", {})])
    done = run_replay("export", "--otlp", str(journal), process=True)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    tools = [s for s in _spans(done.stdout) if s["name"].startswith("execute_tool")]
    seen = [(s["name"], s["status"], int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])) for s in tools]
    assert seen == [("execute_tool get", {"code": 0}, 10**9), ("execute_tool unknown", {"code": 0}, 0),
                    ("execute_tool bash", {"code": 2, "message": "boom"}, 0)]
    assert _attrs(tools[2])["error.type"] == "tool_failed" and _attrs(tools[2])["gen_ai.tool.call.id"] == "c9"
    assert tools[2]["startTimeUnixNano"] == "1772366402000000000"  # (the result's time: 12:00:02)
    report = orjson.loads(run_replay("report", "--format", "json", str(journal), process=True).stdout)["runs"][0]
    assert [(c["toolName"], c["status"], c["durationMs"]) for c in report["toolCalls"]["calls"]] \
        == [("get", "ok", 1000), ("unknown", "ok", 0), ("bash", "error", 0)]


def test_spans_still_open_at_the_run_s_end_go_in_requests_of_at_most_2000(tmp_path):
    """4,500 calls never answered made one request of 4,502 spans (about 3 MB): open calls are never finished, so they
    were all held to the run's end and written at once. Every request holds 2,000 spans at most, the run's in the last."""
    journal = _write(tmp_path / "open.jsonl", [("run_started", {})]
                     + [("tool_called", {"callId": f"c{i}", "toolName": "bash"}) for i in range(4500)]
                     + [("run_completed", {})])
    done = run_replay("export", "--otlp", str(journal))
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    lines = jsonl(done.stdout)
    sizes = [len(line["resourceSpans"][0]["scopeSpans"][0]["spans"]) for line in lines]
    assert sizes == [2000, 2000, 502]  # (the run, a model call: the first tool call's, and 4,500 tool calls)
    spans = _spans(done.stdout)
    assert len({s["spanId"] for s in spans}) == 4502 and len({s["traceId"] for s in spans}) == 1
    root = lines[-1]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert root["name"].startswith("invoke_agent") and "parentSpanId" not in root
    assert all(_attrs(s)["error.type"] == "tool_unanswered" for s in spans if s["name"] == "execute_tool bash")
