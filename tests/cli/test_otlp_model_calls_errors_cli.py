"""``replay export --otlp`` of raw agent logs, real processes: a Codex model call that reasons and then answers is one
``chat`` span (its tokens on it, begun at the tool result it answers), and an error the agent recorded (Claude Code's
API error, Codex's ``event_msg`` error) is a failed ``chat`` span, as many as ``replay report`` lists errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from conftest import run_replay

CODEX = [
    {"timestamp": "2026-01-02T03:04:05.000Z", "type": "session_meta", "payload": {"id": "cx-1", "cwd": "/w", "cli_version": "0.40.0"}},
    {"timestamp": "2026-01-02T03:04:06.000Z", "type": "turn_context", "payload": {"cwd": "/w", "model": "gpt-5-codex"}},
    {"timestamp": "2026-01-02T03:04:07.000Z", "type": "event_msg", "payload": {"type": "user_message", "message": "run tests"}},
    {"timestamp": "2026-01-02T03:04:08.000Z", "type": "response_item",
     "payload": {"type": "reasoning", "summary": [{"type": "summary_text", "text": "run pytest"}]}},
    {"timestamp": "2026-01-02T03:04:09.000Z", "type": "response_item",
     "payload": {"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"pytest\"]}", "call_id": "call_1"}},
    {"timestamp": "2026-01-02T03:04:09.100Z", "type": "event_msg", "payload": {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": 1000, "output_tokens": 50},
        "last_token_usage": {"input_tokens": 1000, "output_tokens": 50}}}},
    {"timestamp": "2026-01-02T03:04:10.000Z", "type": "response_item",
     "payload": {"type": "function_call_output", "call_id": "call_1", "output": "ok"}},
    {"timestamp": "2026-01-02T03:04:11.000Z", "type": "response_item",
     "payload": {"type": "reasoning", "summary": [{"type": "summary_text", "text": "explain"}]}},
    {"timestamp": "2026-01-02T03:04:11.500Z", "type": "event_msg", "payload": {"type": "agent_message", "message": "All passed."}},
    {"timestamp": "2026-01-02T03:04:12.000Z", "type": "response_item",
     "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "All passed."}]}},
    {"timestamp": "2026-01-02T03:04:12.100Z", "type": "event_msg", "payload": {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": 2200, "output_tokens": 80},
        "last_token_usage": {"input_tokens": 1200, "output_tokens": 30}}}},
    {"timestamp": "2026-01-02T03:04:13.000Z", "type": "event_msg",
     "payload": {"type": "error", "message": "stream disconnected before completion"}},
]
_API_ERROR = "API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"
CLAUDE = [
    {"type": "user", "timestamp": "2025-07-01T10:00:00Z", "parentUuid": None, "isSidechain": False, "sessionId": "e1",
     "uuid": "u1", "message": {"role": "user", "content": "hi"}},
    {"type": "assistant", "timestamp": "2025-07-01T10:00:05Z", "parentUuid": "u1", "isSidechain": False, "sessionId": "e1",
     "uuid": "a1", "isApiErrorMessage": True,
     "message": {"id": "msg_e", "role": "assistant", "model": "<synthetic>", "content": [{"type": "text", "text": _API_ERROR}],
                 "usage": {"input_tokens": 0, "output_tokens": 0}}},
]


def _write(tmp_path: Path, name: str, records: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _spans(path: Path) -> list[dict[str, Any]]:
    done = run_replay("export", "--otlp", str(path), process=True)
    assert done.returncode == 0 and not done.stderr, done.stderr
    return [s for line in done.stdout.splitlines() for rs in orjson.loads(line)["resourceSpans"]
            for ss in rs["scopeSpans"] for s in ss["spans"]]


def _attrs(span: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


def _report_errors(path: Path) -> list[dict[str, Any]]:
    done = run_replay("report", "--format", "json", str(path), process=True)
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)["runs"][0]["errors"]


def test_a_codex_call_that_reasons_then_answers_is_one_chat_span_and_its_error_another(tmp_path: Path):
    path = _write(tmp_path, "rollout.jsonl", CODEX)
    spans = _spans(path)
    chats = [(s["startTimeUnixNano"][-11:], s["endTimeUnixNano"][-11:], _attrs(s).get("gen_ai.usage.input_tokens"),
              _attrs(s).get("gen_ai.usage.output_tokens"), _attrs(s).get("error.type"))
             for s in spans if _attrs(s)["gen_ai.operation.name"] == "chat"]
    # two model calls (two token counts): the prompt's, to its tool call; the tool result's, to its message, not split
    # at its reasoning nor begun at the agent_message echo; then the call the stream cut off, asked after the answer
    assert chats == [("47000000000", "49000000000", "1000", "50", None), ("50000000000", "52000000000", "1200", "30", None),
                     ("52000000000", "53000000000", None, None, "error")]
    assert sum(s["status"]["code"] == 2 for s in spans) == len(_report_errors(path)) == 1


def test_a_claude_code_api_error_is_a_failed_chat_span_as_report_lists_it(tmp_path: Path):
    path = _write(tmp_path, "session.jsonl", CLAUDE)
    (error,) = _report_errors(path)
    failed = [s for s in _spans(path) if s["status"]["code"] == 2]
    assert [(s["name"], _attrs(s)["gen_ai.operation.name"], _attrs(s)["error.type"], s["status"]["message"])
            for s in failed] == [("chat", "chat", error["code"], error["message"])]
    assert error["code"] == "overloaded_error"
