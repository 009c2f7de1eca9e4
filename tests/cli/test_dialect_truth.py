"""What `replay report`, `export --otlp`, `walk` and `heal --in/--out` say of other agents' logs agrees with the logs:
small hand-written logs whose truth is known (tokens, costs, failed tool calls, the errors the agents recorded)."""

from __future__ import annotations

import json

from conftest import run_replay

T = "2026-01-02T03:04:%02d.000Z"


def _report(path, process: bool = False) -> dict:
    result = run_replay("report", "--format", "json", str(path), process=process)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["runs"][0]


def _spans(path, process: bool = False) -> list[tuple[str, dict, int]]:
    """(name, its token counts, status code) of each span `export --otlp` writes."""
    result = run_replay("export", "--otlp", str(path), process=process)
    assert result.returncode == 0, result.stderr
    spans = [s for line in result.stdout.splitlines() for r in json.loads(line)["resourceSpans"]
             for scope in r["scopeSpans"] for s in scope["spans"]]
    return [(s["name"], {a["key"].removeprefix("gen_ai.usage."): int(a["value"]["intValue"]) for a in s["attributes"]
                         if a["key"].startswith("gen_ai.usage.")}, s["status"]["code"]) for s in spans]


def _sum_chats(spans, key: str) -> int:
    return sum(tokens.get(key, 0) for name, tokens, _ in spans if name.startswith("chat"))


def _healed(tmp_path, name: str, text: str) -> tuple[dict, dict]:
    """The report of a log and the healed artifact `heal --in/--out` writes of it."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / name).write_text(text)
    run_replay("heal", "--in", str(folder), "--out", str(tmp_path / "out"))
    stem = name.removesuffix(".json")
    return _report(folder / name), json.loads((tmp_path / "out" / f"{stem}.healed.json").read_text())


# mini-swe-agent -----------------------------------------------------------------------------------
def _trajectory(stats: dict | None = None) -> str:
    info = {"exit_status": "Submitted", "submission": "done", "config": {"model": {"model_name": "gpt-x"}}}
    if stats is not None:
        info["model_stats"] = stats
    return json.dumps({"info": info, "trajectory_format": "mini-swe-agent-1", "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": "Look.\n```bash\nls missing\n```",
         "extra": {"response": {"usage": {"prompt_tokens": 500, "completion_tokens": 40}}}},
        {"role": "user", "content": "<returncode>1</returncode>\n<output>ls: missing: No such file</output>"},
        {"role": "assistant", "content": "Submit.\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```",
         "extra": {"response": {"usage": {"prompt_tokens": 700, "completion_tokens": 30}}}},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>done</output>"}]})


def test_a_trajectorys_recorded_cost_keeps_its_messages_tokens(tmp_path):
    path = tmp_path / "x.traj.json"
    path.write_text(_trajectory({"instance_cost": 0.0421, "api_calls": 2}))
    assert _report(path)["usage"] == {"inputTokens": 1200, "outputTokens": 70, "costUsd": 0.0421}
    spans = _spans(path)
    assert spans[0][1] == {"input_tokens": 1200, "output_tokens": 70}  # the run's span: as report counts it
    assert (_sum_chats(spans, "input_tokens"), _sum_chats(spans, "output_tokens")) == (1200, 70)
    report, artifact = _healed(tmp_path, "y.traj.json", _trajectory({"instance_cost": 0.0421, "api_calls": 2}))
    assert artifact["usage"] == {"costUsd": 0.0421, "inputTokens": 1200, "outputTokens": 70}
    assert _report(tmp_path / "out" / "y.traj.healed.json")["usage"] == report["usage"]


def test_a_failed_command_is_a_failed_tool_call_as_walk_says(tmp_path):
    path = tmp_path / "x.traj.json"
    path.write_text(_trajectory())
    run = _report(path)
    assert (run["toolCalls"]["total"], run["toolCalls"]["error"]) == (2, 1)
    assert [(e["kind"], e["toolName"], e["message"]) for e in run["errors"]] == [("tool_failed", "bash", "exit code 1")]
    walked = run_replay("walk", str(path)).stdout.decode().splitlines()
    assert [line.split()[-1] for line in walked if line.startswith("tool_")] == \
        ["[running]", "[failed]", "[running]", "[succeeded]"]
    assert [status for name, _, status in _spans(path) if name.startswith("execute_tool")] == [2, 0]  # ERROR, UNSET


def test_a_native_tool_calls_nonzero_return_code_is_a_failed_call(tmp_path):
    """mini-swe-agent v2's default: the result is a role "tool" message with ``<returncode>`` and ``extra.returncode``."""
    call = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "pytest"}'}}
    path = tmp_path / "v2.traj.json"
    path.write_text(json.dumps({"info": {"exit_status": "Submitted", "mini_version": "2.0.0"}, "messages": [
        {"role": "user", "content": "Fix the failing test."},
        {"role": "assistant", "content": "Run.", "tool_calls": [call], "extra": {"timestamp": 1751364000.0}},
        {"role": "tool", "tool_call_id": "call_1", "content": "<returncode>1</returncode>\n<output>\n1 failed\n</output>",
         "extra": {"raw_output": "1 failed\n", "returncode": 1, "timestamp": 1751364001.0}},
        {"role": "assistant", "content": "Again.", "tool_calls": [dict(call, id="call_2")]},
        {"role": "tool", "tool_call_id": "call_2", "content": "<returncode>2</returncode>\n<output></output>"}]}))
    run = _report(path)
    assert (run["toolCalls"]["total"], run["toolCalls"]["error"]) == (2, 2)
    assert [e["message"] for e in run["errors"]] == ["exit code 1", "exit code 2"]


