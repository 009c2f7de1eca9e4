"""`incident import --format replay` of a journal heal mapped from another agent's log: the types that hold no call,
result, effect or ending (turn_context, reasoning, summary, Codex's event_msg.*, ...) are dropped as assistant_message
is; another type is refused with the config that drops it; heal's made-up ending is no ending. A call's arguments that
are no object (Codex's apply_patch writes a text) are imported as {"input": <them>}, with a warning, and replay so."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import CORPUS, errors_of, jsonl, run_replay
from incident_support import plan_agent

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


def ended(records: list[dict], drop: tuple[str, ...] = ()) -> list[dict]:
    """A healed journal's own records (heal's made-up ones and its heal record left out, and the types ``drop``) with
    the ending the log had not (as a run that finished would have it)."""
    kept = [r for r in records if not r.get("synthetic") and r.get("$record") != "heal" and r.get("type") not in drop]
    last = max(r["seq"] for r in kept if "seq" in r)
    return [*kept, {"seq": last + 1, "timestamp": "2026-01-02T03:04:17.000Z", "type": "run_completed",
                    "runId": kept[0]["runId"], "payload": {"output": {"done": True}}}]


def notices_of(stderr: bytes) -> list[dict]:
    return [orjson.loads(line) for line in stderr.splitlines() if b'"event":"notice"' in line]


def replay_bundle(tmp_path: Path, calls: list[tuple[str, object]], out: str = "replayed") -> object:
    """`incident replay` of the imported bundle with an agent that makes ``calls`` (name, args), then ends as the
    recording did."""
    plan = [*({"call": name, "args": args} for name, args in calls), {"final": {"done": True}}]
    return run_replay("incident", "replay", str(tmp_path / "imported" / "incident.json"), "--agent-command",
                      plan_agent(plan), "--out", out, cwd=tmp_path, process=True)


def test_a_healed_codex_rollout_that_used_apply_patch_imports_the_patch_as_input_with_a_warning(tmp_path: Path) -> None:
    """Codex writes apply_patch as a custom_tool_call whose `input` is the patch's text, which heal maps to a
    tool_called with `"args": "*** Begin Patch..."`: the import refused it (E_INCIDENT_FIELD_INVALID, "args must be an
    object", exit 2) with advice no Codex user can follow. It takes it as {"input": <the text>}, says so (one warning
    naming the call, its line, never the text), redacts the text as any freeform argument, and a replay with an agent
    sending the bundle's args matches."""
    records = ended(healed(tmp_path, CODEX), drop=("future_synthetic_record",))
    journal = write(tmp_path / "ended.jsonl", records)
    patch_line = next(n for n, r in enumerate(records, 1) if r.get("payload", {}).get("toolName") == "apply_patch")
    assert isinstance(records[patch_line - 1]["payload"]["args"], str)  # (what heal maps a custom_tool_call to)
    done = import_(tmp_path, journal)
    assert done.returncode == 0, done.stderr
    assert errors_of(done.stderr) == []
    (notice,) = notices_of(done.stderr)
    assert (notice["code"], notice["level"], notice["line"], notice["path"]) == (
        "E_INCIDENT_ARGS_WRAPPED", "warning", patch_line, "$.payload.args")
    assert notice["calls"] == ["c2"] and notice["received"] == ["string"] and "c2 apply_patch: string" in notice["message"]
    assert b"Begin Patch" not in done.stderr
    folder = tmp_path / "imported"
    incident = orjson.loads((folder / "incident.json").read_bytes())
    calls = [(e["call_id"], e["name"], e["args"]) for e in incident["events"] if e["type"] == "tool_call"]
    # the patch, a text with spaces, is freeform text: removed as a command line is (`cmd`), or a `query`
    assert calls == [("c1", "exec_command", {"cmd": "[redacted]"}), ("c2", "apply_patch", {"input": "[redacted]"}),
                     ("c3", "mcp__synthetic__lookup", {"query": "[redacted]"})]
    assert orjson.loads((folder / "redaction.json").read_bytes())["fields"]["freeform_text"] >= 2
    assert not any(b"Begin Patch" in f.read_bytes() for f in folder.iterdir())
    replayed = replay_bundle(tmp_path, [(name, args) for _cid, name, args in calls])
    assert replayed.returncode == 0, replayed.stderr
    assert orjson.loads((tmp_path / "replayed" / "replay.json").read_bytes())["status"] == "matched"


def test_call_arguments_of_any_type_but_an_object_are_kept_as_written_under_input(tmp_path: Path) -> None:
    """A number, an array, null or a one-word text as a call's arguments (a runner's events may hold any JSON) is
    imported as the call's one argument `input`, as written (redaction keeps these): one warning names every call
    (the message the first three) and the types; a replayed agent must send the same value, and one that sends
    another diverges at that argument."""
    values: list[object] = [7, ["a", "b"], None, "ls", {"kept": "yes"}]
    records: list[dict] = [{"seq": 0, "type": "user_message", "runId": "r1", "payload": {"text": "go"}}]
    for k, value in enumerate(values, 1):
        records += [{"seq": 2 * k - 1, "type": "tool_called", "runId": "r1",
                     "payload": {"callId": f"t{k}", "toolName": "shell", "args": value}},
                    {"seq": 2 * k, "type": "tool_completed", "runId": "r1", "payload": {"callId": f"t{k}", "output": "ok"}}]
    records.append({"seq": 99, "type": "run_completed", "runId": "r1", "payload": {"output": {"done": True}}})
    done = import_(tmp_path, write(tmp_path / "j.jsonl", records))
    assert done.returncode == 0, done.stderr
    (notice,) = notices_of(done.stderr)
    assert notice["code"] == "E_INCIDENT_ARGS_WRAPPED" and (notice["line"], notice["path"]) == (2, "$.payload.args")
    assert notice["calls"] == ["c1", "c2", "c3", "c4"] and notice["received"] == ["array", "integer", "null", "string"]
    assert "c1 shell: integer; c2 shell: array; c3 shell: null; and 1 more" in notice["message"]
    incident = orjson.loads((tmp_path / "imported" / "incident.json").read_bytes())
    args = [e["args"] for e in incident["events"] if e["type"] == "tool_call"]
    assert args == [{"input": 7}, {"input": ["a", "b"]}, {"input": None}, {"input": "ls"}, {"kept": "yes"}]
    assert replay_bundle(tmp_path, [("shell", a) for a in args]).returncode == 0
    other = replay_bundle(tmp_path, [("shell", {"input": 8}), *(("shell", a) for a in args[1:])], out="other")
    assert other.returncode == 1
    divergence = orjson.loads((tmp_path / "other" / "replay.json").read_bytes())["divergence"]
    assert divergence["kind"] == "changed_call" and divergence["received"]["differing"] == ["input"]
