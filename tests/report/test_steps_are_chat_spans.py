"""A mapped log's steps (``dialects.numbering``) are the OTLP export's ``chat`` spans (``report.otlp``): both take
which model call an event is of from one rule (``modelcalls.ModelCalls``), so a Codex response that only calls tools
(no reasoning, no message) is a step of its own, as it is a span of its own, and a call written again
(``OpenCalls.written_again``) is that call in both: it begins no step, as it begins no span."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from conftest import run_replay
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.model.dialects.numbering import Numbering
from replay.pipeline.report.otlp import SPAN_KIND_CLIENT, TraceBuilder

_MODEL_OUTPUT = ("assistant_message", "reasoning", "tool_called", "error")


def _codex_log() -> bytes:
    """A Codex session of the real rollouts' shapes (tests/fixtures/corpus/codex): a response that reasons then calls
    a tool, one that only calls a tool, one that only calls two, one of a message; then a turn whose response fails."""
    def line(second: int, kind: str, payload: dict[str, Any]) -> bytes:
        return orjson.dumps({"timestamp": f"2026-01-02T03:04:{second:02d}.000Z", "type": kind, "payload": payload})

    def call(second: int, *cids: str) -> list[bytes]:  # (parallel calls: all of them, then their outputs)
        return [*(line(second, "response_item", {"type": "function_call", "name": "exec_command",
                                                 "arguments": '{"cmd":"ls"}', "call_id": cid}) for cid in cids),
                *(line(second + 1, "response_item", {"type": "function_call_output", "call_id": cid, "output": "a.txt"})
                  for cid in cids)]

    lines = [
        line(0, "session_meta", {"id": "11111111-1111-4111-8111-111111111111", "cwd": "/w", "cli_version": "0.0.0-test"}),
        line(1, "turn_context", {"cwd": "/w", "model": "gpt-5-codex"}),
        line(2, "event_msg", {"type": "user_message", "message": "List the files."}),
        line(2, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List."}]}),
        line(3, "response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "I will look."}]}),
        *call(4, "call-1"),
        line(6, "event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 10},
                                                              "last_token_usage": {"input_tokens": 10}}}),
        line(7, "response_item", {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch",
                                  "call_id": "call-2"}),
        line(8, "response_item", {"type": "custom_tool_call_output", "call_id": "call-2", "output": "Done!"}),
        *call(9, "call-3", "call-4"),
        line(12, "response_item", {"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": "a.txt"}]}),
        line(13, "event_msg", {"type": "user_message", "message": "Again."}),
        line(13, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Again."}]}),
        line(14, "event_msg", {"type": "error", "message": "stream disconnected before completion"}),
    ]
    return b"\n".join(lines) + b"\n"


def test_a_codex_logs_steps_are_its_chat_spans(tmp_path: Path):
    log = tmp_path / "rollout-2026-01-02T03-04-00-11111111-1111-4111-8111-111111111111.jsonl"
    log.write_bytes(_codex_log())
    read = run_replay("read", "--dialect", "codex", str(log))
    assert read.returncode == 0, read.stderr
    events = [e for e in map(orjson.loads, read.stdout.splitlines()) if "type" in e]
    steps = [(e["type"], e.get("step")) for e in events if e["type"] in _MODEL_OUTPUT]
    # reasoning + call, a lone custom tool call, two calls with nothing else, a message, a failed call: five calls
    assert steps == [("reasoning", 1), ("tool_called", 1), ("tool_called", 2), ("tool_called", 3),
                     ("tool_called", 3), ("assistant_message", 4), ("error", 5)]
    exported = run_replay("export", "--otlp", "--dialect", "codex", str(log))
    assert exported.returncode == 0, exported.stderr
    spans = [s for line in exported.stdout.splitlines() for rs in orjson.loads(line)["resourceSpans"]
             for ss in rs["scopeSpans"] for s in ss["spans"]]
    chats = sorted((int(s["startTimeUnixNano"]), s["status"].get("code", 0)) for s in spans if s["kind"] == SPAN_KIND_CLIENT)
    assert [code for _, code in chats] == [0, 0, 0, 0, 2]  # five calls, the last failed


# a main-chain event: (kind, message id / call id choice); tool calls get ids of their own, results name one
# (``again``: an earlier call's record written again, ``OpenCalls.written_again``: one call, no model call's output)
_KINDS = st.sampled_from(["user_message", "assistant_message", "reasoning", "tool_called", "again", "tool_completed",
                          "tool_failed", "error", "event_msg.token_count", "system"])


@settings(max_examples=300, deadline=None)
@given(stream=st.lists(st.tuples(_KINDS, st.sampled_from(["m1", "m2", None]), st.integers(0, 5)), max_size=40))
def test_the_step_of_each_event_counts_the_chat_spans_begun_so_far(stream):
    numbering, trace = Numbering(), TraceBuilder({"runId": "r"}, "r.jsonl")
    calls: list[int] = []  # each call's step
    for seq, (kind, key, pick) in enumerate(stream, 1):
        payload: dict[str, Any] = {}
        again = kind == "again" and bool(calls)
        if kind == "again":
            kind = "tool_called"
        if kind in ("assistant_message", "error") and key is not None:
            payload["messageId"] = key
        elif again:
            payload.update(callId=f"c{pick % len(calls) + 1}", toolName="t")
        elif kind == "tool_called":
            calls.append(-1)
            payload.update(callId=f"c{len(calls)}", toolName="t")
        elif kind in ("tool_completed", "tool_failed") and calls:
            payload["callId"] = f"c{pick % len(calls) + 1}"
        step, _turn = numbering.of(kind, dict(payload))
        trace.add({"seq": seq, "timestamp": f"2026-01-01T00:00:{seq % 60:02d}Z", "type": kind, "runId": "r",
                   "payload": payload})
        begun = sum(1 for span in trace.spans if span.kind == SPAN_KIND_CLIENT)
        assert numbering.step == begun
        if again:
            assert step == calls[pick % len(calls)]  # the call it is written again of: that call's step
        elif kind in _MODEL_OUTPUT:
            assert step == begun  # model output is of the latest call, as its span is
        if kind == "tool_called" and not again:
            calls[-1] = step