def _timed_out_trajectory() -> str:
    """mini-swe-agent v1: a command killed at its timeout is told by ``timeout_template``, with no ``<returncode>``
    (what the command printed before may say anything, a returncode tag too); a command that printed the template's
    words is no timeout."""
    killed = ("The last command <command>pytest -x</command> timed out and has been killed.\nThe output of the command "
              "was:\n <output>\n<returncode>0</returncode>\ncollected 12 items\n</output>\nPlease try another command "
              "and make sure to avoid those requiring interactive input.")
    echoed = "<returncode>0</returncode>\n<output>\nThe last command <command>cat log</command> timed out and has been killed.\n</output>"
    return json.dumps({"info": {"exit_status": "Submitted", "submission": ""}, "trajectory_format": "mini-swe-agent-1",
                       "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Please solve this issue: tests hang"},
        {"role": "assistant", "content": "THOUGHT: run tests\n\n```bash\npytest -x\n```"},
        {"role": "user", "content": killed},
        {"role": "assistant", "content": "THOUGHT: read\n\n```bash\ncat log\n```"},
        {"role": "user", "content": echoed},
        {"role": "assistant", "content": "THOUGHT: submit\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"},
        {"role": "user", "content": ""}]})


def test_a_command_that_timed_out_and_was_killed_is_a_failed_call(tmp_path):
    path = tmp_path / "t.traj.json"
    path.write_text(_timed_out_trajectory())
    run = _report(path, process=True)
    assert (run["toolCalls"]["total"], run["toolCalls"]["error"]) == (3, 1)
    assert [(e["kind"], e["toolName"], e["message"]) for e in run["errors"]] == [
        ("tool_failed", "bash", "command timed out and was killed")]
    assert [status for name, _, status in _spans(path, process=True) if name.startswith("execute_tool")] == [2, 0, 0]
    read = run_replay("read", "--dialect", "mini-swe-agent", str(path), process=True)
    results = [json.loads(line) for line in read.stdout.splitlines() if b'"tool_' in line]
    assert [(e["type"], e["payload"].get("exitCode")) for e in results if e["type"] != "tool_called"] == [
        ("tool_failed", None), ("tool_completed", 0), ("tool_completed", None)]  # (the tag inside its output: no code)


