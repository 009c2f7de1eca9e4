"""`replay report` over other agents' logs (Claude Code, Codex, OpenHands, mini-swe-agent) as real processes:
each is mapped onto canonical events first, as `replay read --dialect` maps it, and reported as that stream is."""

from __future__ import annotations

import json

import pytest
from conftest import run_replay
from dialect_support import CORPUS, CORPUS_FILES

from replay.stages.parse import ParseLines

_PLACE = ("source",)  # where a run was read from: the file here, <stdin> for the mapped stream


def _runs(report: bytes) -> list[dict]:
    return [{k: v for k, v in run.items() if k not in _PLACE} for run in json.loads(report)["runs"]]


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_log_is_reported_as_the_stream_read_maps_it_onto(path):
    mapped = run_replay("read", "--dialect", "auto", str(path))
    direct = run_replay("report", "--format", "json", str(path))
    piped = run_replay("report", "--format", "json", input=mapped.stdout)
    # (1: a line that is no record; read --dialect puts a dropped record in its place, so the report down the pipe says it too)
    assert piped.returncode == direct.returncode == mapped.returncode
    runs = _runs(direct.stdout)
    assert runs == _runs(piped.stdout)
    assert runs and all(run["framework"] == path.parent.name for run in runs)  # (the run record's, not a guess)


def test_a_claude_code_session_reports_its_turns_and_tokens_not_its_record_kinds():
    result = run_replay("report", str(CORPUS / "claude-code" / "session_b.jsonl"))
    assert result.returncode == 0, result.stderr
    row = result.stdout.decode().splitlines()[3].split()
    assert row[0] == "session_b" and row[7:9] == ["20", "35"]  # the run is the session, its usage summed
    assert "events   3: user_message 2, assistant_message 1" in result.stdout.decode()


def test_dialect_names_the_dialect_and_none_other_is_looked_for(tmp_path):
    session = CORPUS / "claude-code" / "session_b.jsonl"
    named = run_replay("report", "--format", "json", "--dialect", "claude-code", str(session))
    assert _runs(named.stdout) == _runs(run_replay("report", "--format", "json", str(session)).stdout)
    # named as another agent's, the records are not that agent's: nothing maps them into a run of it
    other = run_replay("report", "--format", "json", "--dialect", "codex", str(session))
    assert [run.get("framework") for run in json.loads(other.stdout)["runs"]] != ["claude-code"]


def test_several_logs_in_parallel_report_as_each_alone():
    files = [str(p) for p in CORPUS_FILES]
    together = run_replay("report", "--format", "json", "--workers", "2", *files)
    alone = [run for f in files for run in _runs(run_replay("report", "--format", "json", f).stdout)]
    assert _runs(together.stdout) == alone


def test_another_agents_line_in_replays_own_journal_is_a_warning_and_the_run_stays_replays(tmp_path):
    journal = tmp_path / "mixed.jsonl"
    journal.write_text(
        '{"seq":1,"timestamp":"2026-01-01T00:00:00Z","type":"run_started","runId":"r","payload":{}}\n'
        '{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"hi"},'
        '"timestamp":"2026-01-01T00:00:02Z"}\n'
        '{"seq":2,"timestamp":"2026-01-01T00:00:03Z","type":"run_completed","runId":"r","payload":{}}\n')
    result = run_replay("report", "--format", "json", str(journal))
    assert result.returncode == 0
    assert [run["runId"] for run in json.loads(result.stdout)["runs"]] == ["r"]
    notes = [json.loads(line) for line in result.stderr.splitlines()]
    assert [(n["code"], n["event"], n["line"], n["received"]) for n in notes] == \
        [("E_DIALECT_MISMATCH", "report.notice", 2, "claude-code")]


def test_a_projecting_parse_decodes_whole_what_is_not_replays_own_event():
    from replay.pipeline.engine.batch import Batch

    stage = ParseLines(fields=["type", "seq", "runId"])
    lines = [b'{"seq":1,"runId":"r","type":"run_started","payload":{"big":1}}',
             b'{"type":"user","uuid":"u","message":{"content":"hi"}}',
             b'{"$record":"run","runId":"r","prompt":"p"}',
             b'{"seq":2,"type":"x","payload":{"k":2}}']  # (no runId: heal would fill it)
    batch = stage(Batch("s", None, lines, [1, 2, 3, 4], [0, 1, 2, 3]))
    assert batch.events == [{"seq": 1, "runId": "r", "type": "run_started"},
                            {"type": "user", "uuid": "u", "message": {"content": "hi"}},
                            {"$record": "run", "runId": "r", "prompt": "p"},
                            {"seq": 2, "type": "x", "payload": {"k": 2}}]


def test_a_dialect_named_for_replays_own_journal_is_an_input_problem_the_report_counts():
    journal = str(CORPUS.parent.parent.parent / "examples" / "journals" / "two-runs.jsonl")
    result = run_replay("report", "--format", "json", "--dialect", "claude-code", journal)
    assert result.returncode == 1 and b"E_DIALECT_MISMATCH" in result.stderr
    assert json.loads(result.stdout)["aggregate"]["diagnostics"]["byCode"] == {"E_DIALECT_MISMATCH": 1}


