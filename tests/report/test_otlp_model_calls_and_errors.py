"""The OTLP trace's model calls (``TraceBuilder``): reasoning and the assistant message after it are one ``chat`` span
(Codex names no response to join them by), begun when the model was asked (the last event it saw, not a token count or
an echo after it); and each ``error`` event is a failed model call, so the trace's failed spans are the errors
``report`` lists (``RunTally``) for the same events."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.report.model import RunTally
from replay.pipeline.report.otlp import STATUS_ERROR, TraceBuilder

SECOND = 10**9
T0 = 1767225600 * SECOND  # 2026-01-01T00:00:00Z


def _event(seq: int, kind: str, at: float, **payload: Any) -> dict[str, Any]:
    stamp = f"2026-01-01T00:00:{int(at):02d}.{round(at % 1 * 1000):03d}Z"
    return {"seq": seq, "timestamp": stamp, "type": kind, "runId": "r", "payload": payload}


def _spans(events: list[dict[str, Any]], record: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    trace = TraceBuilder(record, "r.jsonl")
    for event in events:
        trace.add(event)
    return [span for request in trace.requests() for rs in request["resourceSpans"] for ss in rs["scopeSpans"]
            for span in ss["spans"]]


def _attrs(span: dict[str, Any]) -> dict[str, Any]:
    """A span's attributes by name (an ``intValue``, which OTLP/JSON writes as a string, as an int)."""
    return {a["key"]: int(a["value"]["intValue"]) if "intValue" in a["value"] else next(iter(a["value"].values()))
            for a in span["attributes"]}


def _chats(spans: list[dict[str, Any]]) -> list[tuple[float, float, Any, Any, int, Any]]:
    """(start, end in seconds from T0, tokens in, out, status code, error.type) of each chat span."""
    out = []
    for span in spans:
        attrs = _attrs(span)
        if attrs["gen_ai.operation.name"] == "chat":
            out.append(((int(span["startTimeUnixNano"]) - T0) / SECOND, (int(span["endTimeUnixNano"]) - T0) / SECOND,
                        attrs.get("gen_ai.usage.input_tokens"), attrs.get("gen_ai.usage.output_tokens"),
                        span["status"]["code"], attrs.get("error.type")))
    return out


def _usage(seq: int, at: float, tokens_in: int, tokens_out: int) -> dict[str, Any]:
    return _event(seq, "event_msg.token_count", at, usage={"input_tokens": tokens_in, "output_tokens": tokens_out})


CODEX = {"framework": "codex", "model": "gpt-5-codex"}


def test_reasoning_then_the_assistant_message_is_one_model_call_begun_at_the_tool_result():
    """A Codex rollout as healed: the last call's reasoning opened a chat span of no tokens and its message a second
    one, begun at the event_msg.agent_message echo before it, not at the tool result the model answered."""
    events = [
        _event(1, "run_started", 0), _event(2, "user_message", 2, text="run tests"),
        _event(3, "reasoning", 3, text="run pytest"), _event(4, "tool_called", 4, callId="c1", toolName="shell"),
        _usage(5, 4.1, 1000, 50), _event(6, "tool_completed", 5, callId="c1", output="ok"),
        _event(7, "event_msg.agent_reasoning", 6), _event(8, "reasoning", 6.5, text="explain"),
        _event(9, "event_msg.agent_message", 7), _event(10, "assistant_message", 7.5, text="All passed.", model="gpt-5-codex"),
        _usage(11, 7.6, 1200, 30),
    ]
    spans = _spans(events, CODEX)
    # the first call: from the prompt to its tool call (its output); the second: from the tool result to its message
    assert _chats(spans) == [(2, 4, 1000, 50, 0, None), (5, 7.5, 1200, 30, 0, None)]
    tool = next(s for s in spans if s["name"] == "execute_tool shell")
    assert (int(tool["startTimeUnixNano"]) - T0, int(tool["endTimeUnixNano"]) - T0) == (4 * SECOND, 5 * SECOND)


def test_the_answer_after_reasoning_takes_its_response_id_and_another_input_or_tool_call_parts_them():
    """Reasoning, then the message naming its response: one call, of that response id. A tool call or an input between
    them ends the call: the message after it is another call."""
    joined = _spans([_event(1, "user_message", 0), _event(2, "reasoning", 1),
                     _event(3, "assistant_message", 2, responseId="resp_1", stopReason="end_turn",
                            usage={"input_tokens": 5, "output_tokens": 1})], CODEX)
    (chat,) = [s for s in joined if s["kind"] == 3]
    assert _attrs(chat)["gen_ai.response.id"] == "resp_1" and _attrs(chat)["gen_ai.response.finish_reasons"] == {"values": [{"stringValue": "end_turn"}]}
    for between in (_event(3, "user_message", 1.5), _event(3, "tool_called", 1.5, callId="c", toolName="t")):
        parted = _spans([_event(1, "user_message", 0), _event(2, "reasoning", 1), between,
                         _event(4, "assistant_message", 2, usage={"input_tokens": 5, "output_tokens": 1})], CODEX)
        assert [c[:4] for c in _chats(parted)] == [(0, 1.5 if between["type"] == "tool_called" else 1, None, None),
                                                   (1.5, 2, 5, 1)], between["type"]