def test_a_returncode_of_more_digits_than_an_int_is_read_with_is_no_code_as_any_unreadable_one(tmp_path):
    """A ``<returncode>`` of 4,301 digits stopped ``report`` (E_STAGE_FAILED: Python reads no int of more than 4,300
    digits from text). A code in text has at most 10 digits (``base.EXIT_CODE_TEXT``, as Codex's text exit codes):
    a longer one is no code, as a tag of no number is: the call ``ok``, the run reported (exit 0)."""
    commands = [("ls a", "9" * 4301), ("ls b", "12345678901"), ("ls c", "abc"), ("ls d", "2")]
    messages = [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "Fix it."}]
    for command, code in commands:
        messages += [{"role": "assistant", "content": f"Look.\n```bash\n{command}\n```"},
                     {"role": "user", "content": f"<returncode>{code}</returncode>\n<output>x</output>"}]
    path = tmp_path / "long.traj.json"
    path.write_text(json.dumps({"info": {"exit_status": "Submitted", "submission": ""},
                                "trajectory_format": "mini-swe-agent-1", "messages": messages}))
    run = _report(path, process=True)
    assert [c["status"] for c in run["toolCalls"]["calls"]] == ["ok", "ok", "ok", "error"]
    assert [e["message"] for e in run["errors"]] == ["exit code 2"]
    read = run_replay("read", "--dialect", "mini-swe-agent", str(path), process=True)
    assert read.returncode == 0, read.stderr
    results = [json.loads(line) for line in read.stdout.splitlines() if b'"tool_c' in line or b'"tool_f' in line]
    assert [(e["type"], e["payload"].get("exitCode")) for e in results if e["type"] != "tool_called"] == [
        ("tool_completed", None), ("tool_completed", None), ("tool_completed", None), ("tool_failed", 2)]


# Codex ---------------------------------------------------------------------------------------------
def _token_count(second: int, last: dict, total: dict) -> dict:
    return {"timestamp": T % second, "type": "event_msg", "payload": {
        "type": "token_count", "info": {"total_token_usage": total, "last_token_usage": last},
        "rate_limits": {"primary": {"used_percent": second}}}}


def _rollout() -> str:
    first = {"input_tokens": 1000, "cached_input_tokens": 800, "output_tokens": 50}
    second = {"input_tokens": 1300, "cached_input_tokens": 1000, "output_tokens": 30}
    total = {"input_tokens": 2300, "cached_input_tokens": 1800, "output_tokens": 80}
    output = json.dumps({"output": "ls: missing: No such file", "metadata": {"exit_code": 1, "duration_seconds": 0.1}})
    records = [
        {"timestamp": T % 0, "type": "session_meta", "payload": {"id": "cx1", "cwd": "/w", "cli_version": "0.1"}},
        {"timestamp": T % 1, "type": "turn_context", "payload": {"model": "gpt-5"}},
        {"timestamp": T % 2, "type": "event_msg", "payload": {"type": "user_message", "message": "list"}},
        {"timestamp": T % 3, "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\",\"missing\"]}", "call_id": "c1"}},
        _token_count(4, first, first),
        {"timestamp": T % 5, "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": "c1", "output": output}},
        {"timestamp": T % 6, "type": "response_item", "payload": {
            "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is missing."}]}},
        _token_count(7, second, total),
        _token_count(8, second, total),  # the same totals again: only the rate limits changed
        {"timestamp": T % 9, "type": "event_msg", "payload": {
            "type": "error", "message": "stream disconnected before completion: Rate limit reached for gpt-5"}},
        {"timestamp": T % 10, "type": "event_msg", "payload": {"type": "turn_aborted", "reason": "interrupted"}},
    ]
    return "".join(json.dumps(r) + "\n" for r in records)


