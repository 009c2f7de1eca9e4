"""A binary file (or any input broken the same way on every line) gives the first errors, then one summary line."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import errors_of, jsonl, run_replay

GARBAGE = b"\x7fELF\x02\x01\x01\x00\xff\xfe binary \x00\x00"


def binary_file(tmp_path: Path, lines: int = 100) -> Path:
    path = tmp_path / "blob.jsonl"
    path.write_bytes((GARBAGE + b"\n") * lines)
    return path


def test_a_binary_file_gives_twenty_errors_and_one_summary(tmp_path: Path) -> None:
    proc = run_replay("read", str(binary_file(tmp_path)), cwd=tmp_path)
    # no record comes out; each line left out has its dropped record, so a parse down a pipe reports it again
    out = proc.stdout.split(b"\n")[:-1]
    assert proc.returncode == 1 and len(out) == 100 and all(line.startswith(b'{"$record":"dropped"') for line in out)
    errors = errors_of(proc.stderr)
    assert [e["code"] for e in errors] == ["E_JSONL_LINE_INVALID"] * 20 + ["E_ERRORS_SUPPRESSED"]
    summary = errors[-1]
    assert summary["suppressed"] == 80 and summary["suppressedCode"] == "E_JSONL_LINE_INVALID"
    assert summary["source"].endswith("blob.jsonl") and (summary["firstLine"], summary["lastLine"]) == (21, 100)


def test_max_errors_sets_the_limit_and_zero_shows_all(tmp_path: Path) -> None:
    blob = str(binary_file(tmp_path))
    assert len(errors_of(run_replay("--max-errors", "0", "read", blob, cwd=tmp_path).stderr)) == 100
    three = errors_of(run_replay("--max-errors", "3", "read", blob, cwd=tmp_path).stderr)
    assert [e["code"] for e in three] == ["E_JSONL_LINE_INVALID"] * 3 + ["E_ERRORS_SUPPRESSED"]


def test_validate_still_counts_every_error(tmp_path: Path) -> None:
    proc = run_replay("validate", str(binary_file(tmp_path)), cwd=tmp_path)
    assert proc.returncode == 1
    [summary] = jsonl(proc.stdout)
    assert summary["errors"] == 100 and summary["valid"] is False
    assert errors_of(proc.stderr)[-1]["code"] == "E_ERRORS_SUPPRESSED"


def test_max_errors_reaches_every_run_of_a_command_over_many_inputs(tmp_path: Path) -> None:
    """validate, heal --in and report run each input on its own graph: --max-errors is theirs too (it was 20)."""
    blob = str(binary_file(tmp_path))
    commands = (["validate", blob], ["validate", blob, blob, "--workers", "2"], ["heal", "--in", blob, "--out", "healed-{}"],
                ["report", blob, blob])
    for command in commands:
        for limit, shown in (("0", 100), ("3", 3)):
            argv = [word.format(limit) for word in command]
            codes = [e["code"] for e in errors_of(run_replay("--max-errors", limit, *argv, cwd=tmp_path).stderr)]
            assert codes.count("E_JSONL_LINE_INVALID") == shown * command.count(blob), (argv, codes)


def _usage_as_text(tmp_path: Path, events: int = 50) -> Path:
    """A run whose every assistant message gives its token count as a string: one E_USAGE_NOT_COUNTED warning each."""
    lines = [{"seq": 1, "timestamp": "2026-01-01T00:00:00Z", "type": "run_started", "runId": "r1", "payload": {}}]
    lines += [{"seq": seq, "timestamp": "2026-01-01T00:00:01Z", "type": "assistant_message", "runId": "r1",
               "payload": {"usage": {"inputTokens": "45", "outputTokens": 3}}} for seq in range(2, events + 2)]
    lines.append({"seq": events + 2, "timestamp": "2026-01-01T00:00:02Z", "type": "run_completed", "runId": "r1",
                  "payload": {}})
    path = tmp_path / "usage.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def _warnings(stderr: bytes) -> list[dict]:
    return [orjson.loads(line) for line in stderr.splitlines() if b'"level":"warning"' in line]


def test_warnings_are_held_to_the_limit_too(tmp_path: Path) -> None:
    """A warning on every line printed one line of stderr each (50,000 for a 50,000-event journal): now the first
    --max-errors, then one E_NOTICES_SUPPRESSED warning; the report itself is unchanged, the exit code too."""
    journal = str(_usage_as_text(tmp_path))
    proc = run_replay("report", "--format", "json", journal, cwd=tmp_path)
    codes = [w["code"] for w in _warnings(proc.stderr)]
    assert proc.returncode == 0 and codes == ["E_USAGE_NOT_COUNTED"] * 20 + ["E_NOTICES_SUPPRESSED"], codes
    summary = _warnings(proc.stderr)[-1]
    assert (summary["suppressed"], summary["suppressedCode"], summary["firstLine"], summary["lastLine"]) == (
        30, "E_USAGE_NOT_COUNTED", 22, 51)
    assert summary["source"].endswith("usage.jsonl") and summary["howToFix"]
    every = run_replay("--max-errors", "0", "report", "--format", "json", journal, cwd=tmp_path)
    assert [w["code"] for w in _warnings(every.stderr)] == ["E_USAGE_NOT_COUNTED"] * 50
    assert every.stdout == proc.stdout
    three = run_replay("--max-errors", "3", "report", journal, cwd=tmp_path)
    assert [w["code"] for w in _warnings(three.stderr)] == ["E_USAGE_NOT_COUNTED"] * 3 + ["E_NOTICES_SUPPRESSED"]


def test_a_config_that_logs_events_logs_every_one(tmp_path: Path) -> None:
    """The limit is for diagnostics (records with a code): a `log` stage of a config that logs events logs them all."""
    journal = _usage_as_text(tmp_path)
    config = tmp_path / "log.toml"
    config.write_text('[stages.read]\ntype = "read"\n\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n\n'
                      '[stages.log]\ntype = "log"\ninputs = ["parse"]\nevent = "seen"\n')
    proc = run_replay("run", str(config), str(journal), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sum(b'"event":"seen"' in line for line in proc.stderr.splitlines()) == 52


def test_notices_no_stage_takes_are_held_to_the_limit(tmp_path: Path) -> None:
    """`read --dialect` leaves its notices to the engine (no stage takes them): a key written twice in every line of a
    Claude Code log warned once a line; now 20 times, then one E_NOTICES_SUPPRESSED warning."""
    lines = [orjson.dumps({"type": "user", "zz": 1, "timestamp": f"2025-06-14T11:00:{i:02d}Z", "sessionId": "s1",
                           "uuid": f"u{i}", "message": {"role": "user", "content": "hi"}}).replace(b'"zz":1', b'"zz":1,"zz":2')
             for i in range(30)]
    log = tmp_path / "session.jsonl"
    log.write_bytes(b"\n".join(lines) + b"\n")
    proc = run_replay("read", "--dialect", "claude-code", str(log), cwd=tmp_path)
    codes = [w["code"] for w in _warnings(proc.stderr)]
    assert codes == ["E_JSON_DUPLICATE_KEY"] * 20 + ["E_NOTICES_SUPPRESSED"], proc.stderr
    assert _warnings(proc.stderr)[-1]["suppressed"] == 10
    every = run_replay("--max-errors", "0", "read", "--dialect", "claude-code", str(log), cwd=tmp_path)
    assert [w["code"] for w in _warnings(every.stderr)] == ["E_JSON_DUPLICATE_KEY"] * 30
    assert every.stdout == proc.stdout


def test_heal_notices_are_held_to_the_limit_by_their_rule(tmp_path: Path) -> None:
    """A heal notice names its rule beside its code: a run whose timestamps go back every other event printed a
    check_order warning for each (50,000 for 100,000 events; a quarter of heal's time went to writing them). Now 20,
    then one E_NOTICES_SUPPRESSED warning that names the rule and its code; the healed output is the same."""
    lines = [{"seq": 1, "timestamp": "2026-01-01T00:00:00Z", "type": "run_started", "runId": "r1", "payload": {}}]
    for k in range(30):
        lines.append({"seq": len(lines) + 1, "timestamp": "2026-01-01T00:00:05Z", "type": "user_message", "runId": "r1",
                      "payload": {"text": str(k)}})
        lines.append({"seq": len(lines) + 1, "timestamp": "2026-01-01T00:00:01Z", "type": "user_message", "runId": "r1",
                      "payload": {"text": str(k)}})
    lines.append({"seq": len(lines) + 1, "timestamp": "2026-01-01T00:00:09Z", "type": "run_completed", "runId": "r1",
                  "payload": {}})
    journal = tmp_path / "back.jsonl"
    journal.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    proc = run_replay("heal", str(journal), cwd=tmp_path)
    warnings = _warnings(proc.stderr)
    assert [w.get("rule") for w in warnings[:-1]] == ["check_order"] * 20, proc.stderr
    summary = warnings[-1]
    assert (summary["code"], summary["suppressedRule"], summary["suppressed"]) == ("E_NOTICES_SUPPRESSED", "check_order", 10)
    assert summary["suppressedCode"] == "E_TIMESTAMP_BACKWARDS" and summary["event"] == "heal.notice"
    every = run_replay("--max-errors", "0", "heal", str(journal), cwd=tmp_path)
    assert [w.get("rule") for w in _warnings(every.stderr)] == ["check_order"] * 30
    assert every.stdout == proc.stdout and proc.returncode == every.returncode == 0


def test_a_config_that_logs_the_heal_log_logs_every_repair(tmp_path: Path) -> None:
    """A repair names its rule as a heal notice does, but it is no warning: a `log` stage of heal.repairs logged the
    first 20 of each rule and then an E_NOTICES_SUPPRESSED "warning" for the rest (the audit of what heal changed cut
    short); every repair is logged, and the notices are still held to the limit."""
    lines = [{"seq": 1, "timestamp": "2026-01-01T00:00:00Z", "type": "run_started", "runId": "r", "payload": {}}]
    lines += [{"seq": k, "timestamp": "2026-01-01T00:00:01Z", "type": "tool_end", "runId": "r",
               "payload": {"callId": f"c{k}"}} for k in range(2, 40)]  # (each aliased, and a result with no call)
    journal = tmp_path / "j.jsonl"
    journal.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    config = tmp_path / "audit.toml"
    config.write_text('[stages.read]\ntype = "read"\n\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n\n'
                      '[stages.heal]\ntype = "heal"\ninputs = ["parse"]\n\n'
                      '[stages.out]\ntype = "write"\ninputs = ["heal"]\npath = "out.jsonl"\n\n'
                      '[stages.audit]\ntype = "log"\ninputs = ["heal.repairs"]\nevent = "heal.repair"\nlevel = "warning"\n')
    proc = run_replay("run", str(config), str(journal), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    logged = [w for w in _warnings(proc.stderr) if w.get("event") == "heal.repair"]
    assert not [w for w in logged if w.get("code") == "E_NOTICES_SUPPRESSED"], logged[-1]
    assert sum(w.get("rule") == "alias" for w in logged) == 38
    assert sum(w.get("rule") == "pair_tool_calls" for w in logged) == 38
