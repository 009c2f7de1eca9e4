"""`replay read --dialect`, `replay heal --dialect/--dialect-out` as real processes and pipes, on real agent logs
(attribution: tests/fixtures/corpus/SOURCES.md)."""

from __future__ import annotations

import orjson
from conftest import errors_of, jsonl, run_replay
from dialect_support import CORPUS

from replay.pipeline.cli.commands.read import DIALECTS
from replay.pipeline.model.dialects import AUTO, NAMES, ORIGIN_KEY

CLAUDE = CORPUS / "claude-code" / "representative_messages.jsonl"
CODEX_BAD = CORPUS / "codex" / "rollout-66666666-6666-4666-8666-666666666666.jsonl"
OPENHANDS = CORPUS / "openhands" / "basic.json"


def test_the_cli_offers_every_dialect():
    assert (AUTO, *NAMES) == DIALECTS


def test_read_maps_a_claude_code_session_and_plain_read_still_copies_bytes():
    done = run_replay("read", "--dialect", "claude-code", str(CLAUDE))
    assert done.returncode == 0, done.stderr
    out = jsonl(done.stdout)
    assert out[0]["$record"] == "run" and out[0]["framework"] == "claude-code" and out[0]["runId"] == "test_session"
    assert sum(1 for r in out if r.get("type") == "tool_called") == 2
    assert [r[ORIGIN_KEY]["record"] for r in out[1:] if r[ORIGIN_KEY]["part"] == 0] == jsonl(CLAUDE.read_bytes())
    plain = run_replay("read", str(CLAUDE))
    assert plain.returncode == 0 and plain.stdout == CLAUDE.read_bytes().rstrip(b"\n") + b"\n"  # the file ends without one


def test_read_reports_the_codex_malformed_line_with_its_byte_offset():
    data = CODEX_BAD.read_bytes()
    done = run_replay("read", "--dialect", "auto", str(CODEX_BAD))
    assert done.returncode == 1
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["line"], error["offset"], error["source"]) == (
        "E_JSONL_LINE_INVALID", 3, data.index(b"{synthetic"), str(CODEX_BAD))
    assert [r.get("type") for r in jsonl(done.stdout)] == [None, "run_started", "event_msg.user_message"]


def test_read_then_heal_dialect_out_gives_the_log_back():
    for path in (CLAUDE, OPENHANDS, CORPUS / "mini-swe-agent" / "github_issue.traj.json"):
        name = path.parent.name
        read = run_replay("read", "--dialect", name, str(path))
        back = run_replay("heal", "--dialect-out", name, input=read.stdout)
        assert back.returncode == 0, back.stderr
        if path.suffix == ".json":
            assert jsonl(back.stdout) == [orjson.loads(path.read_bytes())]
        else:
            assert jsonl(back.stdout) == jsonl(path.read_bytes())


def test_heal_maps_an_openhands_trajectory_that_used_to_fail():
    done = run_replay("heal", str(OPENHANDS))
    assert done.returncode == 0, done.stderr
    out = jsonl(done.stdout)
    assert out[0]["status"] == "ok" and out[-2]["type"] == "run_completed"
    assert errors_of(done.stderr) == []


def test_heal_logs_an_orphaned_result_and_dialect_out_writes_the_repaired_session(tmp_path):
    lines = CLAUDE.read_bytes().splitlines()
    del lines[3]  # the call is gone, its result stays
    broken = tmp_path / "session.jsonl"
    broken.write_bytes(b"\n".join(lines) + b"\n")
    log = tmp_path / "repairs.jsonl"
    done = run_replay("heal", str(broken), "--log", str(log), "--dialect-out", "claude-code")
    assert done.returncode == 0, done.stderr
    entries = [e for e in jsonl(log.read_bytes()) if e["rule"] == "pair_tool_calls"]
    assert [(e["action"], e["line"], e["source"]) for e in entries] == [("dropped", 4, str(broken))]
    repaired = jsonl(done.stdout)
    assert orjson.loads(lines[3]) not in repaired and len(repaired) == len(lines) - 1


def test_read_heal_report_pipeline_on_a_claude_code_session():
    read = run_replay("read", str(CLAUDE))
    healed = run_replay("heal", input=read.stdout)
    report = run_replay("report", "--format", "json", input=healed.stdout)
    assert report.returncode == 0, report.stderr
    (run,) = orjson.loads(report.stdout)["runs"]
    assert run["framework"] == "claude-code" and run["toolCalls"]["total"] == 2
    assert run["usage"]["inputTokens"] == 218 and run["repairs"]["total"] > 0