def test_a_rollouts_tokens_are_its_last_totals_once_in_report_and_export(tmp_path):
    path = tmp_path / "rollout-cx1.jsonl"
    path.write_text(_rollout())
    assert _report(path)["usage"] == {"inputTokens": 2300, "outputTokens": 80, "costUsd": None, "cacheReadTokens": 1800}
    spans = _spans(path)
    assert spans[0][1] == {"input_tokens": 2300, "output_tokens": 80, "cache_read.input_tokens": 1800}
    assert (_sum_chats(spans, "input_tokens"), _sum_chats(spans, "output_tokens")) == (2300, 80)


def test_a_rollouts_failed_command_and_reported_error_are_the_runs_errors(tmp_path):
    path = tmp_path / "rollout-cx1.jsonl"
    path.write_text(_rollout())
    run = _report(path)
    assert run["toolCalls"]["error"] == 1
    assert [(e["kind"], e["message"]) for e in run["errors"]] == [
        ("tool_failed", "exit code 1"),
        ("error", "stream disconnected before completion: Rate limit reached for gpt-5")]
    assert run["status"] == "unknown"  # (an error and an aborted turn: Codex goes on after them; no end is told)
    walked = run_replay("walk", str(path)).stdout.decode()
    assert "tool_failed" in walked and "[failed]" in walked


def _text_outputs_rollout() -> str:
    """Current Codex writes a shell result as text (codex-rs core/src/tools): ``shell_command`` and a freeform
    ``apply_patch`` open with ``Exit code: N``, ``exec_command`` / ``write_stdin`` with a header that says ``Process
    exited with code N`` or that the process runs on. What a command printed after the header says nothing."""
    calls = [
        ("c1", "function_call", "shell_command", "Exit code: 1\nWall time: 0.4 seconds\nOutput:\nrejected"),
        ("c2", "function_call", "exec_command",
         "Chunk ID: 1a2b\nWall time: 2.0000 seconds\nProcess exited with code 2\nOriginal token count: 3\nOutput:\nFAIL"),
        ("c3", "custom_tool_call", "apply_patch",
         "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM a.py\n"),
        ("c4", "function_call", "exec_command",  # (exit 0; its output prints the other headers' words)
         "Wall time: 0.1000 seconds\nProcess exited with code 0\nOutput:\nExit code: 3\nWall time: 1 s\n"
         "Process exited with code 4\n"),
        ("c5", "function_call", "exec_command",
         "Chunk ID: 9f\nWall time: 10.0000 seconds\nProcess running with session ID 7\nOutput:\n"
         "Process exited with code 5\n"),
        ("c6", "function_call", "shell_command", "Output:\nExit code: 1\nWall time: 0.1 seconds\n"),
    ]
    records = [
        {"timestamp": T % 0, "type": "session_meta", "payload": {"id": "cx9", "cwd": "/w", "cli_version": "0.60.0"}},
        {"timestamp": T % 1, "type": "turn_context", "payload": {"model": "gpt-5-codex"}},
        {"timestamp": T % 2, "type": "event_msg", "payload": {"type": "user_message", "message": "push it"}}]
    for n, (call_id, kind, name, output) in enumerate(calls):
        field = "input" if kind == "custom_tool_call" else "arguments"
        records.append({"timestamp": T % (3 + 2 * n), "type": "response_item", "payload": {
            "type": kind, "name": name, field: "{}", "call_id": call_id}})
        records.append({"timestamp": T % (4 + 2 * n), "type": "response_item", "payload": {
            "type": f"{kind}_output", "call_id": call_id, "output": output}})
    return "".join(json.dumps(r) + "\n" for r in records)


