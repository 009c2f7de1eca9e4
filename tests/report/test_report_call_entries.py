"""A summary's tool call entries, byte for byte: key order, callId only when given, unfinished only when open, lengths
rounded as ``number`` writes them; the same by the event-at-a-time and the batch (column) feeding."""

from __future__ import annotations

import orjson

from replay.pipeline.report.model import RunTally


def _event(seq: int, clock: str, kind: str, **payload: object) -> dict:
    return {"seq": seq, "timestamp": f"2026-03-01T12:00:{clock}Z", "type": kind, "runId": "r", "payload": payload}


EVENTS = [
    _event(1, "00.000", "tool_called", callId="c1", toolName="bash"),
    _event(2, "00.250", "tool_called", toolName="grep"),  # no id: answered by its tool's name
    _event(3, "01.000", "tool_completed", callId="c1", durationMs=12.3456),  # a length with a fraction: 3 decimals
    _event(4, "01.251", "tool_completed", toolName="grep"),  # a length by its timestamps: 1.001 s
    _event(5, "02.000", "tool_called", toolName="ls"),  # never answered: until the run's latest timestamp
    _event(6, "03.500", "run_completed"),
]
CALLS = (b'[{"toolName":"bash","status":"ok","durationMs":12.346,"seq":1,"startMs":0,"callId":"c1"},'
         b'{"toolName":"grep","status":"ok","durationMs":1001,"seq":2,"startMs":250},'
         b'{"toolName":"ls","status":"error","durationMs":1500,"seq":5,"startMs":2000,"unfinished":true}]')
BY_TOOL = (b'{"bash":{"calls":1,"ok":1,"error":0,"durationMs":12.346,"maxMs":12.346},'
           b'"grep":{"calls":1,"ok":1,"error":0,"durationMs":1001,"maxMs":1001},'
           b'"ls":{"calls":1,"ok":0,"error":1,"durationMs":1500,"maxMs":1500}}')


def _tool_calls(batch: bool) -> dict:
    tally = RunTally(None, "x.jsonl", timeline=not batch)
    if batch:
        tally.add_events(EVENTS)
    else:
        for event in EVENTS:
            tally.add_event(event)
    return tally.summary()["toolCalls"]  # type: ignore[no-any-return]


def test_call_entries_keep_their_keys_in_order_with_callid_and_unfinished_only_where_they_apply():
    for batch in (False, True):
        calls = _tool_calls(batch)
        assert orjson.dumps(calls["calls"]) == CALLS
        assert orjson.dumps(calls["byTool"]) == BY_TOOL
        assert (calls["total"], calls["ok"], calls["error"]) == (3, 2, 1)
