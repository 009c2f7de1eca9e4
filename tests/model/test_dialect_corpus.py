"""Every real agent log in the corpus reads without loss: each record is kept, once, as the origin of its events,
the events are the ones the mapping table says, and their content is the record's (attribution: fixtures/corpus/SOURCES.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from dialect_support import (
    CORPUS,
    CORPUS_FILES,
    events,
    jsonl_records,
    originals,
    read_dialect,
)

from replay.pipeline.model.dialects import ORIGIN_KEY
from replay.pipeline.model.dialects.detect import claims
from replay.pipeline.model.validation import EventChecker  # noqa: F401  (the canonical checks exist)

DIALECT_OF_FOLDER = {"claude-code": "claude-code", "codex": "codex", "openhands": "openhands", "mini-swe-agent": "mini-swe-agent"}


def source_records(path: Path) -> list[Any]:
    """What the file holds, read independently of replay: JSON lines that are objects, or the document's records."""
    data = path.read_bytes()
    if path.suffix == ".json":
        document = orjson.loads(data)
        return document["messages"] if isinstance(document, dict) else document
    return [r for r in jsonl_records(data) if isinstance(r, dict)]


def expected_parts(dialect: str, records: list[Any]) -> list[list[str]]:
    """The event types each record maps to, by the tables in pipeline/model/dialects/*.py, worked out here
    from the raw records (not with the mappers)."""
    out: list[list[str]] = []
    seen_calls: set[Any] = set()
    waiting = False
    for r in records:
        if dialect == "claude-code":
            msg = r.get("message")
            if r.get("type") in ("user", "assistant") and isinstance(msg, dict) and "content" in msg:
                content = msg["content"]
                if r["type"] == "user":
                    if not isinstance(content, list):
                        out.append(["user_message"])
                    else:
                        out.append(["user_message" if isinstance(b, str) or b.get("type") == "text" else
                                    ("tool_failed" if b.get("is_error") else "tool_completed") if b.get("type") == "tool_result"
                                    else b.get("type") for b in content])
                else:
                    said = [b for b in content if b.get("type") in ("text", "thinking")]
                    first = msg.get("id") not in seen_calls
                    seen_calls.add(msg.get("id"))
                    types = ["assistant_message"] if said or first else []
                    types += ["tool_called" if b["type"] == "tool_use" else b["type"] for b in content if b not in said]
                    out.append(types)
            else:
                out.append([r.get("type") or "unknown"])
        elif dialect == "codex":
            out.append(["?"])  # one event per record; its type is checked by name below
        elif dialect == "openhands":
            if r.get("action") == "message":
                out.append(["user_message" if r.get("source") == "user" else "assistant_message"])
            elif r.get("action") == "finish":
                out.append(["assistant_message", "run_completed"])
            elif "action" in r:
                rid = r.get("tool_call_metadata", {}).get("model_response", {}).get("id")
                first = rid is not None and rid not in seen_calls
                seen_calls.add(rid)
                out.append((["assistant_message"] if first else []) + ["tool_called"])
            else:
                out.append(["tool_completed" if r.get("cause") is not None else r["observation"]])
        else:  # mini-swe-agent
            role = r.get("role")
            if role == "assistant":
                one = r["content"].count("```mswea_bash_command") == 1
                out.append(["assistant_message", "tool_called"] if one else ["assistant_message"])
                waiting = one
                continue
            code = re.search(r"<returncode>(-?\d+)</returncode>", r["content"]) if role == "user" and waiting else None
            out.append((["tool_failed"] if code and int(code.group(1)) else ["tool_completed"]) if role == "user" and waiting
                       else ["system_message" if role == "system" else "user_message"])
            waiting = False
    return out


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_record_is_kept_once_unchanged_and_in_order(path: Path):
    result = read_dialect(path.read_bytes(), str(path))
    assert originals(result) == source_records(path)
    dialect = DIALECT_OF_FOLDER[path.parent.name]
    for event in events(result):
        assert event[ORIGIN_KEY]["dialect"] == dialect
    run = [r for r in result.records if r.get("$record") == "run"]
    assert len(run) == 1 and run[0][ORIGIN_KEY]["dialect"] == dialect and run[0]["framework"] == dialect
    assert result.records[0] is run[0], "the run record opens the run"


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_event_counts_and_types_follow_the_mapping_table(path: Path):
    dialect = DIALECT_OF_FOLDER[path.parent.name]
    records = source_records(path)
    result = read_dialect(path.read_bytes(), str(path))
    got: list[list[str]] = [[] for _ in records]
    for event in events(result):
        got[event[ORIGIN_KEY]["index"]].append(event["type"])
        assert event[ORIGIN_KEY]["parts"] == len(got[event[ORIGIN_KEY]["index"]]) or event[ORIGIN_KEY]["part"] < event[ORIGIN_KEY]["parts"]
    if dialect == "codex":
        assert all(len(types) == 1 for types in got)
    else:
        assert got == expected_parts(dialect, records)
    assert [e["seq"] for e in events(result)] == list(range(1, len(events(result)) + 1))
    run_id = result.records[0]["runId"]
    assert all(e["runId"] == run_id for e in events(result))


def by_type(result, etype: str) -> list[dict[str, Any]]:
    return [e for e in events(result) if e["type"] == etype]


