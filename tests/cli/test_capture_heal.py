"""Capture heals what the runner got wrong, and logs every repair."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import EXAMPLES, FIXTURES, jsonl, run_replay

BROKEN = str(EXAMPLES / "runners" / "broken_trace_runner.py")
SAY = str(FIXTURES / "runners" / "say.py")
CANONICAL = {"run_started", "user_message", "assistant_message", "tool_called", "tool_completed", "tool_failed",
             "run_completed", "run_failed"}


def capture(cwd: Path, *args: str) -> dict:
    done = run_replay("capture", *args, "Summarise my portfolio", cwd=cwd, input=b"", env={"REPLAY_RUNNER": ""})
    assert done.returncode == 0, done.stderr
    [summary] = jsonl(done.stdout)
    return {"summary": summary, **{k: tmp for k, tmp in ((k, cwd / v) for k, v in summary["files"].items())}}


def test_broken_trace_is_healed_and_every_repair_logged(tmp_path):
    out = capture(tmp_path, "--runner", BROKEN)
    before = json.loads(out["artifact"].read_text())
    healed = json.loads(out["healed"].read_text())
    log = json.loads(out["healLog"].read_text())

    # the artifact before healing is what the runner said
    assert [e["type"] for e in before["events"]] == ["user_message", "tool_called", "tool_called", "tool_end", "llm_message"]
    # the healed one is a clean trace
    events = healed["events"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["type"] == "run_started" and events[-1]["type"] == "run_completed"
    assert {e["type"] for e in events} <= CANONICAL
    assert all(isinstance(e["payload"], dict) for e in events)
    assert [e["type"] for e in events].count("tool_called") == 1
    assert healed["toolCalls"] == [{"toolName": "get_portfolio", "status": "ok", "durationMs": 30.0}]

    rules = {entry["rule"] for entry in log["repairs"]}
    assert {"alias", "dedupe", "ensure_run_started", "ensure_terminal", "normalize_payload", "renumber"} <= rules
    assert log["summary"]["total"] == out["summary"]["repairs"] == healed["heal"]["repairs"] > 0
    assert sum(log["summary"]["byRule"].values()) == log["summary"]["total"]
    alias = [e for e in log["repairs"] if e["rule"] == "alias"]
    assert {e["original"] for e in alias} == {"tool_end", "llm_message"}

    journal = jsonl(out["journal"].read_bytes())
    assert journal[0]["$record"] == "run" and journal[-1]["$record"] == "heal"
    assert journal[-1]["byRule"] == log["summary"]["byRule"]


def test_healing_the_captured_journal_again_changes_nothing(tmp_path):
    out = capture(tmp_path, "--runner", BROKEN)
    journal = out["journal"].read_bytes()
    again = run_replay("heal", "--no-summary", input=journal)
    assert again.returncode == 0, again.stderr
    assert again.stdout == journal


def test_adopted_run_ids_are_in_the_heal_log(tmp_path):
    output = {"status": "ok", "response": "r", "events": [
        {"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started", "runId": "framework-42", "payload": {}},
        {"seq": 2, "timestamp": "2026-03-01T12:00:01.000Z", "type": "assistant_message", "runId": "framework-42",
         "payload": {"content": "r"}},
        {"seq": 3, "timestamp": "2026-03-01T12:00:02.000Z", "type": "run_completed", "runId": "framework-42", "payload": {}},
    ]}
    out = capture(tmp_path, "--runner", SAY, "--context", json.dumps({"stdout": output}))
    run_id = out["summary"]["runId"]
    log = json.loads(out["healLog"].read_text())
    adopted = [e for e in log["repairs"] if e["rule"] == "adopt_run_id"]
    assert len(adopted) == 3 and all(e["original"] == "framework-42" and e["value"] == run_id for e in adopted)
    assert log["summary"]["byRule"] == {"adopt_run_id": 3}
    healed = json.loads(out["healed"].read_text())
    assert {e["runId"] for e in healed["events"]} == {run_id}
    assert len(healed["events"]) == 3  # one run, not split where the ids differed
    reported = json.loads(out["artifact"].read_text())  # "the run as the runner reported it": its runIds
    assert [e["runId"] for e in reported["events"]] == ["framework-42"] * 3 and reported["runId"] == run_id


def test_without_healing_the_run_ids_capture_gives_events_are_warnings_and_the_artifact_keeps_the_runners(tmp_path):
    """--no-heal: the runner's events naming another runId were given the capture's in .artifact.json and the journal,
    with no heal log and no word. The artifact keeps the runner's ids; the journal (a file of the capture's run) has
    the run's, and each change is a warning on stderr (rule adopt_run_id), as every change capture makes then is."""
    output = {"status": "error", "error": "db down", "events": [
        {"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started", "runId": "OTHER", "payload": {}},
        {"seq": 2, "timestamp": "2026-03-01T12:00:01.000Z", "type": "run_failed", "runId": "OTHER", "payload": {}}]}
    done = run_replay("capture", "--no-heal", "--runner", SAY, "--context", json.dumps({"stdout": output}), "hi",
                      cwd=tmp_path, input=b"", env={"REPLAY_RUNNER": ""})
    assert done.returncode == 0, done.stderr
    summary = jsonl(done.stdout)[0]
    run_id, files = summary["runId"], {k: tmp_path / v for k, v in summary["files"].items()}
    assert [e["runId"] for e in json.loads(files["artifact"].read_text())["events"]] == ["OTHER", "OTHER"]
    assert {r["runId"] for r in jsonl(files["journal"].read_bytes())} == {run_id}
    warnings = [line for line in jsonl(done.stderr) if line.get("level") == "warning"]
    adopted = [w for w in warnings if w["rule"] == "adopt_run_id"]
    assert [(w["path"], w["original"], w["value"]) for w in adopted] == [("$.events[0]", "OTHER", run_id),
                                                                           ("$.events[1]", "OTHER", run_id)]
    assert [w["field"] for w in warnings if w["rule"] == "normalize_runner_error"] == ["error"]