def test_a_rollouts_text_outputs_failed_commands_are_failed_calls(tmp_path):
    path = tmp_path / "rollout-cx9.jsonl"
    path.write_text(_text_outputs_rollout())
    run = _report(path, process=True)
    assert (run["toolCalls"]["total"], run["toolCalls"]["error"]) == (6, 2)
    assert [(e["kind"], e["toolName"], e["message"]) for e in run["errors"]] == [
        ("tool_failed", "shell_command", "exit code 1"), ("tool_failed", "exec_command", "exit code 2")]
    assert [status for name, _, status in _spans(path, process=True) if name.startswith("execute_tool")] == \
        [2, 2, 0, 0, 0, 0]
    read = run_replay("read", "--dialect", "codex", str(path), process=True)
    results = [json.loads(line) for line in read.stdout.splitlines() if b'"tool_c' in line or b'"tool_f' in line]
    assert [(e["type"], e["payload"].get("exitCode")) for e in results if e["type"] != "tool_called"] == [
        ("tool_failed", 1), ("tool_failed", 2), ("tool_completed", 0), ("tool_completed", 0),
        ("tool_completed", None), ("tool_completed", None)]


# Claude Code --------------------------------------------------------------------------------------
def _session() -> str:
    def record(i: int, kind: str, **fields) -> dict:
        return {"type": kind, "uuid": f"u{i}", "parentUuid": f"u{i - 1}" if i else None, "sessionId": "cc1",
                "timestamp": T % i, "cwd": "/w", "version": "1.0.0", **fields}

    def said(mid: str, content: list, tokens: tuple[int, int], model: str = "claude-x") -> dict:
        return {"id": mid, "role": "assistant", "model": model, "content": content,
                "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]}}

    overloaded = 'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    records = [
        record(0, "user", message={"role": "user", "content": "hello"}),
        record(1, "assistant", costUSD=0.012, message=said("m1", [{"type": "text", "text": "hi"}], (10, 5))),
        record(2, "assistant", costUSD=0.012, message=said(  # (the same response's next block: its usage and cost again)
            "m1", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}], (10, 5))),
        record(3, "user", message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]}),
        record(4, "system", level="error", subtype="api_error", content="API error (attempt 1/10): 529 Overloaded"),
        record(5, "assistant", isApiErrorMessage=True,
               message=said("m2", [{"type": "text", "text": overloaded}], (0, 0), "<synthetic>")),
        record(6, "assistant", costUSD=0.02, message=said("m3", [{"type": "text", "text": "done"}], (20, 7))),
    ]
    return "".join(json.dumps(r) + "\n" for r in records)


def test_a_sessions_api_errors_are_its_errors_and_its_recorded_costs_its_cost(tmp_path):
    path = tmp_path / "session.jsonl"
    path.write_text(_session())
    run = _report(path)
    assert run["usage"] == {"inputTokens": 30, "outputTokens": 12, "costUsd": 0.032}  # each response's cost once
    assert [(e["kind"], e["code"]) for e in run["errors"]] == [("error", "api_error"), ("error", "overloaded_error")]
    assert run["errors"][1]["message"].startswith("API Error: 529")
    assert run["events"]["byType"]["assistant_message"] == 2  # (m1 and m3: the API's error is no model output)