def test_claude_code_content_is_the_records_content():
    path = CORPUS / "claude-code" / "representative_messages.jsonl"
    records = source_records(path)
    result = read_dialect(path.read_bytes(), str(path))
    uses = [b for r in records if r.get("type") == "assistant" for b in r["message"]["content"] if b["type"] == "tool_use"]
    assert [(e["payload"]["callId"], e["payload"]["toolName"], e["payload"]["args"]) for e in by_type(result, "tool_called")] == \
        [(b["id"], b["name"], b["input"]) for b in uses]
    results = [b for r in records if r.get("type") == "user" for b in r["message"]["content"] if b["type"] == "tool_result"]
    assert [(e["payload"]["callId"], e["payload"]["output"]) for e in by_type(result, "tool_completed")] == \
        [(b["tool_use_id"], b["content"]) for b in results]
    texts = [b["text"] for r in records if r.get("type") == "user" for b in r["message"]["content"] if b["type"] == "text"]
    assert [e["payload"]["text"] for e in by_type(result, "user_message")] == texts
    for event in events(result):
        record = event[ORIGIN_KEY]["record"]
        assert (event.get("timestamp"), event.get("id")) == (record.get("timestamp"), record.get("uuid"))
    run = result.records[0]
    assert (run["runId"], run["prompt"]) == ("test_session", texts[0])
    usage = [e["payload"]["usage"] for e in by_type(result, "assistant_message")]
    assert usage == [r["message"]["usage"] for r in records if r.get("type") == "assistant"]


def test_claude_code_edge_cases_keep_malformed_and_unknown_records_as_events():
    path = CORPUS / "claude-code" / "edge_cases.jsonl"
    result = read_dialect(path.read_bytes(), str(path))
    kinds = [(e["type"], e[ORIGIN_KEY]["record"].get("uuid")) for e in events(result)]
    assert ("user", "edge_010") in kinds  # `contenst`: no content, kept under its own type
    assert ("user", "edge_011") in kinds  # `message` is a string
    assert ("unknown", None) in kinds  # {"silly": "this"}
    assert ("summary", None) in kinds
    errors = result.side["errors"]
    assert [(e["code"], e["line"]) for e in errors] == [("E_EVENT_NOT_OBJECT", 13), ("E_EVENT_NOT_OBJECT", 15),
                                                         ("E_EVENT_NOT_OBJECT", 16)]


def test_codex_rollout_maps_calls_outputs_and_unknown_future_records():
    path = CORPUS / "codex" / "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"
    result = read_dialect(path.read_bytes(), str(path))
    assert [e["type"] for e in events(result)] == [
        "run_started", "turn_context", "event_msg.user_message", "user_message", "reasoning", "tool_called",
        "tool_completed", "tool_called", "tool_completed", "tool_called", "tool_completed", "event_msg.agent_message",
        "assistant_message", "future_synthetic_record",
    ]
    calls = by_type(result, "tool_called")
    assert [c["payload"]["callId"] for c in calls] == ["call-structured-001", "call-custom-001", "call-mcp-001"]
    assert calls[0]["payload"]["args"] == {"cmd": "find . -maxdepth 1 -type f"}  # JSON arguments decoded
    assert by_type(result, "future_synthetic_record")[0]["payload"] == {"safe": "ignored"}
    run = result.records[0]
    assert (run["runId"], run["prompt"], run["model"]) == ("11111111-1111-4111-8111-111111111111",
                                                           "List the synthetic files.", "synthetic-model")


def test_codex_malformed_sample_reports_its_bad_line_with_its_byte_offset():
    path = CORPUS / "codex" / "rollout-66666666-6666-4666-8666-666666666666.jsonl"
    data = path.read_bytes()
    result = read_dialect(data, str(path))
    (error,) = result.side["errors"]
    bad = data.splitlines()[2]
    assert (error["code"], error["line"], error["offset"]) == ("E_JSONL_LINE_INVALID", 3, data.index(bad))
    assert len(events(result)) == 2  # the lines before it still come out


def test_openhands_links_observations_to_their_actions():
    path = CORPUS / "openhands" / "wrong_initial_state.json"
    result = read_dialect(path.read_bytes(), str(path))
    called = {e["payload"]["callId"]: e for e in by_type(result, "tool_called")}
    for done in by_type(result, "tool_completed"):
        call = called[done["payload"]["callId"]]
        assert done["parentId"] == call["id"]  # cause -> the action's id
    assert result.records[0]["status"] == "ok" and by_type(result, "run_completed")
    assert all(e["timestamp"].endswith("Z") for e in events(result))  # zone-less times read as UTC
    tokens = [e["payload"]["usage"]["completion_tokens"] for e in by_type(result, "assistant_message")]
    assert len(tokens) == 4


def test_mini_swe_agent_commands_and_outputs_pair_up():
    path = CORPUS / "mini-swe-agent" / "github_issue.traj.json"
    result = read_dialect(path.read_bytes(), str(path))
    calls = by_type(result, "tool_called")
    outputs = [e for e in events(result) if e["type"] in ("tool_completed", "tool_failed")]
    assert [c["payload"]["callId"] for c in calls] == [o["payload"]["callId"] for o in outputs]
    assert calls[0]["payload"]["args"]["command"].startswith("cat /Users/")
    assert outputs[0]["payload"]["exitCode"] == 1
    # a command that exited 1 failed, as `replay walk` says: 2 of the 10
    assert [(o["type"], o["payload"]["exitCode"]) for o in outputs if o["payload"].get("exitCode")] == [("tool_failed", 1)] * 2
    assert result.records[0]["status"] == "ok"  # the last command was the submit command


def test_every_corpus_file_is_claimed_by_its_own_dialect_only():
    for path in CORPUS_FILES:
        first = source_records(path)[0] if path.suffix == ".jsonl" else orjson.loads(path.read_bytes())
        first = first[0] if isinstance(first, list) else first
        assert claims(first) == [DIALECT_OF_FOLDER[path.parent.name]], path