def test_response_without_assistant_message_is_synthesized(tmp_path):
    output = {"status": "ok", "response": "AAPL", "events": []}
    out = capture(tmp_path, "--runner", SAY, "--context", json.dumps({"stdout": output}))
    healed = json.loads(out["healed"].read_text())
    assert [e["type"] for e in healed["events"]] == ["run_started", "assistant_message", "run_completed"]
    assert all(e.get("synthetic") for e in healed["events"])


def test_a_string_error_is_kept_as_the_message_of_an_error_object_and_logged(tmp_path):
    """The contract's `error` is an object; a runner's bare message (a string) was dropped from the run record, the
    artifact and the journal (only raw.json had it): it becomes {"message": ...}, a repair in the heal log."""
    output = {"status": "error", "error": "database connection refused", "events": []}
    out = capture(tmp_path, "--runner", SAY, "--context", json.dumps({"stdout": output}))
    expected = {"message": "database connection refused"}
    assert json.loads(out["artifact"].read_text())["error"] == expected
    assert json.loads(out["healed"].read_text())["error"] == expected
    assert jsonl(out["journal"].read_bytes())[0]["error"] == expected
    log = json.loads(out["healLog"].read_text())
    [repair] = [e for e in log["repairs"] if e["rule"] == "normalize_runner_error"]
    assert repair["original"] == "database connection refused" and repair["value"] == expected
    assert repair["action"] == "changed" and repair["field"] == "error"


def test_run_facts_of_another_type_are_kept_in_their_normal_form_or_noted_never_dropped_silently(tmp_path):
    """A runner's `framework`, `sources` and `usage` of another type than the contract's were left out of the run
    record without a word: one source name is kept as a list (a repair), the others are notices in the heal log,
    each naming the field, what came and how to fix the runner."""
    output = {"status": "ok", "response": "r", "framework": {"name": "langchain"}, "sources": "portfolio_db",
              "usage": "12 tokens", "events": []}
    out = capture(tmp_path, "--runner", SAY, "--context", json.dumps({"stdout": output}))
    healed = json.loads(out["healed"].read_text())
    assert healed["sources"] == ["portfolio_db"] and "framework" not in healed and "usage" not in healed
    log = json.loads(out["healLog"].read_text())
    [repair] = [e for e in log["repairs"] if e["rule"] == "normalize_runner_sources"]
    assert (repair["action"], repair["original"], repair["value"]) == ("changed", "portfolio_db", ["portfolio_db"])
    notices = {e["field"]: e for e in log["notices"] if e["rule"] == "check_runner_output"}
    assert notices.keys() == {"framework", "usage"}
    assert notices["framework"]["original"] == {"name": "langchain"} and notices["framework"]["received"] == "object"
    assert notices["usage"]["original"] == "12 tokens" and notices["usage"]["received"] == "string"
    assert all(e["action"] == "reported" and e["howToFix"] for e in notices.values())

    output = {"status": "ok", "response": "r", "sources": ["db", 3], "events": []}
    out = capture(tmp_path, "--runner", SAY, "--context", json.dumps({"stdout": output}))
    [notice] = json.loads(out["healLog"].read_text())["notices"]
    assert (notice["field"], notice["original"], notice["received"]) == ("sources", ["db", 3], "array (item [1] is integer)")