def _streamed_session() -> str:
    """Claude Code 2.x: each response written as a record per content block, sharing ``message.id``; its first
    records carry a placeholder ``output_tokens`` (1), its last the response's count."""
    cache = {"cache_read_input_tokens": 15030, "cache_creation_input_tokens": 8655}

    def block(i: int, mid: str, content: dict, output: int, stop: str | None = None, **more) -> dict:
        return {"type": "assistant", "uuid": f"a{i}", "parentUuid": f"a{i - 1}", "sessionId": "cc2", "timestamp": T % i,
                "requestId": f"req_{mid}", "message": {"id": mid, "role": "assistant", "model": "claude-sonnet-4",
                                                       "content": [content], "stop_reason": stop, "usage": {
                                                           "input_tokens": 2, **cache, "output_tokens": output, **more}}}

    records = [
        {"type": "user", "uuid": "a0", "parentUuid": None, "sessionId": "cc2", "timestamp": T % 0,
         "message": {"role": "user", "content": "list files"}},
        block(1, "msg_1", {"type": "thinking", "thinking": "...", "signature": "x"}, 1, service_tier="standard"),
        block(2, "msg_1", {"type": "text", "text": "Listing."}, 1),
        block(3, "msg_1", {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}, 260, "tool_use"),
        {"type": "user", "uuid": "a4", "parentUuid": "a3", "sessionId": "cc2", "timestamp": T % 4,
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a b"}]}},
        block(5, "msg_2", {"type": "text", "text": "Two files."}, 1),
        block(6, "msg_2", {"type": "text", "text": "a and b."}, 40, "end_turn"),
    ]
    return "".join(json.dumps(r) + "\n" for r in records)


def test_a_streamed_responses_tokens_are_its_last_records_counted_once(tmp_path):
    path = tmp_path / "streamed.jsonl"
    path.write_text(_streamed_session())
    each_call_in = 2 + 15030 + 8655  # (the same input and cache counts on every record of a response: counted once)
    usage = {"inputTokens": 2 * each_call_in, "outputTokens": 300, "costUsd": None,
             "cacheReadTokens": 2 * 15030, "cacheCreationTokens": 2 * 8655}
    assert _report(path)["usage"] == usage
    result = run_replay("export", "--otlp", str(path), process=True)
    assert result.returncode == 0, result.stderr
    spans = [s for line in result.stdout.splitlines() for r in json.loads(line)["resourceSpans"]
             for scope in r["scopeSpans"] for s in scope["spans"]]
    chats = [{a["key"]: int(a["value"]["intValue"]) for a in s["attributes"]
              if a["key"] in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")}
             for s in spans if s["name"].startswith("chat")]
    assert chats == [{"gen_ai.usage.input_tokens": each_call_in, "gen_ai.usage.output_tokens": 260},
                     {"gen_ai.usage.input_tokens": each_call_in, "gen_ai.usage.output_tokens": 40}]
    healed = run_replay("heal", str(path), process=True)
    assert healed.returncode == 0, healed.stderr
    again = run_replay("report", "--format", "json", input=healed.stdout, process=True)
    assert json.loads(again.stdout)["runs"][0]["usage"] == usage
    # the stream: the response's first record its usage as written, a later one what its counts grew by
    mapped = [json.loads(line) for line in run_replay("read", "--dialect", "claude-code", str(path),
                                                      process=True).stdout.splitlines()]
    said = [(e["id"], e["payload"].get("usage")) for e in mapped if e.get("type") == "assistant_message"]
    first = {"input_tokens": 2, "cache_read_input_tokens": 15030, "cache_creation_input_tokens": 8655, "output_tokens": 1}
    assert said == [("a1", {**first, "service_tier": "standard"}), ("a2", None), ("a3", {"output_tokens": 259}),
                    ("a5", first), ("a6", {"output_tokens": 39})]
    written = run_replay("write", "--dialect", "claude-code", input=run_replay("read", "--dialect", "claude-code",
                                                                                 str(path), process=True).stdout, process=True)
    assert [json.loads(line) for line in written.stdout.splitlines()] == [json.loads(line) for line in path.read_text().splitlines()]


# OpenHands ----------------------------------------------------------------------------------------
def _trajectory_oh() -> str:
    at = "2025-01-27T23:16:%02d.000000"
    response = {"id": "r1", "model": "gpt-x", "usage": {"prompt_tokens": 100, "completion_tokens": 10}}
    return json.dumps([
        {"id": 0, "timestamp": at % 0, "source": "user", "message": "rename", "action": "message",
         "args": {"content": "rename"}},
        {"id": 1, "timestamp": at % 1, "source": "agent", "message": "Running", "action": "run",
         "args": {"command": "false", "thought": "t"}, "llm_metrics": {"accumulated_cost": 0.01},
         "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "tc1", "model_response": response}},
        {"id": 2, "timestamp": at % 2, "source": "agent", "message": "exit 1", "cause": 1, "observation": "run",
         "content": "", "extras": {"command": "false", "metadata": {"exit_code": 1}}, "success": False,
         "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "tc1"}},
        {"id": 3, "timestamp": at % 3, "source": "agent", "message": "err", "observation": "error",
         "content": "LLM rate limit exceeded", "extras": {"error_id": "STATUS$ERROR_LLM_RATE_LIMIT"},
         "llm_metrics": {"accumulated_cost": 0.03}},
        {"id": 4, "timestamp": at % 4, "source": "environment", "message": "", "observation": "agent_state_changed",
         "content": "", "extras": {"agent_state": "error", "reason": "RateLimitError: rate limit"}},
    ])


def test_an_openhands_runs_errors_failed_command_and_cost(tmp_path):
    report, artifact = _healed(tmp_path, "oh.json", _trajectory_oh())
    assert report["status"] == "error"
    assert [(e["kind"], e["code"], e["message"]) for e in report["errors"]] == [
        ("run", "agent_state_error", "the agent's last state was error: RateLimitError: rate limit"),
        ("tool_failed", None, "exit code 1"),
        ("error", "STATUS$ERROR_LLM_RATE_LIMIT", "LLM rate limit exceeded")]
    assert report["toolCalls"]["error"] == 1
    assert report["usage"] == {"inputTokens": 100, "outputTokens": 10, "costUsd": 0.03}  # the last accumulated cost
    assert artifact["usage"] == {"costUsd": 0.03, "inputTokens": 100, "outputTokens": 10}
    assert _report(tmp_path / "out" / "oh.healed.json")["usage"] == report["usage"]


def test_a_healed_artifact_has_the_usage_its_events_say(tmp_path):
    trajectory = json.loads(_trajectory_oh())
    for record in trajectory:
        record.pop("llm_metrics", None)
    report, artifact = _healed(tmp_path, "plain.json", json.dumps(trajectory))
    assert report["usage"] == {"inputTokens": 100, "outputTokens": 10, "costUsd": None}
    assert artifact["usage"] == {"inputTokens": 100, "outputTokens": 10}  # (no cost: none was recorded)


# replay's own journal: the same rules ----------------------------------------------------------------
def test_a_runs_usage_is_its_records_counts_and_its_events_for_the_others(tmp_path):
    path = tmp_path / "run.jsonl"
    events = [("run_started", {}), ("user_message", {"text": "hi"}),
              ("assistant_message", {"text": "a", "usage": {"inputTokens": 10, "outputTokens": 2}}),
              ("token_update", {"usage": {"inputTokens": 5, "outputTokens": 1}}),  # (counted to the call before it)
              ("run_completed", {})]
    path.write_text(json.dumps({"$record": "run", "runId": "r", "prompt": "hi", "status": "ok",
                                "usage": {"inputTokens": 100}}) + "\n" + "".join(
        json.dumps({"seq": n, "timestamp": T % n, "type": kind, "runId": "r", "payload": payload}) + "\n"
        for n, (kind, payload) in enumerate(events, 1)))
    assert _report(path)["usage"] == {"inputTokens": 100, "outputTokens": 3, "costUsd": None}
    spans = _spans(path)
    assert [tokens for name, tokens, _ in spans if name.startswith("chat")] == [{"input_tokens": 15, "output_tokens": 3}]
    assert spans[0][1] == {"input_tokens": 100, "output_tokens": 3}


def test_a_healed_artifact_claims_no_count_nobody_recorded(tmp_path):
    trajectory = json.loads(_trajectory_oh())
    del trajectory[1]["tool_call_metadata"]["model_response"]["usage"]
    report, artifact = _healed(tmp_path, "costs.json", json.dumps(trajectory))
    assert report["usage"] == {"inputTokens": None, "outputTokens": None, "costUsd": 0.03}  # (null: none recorded)
    assert artifact["usage"] == {"costUsd": 0.03}