def test_an_api_error_is_a_failed_model_call_with_its_error_type():
    """Claude Code's API error (heal: an ``error`` of the API error's type), each retry's, then the answer: three
    model calls, two failed, each begun when the model was asked (the prompt, then the error before it)."""
    error = {"text": "API Error: 529 overloaded", "model": "<synthetic>", "messageId": "m_e1",
             "code": "overloaded_error", "message": "API Error: 529 overloaded", "usage": {"input_tokens": 0, "output_tokens": 0}}
    events = [
        _event(1, "run_started", 0), _event(2, "user_message", 0, text="hi"),
        _event(3, "error", 5, **error), _event(4, "error", 9, **{**error, "messageId": "m_e2"}),
        _event(5, "assistant_message", 12, model="claude-sonnet-4", messageId="m_1", text="hello",
               usage={"input_tokens": 10, "output_tokens": 2}),
        _event(6, "error", 13, message="no code"),
    ]
    spans = _spans(events, {"framework": "claude-code"})
    assert _chats(spans) == [(0, 5, 0, 0, STATUS_ERROR, "overloaded_error"), (5, 9, 0, 0, STATUS_ERROR, "overloaded_error"),
                             (9, 12, 10, 2, 0, None), (12, 13, None, None, STATUS_ERROR, "error")]
    failed = [s for s in spans if s["status"]["code"] == STATUS_ERROR]
    assert failed[0]["status"]["message"] == "API Error: 529 overloaded"
    # a failed call names the model asked (the last call's), never Claude Code's <synthetic>, and no response's
    assert [s["name"] for s in failed] == ["chat", "chat", "chat claude-sonnet-4"]
    assert "gen_ai.response.model" not in _attrs(failed[2]) and "gen_ai.response.id" not in _attrs(failed[2])
    root = next(s for s in spans if "parentSpanId" not in s)
    assert root["status"]["code"] == 0  # (an error the run went on from is no failure of the run)


def test_an_error_while_the_model_was_reasoning_fails_that_call():
    """Codex's stream cut off after its reasoning: the call it cut off failed (not a second span beside it)."""
    events = [_event(1, "user_message", 0), _event(2, "reasoning", 1),
              _event(3, "error", 2, message="stream disconnected before completion"),
              _event(4, "error", 3, code="usage_limit_exceeded", message="usage limit reached")]
    assert _chats(_spans(events, CODEX)) == [(0, 2, None, None, STATUS_ERROR, "error"),
                                             (2, 3, None, None, STATUS_ERROR, "usage_limit_exceeded")]


KINDS = ["user_message", "reasoning", "assistant_message", "tool_called", "tool_completed", "tool_failed", "error",
         "event_msg.token_count", "turn_context"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(KINDS), st.sampled_from([None, "m1", "m2"])), max_size=14))
def test_the_trace_fails_a_span_for_each_error_the_report_lists(steps: list[tuple[str, str | None]]):
    """Whatever the order of model output, inputs and errors: as many failed spans as ``report`` lists errors, every
    chat span within the run's, and no chat span but for model output or an error (each reasoning, message or error
    leaves one with its time)."""
    events = []
    for n, (kind, key) in enumerate(steps, 1):
        payload: dict[str, Any] = {"messageId": key} if key and kind in ("assistant_message", "error") else {}
        if kind.startswith("tool_"):
            payload["callId"] = f"c{n if kind == 'tool_called' else n - 1}"
            payload["toolName"] = "t"
        if kind == "event_msg.token_count":
            payload["usage"] = {"input_tokens": 1, "output_tokens": 1}
        events.append({"seq": n, "timestamp": f"2026-01-01T00:00:{n:02d}Z", "type": kind, "runId": "r", "payload": payload})
    tally = RunTally(None, "r.jsonl")
    for event in events:
        tally.add_event(event)
    spans = _spans(events, CODEX)
    assert sum(s["status"]["code"] == STATUS_ERROR for s in spans) == len(tally.summary()["errors"]), steps
    root = next(s for s in spans if "parentSpanId" not in s)
    chats = [s for s in spans if s["kind"] == 3]
    for chat in chats:
        assert int(root["startTimeUnixNano"]) <= int(chat["startTimeUnixNano"]) <= int(chat["endTimeUnixNano"]) \
            <= int(root["endTimeUnixNano"]), steps
    output = [n for n, (kind, _) in enumerate(steps, 1) if kind in ("reasoning", "assistant_message", "error", "tool_called")]
    assert len(chats) <= len(output), steps
    ends = {(int(c["endTimeUnixNano"]) - T0) // SECOND for c in chats}
    assert ends <= set(output), steps