RESUMED = "\n".join([
    '{"type":"user","timestamp":"2025-07-02T09:00:00.000Z","sessionId":"s2","uuid":"u1","message":{"role":"user","content":"go"}}',
    '{"type":"assistant","timestamp":"2025-07-02T09:00:02.000Z","sessionId":"s2","uuid":"a1","parentUuid":"u1","message":{"id":"msg_1","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_task","name":"Task","input":{"prompt":"find X"}}],"usage":{"input_tokens":10,"output_tokens":20}}}',
    '{"type":"user","timestamp":"2025-07-02T09:00:09.000Z","sessionId":"s2","uuid":"u2","parentUuid":"a1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_task","content":"X is in a.py"}]}}',
]) + "\n"


def test_a_resumed_sessions_repeated_records_are_one_tool_call_as_after_heal(tmp_path):
    log = tmp_path / "resumed.jsonl"
    log.write_text(RESUMED + RESUMED)  # (the session's records written again after a resume)
    raw = json.loads(run_replay("report", "--format", "json", str(log)).stdout)["runs"][0]
    healed = json.loads(run_replay("report", "--format", "json", input=run_replay("heal", str(log)).stdout).stdout)
    calls = [(run["toolCalls"]["total"], run["toolCalls"]["error"]) for run in (raw, healed["runs"][0])]
    assert calls == [(1, 0), (1, 0)]


# A resumed session (its records under the new id, going on from the old ones by parentUuid) that starts a sub-agent:
# the sidechain's first record has no parentUuid, as Claude Code writes a sidechain's root.
RESUMED_WITH_SUB_AGENT = "".join(json.dumps(r) + "\n" for r in [
    {"type": "user", "sessionId": "old", "uuid": "u1", "parentUuid": None, "isSidechain": False,
     "timestamp": "2025-07-01T10:00:00Z", "message": {"role": "user", "content": "hi"}},
    {"type": "assistant", "sessionId": "old", "uuid": "a1", "parentUuid": "u1", "isSidechain": False,
     "timestamp": "2025-07-01T10:00:01Z", "message": {"id": "m1", "role": "assistant", "model": "m", "content": [
         {"type": "text", "text": "hello"}], "usage": {"input_tokens": 10, "output_tokens": 5}}},
    {"type": "user", "sessionId": "new", "uuid": "u2", "parentUuid": "a1", "isSidechain": False,
     "timestamp": "2025-07-01T11:00:00Z", "message": {"role": "user", "content": "search the repo"}},
    {"type": "assistant", "sessionId": "new", "uuid": "a2", "parentUuid": "u2", "isSidechain": False,
     "timestamp": "2025-07-01T11:00:01Z", "message": {"id": "m2", "role": "assistant", "model": "m", "content": [
         {"type": "tool_use", "id": "toolu_task", "name": "Task", "input": {"prompt": "find x"}}],
         "usage": {"input_tokens": 20, "output_tokens": 5}}},
    {"type": "user", "sessionId": "new", "uuid": "s1", "parentUuid": None, "isSidechain": True,
     "timestamp": "2025-07-01T11:00:02Z", "message": {"role": "user", "content": "find x"}},
    {"type": "assistant", "sessionId": "new", "uuid": "s2", "parentUuid": "s1", "isSidechain": True,
     "timestamp": "2025-07-01T11:00:03Z", "message": {"id": "m3", "role": "assistant", "model": "m", "content": [
         {"type": "text", "text": "x is in y"}], "usage": {"input_tokens": 30, "output_tokens": 5}}},
    {"type": "user", "sessionId": "new", "uuid": "u3", "parentUuid": "a2", "isSidechain": False,
     "timestamp": "2025-07-01T11:00:04Z", "message": {"role": "user", "content": [
         {"type": "tool_result", "tool_use_id": "toolu_task", "content": "x is in y"}]}},
    {"type": "assistant", "sessionId": "new", "uuid": "a3", "parentUuid": "u3", "isSidechain": False,
     "timestamp": "2025-07-01T11:00:05Z", "message": {"id": "m4", "role": "assistant", "model": "m", "content": [
         {"type": "text", "text": "done"}], "usage": {"input_tokens": 40, "output_tokens": 5}}},
])


def test_a_resumed_sessions_sub_agent_goes_on_with_the_run_and_answers_its_task_call(tmp_path):
    log = tmp_path / "resumed.jsonl"
    log.write_text(RESUMED_WITH_SUB_AGENT)
    result = run_replay("report", "--format", "json", str(log), process=True)
    assert result.returncode == 0, result.stderr
    runs = json.loads(result.stdout)["runs"]
    assert [(run["runId"], [(c["toolName"], c["status"]) for c in run["toolCalls"]["calls"]], run["errors"])
            for run in runs] == [("old", [("Task", "ok")], [])]
    assert runs[0]["usage"]["inputTokens"] == 100  # (the sub-agent's call too)
    repairs = tmp_path / "repairs.jsonl"
    healed = run_replay("heal", str(log), "--log", str(repairs), process=True)
    assert healed.returncode == 0, healed.stderr
    assert [r["rule"] for r in map(json.loads, repairs.read_text().splitlines()) if r["rule"] == "pair_tool_calls"] == []
    mapped = [json.loads(line) for line in run_replay("read", "--dialect", "claude-code", str(log), process=True).stdout.splitlines()]
    assert [e["runId"] for e in mapped if e.get("$record") == "run"] == ["old"]
    assert [e["type"] for e in mapped if e.get("id") == "s1"] == ["user_message"]  # (the sub-agent's prompt: no run_started)