def test_without_healing_a_run_fact_not_kept_is_a_warning_on_stderr(tmp_path):
    output = {"status": "ok", "response": "r", "framework": 3, "events": []}
    done = run_replay("capture", "--no-heal", "--runner", SAY, "--context", json.dumps({"stdout": output}), "hi",
                      cwd=tmp_path, input=b"", env={"REPLAY_RUNNER": ""})
    assert done.returncode == 0, done.stderr
    [warning] = [line for line in jsonl(done.stderr) if line.get("rule") == "check_runner_output"]
    assert (warning["level"], warning["field"], warning["original"]) == ("warning", "framework", 3)


def test_a_failed_run_without_an_error_is_a_notice_and_without_healing_a_warning(tmp_path):
    """The runner output contract requires `error` when status is "error" (runner-output.schema.json); a runner that
    left it out was captured without a word. It is still a capture (exit 0), and the heal log says what is missing."""
    output = {"status": "error", "events": []}
    out = capture(tmp_path, "--runner", SAY, "--context", json.dumps({"stdout": output}))
    [notice] = [e for e in json.loads(out["healLog"].read_text())["notices"] if e["rule"] == "check_runner_output"]
    assert (notice["action"], notice["field"], notice["path"], notice["received"]) == ("reported", "error", "$.error", "missing")
    assert notice["howToFix"] and "error" not in json.loads(out["healed"].read_text())
    done = run_replay("capture", "--no-heal", "--runner", SAY, "--context", json.dumps({"stdout": output}), "hi",
                      cwd=tmp_path, input=b"", env={"REPLAY_RUNNER": ""})
    assert done.returncode == 0, done.stderr
    [warning] = [line for line in jsonl(done.stderr) if line.get("rule") == "check_runner_output"]
    assert (warning["level"], warning["field"], warning["received"]) == ("warning", "error", "missing")


def test_a_key_the_runner_writes_twice_is_a_notice_not_lost_without_a_word(tmp_path):
    """README, "Nothing lost": a key written twice in one object is a warning (E_JSON_DUPLICATE_KEY). Capture writes
    every event anew in .artifact.json and .healed.json, where only the last value of such a key survives, and said
    nothing: now each such stdout line (or the output object) is a notice in the heal log, a warning with --no-heal."""
    stdout = ('{"type": "tool_called", "payload": {"n": 1, "n": 2}}\n'
              '{"status": "ok", "response": "a", "response": "b", "events": [{"type": "x", "payload": {}, "payload": {"k": 1}}]}\n')
    out = capture(tmp_path, "--runner", SAY, "--context", json.dumps({"stdout": stdout}))
    assert json.loads(out["healed"].read_text())["response"] == "b"
    notices = [e for e in json.loads(out["healLog"].read_text())["notices"] if e.get("code") == "E_JSON_DUPLICATE_KEY"]
    assert [(n["line"], n["offset"], n["keys"]) for n in notices] == [
        (1, 0, ["$.payload.n"]), (2, 53, ["$.events[0].payload", "$.response"])], notices
    assert all(n["action"] == "reported" and n["rule"] == "check_runner_output" and n["howToFix"] for n in notices)
    data = stdout.encode()
    assert [data[n["offset"] + n["column"] - 1:].split(b":")[0] for n in notices] == [b'"n"', b'"response"']  # the 2nd
    assert json.loads(out["healLog"].read_text())["summary"]["total"] == out["summary"]["repairs"]  # notices count 0

    document = json.dumps({"stdout": '{"status": "ok", "response": "a",\n "response": "b", "events": []}'})
    done = run_replay("capture", "--no-heal", "--runner", SAY, "--context", document, "hi", cwd=tmp_path, input=b"",
                      env={"REPLAY_RUNNER": ""})
    assert done.returncode == 0, done.stderr
    [warning] = [line for line in jsonl(done.stderr) if line.get("code") == "E_JSON_DUPLICATE_KEY"]
    assert (warning["level"], warning["keys"], warning["line"]) == ("warning", ["$.response"], 2), warning


