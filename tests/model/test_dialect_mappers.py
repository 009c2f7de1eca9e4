"""The mapping tables on small records: what each dialect's mapper makes of a record, and detection."""

from __future__ import annotations

from replay.pipeline.model.dialects import mapper_for
from replay.pipeline.model.dialects.base import utc_timestamp
from replay.pipeline.model.dialects.detect import CANONICAL, claims, is_dialect_document
from replay.pipeline.model.runs import run_id_from_source


def parts(mapper, record):
    return [(p.type, p.payload) for p in mapper.map(record).parts]


def test_claude_usage_counts_once_per_message_id_and_later_blocks_map_alone():
    m = mapper_for("claude-code", "s.jsonl")
    head = {"type": "assistant", "uuid": "u1", "message": {"id": "m1", "model": "c", "usage": {"output_tokens": 5},
                                                           "content": [{"type": "text", "text": "hi"}]}}
    tail = {"type": "assistant", "uuid": "u2", "message": {"id": "m1", "model": "c", "usage": {"output_tokens": 5},
                                                           "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]}}
    assert parts(m, head)[0][1]["usage"] == {"output_tokens": 5}
    assert parts(m, tail) == [("tool_called", {"callId": "t", "toolName": "Bash", "args": {}})]


def test_claude_blocks_the_table_does_not_know_become_events_of_their_type():
    m = mapper_for("claude-code", "s.jsonl")
    record = {"type": "user", "isSidechain": True, "message": {"content": [{"type": "image", "source": {}}, "plain"]}}
    assert parts(m, record) == [("image", {"block": {"type": "image", "source": {}}, "sidechain": True}),
                                ("user_message", {"text": "plain", "sidechain": True})]
    assert m.facts["prompt"] == "plain"


def test_claude_meta_messages_are_not_the_prompt():
    m = mapper_for("claude-code", "s.jsonl")
    parts(m, {"type": "user", "isMeta": True, "message": {"content": "Caveat: ..."}})
    assert "prompt" not in m.facts


def test_codex_token_counts_carry_the_usage_of_one_model_call():
    m = mapper_for("codex", "r.jsonl")
    record = {"type": "event_msg", "payload": {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": 90}, "last_token_usage": {"input_tokens": 30, "output_tokens": 4}}}}
    ((kind, payload),) = parts(m, record)
    assert kind == "event_msg.token_count" and payload["usage"] == {"input_tokens": 30, "output_tokens": 4}


def test_a_codex_token_count_without_totals_forgets_no_total():
    m = mapper_for("codex", "r.jsonl")
    usage = {"input_tokens": 100, "output_tokens": 10}
    counted = {"type": "event_msg", "payload": {"type": "token_count", "info": {
        "total_token_usage": usage, "last_token_usage": usage}, "rate_limits": {"primary": {"used_percent": 1}}}}
    limits_only = {"type": "event_msg", "payload": {"type": "token_count", "info": None,
                                                    "rate_limits": {"primary": {"used_percent": 2}}}}
    assert parts(m, counted)[0][1]["usage"] == usage
    assert "usage" not in parts(m, limits_only)[0][1]
    assert "usage" not in parts(m, counted)[0][1]  # the same totals again (only the rate limits changed): nothing


def test_codex_failed_outputs_and_unknown_items():
    m = mapper_for("codex", "r.jsonl")
    out = {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c", "output": {"success": False}}}
    assert parts(m, out)[0][0] == "tool_failed"
    assert parts(m, {"type": "response_item", "payload": {"type": "web_search_call", "id": "w"}}) == \
        [("response_item.web_search_call", {"id": "w"})]
    assert parts(m, {"type": "compacted", "payload": {"message": "m"}}) == [("compacted", {"message": "m"})]


def test_openhands_errors_fail_the_call_and_state_changes_keep_their_name():
    m = mapper_for("openhands", "t.json")
    assert parts(m, {"id": 4, "cause": 3, "observation": "error", "content": "boom"})[0][0] == "tool_failed"
    assert parts(m, {"id": 5, "observation": "agent_state_changed", "extras": {"agent_state": "error"}}) == \
        [("agent_state_changed", {"agent_state": "error"})]


def test_mini_swe_agent_native_tool_calls():
    m = mapper_for("mini-swe-agent", "t.traj.json")
    call = {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]}
    assert parts(m, call)[1] == ("tool_called", {"callId": "c1", "toolName": "bash", "args": {"command": "ls"}})
    assert parts(m, {"role": "tool", "tool_call_id": "c1", "content": "a"}) == [("tool_completed", {"callId": "c1", "output": "a"})]


def test_detection_claims():
    assert claims({"seq": 1, "runId": "r", "type": "user"}) == [CANONICAL]
    assert claims({"$record": "run", "runId": "r"}) == [CANONICAL]
    assert claims({"type": "user", "uuid": "u"}) == ["claude-code"]
    assert claims({"type": "event_msg", "payload": {}}) == ["codex"]
    assert claims({"id": 1, "observation": "run"}) == ["openhands"]
    assert claims({"role": "user", "content": "x"}) == ["mini-swe-agent"]
    assert claims({"type": "user"}) == [] and claims(["x"]) == []
    assert is_dialect_document({"info": {}, "messages": []}) and not is_dialect_document({"role": "user", "content": ""})


def test_helpers():
    assert run_id_from_source("/x/github_issue.traj.json") == "github_issue" and run_id_from_source("<stdin>") == "stdin"
    assert utc_timestamp("2025-01-27T22:44:56.900854") == "2025-01-27T22:44:56.900Z"
    assert utc_timestamp(0) == "1970-01-01T00:00:00.000Z" and utc_timestamp("nope") == "nope"


def test_another_agents_epoch_time_is_read_as_heal_reads_it():
    # one reading of epoch numbers (seconds, ms, µs, ns: by size) for a dialect's times and heal's fix_timestamp
    assert {utc_timestamp(n) for n in (1772366400.25, 1772366400250, 1772366400250000, 1772366400250000000)} == {
        "2026-03-01T12:00:00.250Z"}
    assert utc_timestamp(10 ** 30) == 10 ** 30  # (no time a datetime holds: left for heal to report)


def test_a_zoneless_leap_second_is_read_as_utc_and_kept_a_leap_second():
    assert utc_timestamp("2016-12-31T23:59:60.900854") == "2016-12-31T23:59:60.900Z"  # (OpenHands writes no zone)
    assert utc_timestamp("2016-12-31T23:59:60.5Z") == "2016-12-31T23:59:60.5Z"  # RFC 3339 already: as it is
    assert utc_timestamp("2016-12-31T12:00:60") == "2016-12-31T12:00:60"  # no leap second: left for heal to report
