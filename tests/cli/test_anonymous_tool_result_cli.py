"""A tool result with neither call id nor tool name (a runner's ``tool_end {}``) answers the latest open call without
an id, alike in ``report``, the artifact's toolCalls, ``export --otlp`` and ``walk --at`` (``toolcalls.OpenCalls``)."""

from __future__ import annotations

from pathlib import Path

import orjson

from replay.pipeline.model import toolcalls
from replay.pipeline.model.toolcalls import pair_tool_calls


def _event(seq: int, kind: str, second: int, **payload: object) -> dict:
    return {"type": kind, "seq": seq, "runId": "r1", "timestamp": f"2026-01-01T00:00:{second:02d}Z", "payload": payload}


def _journal(tmp_path: Path, *events: dict) -> Path:
    path = tmp_path / "anon.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return path


ONE_CALL = (_event(1, "run_started", 0), _event(2, "tool_called", 0, toolName="t"), _event(3, "tool_end", 1),
            _event(4, "run_completed", 2))


def test_the_report_pairs_a_nameless_idless_result_with_the_only_open_call(tmp_path: Path, cli):
    code, out, errors = cli("report", "--format", "json", str(_journal(tmp_path, *ONE_CALL)))
    assert code == 0 and not errors
    run = orjson.loads(out)["runs"][0]
    assert [(c["toolName"], c["status"], c["durationMs"]) for c in run["toolCalls"]["calls"]] == [("t", "ok", 1000.0)]


HEALED = [{**e, "type": "tool_completed" if e["type"] == "tool_end" else e["type"]} for e in ONE_CALL]  # (as heal maps it)


def test_the_artifacts_tool_calls_pair_it_too():
    calls = pair_tool_calls(HEALED)
    assert [(c["toolName"], c["status"], c.get("unfinished", False)) for c in calls] == [("t", "ok", False)]


def test_the_otlp_export_closes_the_calls_span_at_it(tmp_path: Path, cli):
    code, out, errors = cli("export", "--otlp", str(_journal(tmp_path, *HEALED)))
    assert code == 0 and not errors
    spans = [s for line in out.splitlines() for rs in orjson.loads(line)["resourceSpans"]
             for ss in rs["scopeSpans"] for s in ss["spans"]]
    tool = [s for s in spans if s["name"].startswith("execute_tool")]
    assert len(tool) == 1 and tool[0]["status"].get("code", 0) == 0
    assert int(tool[0]["endTimeUnixNano"]) - int(tool[0]["startTimeUnixNano"]) == 1_000_000_000


def test_with_several_open_it_answers_the_latest_and_with_none_open_it_is_counted_on_its_own():
    calls = pair_tool_calls([
        _event(1, "tool_called", 0, toolName="outer"), _event(2, "tool_called", 1, toolName="inner"),
        _event(3, "tool_completed", 2), _event(4, "tool_completed", 4), _event(5, "tool_completed", 5)])
    assert [(c["toolName"], c["status"], c["durationMs"]) for c in calls] == [
        ("outer", "ok", 4000.0), ("inner", "ok", 1000.0), ("unknown", "ok", 0.0)]


def test_it_does_not_answer_a_call_with_an_id_nor_does_an_orphan_id_answer_a_call_without_one():
    calls = pair_tool_calls([
        _event(1, "tool_called", 0, toolName="a", callId="c1"), _event(2, "tool_called", 1, toolName="b"),
        _event(3, "tool_completed", 2, callId="zz"), _event(4, "tool_completed", 3)])
    assert [(c["toolName"], c["status"], c.get("unfinished", False)) for c in calls] == [
        ("a", "error", True), ("b", "ok", False), ("unknown", "ok", False)]


def test_open_calls_sweep_answered_ones_and_stay_in_order():
    calls: toolcalls.OpenCalls[int] = toolcalls.OpenCalls()
    calls.open(None, "t", -1)  # never answered: under everything else
    for i in range(1000):
        calls.open(None, "t", i)
        calls.open(None, "u", 10_000 + i)
        assert calls.close(None, "u") == 10_000 + i  # (answered out of the stack's order: held until swept)
    assert calls.held <= 65 and len(calls) == 1001
    assert calls.close(None, None) == 999 and calls.close(None, "t") == -1
    assert list(calls)[:2] == [0, 1] and len(calls) == 999


def test_walk_at_a_step_ends_when_its_calls_are_answered_as_the_report_pairs_them(tmp_path: Path, cli):
    path = tmp_path / "steps.jsonl"
    path.write_bytes(b'{"kind":"run.spawned"}\n'
                     b'{"type":"tool_called","step":"s","payload":{"toolName":"t","callId":"c1"}}\n'
                     b'{"type":"tool_completed","step":"s","payload":{"callId":"c2"}}\n'
                     b'{"kind":"step.completed","step_id":"s"}\n'
                     b'{"type":"tool_completed","step":"s","payload":{"callId":"c1"}}\n'
                     b'{"kind":"run.completed"}\n')
    code, out, _ = cli("walk", str(path), "--at", "s")
    # c2's result answers no call of the step (an orphan): c1 is open at step.completed, answered on the next line
    assert code == 0 and out.splitlines()[-1].split()[:2] == [b"tool_completed", b"s"] and len(out.splitlines()) == 5