def test_a_usage_count_that_is_no_number_is_a_runner_notice_not_an_invalid_healed_artifact(tmp_path):
    """A runner whose usage says `"inputTokens": "12"` was captured with the string kept in the run record: the healed
    artifact failed validation (E_HEALED_ARTIFACT_INVALID on stderr, howToFix "Report this with the input", as if replay
    were at fault), the heal log said nothing, and the journal failed `replay validate`. Now each member that is no count
    is left out of the run's usage (the rest kept), a check_runner_output notice (E_USAGE_NOT_COUNTED) tells how to fix
    the runner, and what capture wrote validates."""
    runner = str(FIXTURES / "runners" / "usage_string_count.py")
    done = run_replay("capture", "--runner", runner, "hi", cwd=tmp_path, input=b"", env={"REPLAY_RUNNER": ""})
    assert done.returncode == 0, done.stderr
    assert b"E_HEALED_ARTIFACT_INVALID" not in done.stderr
    [summary] = jsonl(done.stdout)
    files = {k: tmp_path / v for k, v in summary["files"].items()}
    for name in ("artifact", "healed"):
        assert json.loads(files[name].read_text())["usage"] == {"outputTokens": 3}
    assert jsonl(files["journal"].read_bytes())[0]["usage"] == {"outputTokens": 3}
    notices = {n["field"]: n for n in json.loads(files["healLog"].read_text())["notices"]}
    assert notices.keys() == {"usage.inputTokens", "usage.costUsd"}
    count = notices["usage.inputTokens"]
    assert (count["rule"], count["action"], count["code"], count["path"], count["original"], count["received"]) == (
        "check_runner_output", "reported", "E_USAGE_NOT_COUNTED", "$.usage.inputTokens", "12", "string")
    assert "usage.inputTokens" in count["howToFix"] and "runner" in count["howToFix"]
    assert notices["usage.costUsd"]["original"] == -1
    for name in ("journal", "healed", "artifact"):
        checked = run_replay("validate", str(files[name]), cwd=tmp_path)
        assert checked.returncode == 0, (name, checked.stderr)


def test_a_capture_heal_cannot_make_valid_says_so_in_its_summary_line_too(tmp_path):
    """The summary said `"status": "ok"` and nothing else (exit 1, E_HEALED_ARTIFACT_INVALID on stderr); a failed
    capture's line names its error code: this one's too, the run's own status kept. (No runner's events leave a capture's
    heal short any more, `"step": {}` included: test_capture_event_fields; a graph whose emit is told of a heal that
    did not run still does.)"""
    spec = tmp_path / "unhealed.toml"
    spec.write_text(f"""[stages.discover]
type = "discover"
runner = {json.dumps(SAY)}
context = {{stdout = {{status = "ok", response = "a", events = [{{type = "x"}}]}}}}
[stages.spawn]
type = "spawn"
inputs = ["discover"]
[stages.parse]
type = "parse"
inputs = ["spawn"]
[stages.emit]
type = "emit"
inputs = ["parse", "spawn.raw"]
""")
    done = run_replay("run", str(spec), "hi", cwd=tmp_path, input=b"", env={"REPLAY_RUNNER": ""})
    [summary] = jsonl(done.stdout)
    assert done.returncode == 1 and (summary["status"], summary["error"]) == ("ok", "E_HEALED_ARTIFACT_INVALID")


def test_what_heal_cannot_make_valid_keeps_the_checks_own_advice():
    """E_HEALED_ARTIFACT_INVALID over artifacts said "Report this with the input" for every problem; filter mode's check
    kept the problem's own howToFix ("Make `usage.inputTokens` number >= 0"): now both do."""
    from replay.pipeline.model.healing import healed_problems

    [problem] = healed_problems({"schemaVersion": "1.0.0", "artifactType": "replay", "id": "r", "timestamp":
                                 "2026-03-01T12:00:00.000Z", "prompt": "p", "query": "p", "status": "ok",
                                 "usage": {"inputTokens": "12"}, "events": []}, "x.healed.json")
    assert problem["code"] == "E_HEALED_ARTIFACT_INVALID" and problem["cause"] == "E_USAGE_NOT_COUNTED"
    assert problem["howToFix"] == "Make `usage.inputTokens` number >= 0, or leave it out."
