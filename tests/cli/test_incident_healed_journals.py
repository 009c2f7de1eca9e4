"""`incident import --format replay` of a journal heal mapped from another agent's log: the types that hold no call,
result, effect or ending (turn_context, reasoning, summary, Codex's event_msg.*, ...) are dropped as assistant_message
is; another type is refused with the config that drops it; heal's made-up ending is no ending."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import CORPUS, errors_of, jsonl, run_replay

CODEX = CORPUS / "codex" / "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"
CLAUDE = CORPUS / "claude-code" / "representative_messages.jsonl"
RULES = b'[{"id":"a","type":"max_tool_errors","max":0}]'


def healed(tmp_path: Path, log: Path) -> list[dict]:
    done = run_replay("heal", str(log), process=True)
    assert done.returncode == 0, done.stderr
    return jsonl(done.stdout)


def write(path: Path, records: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def import_(tmp_path: Path, journal: Path, out: str = "imported") -> object:
    (tmp_path / "rules.json").write_bytes(RULES)
    return run_replay("incident", "import", str(journal), "--format", "replay", "--rules", "rules.json", "--out", out,
                      cwd=tmp_path, process=True)


def test_a_healed_claude_code_session_that_ended_imports_without_its_summary(tmp_path: Path) -> None:
    records = [r for r in healed(tmp_path, CLAUDE) if not r.get("synthetic") and r.get("$record") != "heal"]
    assert "summary" in {r.get("type") for r in records}
    last = max(r["seq"] for r in records if "seq" in r)
    records.append({"seq": last + 1, "timestamp": "2026-01-02T03:04:17.000Z", "type": "run_completed",
                    "runId": records[0]["runId"], "payload": {"output": {"done": True}}})
    done = import_(tmp_path, write(tmp_path / "ended.jsonl", records))
    assert done.returncode == 0, done.stderr
    incident = orjson.loads((tmp_path / "imported" / "incident.json").read_bytes())
    assert [e["type"] for e in incident["events"]][-1] == "final_output"
    assert {e["type"] for e in incident["events"]} <= {"tool_call", "tool_result", "final_output"}


def test_a_healed_codex_rollout_is_refused_at_its_first_unmapped_type_with_the_config_that_drops_it(tmp_path: Path) -> None:
    journal = write(tmp_path / "h.jsonl", healed(tmp_path, CODEX))
    done = import_(tmp_path, journal)
    assert done.returncode == 2
    (error,) = errors_of(done.stderr)
    # turn_context (line 3), reasoning, event_msg.* were dropped: the first type refused is one no table knows
    assert (error["code"], error["received"], error["line"]) == ("E_INCIDENT_EVENT_TYPE_UNKNOWN", "future_synthetic_record", 15)
    assert "replay run drop.toml" in error["howToFix"]
    # the advice, followed: the type is dropped, and the journal's ending is the next thing it lacks
    (tmp_path / "drop.toml").write_text(error["example"])
    kept = run_replay("run", "drop.toml", "h.jsonl", cwd=tmp_path, process=True)
    assert kept.returncode == 0, kept.stderr
    (tmp_path / "kept.jsonl").write_bytes(kept.stdout)
    done = import_(tmp_path, tmp_path / "kept.jsonl")
    assert done.returncode == 2
    (error,) = errors_of(done.stderr)
    assert error["code"] == "E_INCIDENT_TERMINAL_MISSING" and error["received"] == "a synthetic run_failed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["drop.toml", "h.jsonl", "kept.jsonl", "rules.json"]
