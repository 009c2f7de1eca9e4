"""`replay walk` of a log with a tool call's record written again (a resumed session repeats records): the copy is that
call (``OpenCalls.written_again``), as `replay report` and `replay export --otlp` read it, so it begins no step and
moves none on; each step is still the export's ``chat`` span of that number. Found by a Codex rollout whose
function_call line was written again after its output: the walk skipped step 2 (the copy began it, heal dropped the
copy) and its last step was 5 against the export's four ``chat`` spans."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import run_replay
from dialect_support import CORPUS

from replay.pipeline.report.otlp import SPAN_KIND_CLIENT

CODEX = CORPUS / "codex" / "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"
LATER = "2026-01-02T03:04:10.500Z"  # (a copy written at another time: heal keeps it, as a resumed session's may be)


def _walked(path: Path) -> list[tuple[str, Any, Any]]:
    """Each record `replay walk --json` shows but heal's own: its kind, step and timestamp."""
    done = run_replay("walk", "--json", str(path))
    assert done.returncode == 0, done.stderr
    lines = [orjson.loads(line) for line in done.stdout.splitlines()]
    return [(d["kind"], d["step_id"], d["event"].get("timestamp")) for d in lines if d["kind"] != "$heal"]


def _chat_spans(path: Path) -> int:
    done = run_replay("export", "--otlp", str(path))
    assert done.returncode == 0, done.stderr
    return sum(1 for line in done.stdout.splitlines() for rs in orjson.loads(line)["resourceSpans"]
               for ss in rs["scopeSpans"] for s in ss["spans"] if s["kind"] == SPAN_KIND_CLIENT)


def _steps(walked: list[tuple[str, Any, Any]]) -> list[int]:
    return sorted({int(step) for _, step, _ in walked if step is not None})


def _codex_calls() -> list[tuple[int, int]]:
    """Each function call's line in the Codex log, with its output's."""
    records = [orjson.loads(line) for line in CODEX.read_bytes().splitlines()]
    calls = {r["payload"]["call_id"]: i for i, r in enumerate(records) if r["payload"].get("type", "").endswith("call")}
    return [(calls[r["payload"]["call_id"]], i) for i, r in enumerate(records)
            if r["payload"].get("type", "").endswith("call_output")]


@pytest.mark.parametrize("with_result", [False, True], ids=["call", "call and result"])
@pytest.mark.parametrize("later", [False, True], ids=["same record", "at another time"])
@pytest.mark.parametrize("call", range(len(_codex_calls())))
def test_a_codex_call_written_again_after_its_result_changes_no_step(tmp_path: Path, call: int, later: bool,
                                                                     with_result: bool):
    lines = CODEX.read_bytes().splitlines()
    made, answered = _codex_calls()[call]
    copies = [lines[made], lines[answered]] if with_result else [lines[made]]
    if later:
        copies = [orjson.dumps({**orjson.loads(c), "timestamp": LATER}) for c in copies]
    log = tmp_path / CODEX.name
    log.write_bytes(b"\n".join([*lines[:answered + 1], *copies, *lines[answered + 1:]]) + b"\n")
    walked, first = _walked(log), _walked(CODEX)
    assert [w for w in walked if w[2] != LATER] == first  # (the same record: heal dropped it)
    assert _steps(walked) == list(range(1, _chat_spans(log) + 1)) == _steps(first)
    if later:  # (the copy kept: in its call's step)
        stamp = orjson.loads(lines[made])["timestamp"]
        step = [step for kind, step, ts in walked if kind == "tool_called" and ts in (stamp, LATER)]
        assert len(step) == 2 and step[0] == step[1]


def _claude(kind: str, uuid: str, parent: str | None, second: float, message: dict) -> bytes:
    return orjson.dumps({"type": kind, "timestamp": f"2025-07-01T10:00:{second:04.1f}Z", "parentUuid": parent,
                         "isSidechain": False, "sessionId": "s1", "uuid": uuid, "message": message})


def _assistant(mid: str, block: dict) -> dict:
    return {"id": mid, "role": "assistant", "model": "claude-sonnet-4", "content": [block],
            "usage": {"input_tokens": 10, "output_tokens": 5}}


def _use(cid: str, name: str) -> dict:
    return {"type": "tool_use", "id": cid, "name": name, "input": {"path": "a.py"}}


def _result(cid: str) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "content": "ok"}]}


@pytest.mark.parametrize("uuid", ["a1", "a1-resumed"], ids=["same uuid", "another uuid"])
def test_a_claude_code_tool_use_record_written_again_after_its_result_changes_no_step(tmp_path: Path, uuid: str):
    """The assistant record of a tool_use only, written again after its tool_result (as a resumed session does):
    three model calls, three steps, whether heal drops the copy (its uuid seen) or keeps it."""
    session = [
        _claude("user", "u1", None, 0, {"role": "user", "content": "Please fix the bug"}),
        _claude("assistant", "a1", "u1", 1, _assistant("msg_1", _use("toolu_1", "Read"))),
        _claude("user", "u2", "a1", 2, _result("toolu_1")),
        _claude("assistant", "a2", "u2", 3, _assistant("msg_2", _use("toolu_2", "Edit"))),
        _claude("user", "u3", "a2", 4, _result("toolu_2")),
        _claude("assistant", "a3", "u3", 5, _assistant("msg_3", {"type": "text", "text": "Fixed."})),
    ]
    first = tmp_path / "first.jsonl"
    first.write_bytes(b"\n".join(session) + b"\n")
    again = _claude("assistant", uuid, "u1", 1 if uuid == "a1" else 2.5, _assistant("msg_1", _use("toolu_1", "Read")))
    log = tmp_path / "again.jsonl"
    log.write_bytes(b"\n".join([*session[:3], again, *session[3:]]) + b"\n")
    walked = _walked(log)
    assert _steps(walked) == list(range(1, _chat_spans(log) + 1)) == _steps(_walked(first)) == [1, 2, 3]
    assert [step for kind, step, _ in walked if kind == "tool_called"] == (["1", "2"] if uuid == "a1" else ["1", "1", "2"])
