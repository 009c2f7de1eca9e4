"""`replay heal` through the real executable: filter mode, heal log, rules, directory mode."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import orjson
import pytest
from conftest import CORPUS, EXAMPLES, REPLAY, ROOT, diagnostics, errors_of, jsonl, run_replay
from heal_support import ev, lines_of
from jsonschema import Draft202012Validator

from replay.pipeline.engine import exactjson

BROKEN = [
    {"$record": "run", "runId": "run_1", "prompt": "hi", "status": "ok", "response": "Hello!"},
    ev(1, "tool_start", run="run_1", payload={"tool": "search"}),
    ev(1, "tool_start", run="run_1", payload={"tool": "search"}),
    ev(5, "tool_end", run=None, ts="not a time", payload="oops"),
    ev(7, "run_completed", run="run_1"),
]


def broken_bytes(torn: bool = False) -> bytes:
    data = b"\n".join(lines_of(BROKEN)) + b"\n"
    return data + b'{"seq": 8, "ty' if torn else data


def test_filter_heals_stdin_and_writes_the_log(tmp_path: Path) -> None:
    log = tmp_path / "repairs.jsonl"
    proc = run_replay("heal", "--log", str(log), input=broken_bytes(torn=True))
    assert proc.returncode == 0, proc.stderr
    out = jsonl(proc.stdout)
    events = [r for r in out if "$record" not in r]
    assert [e["type"] for e in events] == ["run_started", "tool_called", "tool_completed", "assistant_message", "run_completed"]
    assert [e["seq"] for e in events] == [1, 2, 3, 4, 5]
    heal = out[-1]
    assert heal["$record"] == "heal" and heal["byRule"]["drop_torn_line"] == 1
    entries = jsonl(log.read_bytes())
    assert {e["rule"] for e in entries} >= {"alias", "dedupe", "fill_run_id", "fix_timestamp", "normalize_payload",
                                             "ensure_run_started", "synthesize_assistant_message", "renumber",
                                             "drop_torn_line"}
    torn = next(e for e in entries if e["rule"] == "drop_torn_line")
    assert torn["offset"] == len(broken_bytes()) and torn["source"] == "<stdin>"
    assert proc.stderr == b""


def test_untouched_lines_come_out_byte_for_byte() -> None:
    good = (b'{"seq":1,"timestamp":"2026-03-01T12:00:00Z","type":"run_started","runId":"r","payload":{}}\n'
            b'{"seq": 2, "timestamp": "2026-03-01T12:00:01Z", "type": "run_completed", "runId": "r", "payload": {}}\n')
    proc = run_replay("heal", input=good)
    assert proc.returncode == 0 and proc.stdout == good


def test_fields_a_writer_set_to_null_or_false_are_left_out_so_the_healed_journal_validates(tmp_path: Path) -> None:
    """`"turn": null` and `"synthetic": false` (Python's None and False) say what their absence says; validate refuses
    them and no other rule touched them: heal exited 1, its output "still invalid after healing". The runs around
    them need nothing and come out as their bytes (the screen's lane)."""
    clean = [ev(1, "run_started", run="a"), ev(2, "run_completed", run="a")]
    faulty = [ev(1, "run_started", run="b"), ev(2, "user_message", run="b") | {"turn": None, "step": 3},
              ev(3, "run_completed", run="b") | {"synthetic": False}]
    journal = tmp_path / "run.jsonl"
    journal.write_bytes(b"\n".join(lines_of([*clean, *faulty, *clean])) + b"\n")
    log = tmp_path / "heal.log.jsonl"
    proc = run_replay("heal", "--log", str(log), str(journal))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[:2] == lines_of(clean) and out[-2:] == lines_of(clean)
    healed = [orjson.loads(line) for line in out[2:5]]
    assert healed[1] == ev(2, "user_message", run="b") | {"step": 3} and healed[2] == ev(3, "run_completed", run="b")
    assert [(e["rule"], e["field"], e["original"], e["line"]) for e in jsonl(log.read_bytes())] == [
        ("drop_empty_fields", "turn", None, 4), ("drop_empty_fields", "synthetic", False, 5)]
    written = tmp_path / "healed.jsonl"
    written.write_bytes(proc.stdout)
    assert run_replay("validate", str(written)).returncode == 0


def test_a_run_record_without_a_run_id_is_named_as_its_run_so_the_healed_journal_validates(tmp_path: Path) -> None:
    """`{"$record": "run"}` with no runId was left as it was: heal exited 1, "still invalid after healing"."""
    journal = tmp_path / "nameless.jsonl"
    journal.write_bytes(b"\n".join(lines_of([{"$record": "run", "status": "ok", "prompt": "hi"},
                                             ev(1, "run_started", run="run_7"), ev(2, "run_completed", run="run_7")])) + b"\n")
    log = tmp_path / "heal.log.jsonl"
    proc = run_replay("heal", "--log", str(log), str(journal))
    assert proc.returncode == 0, proc.stderr
    assert jsonl(proc.stdout)[0] == {"$record": "run", "runId": "run_7", "status": "ok", "prompt": "hi"}
    [entry] = jsonl(log.read_bytes())
    assert (entry["rule"], entry["line"], entry["offset"], entry["value"]) == ("fill_run_id", 1, 0, "run_7")
    healed = tmp_path / "healed.jsonl"
    healed.write_bytes(proc.stdout)
    assert run_replay("validate", str(healed)).returncode == 0


def test_heal_of_healed_output_changes_nothing_and_logs_no_repair(tmp_path: Path) -> None:
    first = run_replay("heal", input=broken_bytes(torn=True)).stdout
    log = tmp_path / "second.jsonl"
    second = run_replay("heal", "--log", str(log), input=first)
    assert second.returncode == 0 and second.stdout == first
    assert log.read_bytes() == b""


def test_no_summary_leaves_only_the_stream() -> None:
    proc = run_replay("heal", "--no-summary", input=broken_bytes())
    assert all(r.get("$record") != "heal" for r in jsonl(proc.stdout))


def test_pipe_from_read_into_heal(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_bytes(broken_bytes())
    read = run_replay("read", str(path))
    healed = run_replay("heal", input=read.stdout)
    direct = run_replay("heal", str(path))
    events = [r for r in jsonl(healed.stdout) if "$record" not in r]
    assert len(events) == 5
    assert [r for r in jsonl(direct.stdout) if "$record" not in r] == events
    assert path.read_bytes() == broken_bytes()  # the input is never modified


def test_rules_file_from_flag_and_from_project_dir(tmp_path: Path) -> None:
    stream = b"\n".join(lines_of([ev(1, "run_started"), ev(2, "agent_said"), ev(3, "run_completed")])) + b"\n"
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"version": "v1", "eventAliases": {"agent_said": "assistant_message"}}))
    proc = run_replay("heal", "--rules", str(rules), input=stream)
    assert [r["type"] for r in jsonl(proc.stdout) if "type" in r][1] == "assistant_message"
    (tmp_path / ".replay").mkdir()
    (tmp_path / ".replay" / "heal.rules.json").write_text(rules.read_text())
    proc = run_replay("heal", input=stream, cwd=tmp_path)
    assert [r["type"] for r in jsonl(proc.stdout) if "type" in r][1] == "assistant_message"
    proc = run_replay("heal", input=stream)  # no rules here: the alias is unknown
    assert [r["type"] for r in jsonl(proc.stdout) if "type" in r][1] == "agent_said"


@pytest.mark.parametrize(("make", "code"), [
    (lambda rules: rules.mkdir(), "E_INPUT_UNREADABLE"),
    (lambda rules: rules.symlink_to(rules.parent / "gone.json"), "E_INPUT_PATH_NOT_FOUND"),
])
def test_an_unusable_default_rules_file_is_refused_not_passed_over(tmp_path: Path, make, code: str):
    """Something at .replay/heal.rules.json that is no file heal can read (a folder, a link to nothing) is the user's
    rules gone wrong: refused as --rules of it is, with what to do, not healed without them."""
    (tmp_path / ".replay").mkdir()
    make(tmp_path / ".replay" / "heal.rules.json")
    proc = run_replay("heal", input=b'{"seq":1,"type":"run_started","runId":"r","payload":{}}\n', cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == b""
    error = orjson.loads(proc.stderr)["error"]
    assert error["code"] == code and "--rules FILE" in error["howToFix"]


@pytest.mark.parametrize(("content", "code", "path", "received"), [
    (b"{not json", "E_HEAL_RULES_INVALID_JSON", None, None),
    (b"[1, 2]", "E_HEAL_RULES_SHAPE_INVALID", "$", "array"),  # JSON's names and text, never Python's (list, {'a': 3})
    (b'{"eventAliases": {"a": 3}}', "E_HEAL_RULES_SHAPE_INVALID", "$.eventAliases", '{"a":3}'),
    # a format other than the one there is (the schema's `version` const) is refused, not read as if it were v1
    (b'{"version": "v2", "eventAliases": {}}', "E_HEAL_RULES_SHAPE_INVALID", "$.version", '"v2"'),
    (b'{"version": 1}', "E_HEAL_RULES_SHAPE_INVALID", "$.version", "1"),
    # aliases in a circle (with the built-in tool_start -> tool_called): each heal renamed the types again, never done
    (b'{"eventAliases": {"tool_called": "tool_start"}}', "E_HEAL_RULES_SHAPE_INVALID", "$.eventAliases.tool_called",
     ["tool_called", "tool_start", "tool_called"]),
    (b'{"eventAliases": {"x": "a", "a": "b", "b": "a", "same": "same"}}', "E_HEAL_RULES_SHAPE_INVALID", "$.eventAliases.a",
     ["a", "b", "a"]),
    # `$schema` and `description` are the schema's strings: another type was taken, though `replay schema heal-rules` refuses it
    (b'{"version": "v1", "description": 5}', "E_HEAL_RULES_SHAPE_INVALID", "$.description", "5"),
    (b'{"$schema": {"a": 1}, "eventAliases": {}}', "E_HEAL_RULES_SHAPE_INVALID", "$.$schema", '{"a":1}'),
    # an unknown key (a misspelt eventAliases) applied nothing and said nothing, exit 0
    (b'{"version": "v1", "eventAlias": {"note": "assistant_message"}}', "E_HEAL_RULES_SHAPE_INVALID", "$.eventAlias",
     "eventAlias"),
])
def test_bad_rules_files_are_refused_before_output(tmp_path: Path, content: bytes, code: str, path: str | None,
                                                   received: str | None) -> None:
    rules = tmp_path / "rules.json"
    rules.write_bytes(content)
    proc = run_replay("heal", "--rules", str(rules), input=broken_bytes())
    assert proc.returncode == 2 and proc.stdout == b""
    (error,) = errors_of(proc.stderr)
    assert error["code"] == code and error["howToFix"]
    if path:
        assert error["path"] == path and error["received"] == received
    if code == "E_HEAL_RULES_INVALID_JSON":
        assert error["line"] == 1 and error["column"] >= 1
    if path in ("$.description", "$.$schema"):
        shape = orjson.loads(run_replay("schema", "heal-rules").stdout)  # what the schema refuses
        assert not Draft202012Validator(shape).is_valid(orjson.loads(content))
    if path == "$.eventAlias":
        assert "did you mean 'eventAliases'?" in error["message"] and "eventAliases" in error["expected"]
        shape = orjson.loads(run_replay("schema", "heal-rules").stdout)  # the schema says so too
        assert not Draft202012Validator(shape).is_valid(orjson.loads(content))
        assert Draft202012Validator(shape).is_valid({"$schema": "x", "description": "y", "version": "v1", "eventAliases": {}})


def test_a_rules_file_may_name_its_schema_and_say_what_it_is_for(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_bytes(b'{"$schema": "heal-rules.schema.json", "description": "ours", "eventAliases": {"said": "user"}}')
    proc = run_replay("heal", "--rules", str(rules), input=broken_bytes())
    assert proc.returncode != 2 and "E_HEAL_RULES_SHAPE_INVALID" not in proc.stderr.decode()


def test_aliases_in_a_circle_given_by_a_config_are_refused_and_a_chain_or_an_alias_to_itself_is_not(tmp_path: Path) -> None:
    """A config's heal aliases in a circle are refused at the option, before anything runs (exit 2); heal renamed x to y
    and y to x, and the heal of its output renamed them back. A chain ends where it ends, an alias to itself is none."""
    config = tmp_path / "heal.toml"
    config.write_text('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
                      '[stages.heal]\ntype = "heal"\ninputs = ["parse"]\naliases = {x = "y", y = "x"}\n'
                      '[stages.out]\ntype = "write"\ninputs = ["heal"]\n')
    stream = b"\n".join(lines_of([ev(1, "run_started"), ev(2, "x"), ev(3, "y"), ev(4, "run_completed")])) + b"\n"
    proc = run_replay("run", str(config), input=stream)
    assert proc.returncode == 2 and proc.stdout == b""
    (error,) = errors_of(proc.stderr)
    assert error["code"] == "E_CONFIG_OPTION_INVALID" and error["received"] == ["x", "y", "x"] and error["howToFix"]
    config.write_text(config.read_text().replace('{x = "y", y = "x"}', '{x = "y", y = "tool_end", z = "z"}'))
    healed = run_replay("run", str(config), input=stream)
    assert [r["type"] for r in jsonl(healed.stdout) if "type" in r] == ["run_started", "tool_completed", "tool_completed", "run_completed"]


def test_a_rules_file_writing_a_key_twice_is_refused_at_the_second(tmp_path: Path) -> None:
    """A JSON reader keeps the last of two values without a word; the rules file is written by hand, and the first may
    be the alias meant: refused (exit 2, nothing healed) at the second key's line and byte column."""
    rules = tmp_path / "rules.json"
    rules.write_bytes(b'{"version": "v1",\n "eventAliases": {"a": "tool_called", "a": "tool_completed"}}')
    proc = run_replay("heal", "--rules", str(rules), input=broken_bytes())
    assert proc.returncode == 2 and proc.stdout == b""
    (error,) = errors_of(proc.stderr)
    assert error["code"] == "E_HEAL_RULES_INVALID_JSON" and error["path"] == "$.eventAliases.a"
    assert (error["line"], error["column"], error["offset"]) == (2, 39, 18) and "twice" in error["message"]


def test_missing_rules_file_is_refused(tmp_path: Path) -> None:
    proc = run_replay("heal", "--rules", "/nonexistent/rules.json", input=b"")
    assert proc.returncode == 2 and errors_of(proc.stderr)[0]["code"] == "E_INPUT_PATH_NOT_FOUND"
    folder = run_replay("heal", "--rules", str(tmp_path), input=b"")  # (it said a folder "does not exist")
    assert folder.returncode == 2 and [e["code"] for e in errors_of(folder.stderr)] == ["E_INPUT_UNREADABLE"]


@pytest.mark.parametrize("mode", ["filter", "folder"])
def test_rules_from_a_pipe_are_read_once_for_the_rules_and_the_fast_lane(tmp_path: Path, mode: str) -> None:
    """`--rules <(...)`: a pipe, read once (heal's rules and its fast lane both need the aliases). It was refused as a
    file that "does not exist"; read twice, the second reader would find the pipe empty."""
    stream = b"\n".join(lines_of([ev(1, "run_started"), ev(2, "agent_said"), ev(3, "run_completed")])) + b"\n"
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "j.jsonl").write_bytes(stream)
    (tmp_path / "rules.json").write_text(json.dumps({"eventAliases": {"agent_said": "assistant_message"}}))
    target = "in/j.jsonl" if mode == "filter" else "--in in --out out"
    proc = subprocess.run(["bash", "-c", f"{REPLAY} heal --rules <(cat rules.json) {target}"], cwd=tmp_path,
                          capture_output=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    healed = proc.stdout if mode == "filter" else (tmp_path / "out" / "j.healed.jsonl").read_bytes()
    assert [r["type"] for r in jsonl(healed) if "type" in r] == ["run_started", "assistant_message", "run_completed"]


def test_real_journals_heal_and_stay_healed() -> None:
    """Claude Code and Codex logs are not canonical: heal makes them so, and a second heal is a no-op."""
    for name in ("claude-code/session_b.jsonl", "codex/rollout-66666666-6666-4666-8666-666666666666.jsonl"):
        path = CORPUS / name
        first = run_replay("heal", str(path))
        if name.startswith("codex/"):
            # its last line is malformed but ends with a newline: not torn, so reported (issue 7), not dropped
            data = path.read_bytes()
            last = data.rstrip(b"\n").rsplit(b"\n", 1)[1]
            assert data.endswith(b"\n") and first.returncode == 1
            [error] = errors_of(first.stderr)
            assert error["code"] == "E_JSONL_LINE_INVALID" and error["offset"] == len(data) - len(last) - 1
        else:
            assert first.returncode == 0, first.stderr
        events = [r for r in jsonl(first.stdout) if "$record" not in r]
        assert events[0]["type"] == "run_started" and events[-1]["type"] in ("run_completed", "run_failed")
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert run_replay("heal", input=first.stdout).stdout == first.stdout


def _artifact(run_id: str, events: list[dict], status: str = "ok") -> dict:
    return {"schemaVersion": "1.0.0", "artifactType": "replay", "id": run_id, "runId": run_id,
            "timestamp": "2026-03-01T12:00:00.000Z", "prompt": "q", "query": "q", "status": status, "response": "answer", "events": events}


def test_directory_mode_writes_healed_artifacts_and_logs(tmp_path: Path) -> None:
    src = tmp_path / "artifacts" / "2026-03-01"
    src.mkdir(parents=True)
    (src / "a1.artifact.json").write_text(json.dumps(_artifact("a1", [ev(3, "tool_end", run="a1"), ev(3, "tool_end", run="a1")]), indent=2))
    (src / "a2.artifact.json").write_text(json.dumps(_artifact("a2", [ev(1, "run_started", run="a2"),
                                                                       ev(2, "assistant_message", run="a2"),
                                                                       ev(3, "run_completed", run="a2")])))
    (src / "a1.raw.json").write_text("{}")  # a side file: not an artifact, not healed
    out = tmp_path / "healed"
    proc = run_replay("heal", "--in", str(tmp_path / "artifacts"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = jsonl(proc.stdout)
    assert [Path(x["source"]).name for x in lines] == ["a1.artifact.json", "a2.artifact.json"]
    healed = json.loads((out / "2026-03-01" / "a1.healed.json").read_text())
    assert [e["type"] for e in healed["events"]] == ["run_started", "tool_completed", "assistant_message", "run_completed"]
    assert healed["heal"]["byRule"]["dedupe"] == 1 and healed["toolCalls"][0]["toolName"] == "unknown"
    log = json.loads((out / "2026-03-01" / "a1.heal-log.json").read_text())
    assert log["artifactType"] == "heal-log" and log["summary"]["total"] == healed["heal"]["repairs"]
    clean = json.loads((out / "2026-03-01" / "a2.heal-log.json").read_text())
    assert clean["repairs"] == [] and clean["summary"] == {"total": 0, "byRule": {}}
    assert not (out / "2026-03-01" / "a1.raw.healed.json").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging dir left


def _clean_run(run_id: str, second: int) -> list[bytes]:
    return [orjson.dumps({"seq": k, "timestamp": f"2026-03-01T12:00:{second + k:02d}.000Z", "type": kind, "runId": run_id,
                          "payload": {}}) for k, kind in enumerate(("run_started", "user_message", "run_completed"), 1)]


@pytest.mark.parametrize("declared", [True, False])
def test_directory_mode_heals_a_journal_as_filter_mode_does_through_the_fast_lane(tmp_path: Path, declared: bool) -> None:
    """Clean runs pass through heal --in/--out as their bytes (the screen, as in filter mode), a run the rules repair
    between them: the healed copy is filter mode's output, and the heal log names the journal's run record's
    artifactId and runId, or the first event's runId when no run record opens it."""
    record = [orjson.dumps({"$record": "run", "runId": "r1", "artifactId": "art-1", "status": "ok"})] if declared else []
    repaired = [line.replace(b'"user_message"', b'"llm_message"') for line in _clean_run("r2", 10)]
    journal = tmp_path / "in" / "j.jsonl"
    journal.parent.mkdir()
    journal.write_bytes(b"\n".join([*record, *_clean_run("r1", 0), *repaired, *_clean_run("r3", 20)]) + b"\n")
    filtered = run_replay("heal", str(journal))
    assert filtered.returncode == 0, filtered.stderr
    out = tmp_path / "out"
    folder = run_replay("heal", "--in", str(journal.parent), "--out", str(out))
    assert folder.returncode == 0, folder.stderr
    assert (out / "j.healed.jsonl").read_bytes() == filtered.stdout
    assert b'"type":"assistant_message","runId":"r2"' in filtered.stdout
    log = json.loads((out / "j.heal-log.json").read_text())
    assert (log["artifactId"], log["runId"], log["summary"]) == (
        "art-1" if declared else "j.jsonl", "r1", {"total": 1, "byRule": {"alias": 1}})
    assert 'type = "screen"' in run_replay("stages", "--graph", "heal-dir").stdout.decode()


def test_directory_mode_finds_a_run_record_whose_key_is_escaped_among_the_lines_the_fast_lane_passes(tmp_path: Path) -> None:
    """`{"\u0024record":"run",...}` is a run record (JSON escapes any character): the heal log names its artifactId and
    runId. (Lines the fast lane passed were looked at only when their bytes held `$record`.)"""
    record = b'{"\\u0024record":"run","runId":"r3","artifactId":"art-d","status":"ok"}'
    journal = tmp_path / "in" / "d.jsonl"
    journal.parent.mkdir()
    journal.write_bytes(b"\n".join([*_clean_run("r2", 0), record, *_clean_run("r3", 10)]) + b"\n")
    done = run_replay("heal", "--in", str(journal.parent), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    log = json.loads((tmp_path / "out" / "d.heal-log.json").read_text())
    assert (log["artifactId"], log["runId"]) == ("art-d", "r3")


def test_directory_mode_refusals(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    cases = [
        (["--in", str(tmp_path / "missing"), "--out", str(tmp_path / "o")], "E_INPUT_PATH_NOT_FOUND"),
        (["--in", str(tmp_path / "notes.txt"), "--out", str(tmp_path / "o")], "E_INPUT_FILE_NOT_JSON"),
        (["--in", str(tmp_path)], "E_USAGE_INVALID"),
        # (--log is filter mode's: it was ignored, no log written, exit 0)
        (["--in", str(EXAMPLES / "journals"), "--out", str(tmp_path / "o"), "--log", str(tmp_path / "x.log")],
         "E_USAGE_INVALID"),
    ]
    for args, code in cases:
        proc = run_replay("heal", *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert errors_of(proc.stderr)[0]["code"] == code
        assert not (tmp_path / "o").exists() and not (tmp_path / "x.log").exists()


def test_directory_mode_heals_a_named_file_of_every_name_it_heals_in_a_folder(tmp_path: Path) -> None:
    # (--in run.ndjson was E_INPUT_FILE_NOT_JSON, "not a .json or .jsonl file", while a folder holding it healed it;
    # and --in run.raw.json, capture's side file that no folder walk heals, was healed as if an artifact)
    journal = b"".join(line + b"\n" for line in lines_of([ev(1, "run_started"), ev(2, "run_completed")]))
    src = tmp_path / "in"  # (an --out inside --in is refused)
    src.mkdir()
    (src / "run.ndjson").write_bytes(journal)
    (src / "run.raw.json").write_bytes(journal)
    named = run_replay("heal", "--in", str(src / "run.ndjson"), "--out", str(tmp_path / "named"))
    walked = run_replay("heal", "--in", str(src), "--out", str(tmp_path / "walked"))
    assert named.returncode == walked.returncode == 0, (named.stderr, walked.stderr)
    assert (tmp_path / "named" / "run.healed.jsonl").read_bytes() == (tmp_path / "walked" / "run.healed.jsonl").read_bytes()
    assert not (tmp_path / "walked" / "run.raw.healed.json").exists()
    raw = run_replay("heal", "--in", str(src / "run.raw.json"), "--out", str(tmp_path / "raw"))
    (error,) = errors_of(raw.stderr)
    assert (raw.returncode, error["code"], error["received"]) == (2, "E_INPUT_FILE_NOT_JSON", "run.raw.json")
    assert not (tmp_path / "raw").exists()


def test_heal_log_document_matches_schema(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    src = tmp_path / "in"
    src.mkdir()
    (src / "x.artifact.json").write_text(json.dumps(_artifact("x", [ev("bad", "tool_end", run="x", payload=[1])])))
    run_replay("heal", "--in", str(src), "--out", str(tmp_path / "out"))
    schema = json.loads((ROOT / "schemas" / "heal-log.schema.json").read_text())
    document = json.loads((tmp_path / "out" / "x.heal-log.json").read_text())
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(document)
    entry_schema = {**schema["$defs"]["repair"], "$defs": schema["$defs"]}
    log = tmp_path / "log.jsonl"
    run_replay("heal", "--log", str(log), input=b"\n".join(lines_of(BROKEN)) + b"\n")
    for entry in jsonl(log.read_bytes()):
        jsonschema.Draft202012Validator(entry_schema).validate(entry)
    assert orjson.loads(log.read_bytes().splitlines()[0])["rule"]


def test_what_heal_cannot_repair_is_reported_as_healed_artifact_invalid(tmp_path: Path) -> None:
    """Heal cannot invent an event's type: the healed output still comes out, with the problem named."""
    stream = b"\n".join(lines_of([ev(1, "run_started"), {"seq": 2, "timestamp": "2026-03-01T12:00:00Z", "runId": "r1",
                                                         "payload": {}}, ev(3, "run_completed")])) + b"\n"
    proc = run_replay("heal", input=stream)
    assert proc.returncode == 1
    (error,) = errors_of(proc.stderr)
    assert error["code"] == "E_HEALED_ARTIFACT_INVALID" and error["cause"] == "E_ARTIFACT_EVENT_TYPE_INVALID"
    assert error["line"] == 2 and error["howToFix"]
    assert len(jsonl(proc.stdout)) == 3
    src = tmp_path / "in"
    src.mkdir()
    (src / "t.artifact.json").write_text(json.dumps(_artifact("t", [{"seq": 1, "timestamp": "2026-03-01T12:00:00Z",
                                                                      "type": 7, "runId": "t", "payload": {}}])))
    proc = run_replay("heal", "--in", str(src), "--out", str(tmp_path / "out"))
    assert proc.returncode == 1
    error = errors_of(proc.stderr)[0]
    assert error["code"] == "E_HEALED_ARTIFACT_INVALID" and error["path"] == "$.events[1].type"
    assert (tmp_path / "out" / "t.healed.json").exists()  # written, and said to be invalid


def test_heal_in_out_reports_what_it_cannot_repair_in_a_journal_as_filter_mode_does(tmp_path: Path) -> None:
    """A journal healed into a folder was written with an event that has no type, exit 0 and not a word (an artifact's
    healed copy was checked, a journal's not): it is said as `replay heal FILE` says it, at its line, exit 1."""
    fix = ev(1, "run_started", run="r2", ts="2026-03-01 12:00:00Z")  # (r2 goes the slow way; r1 is whole: the fast lane)
    records = [ev(1, "run_started", run="r1"), ev(2, "run_completed", run="r1"), fix, ev(2, "run_completed", run="r2"),
               ev(1, "run_started", run="r1"), ev(2, "run_completed", run="r1"), fix,
               {"seq": 2, "timestamp": "2026-03-01T12:00:00Z", "runId": "r2", "payload": {}}, ev(3, "run_completed", run="r2")]
    src = tmp_path / "in"
    src.mkdir()
    (src / "j.jsonl").write_bytes(b"".join(line + b"\n" for line in lines_of(records)))
    # and no fault where there is none: r1 long enough to pass the fast lane as its bytes between two runs of r2
    whole = [ev(1, "run_started", run="r1"), *(ev(k, "user_message", run="r1") for k in range(2, 3000)),
             ev(3000, "run_completed", run="r1")]
    (src / "k.jsonl").write_bytes(b"".join(line + b"\n" for line in lines_of([fix, ev(2, "run_completed", run="r2"), *whole,
                                                                               fix, ev(2, "run_completed", run="r2")])))
    filtered = run_replay("heal", str(src / "j.jsonl"))
    proc = run_replay("heal", "--in", str(src), "--out", str(tmp_path / "out"))
    assert proc.returncode == filtered.returncode == 1, proc.stderr
    (error,) = errors_of(proc.stderr)
    assert (error["code"], error["cause"], error["path"], error["line"]) == (
        "E_HEALED_ARTIFACT_INVALID", "E_ARTIFACT_EVENT_TYPE_INVALID", "$.type", 8), error
    assert [(e["cause"], e["line"]) for e in errors_of(filtered.stderr)] == [("E_ARTIFACT_EVENT_TYPE_INVALID", 8)]
    assert (tmp_path / "out" / "j.healed.jsonl").exists()  # written, and said to be invalid


def test_directory_mode_reports_a_healed_journal_still_invalid_as_filter_mode_does(tmp_path: Path) -> None:
    """A journal heal cannot make valid (an event whose type is a number) is written by heal --in/--out and reported
    at its line, exit 1, as `replay heal FILE` reports it; it was written with exit 0 and not a word (only an
    artifact's healed copy was checked). A valid run beside it, healed by the fast lane, says nothing."""
    src = tmp_path / "in"
    src.mkdir()
    stream = b"\n".join(lines_of([ev(1, "run_started"), ev(2, "tool_end", payload={"callId": "c"}), ev(3, "run_completed"),
                                  ev(1, "run_started", run="r2"), ev(2, 5, run="r2"), ev(3, "run_completed", run="r2")])) + b"\n"
    (src / "t.jsonl").write_bytes(stream)
    (src / "u.jsonl").write_bytes(b"\n".join(lines_of([ev(1, "run_started"), ev(2, "run_completed")])) + b"\n")
    filtered = run_replay("heal", str(src / "t.jsonl"))
    proc = run_replay("heal", "--in", str(src), "--out", str(tmp_path / "out"))
    assert filtered.returncode == proc.returncode == 1
    (error,) = errors_of(proc.stderr)
    assert error == {**errors_of(filtered.stderr)[0], "stage": "write"}
    assert error["cause"] == "E_ARTIFACT_EVENT_TYPE_INVALID" and (error["line"], error["offset"]) == (5, stream.index(b'{"seq":2,"timestamp":"2026-03-01T12:00:00.000Z","type":5'))
    assert (tmp_path / "out" / "t.healed.jsonl").read_bytes() == filtered.stdout  # written, and said to be invalid
    strict = run_replay("heal", "--strict", "--in", str(src), "--out", str(tmp_path / "strict"))
    assert strict.returncode == 1 and not (tmp_path / "strict").exists()


def test_directory_mode_heals_a_saved_stream_of_several_files_into_its_own_copy(tmp_path: Path) -> None:
    """A stream `replay read a b` wrote to a file (source records in it), in the folder heal --in reads: its healed copy
    is what `replay heal FILE` writes, with its repairs in its heal log. It was empty, exit 0 (its records were taken
    for the files its source records name, which were not the input being written), its repairs counted 0."""
    src = tmp_path / "in"
    src.mkdir()
    saved = run_replay("read", str(ROOT / "examples" / "journals" / "two-runs.jsonl"), str(ROOT / "examples" / "journals" / "broken.jsonl"))
    (src / "both.jsonl").write_bytes(saved.stdout)
    filtered = run_replay("heal", str(src / "both.jsonl"))
    proc = run_replay("heal", "--in", str(src), "--out", str(tmp_path / "out"))
    assert proc.returncode == filtered.returncode == 0 and jsonl(proc.stdout)[0]["repairs"] == 12
    assert (tmp_path / "out" / "both.healed.jsonl").read_bytes() == filtered.stdout
    log = orjson.loads((tmp_path / "out" / "both.heal-log.json").read_bytes())
    assert log["summary"]["total"] == 12 and {r["source"] for r in log["repairs"]} == {str(src / "both.jsonl")}


def test_a_record_split_across_lines_is_held_to_max_line_bytes_as_one_written_on_one_line_is(tmp_path: Path) -> None:
    """--max-line-bytes refused the record written on one line (E_JSONL_LINE_TOO_LONG) and joined the same record
    split across lines whatever its length (the join's own limit, 64 MiB, was not the flag's): now it is the flag's,
    in filter and directory mode (a record within it is joined as before)."""
    record = exactjson.dumps(ev(2, "assistant_message", payload={"text": "one\ntwo"}))
    whole = lines_of([ev(1, "run_started")])[0] + b"\n" + record + b"\n" + lines_of([ev(3, "run_completed")])[0] + b"\n"
    split = whole.replace(b"one\\ntwo", b"one\ntwo")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "split.jsonl").write_bytes(split)
    (tmp_path / "whole.jsonl").write_bytes(whole)
    limit = str(len(record) - 1)
    refused = run_replay("heal", "--max-line-bytes", limit, str(tmp_path / "whole.jsonl"))
    assert refused.returncode == 1 and [e["code"] for e in errors_of(refused.stderr)] == ["E_JSONL_LINE_TOO_LONG"]
    proc = run_replay("heal", "--max-line-bytes", limit, str(tmp_path / "in" / "split.jsonl"))
    assert proc.returncode == 1 and b"assistant_message" not in proc.stdout
    assert [(e["code"], e["line"]) for e in errors_of(proc.stderr)] == [("E_JSONL_LINE_INVALID", 2), ("E_JSONL_LINE_INVALID", 3)]
    folder = run_replay("heal", "--max-line-bytes", limit, "--in", str(tmp_path / "in"), "--out", str(tmp_path / "out"))
    assert folder.returncode == 1 and (tmp_path / "out" / "split.healed.jsonl").read_bytes() == proc.stdout
    joined = run_replay("heal", "--max-line-bytes", str(len(record)), str(tmp_path / "in" / "split.jsonl"))
    assert joined.returncode == 0 and record + b"\n" in joined.stdout


def test_space_separated_timestamps_are_made_rfc3339() -> None:
    stream = b"\n".join(lines_of([ev(1, "run_started", ts="2026-03-01 12:00:00Z"), ev(2, "run_completed")])) + b"\n"
    proc = run_replay("heal", input=stream)
    assert proc.returncode == 0, proc.stderr
    assert jsonl(proc.stdout)[0]["timestamp"] == "2026-03-01T12:00:00.000Z"


def test_directory_mode_heals_the_original_not_capture_healed_copy(tmp_path: Path) -> None:
    src = tmp_path / "artifacts"
    src.mkdir()
    broken = _artifact("c1", [ev(2, "tool_end", run="c1")])
    (src / "c1.artifact.json").write_text(json.dumps(broken))
    (src / "c1.healed.json").write_text(json.dumps(_artifact("c1", [ev(1, "run_started", run="c1"),
                                                                       ev(2, "run_completed", run="c1")])))
    (src / "c2.healed.json").write_text(json.dumps(_artifact("c2", [ev(5, "run_started", run="c2")])))
    proc = run_replay("heal", "--in", str(src), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert [Path(x["source"]).name for x in jsonl(proc.stdout)] == ["c1.artifact.json", "c2.healed.json"]
    log = json.loads((tmp_path / "out" / "c1.heal-log.json").read_text())
    assert log["summary"]["total"] > 0  # the real repairs, not an empty log from re-healing the healed copy


def test_out_of_order_events_are_reported_as_warnings_not_repairs(tmp_path: Path) -> None:
    stream = b"\n".join(lines_of([ev(1, "run_started", ts="2026-03-01T12:00:05Z"), ev(2, "x", ts="2026-03-01T12:00:01Z"),
                                  ev(3, "run_completed", ts="2026-03-01T12:00:06Z")])) + b"\n"
    log = tmp_path / "log.jsonl"
    proc = run_replay("heal", "--log", str(log), input=stream)
    assert proc.returncode == 0 and proc.stdout == stream  # left in journal order, untouched
    assert log.read_bytes() == b""
    warnings = [orjson.loads(line) for line in proc.stderr.splitlines() if b'"heal.notice"' in line]
    assert len(warnings) == 1 and warnings[0]["level"] == "warning" and warnings[0]["rule"] == "check_order"
    assert warnings[0]["line"] == 2 and warnings[0]["seqBefore"] == 2
    quiet = run_replay("--log-level", "error", "heal", input=stream)
    assert quiet.stderr == b""
    src = tmp_path / "in"
    src.mkdir()
    (src / "o.artifact.json").write_text(json.dumps({**_artifact("o", jsonl(stream)), "runId": "r1"}))
    run_replay("heal", "--in", str(src), "--out", str(tmp_path / "out"))
    document = json.loads((tmp_path / "out" / "o.heal-log.json").read_text())
    assert [n["rule"] for n in document["notices"]] == ["check_order"]
    assert document["summary"]["byRule"] == {"renumber": 1, "synthesize_assistant_message": 1}  # the artifact's response


def test_outputs_never_replace_inputs(tmp_path: Path) -> None:
    journal = tmp_path / "m.jsonl"
    journal.write_bytes(broken_bytes())
    for args in (["heal", str(journal), "--log", str(journal)], ["report", str(journal), "--out", str(journal)]):
        proc = run_replay(*args)
        assert proc.returncode == 2 and proc.stdout == b"", args
        assert errors_of(proc.stderr)[0]["code"] == "E_OUTPUT_UNWRITABLE"
        assert journal.read_bytes() == broken_bytes()
    with journal.open("rb") as stdin:  # `replay heal --log m.jsonl < m.jsonl`: stdin is that very file
        proc = subprocess.run([REPLAY, "heal", "--log", str(journal)], stdin=stdin, capture_output=True)
    assert proc.returncode == 2 and journal.read_bytes() == broken_bytes()


def test_directory_mode_refuses_colliding_or_self_overwriting_outputs(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "x.json").write_text(json.dumps(_artifact("x", [ev(1, "run_started", run="x")])))
    (src / "x.artifact.json").write_text(json.dumps(_artifact("x", [ev(1, "run_started", run="x")])))
    proc = run_replay("heal", "--in", str(src), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "would both be healed into" in errors_of(proc.stderr)[0]["message"]
    assert not (tmp_path / "out").exists()
    (src / "x.json").unlink()
    (src / "y.healed.json").write_text(json.dumps(_artifact("y", [ev(1, "run_started", run="y")])))
    before = (src / "y.healed.json").read_bytes()
    proc = run_replay("heal", "--in", str(src), "--out", str(src))
    assert proc.returncode == 2 and errors_of(proc.stderr)[0]["code"] == "E_OUTPUT_UNWRITABLE"
    assert (src / "y.healed.json").read_bytes() == before


def test_directory_mode_creates_a_missing_parent_and_reports_empty_inputs(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.artifact.json").write_text(json.dumps(_artifact("a", [ev(1, "run_started", run="a")])))
    (src / "empty.json").write_text("")
    out = tmp_path / "deep" / "er" / "out"
    proc = run_replay("heal", "--in", str(src), "--out", str(out))
    assert proc.returncode == 1
    # an empty .json is no JSON document: E_ARTIFACT_JSON_INVALID, as validate, read and report say
    assert [e["code"] for e in errors_of(proc.stderr)] == ["E_ARTIFACT_JSON_INVALID"]
    assert (out / "a.healed.json").is_file() and [Path(x["source"]).name for x in jsonl(proc.stdout)] == ["a.artifact.json"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]  # no staging folder left


def test_directory_mode_heals_a_link_to_a_file_elsewhere_and_reports_broken_and_looping_links(tmp_path: Path) -> None:
    """A link is healed where it is in --in (its target may be anywhere); one to nothing, or in a loop, is unreadable."""
    src, elsewhere = tmp_path / "in", tmp_path / "elsewhere"
    src.mkdir()
    elsewhere.mkdir()
    (elsewhere / "run.jsonl").write_bytes(broken_bytes())
    (src / "link.jsonl").symlink_to(elsewhere / "run.jsonl")
    (src / "broken.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    (src / "loop.jsonl").symlink_to(src / "loop.jsonl")
    out = tmp_path / "out"
    proc = run_replay("heal", "--in", str(src), "--out", str(out), "--workers", "1")
    assert proc.returncode == 1, proc.stderr
    assert sorted((e["code"], e["source"]) for e in errors_of(proc.stderr)) == \
        [("E_INPUT_UNREADABLE", str(src / "broken.jsonl")), ("E_INPUT_UNREADABLE", str(src / "loop.jsonl"))]
    assert [x["healed"] for x in jsonl(proc.stdout)] == [str(out / "link.healed.jsonl")]
    assert sorted(p.name for p in out.iterdir()) == [".replay-manifest.json", "link.heal-log.json", "link.healed.jsonl"]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_directory_mode_reports_an_unreadable_input_as_filter_mode_does(tmp_path: Path, workers: str) -> None:
    """An input a folder's walk found that cannot be read: heal --in DIR (which hashes each input before it heals it)
    gives the error a read gives, `path` and `source` both (it gave `source` only), and heals the others."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.jsonl").write_bytes(broken_bytes())
    (src / "d.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    folder = run_replay("heal", "--in", "in", "--out", "out", "--workers", workers, cwd=tmp_path)
    # (named as a PATH, the same link is a missing input: refused, as test_named_link_to_nothing.py says)
    alone = run_replay("heal", "in/d.jsonl", cwd=tmp_path)
    assert (folder.returncode, alone.returncode) == (1, 2)
    [from_folder] = [e for e in errors_of(folder.stderr) if e["code"] == "E_INPUT_UNREADABLE"]
    assert from_folder["path"] == from_folder["source"] == "in/d.jsonl"
    assert from_folder["received"] == "No such file or directory"
    [refused] = errors_of(alone.stderr)
    assert refused["code"] == "E_INPUT_PATH_NOT_FOUND" and refused["path"] == "in/d.jsonl"


def test_directory_mode_heals_an_input_whose_name_is_not_utf8(tmp_path: Path) -> None:
    """A file name that is not UTF-8 (a byte 0xff) among the inputs: healed as the others, its heal log naming it
    printably (it failed the whole folder: E_STAGE_FAILED, "str is not valid UTF-8", nothing written)."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.jsonl").write_bytes(broken_bytes())
    odd = os.fsdecode(b"\xff\xfe.jsonl")
    (src / odd).write_bytes(broken_bytes())
    proc = run_replay("heal", "--in", "in", "--out", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [x["source"] for x in jsonl(proc.stdout)] == ["in/a.jsonl", "in/\ufffd\ufffd.jsonl"]
    assert (tmp_path / "out" / os.fsdecode(b"\xff\xfe.healed.jsonl")).read_bytes() == (tmp_path / "out" / "a.healed.jsonl").read_bytes()
    log = json.loads((tmp_path / "out" / os.fsdecode(b"\xff\xfe.heal-log.json")).read_bytes())
    assert log["source"] == "in/\ufffd\ufffd.jsonl" and log["artifactId"] == "\ufffd\ufffd.jsonl"
    manifest = json.loads((tmp_path / "out" / ".replay-manifest.json").read_bytes())
    assert [entry["input"] for entry in manifest["inputs"]] == ["a.jsonl"]  # (JSON cannot hold the other name: healed again)
    again = run_replay("heal", "--in", "in", "--out", "out", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, proc.stdout)


def test_directory_mode_heals_a_lone_input_whose_name_the_manifest_cannot_hold(tmp_path: Path) -> None:
    """The only input's name is not UTF-8: the manifest records nothing, yet the input was healed; the new folder
    appears with its files (it was taken for "every input refused": the folder removed, nothing printed, exit 0)."""
    src = tmp_path / "in"
    src.mkdir()
    (src / os.fsdecode(b"\xff.jsonl")).write_bytes(broken_bytes())
    proc = run_replay("heal", "--in", "in", "--out", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [x["source"] for x in jsonl(proc.stdout)] == ["in/\ufffd.jsonl"]
    healed = tmp_path / "out" / os.fsdecode(b"\xff.healed.jsonl")
    assert healed.read_bytes() == run_replay("heal", "-", input=broken_bytes()).stdout
    assert json.loads((tmp_path / "out" / ".replay-manifest.json").read_bytes())["inputs"] == []


def test_directory_mode_in_and_out_folders_whose_names_are_not_utf8(tmp_path: Path) -> None:
    """--in and --out folders named with a byte 0xff: healed, resumed and kept in step with --in as any folder (it was
    E_UNHANDLED "str is not valid UTF-8" from the manifest's key and root, nothing healed)."""
    src, out = tmp_path / os.fsdecode(b"in\xff"), tmp_path / os.fsdecode(b"out\xff")
    src.mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        (src / name).write_bytes(broken_bytes())
    first = run_replay("heal", "--in", str(src), "--out", str(out))
    assert first.returncode == 0, first.stderr
    assert sorted(p.name for p in out.iterdir()) == [".replay-manifest.json", "a.heal-log.json", "a.healed.jsonl",
                                                     "b.heal-log.json", "b.healed.jsonl"]
    manifest = json.loads((out / ".replay-manifest.json").read_bytes())
    assert manifest["root"] == str(tmp_path / "in\ufffd") and [e["input"] for e in manifest["inputs"]] == ["a.jsonl", "b.jsonl"]
    again = run_replay("heal", "--in", str(src), "--out", str(out))
    assert (again.returncode, again.stdout) == (0, first.stdout)
    (src / "b.jsonl").unlink()  # its files go with it when the manifest is written; a's stay
    after = run_replay("heal", "--in", str(src), "--out", str(out))
    assert after.returncode == 0, after.stderr
    assert sorted(p.name for p in out.iterdir()) == [".replay-manifest.json", "a.heal-log.json", "a.healed.jsonl"]


def test_directory_mode_makes_up_no_artifact_from_one_cut_off_mid_write(tmp_path: Path) -> None:
    """An artifact whose write was cut off is one torn line (or pretty-printed lines, none a record): no healed
    artifact is made up from nothing (it was status "ok", id "unknown", no events); the error says where it stops."""
    src = tmp_path / "in"
    src.mkdir()
    whole = json.dumps(_artifact("a", [ev(1, "run_started", run="a"), ev(2, "run_completed", run="a")]))
    (src / "a.artifact.json").write_text(whole)
    (src / "cut.artifact.json").write_text(whole[:60])
    (src / "pretty.artifact.json").write_text(json.dumps(json.loads(whole), indent=2)[:200])
    out = tmp_path / "out"
    proc = run_replay("--max-errors", "0", "heal", "--in", str(src), "--out", str(out))
    assert proc.returncode == 1
    assert [Path(x["source"]).name for x in jsonl(proc.stdout)] == ["a.artifact.json"]
    assert sorted(p.name for p in out.iterdir()) == [".replay-manifest.json", "a.heal-log.json", "a.healed.json"]
    refused = {Path(e["source"]).name: e for e in errors_of(proc.stderr) if e["code"] == "E_ARTIFACT_JSON_INVALID"}
    assert sorted(refused) == ["cut.artifact.json", "pretty.artifact.json"]
    assert (refused["cut.artifact.json"]["line"], refused["cut.artifact.json"]["column"]) == (1, 61)  # where it stops
    assert refused["pretty.artifact.json"]["line"] > 1 and all(refused[k]["howToFix"] for k in refused)
    assert [e["code"] for e in errors_of(proc.stderr)] == ["E_ARTIFACT_JSON_INVALID"] * 2  # each said once


@pytest.mark.parametrize("how", ["folder", "url", "workers", "spec"])
def test_directory_mode_where_every_input_is_refused_makes_no_folder(tmp_path: Path, how: str) -> None:
    """Nothing healed (each input cut off mid-write, or no artifact): no OUT appears, not even one holding only its
    manifest, and no staging folder is left; every error is still printed and the exit code is unchanged."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "cut.artifact.json").write_text(json.dumps(_artifact("a", [ev(1, "run_started", run="a")]))[:60])
    (src / "list.json").write_text("[1, 2]")
    out = tmp_path / "out"
    if how == "spec":  # the graph alone (`replay run`), its sink writing the folder itself
        spec = tmp_path / "heal-dir.toml"
        spec.write_bytes(run_replay("stages", "--graph", "heal-dir").stdout.replace(b'out_dir = "healed"',
                                                                                    f'out_dir = "{out}"'.encode()))
        proc = run_replay("run", str(spec), *sorted(str(p) for p in src.iterdir()))
    else:
        target = out.as_uri() if how == "url" else str(out)
        proc = run_replay("heal", "--in", str(src), "--out", target, *(["--workers", "2"] if how == "workers" else []))
    assert proc.returncode == 1 and proc.stdout == b""
    assert sorted(e["code"] for e in errors_of(proc.stderr)) == ["E_ARTIFACT_EVENTS_INVALID", "E_ARTIFACT_JSON_INVALID",
                                                                 "E_EVENT_NOT_OBJECT", "E_EVENT_NOT_OBJECT"]
    assert sorted(p.name for p in tmp_path.iterdir()) == (["heal-dir.toml"] if how == "spec" else []) + ["in"]
    (src / "ok.jsonl").write_bytes(b"".join(lines_of([ev(1, "run_started", run="r")])) + b"\n")  # one healed: OUT appears
    if how != "spec":
        proc = run_replay("heal", "--in", str(src), "--out", target)
        assert proc.returncode == 1 and [Path(x["source"]).name for x in jsonl(proc.stdout)] == ["ok.jsonl"]
        assert sorted(p.name for p in out.iterdir()) == [".replay-manifest.json", "ok.heal-log.json", "ok.healed.jsonl"]


@pytest.mark.parametrize("indent", [None, 2])
def test_a_named_json_artifact_cut_off_mid_write_is_refused_by_heal_as_by_validate_and_heal_dir(tmp_path: Path,
                                                                                                   indent) -> None:
    """`heal cut.json` (one artifact whose write stopped) wrote a heal record for a dropped torn line and exited 0
    (or, pretty-printed, an error per line), where validate and `heal --in` say E_ARTIFACT_JSON_INVALID where the
    input stops: the name says one JSON document. On stdin, a stream, the last line cut off is a torn journal line
    (a document over lines cut off on stdin: the test after this one)."""
    whole = json.dumps(_artifact("a", [ev(1, "run_started", run="a"), ev(2, "run_completed", run="a")]), indent=indent)
    cut = tmp_path / "in" / "cut.json"
    cut.parent.mkdir()
    cut.write_text(whole[:150])
    said = []
    for args in (("heal", str(cut)), ("validate", str(cut)), ("heal", "--in", str(cut.parent), "--out", str(tmp_path / "o"))):
        proc = run_replay(*args)
        assert proc.returncode == 1
        [error] = errors_of(proc.stderr)
        said.append({k: error[k] for k in ("code", "line", "column", "source")})
    assert said[0] == said[1] == said[2] and said[0]["code"] == "E_ARTIFACT_JSON_INVALID"
    assert said[0]["line"] == whole[:150].count("\n") + 1
    heal = run_replay("heal", str(cut))
    assert heal.stdout == b""  # nothing made up from it
    if indent is None:
        piped = run_replay("heal", input=cut.read_bytes())
        assert piped.returncode == 0 and jsonl(piped.stdout)[-1]["byRule"] == {"drop_torn_line": 1}


def test_a_pretty_printed_artifact_cut_off_on_stdin_is_one_error_as_the_named_file_is(tmp_path: Path) -> None:
    """stdin whose first line opens a document (`{` alone) is held whole, as a file's is; cut off inside it, it was
    read as JSONL (an error a line). Now read, heal, validate and report say one E_ARTIFACT_JSON_INVALID where it
    stops, as for the named file. Pretty-printed records one after another are no cut-off document: still joined."""
    events = [ev(1, "run_started", run="a"), ev(2, "run_completed", run="a")]
    cut = json.dumps(_artifact("a", events), indent=2)[:300].encode()
    named = tmp_path / "cut.json"
    named.write_bytes(cut)
    [expected] = errors_of(run_replay("validate", str(named)).stderr)
    for command in ("read", "heal", "validate", "report"):
        proc = run_replay(command, input=cut)
        assert proc.returncode == 1, command
        [error] = errors_of(proc.stderr)
        assert {**error, "source": str(named)} == expected, command
        assert error["source"] == "<stdin>" and "cut off" in error["message"]
    records = b"".join(json.dumps(e, indent=2).encode() + b"\n" for e in events)  # `jq . run.jsonl | replay heal`
    healed = run_replay("heal", input=records)
    assert healed.returncode == 0 and [r.get("seq") for r in jsonl(healed.stdout)[:2]] == [1, 2]
    assert jsonl(healed.stdout)[-1]["byRule"] == {"join_split_records": 2}


@pytest.mark.parametrize("on_stdin", [False, True], ids=["named", "stdin"])
def test_a_document_cut_off_read_down_a_pipe_is_said_again_at_its_other_end(tmp_path: Path, on_stdin: bool) -> None:
    """`replay read cut.json | replay heal`: read's E_ARTIFACT_JSON_INVALID left nothing in the stream, so the heal at
    the pipe's other end exited 0 (while a line read refuses leaves a dropped record there, said again by parse)."""
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(_artifact("a", [ev(1, "run_started", run="a")]), indent=2)[:200])
    read = run_replay("read", input=cut.read_bytes()) if on_stdin else run_replay("read", str(cut))
    [said] = errors_of(read.stderr)
    assert read.returncode == 1 and [r["$record"] for r in jsonl(read.stdout)] == ["dropped"]
    healed = run_replay("heal", input=read.stdout)
    assert healed.returncode == 1 and healed.stdout == b""
    [again] = errors_of(healed.stderr)
    assert {**again, "stage": "read", "source": said["source"]} == said  # (one input down a pipe: its source <stdin>)


@pytest.mark.parametrize("at", [0, 1, 2], ids=["first", "middle", "last"])
def test_a_record_pretty_printed_in_a_run_is_that_run_s_repair_by_file_pipe_and_folder(tmp_path: Path, at: int) -> None:
    """Runs a, b and c, one event of b written with `json.dumps(ev, indent=2)` (its first, a middle one or its last):
    join_split_records puts it back on one line, and b's heal record counts that repair, b being written. The fast lane
    took b, clean once joined, on as its bytes: no run came to heal_summary to count the repair, so it was counted at
    the end as a run's that heal dropped whole ("runDropped": true), which `replay report` listed apart from b."""
    runs = {rid: [ev(1, "run_started", run=rid), ev(2, "assistant_message", run=rid, payload={"text": "hi"}),
                  ev(3, "run_completed", run=rid)] for rid in "abc"}
    text = "".join(json.dumps(e, indent=2 if rid == "b" and k == at else None) + "\n"
                   for rid, events in runs.items() for k, e in enumerate(events))
    path = tmp_path / "mixed.jsonl"
    path.write_text(text)
    expected = {"$record": "heal", "runId": "b", "repairs": 1, "byRule": {"join_split_records": 1}}
    named = run_replay("heal", str(path))
    assert named.returncode == 0, named.stderr
    records = jsonl(named.stdout)
    assert [r.get("runId") for r in records] == [*"aaabbb", "b", *"ccc"] and records[6] == expected
    assert [r for r in records if "$record" not in r] == [e for events in runs.values() for e in events]
    assert run_replay("heal", input=path.read_bytes()).stdout == named.stdout
    (tmp_path / "in").mkdir()
    path.rename(tmp_path / "in" / "mixed.jsonl")
    assert run_replay("heal", "--in", str(tmp_path / "in"), "--out", str(tmp_path / "out")).returncode == 0
    assert (tmp_path / "out" / "mixed.healed.jsonl").read_bytes() == named.stdout
    report = orjson.loads(run_replay("report", "--format", "json", input=named.stdout).stdout)
    assert [run["repairs"] for run in report["runs"]] == [{"total": 0, "byRule": {}}, {"total": 1, "byRule": {"join_split_records": 1}},
                                                          {"total": 0, "byRule": {}}]
    assert "unattributedRepairs" not in report


def test_strict_directory_mode_leaves_no_output_folder(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "t.artifact.json").write_text(json.dumps(_artifact("t", [{"seq": 1, "timestamp": "2026-03-01T12:00:00Z",
                                                                      "type": 7, "runId": "t", "payload": {}}])))
    proc = run_replay("heal", "--strict", "--in", str(src), "--out", str(tmp_path / "out"))
    assert proc.returncode == 1 and errors_of(proc.stderr)[0]["code"] == "E_HEALED_ARTIFACT_INVALID"
    assert not (tmp_path / "out").exists() and [p.name for p in tmp_path.iterdir()] == ["in"]


def test_a_pipe_from_read_keeps_files_apart_like_reading_them_directly(tmp_path: Path) -> None:
    """`replay read a b | replay heal` heals what `replay heal a b` heals: source records carry the files."""
    paths = [str(CORPUS / "claude-code" / "session_b.jsonl"), str(CORPUS / "codex" / "rollout-66666666-6666-4666-8666-666666666666.jsonl"),
             str(ROOT / "examples" / "journals" / "broken.jsonl")]
    direct = run_replay("heal", *paths)
    piped = run_replay("heal", input=run_replay("read", *paths).stdout)
    assert direct.returncode == piped.returncode == 1  # the codex sample's malformed last line, reported by both
    assert [(e["code"], e["source"], e["line"], e["offset"]) for e in errors_of(piped.stderr)] == \
        [(e["code"], e["source"], e["line"], e["offset"]) for e in errors_of(direct.stderr)]
    assert direct.stdout == piped.stdout  # heal records too: the torn line read marked is counted as a file's
    runs = [r["runId"] for r in jsonl(piped.stdout) if r.get("type") == "run_started"]
    assert runs == ["session_b", "66666666-6666-4666-8666-666666666666", "run_42"]  # the rollout names its session
    report = run_replay("report", "--format", "json", input=piped.stdout)
    assert [r["runId"] for r in json.loads(report.stdout)["runs"]] == runs
    assert run_replay("heal", input=piped.stdout).stdout == piped.stdout  # still idempotent


def test_a_torn_file_before_another_counts_its_torn_line_through_a_pipe_too(tmp_path: Path) -> None:
    """`replay read broken.jsonl two-runs.jsonl | replay heal`: the torn last line of the first file ends its run
    within a batch (the next file follows it in the pipe); its heal record counts the drop_torn_line as
    `replay heal broken.jsonl two-runs.jsonl` does."""
    journals = ROOT / "examples" / "journals"
    paths = [str(journals / "broken.jsonl"), str(journals / "two-runs.jsonl")]
    direct = run_replay("heal", "--log", str(tmp_path / "direct.jsonl"), *paths)
    piped = run_replay("heal", "--log", str(tmp_path / "piped.jsonl"), input=run_replay("read", *paths).stdout)
    assert direct.returncode == piped.returncode == 0
    assert direct.stdout == piped.stdout
    (record,) = [r for r in jsonl(piped.stdout) if r.get("$record") == "heal"]
    assert record["repairs"] == 12 and record["byRule"]["drop_torn_line"] == 1
    direct_log, piped_log = jsonl((tmp_path / "direct.jsonl").read_bytes()), jsonl((tmp_path / "piped.jsonl").read_bytes())
    assert sorted(map(json.dumps, piped_log)) == sorted(map(json.dumps, direct_log))


def test_diagnostics_through_a_pipe_point_into_the_original_file(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    a.write_bytes(b"\n".join(lines_of([ev(1, "run_started"), ev(2, "run_completed")])) + b"\n")
    b = tmp_path / "b.jsonl"
    b.write_bytes(b"\n".join(lines_of([ev(1, "run_started", run="r2"), ev(7, "run_completed", run="r2")])) + b"\n")
    proc = run_replay("validate", input=run_replay("read", str(a), str(b)).stdout)
    (error,) = errors_of(proc.stderr)
    first_line = len(b.read_bytes().splitlines()[0]) + 1
    assert (error["source"], error["line"], error["offset"]) == (str(b), 2, first_line)


def test_a_log_on_stdout_beside_the_healed_stream_is_refused_before_anything_is_written():
    """`--log -` would mix repair entries into the healed stream on stdout (a reader downstream took them for events)."""
    done = run_replay("heal", "--log", "-", str(ROOT / "examples" / "journals" / "broken.jsonl"))
    assert done.returncode == 2 and done.stdout == b""
    error = orjson.loads(done.stderr.splitlines()[-1])["error"]
    assert error["code"] == "E_OUTPUT_UNWRITABLE" and "both write to stdout" in error["message"]


def test_an_empty_log_is_not_told_to_be_dash_when_stdout_is_taken(tmp_path: Path):
    """`--log ''` was told to give "a file path, or '-' for stdout", and `--log -` is then refused: the healed stream is
    on stdout. The hint offers '-' only where nothing else writes stdout."""
    error = orjson.loads(run_replay("heal", "--log", "", str(ROOT / "examples" / "journals" / "broken.jsonl")).stderr)["error"]
    assert error["expected"] == "a file path (not '-': the command's own output goes to stdout)"
    assert "'-' for stdout" not in error["howToFix"]
    config = tmp_path / "one.toml"
    config.write_text('[stages.read]\ntype = "read"\n[stages.out]\ntype = "write"\ninputs = ["read"]\npath = ""\n')
    error = orjson.loads(run_replay("run", str(config), str(ROOT / "examples" / "journals" / "broken.jsonl")).stderr)["error"]
    assert error["expected"] == "a file path, or '-' for stdout"  # (the one writer: stdout is free)


def test_the_same_file_twice_heals_as_through_a_pipe():
    """Each input's last run ends before the next input's mark, a file of the same name too (the second mark went out
    before the first input's last run, which the screen still held)."""
    path = str(ROOT / "examples" / "journals" / "two-runs.jsonl")
    twice = run_replay("heal", path, path)
    assert twice.returncode == 0
    assert twice.stdout == run_replay("heal", input=run_replay("read", path, path).stdout).stdout
    records = [orjson.loads(line) for line in twice.stdout.splitlines()]
    marks = [k for k, r in enumerate(records) if r.get("$record") == "source"]
    assert marks == [0, len(records) // 2]


def test_each_copy_of_a_file_read_twice_counts_its_own_repairs(tmp_path: Path):
    """`heal x x`: the second copy's lines are numbered from 1 again; a run's repairs are still those of its own lines
    (a run's stretch of its input is told by line numbers, and the numbers going back start another input)."""
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in [
        {"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started", "runId": "a", "payload": {}},
        {"seq": 2, "timestamp": "2026-03-01T12:00:01.000Z", "type": "run_completed", "runId": "a", "payload": {}},
        {"seq": 1, "timestamp": "2026-03-01T12:00:02.000Z", "type": "run_started", "runId": "b", "payload": {}},
        {"seq": 2, "timestamp": "2026-03-01T12:00:03.000Z", "type": "tool_end", "runId": "b", "payload": {"callId": "q"}},
        {"seq": 3, "timestamp": "2026-03-01T12:00:04.000Z", "type": "run_completed", "runId": "b", "payload": {}},
    ]))
    healed = run_replay("heal", str(path), str(path)).stdout.splitlines()
    records = [orjson.loads(line) for line in healed if b'"$record":"heal"' in line]
    assert [(r["runId"], r["repairs"]) for r in records] == [("b", 3), ("b", 3)]
    # each after its own run b, the first before the second copy's mark (that copy's first run begins there)
    assert b'"$record":"heal"' in healed[5] and b'"$record":"source"' in healed[6] and b'"$record":"heal"' in healed[-1]


def test_each_copy_of_a_file_read_twice_counts_the_repairs_of_its_own_vanished_runs(tmp_path: Path):
    """`heal x x`: the heal record of a run heal dropped whole (b: a lone orphaned result) was one for both copies
    (`"repairs": 2`): its repairs waited by the input's name and run id, which the copies share. Each copy is an input
    of its own now (read's mark begins it), through a pipe too, and so is a cut-off last line of an input with no
    run left; and the second copy's first event is no duplicate of the first copy's last (dedupe dropped it)."""
    x, y = tmp_path / "x.jsonl", tmp_path / "y.jsonl"
    x.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in [
        ev(1, "run_started", run="a"), ev(2, "run_completed", run="a"),
        ev(1, "tool_completed", run="b", payload={"callId": "gone"}),
        ev(1, "run_started", run="c"), ev(2, "run_completed", run="c")]))
    y.write_bytes(orjson.dumps(ev(1, "tool_completed", run="z", payload={"callId": "gone"})) + b'\n{"seq":2,"ty')

    def heal_records(out: bytes) -> list[tuple]:
        return [(r["runId"], r["repairs"], r["byRule"]) for r in jsonl(out) if r.get("$record") == "heal"]

    b, z, torn = ("b", 1, {"pair_tool_calls": 1}), ("z", 1, {"pair_tool_calls": 1}), (None, 1, {"drop_torn_line": 1})
    for paths, expected in [([x, x], [b, b]), ([y, y], [z, torn, z, torn]), ([y, x, y], [z, torn, b, z, torn])]:
        log = tmp_path / "log.jsonl"
        direct = run_replay("heal", "--log", str(log), *map(str, paths))
        assert direct.returncode == 0, direct.stderr
        assert heal_records(direct.stdout) == expected, paths  # (at the end, in the order of the inputs)
        assert len(log.read_bytes().splitlines()) == len(expected)
        assert run_replay("heal", input=run_replay("read", *map(str, paths)).stdout).stdout == direct.stdout
    # the first event of a copy is no duplicate of the last event of the copy before it
    single = tmp_path / "single.jsonl"
    single.write_bytes(orjson.dumps(ev(1, "run_started", run="s")) + b"\n")
    twice = jsonl(run_replay("heal", str(single), str(single)).stdout)
    assert [r.get("type", r.get("$record")) for r in twice] == ["source", "run_started", "run_failed", "heal"] * 2


def test_each_run_heal_drops_whole_gets_its_own_heal_record(tmp_path: Path):
    """`cat v v > vv; replay heal vv` (v: run a, a lone orphaned result of b, run c): the two runs of b heal dropped
    whole in one input shared one heal record (`"repairs": 2`): their repairs waited by input and run id, which they
    share. Runs are cut where the run id changes, so each b is its own run, with its own record at the end, in the
    order they came (through a pipe too, and whether the runs around them needed repairs or not); the report lists
    each apart. And a run of d dropped whole before a run of d that stays, with a dropped run of b between, is its own
    run too: its repair was counted with the later d (which begins, for its repairs, after the run before it, a)."""
    v = [ev(1, "run_started", run="a"), ev(2, "run_completed", run="a"),
         ev(1, "tool_completed", run="b", payload={"callId": "gone"}),
         ev(1, "run_started", run="c"), ev(2, "run_completed", run="c")]
    unhealed = [{k: x for k, x in e.items() if k != "payload" or e["runId"] == "b"} for e in v]  # (repairs all around)
    b = {"$record": "heal", "runId": "b", "repairs": 1, "byRule": {"pair_tool_calls": 1}, "runDropped": True}
    for name, lines in [("vv", v * 2), ("unhealed", unhealed * 2)]:
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in lines))
        log = tmp_path / f"{name}-log.jsonl"
        healed = run_replay("heal", "--log", str(log), str(path))
        assert healed.returncode == 0, healed.stderr
        records = jsonl(healed.stdout)
        assert records[-2:] == [b, b], name
        assert [r["runId"] for r in records[:-2] if "$record" not in r] == ["a", "a", "c", "c"] * 2
        assert len(log.read_bytes().splitlines()) == sum(r["repairs"] for r in records if r.get("$record") == "heal")
        assert run_replay("heal", input=run_replay("read", str(path)).stdout).stdout == healed.stdout
        aggregate = orjson.loads(run_replay("report", "--format", "json", input=healed.stdout).stdout)["aggregate"]
        assert [(u["runId"], u["total"]) for u in aggregate["unattributedRepairs"]["runs"]] == [("b", 1), ("b", 1)]
    d = tmp_path / "d.jsonl"
    d.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in [
        *v[:2], ev(1, "tool_completed", run="d", payload={"callId": "gone"}), v[2],
        ev(1, "run_started", run="d"), ev(2, "run_completed", run="d")]))
    assert [r for r in jsonl(run_replay("heal", str(d)).stdout) if r.get("$record")] == [{**b, "runId": "d"}, b]


@pytest.mark.parametrize("path", sorted([*CORPUS.glob("mini-swe-agent/*.json"), *CORPUS.glob("openhands/*.json")]),
                         ids=lambda p: p.name)
def test_a_trajectory_read_down_a_pipe_heals_as_the_file_does(path: Path):
    """A whole-document log (mini-swe-agent, OpenHands) that `replay read` writes as lines is still held to its end,
    so its run record says how the run ended: the same events and repairs as `replay heal FILE`, and the same name:
    read's source line before its records names the file."""
    direct = run_replay("heal", str(path))
    piped = run_replay("heal", input=run_replay("read", str(path)).stdout)
    assert piped.returncode == direct.returncode
    assert jsonl(piped.stdout) == [{"$record": "source", "source": str(path)}, *jsonl(direct.stdout)]
    assert b'"status":"ok"' in direct.stdout.splitlines()[0] or b'"status":"error"' in direct.stdout.splitlines()[0]


def _heal_every_way(tmp_path: Path, data: bytes) -> list[dict]:
    """`replay heal` of ``data`` as a file, down a pipe, with the screen's fast lane off and with the screen off: the
    same output each way (its records)."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    spec = (ROOT / "pipeline" / "specs" / "heal.toml").read_text()
    outs = [run_replay("heal", str(path)), run_replay("heal", input=data)]
    for option in ("fast", "enabled"):
        config = tmp_path / f"heal-{option}.toml"
        config.write_text(spec.replace('type = "screen"', f'type = "screen"\n{option} = false', 1))
        outs.append(run_replay("run", str(config), str(path)))
    assert [out.stdout for out in outs[1:]] == [outs[0].stdout] * 3
    return jsonl(outs[0].stdout)


def test_a_record_split_across_lines_in_a_run_whose_id_came_before_is_the_later_run_s_repair(tmp_path: Path) -> None:
    """r1 (its end an alias), r2, then r1 again with its first event pretty-printed: the join is the second r1's repair.
    join_split_records logs it before its line reaches the rules; the first r1, which ended with its batch (the screen
    cuts runs), took every repair of its id logged so far, this one too (and the second r1 had no heal record)."""
    start, end = ev(1, "run_started", run="r1"), ev(2, "run_completed", run="r1")
    data = b"".join(json.dumps(e, indent=indent).encode() + b"\n" for e, indent in [
        (start, None), ({**end, "type": "run_complete"}, None), (ev(1, "run_started", run="r2"), None),
        (ev(2, "run_completed", run="r2"), None), (start, 2), (end, None)])
    records = _heal_every_way(tmp_path, data)
    assert [(r.get("runId"), r.get("byRule")) for r in records] == [
        ("r1", None), ("r1", None), ("r1", {"alias": 1}), ("r2", None), ("r2", None),
        ("r1", None), ("r1", None), ("r1", {"join_split_records": 1})]


def test_a_record_split_across_lines_that_names_no_run_is_the_repair_of_the_run_it_is_in(tmp_path: Path) -> None:
    """a, then r0's run_started and a dropped record pretty-printed (it names no run): the join is r0's repair. Its
    repair names no run, and went to whichever run ended first once it was logged: a (which ended with its batch) with
    the fast lane off or the screen off, r0 with the fast lane (a passed as its bytes)."""
    dropped = {"$record": "dropped", "code": "E_JSONL_LINE_INVALID", "message": "m", "line": 3, "offset": 9}
    data = b"".join(json.dumps(e, indent=indent).encode() + b"\n" for e, indent in [
        (ev(1, "run_started", run="a"), None), (ev(2, "run_completed", run="a"), None), (ev(1, "run_started", run="r0"), None),
        (dropped, 2)])
    records = _heal_every_way(tmp_path, data)
    assert [(r.get("runId"), r.get("byRule")) for r in records if r.get("$record") != "dropped"] == [
        ("a", None), ("a", None), ("r0", None), ("r0", None), ("r0", {"ensure_terminal": 1, "join_split_records": 1})]


def test_a_record_split_across_lines_that_names_no_run_after_a_run_s_last_event_is_that_run_s_repair(tmp_path: Path) -> None:
    """r1 (no end), a dropped record pretty-printed (it names no run), then r2: the join is r1's repair, its line in r1's
    stretch, before r2's first line. Parse takes the dropped record out of the stream, so no run comes to count its
    line, and r1 ends with its batch (the screen cuts runs): the join went to r2 with the fast lane off, and was
    counted at the end as a dropped run's with the fast lane (r2 passed as its bytes); the screen off gave it to r1."""
    dropped = {"$record": "dropped", "code": "E_JSONL_LINE_INVALID", "message": "m", "line": 3, "offset": 9}
    data = b"".join(json.dumps(e, indent=indent).encode() + b"\n" for e, indent in [
        (ev(1, "run_started", run="r1"), None), (ev(2, "assistant_message", run="r1"), None), (dropped, 2),
        (ev(1, "run_started", run="r2"), None), (ev(2, "run_completed", run="r2"), None)])
    records = _heal_every_way(tmp_path, data)
    assert [(r.get("runId"), r.get("byRule")) for r in records] == [
        ("r1", None), ("r1", None), ("r1", None), ("r1", {"ensure_terminal": 1, "join_split_records": 1}),
        ("r2", None), ("r2", None)]


@pytest.mark.parametrize("after", [False, True], ids=["alone", "second-input"])
def test_a_record_split_across_lines_before_a_run_record_is_the_repair_of_that_run(tmp_path: Path, after: bool) -> None:
    """A dropped record pretty-printed opens the file (it names no run), then r1's run record and its events, all
    fine: the join is r1's repair, counted in r1's heal record, as `replay heal` runs, every way (real processes: the
    file, a pipe, the fast lane off, the screen off; the file after another input). It was counted at the end in a
    heal record of its own, "runId": null, "runDropped": true, though no run was dropped: a run record keeps what came
    before it out of its run, and no run came before the record in its input to take it."""
    dropped = {"$record": "dropped", "code": "E_JSONL_LINE_INVALID", "message": "m", "line": 3, "offset": 9}
    run = {"$record": "run", "runId": "r1", "status": "ok"}
    events = [ev(1, "run_started", run="r1"), ev(2, "run_completed", run="r1")]
    path = tmp_path / "j.jsonl"
    path.write_bytes(json.dumps(dropped, indent=2).encode() + b"\n" + b"\n".join(lines_of([run, *events])) + b"\n")
    first = tmp_path / "a.jsonl"
    first.write_bytes(b"\n".join(lines_of([ev(1, "run_started", run="a"), ev(2, "run_completed", run="a")])) + b"\n")
    paths = [str(first), str(path)] if after else [str(path)]
    spec = (ROOT / "pipeline" / "specs" / "heal.toml").read_text()
    outs = []
    for way in ("heal", "stdin", "fast", "enabled"):
        log = tmp_path / f"log-{way}.jsonl"
        if way == "heal":
            done = run_replay("heal", "--log", str(log), *paths, process=True)
        elif way == "stdin":
            if after:
                continue
            done = run_replay("heal", "--log", str(log), input=path.read_bytes(), process=True)
        else:
            config = tmp_path / f"heal-{way}.toml"
            config.write_text(spec.replace('type = "screen"', f'type = "screen"\n{way} = false', 1)
                              + f'\n[stages.log]\ntype = "write"\npath = "{log}"\ninputs = ["heal.repairs"]\n')
            done = run_replay("run", str(config), *paths, process=True)
        assert done.returncode == 1, way  # (parse says the dropped record again: E_JSONL_LINE_INVALID)
        assert [e["code"] for e in errors_of(done.stderr)] == ["E_JSONL_LINE_INVALID"], way
        outs.append((done.stdout, [{k: v for k, v in e.items() if k != "source"} for e in jsonl(log.read_bytes())]))
    assert outs[1:] == [outs[0]] * (len(outs) - 1)  # (the log's source is <stdin> down the pipe)
    records = jsonl(outs[0][0])
    assert records[-4:] == [run, *events, {"$record": "heal", "runId": "r1", "repairs": 1,
                                           "byRule": {"join_split_records": 1}}]
    assert not [r for r in records if r.get("runDropped")]
    assert [(e["rule"], e["runId"], e["line"]) for e in outs[0][1]] == [("join_split_records", None, 1)]
    report = orjson.loads(run_replay("report", "--format", "json", input=outs[0][0]).stdout)
    assert report["runs"][-1]["repairs"] == {"total": 1, "byRule": {"join_split_records": 1}}
    assert "unattributedRepairs" not in report


def test_heal_keeps_leap_seconds_as_written_and_both_lanes_write_the_same_bytes(tmp_path: Path) -> None:
    """The real executable, with the fast lane (``replay heal``) and without it (the heal graph with the screen's
    ``fast = false``): the same stream, log and warnings, byte for byte. A clean run over a leap second comes out
    as it came (no repair, no heal record); in another, a leap second that goes back (23:59:60.5, then 23:59:60.1)
    is a warning, and second 60 at noon, which is no leap second, borrows the time before it, as before."""
    leap = [ev(1, "run_started", ts="2016-12-31T23:59:59.500Z"), ev(2, "assistant_message", ts="2016-12-31T23:59:60.250Z"),
            ev(3, "assistant_message", ts="2016-12-31T18:59:60.750-05:00"), ev(4, "run_completed", ts="2017-01-01T00:00:00.000Z")]
    back = [ev(1, "run_started", run="r2", ts="2016-12-31T23:59:60.500Z"),
            ev(2, "assistant_message", run="r2", ts="2016-12-31T23:59:60.100Z"),
            ev(3, "assistant_message", run="r2", ts="2016-12-31T12:00:60.000Z"),
            ev(4, "run_completed", run="r2", ts="2017-01-01T00:00:00.000Z")]
    path = tmp_path / "leap.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines_of(leap + back)))
    spec = tmp_path / "heal-slow.toml"
    spec.write_text((ROOT / "pipeline" / "specs" / "heal.toml").read_text().replace(
        'type = "screen"', 'type = "screen"\nfast = false', 1)
        + f'\n[stages.log]\ntype = "write"\npath = "{tmp_path / "slow.jsonl"}"\ninputs = ["heal.repairs"]\n')
    fast = run_replay("heal", "--log", str(tmp_path / "fast.jsonl"), str(path), process=True)
    slow = run_replay("run", str(spec), str(path), process=True)
    assert fast.returncode == slow.returncode == 0, fast.stderr
    assert fast.stdout == slow.stdout
    assert (tmp_path / "fast.jsonl").read_bytes() == (tmp_path / "slow.jsonl").read_bytes()

    def notices(stderr: bytes) -> list[dict]:
        return [{k: v for k, v in n.items() if k != "timestamp"} for n in jsonl(stderr) if n.get("event") == "heal.notice"]

    assert notices(fast.stderr) == notices(slow.stderr)
    # (the time borrowed for second 60 at noon is the previous event's: no step back, though earlier than 23:59:60.5)
    assert [(n["runId"], n["seqBefore"], n["value"]) for n in notices(fast.stderr)] == [
        ("r2", 2, "2016-12-31T23:59:60.100Z")]
    out = fast.stdout.splitlines()
    assert out[:4] == lines_of(leap)
    assert [e["timestamp"] for e in jsonl(b"\n".join(out[4:])) if "$record" not in e] == [
        "2016-12-31T23:59:60.500Z", "2016-12-31T23:59:60.100Z", "2016-12-31T23:59:60.100Z", "2017-01-01T00:00:00.000Z"]
    assert jsonl(out[-1]) == [{"$record": "heal", "runId": "r2", "repairs": 1, "byRule": {"fix_timestamp": 1}}]


def test_a_time_before_year_1_in_utc_is_no_crash_in_heal_or_report(tmp_path: Path) -> None:
    """``0001-01-01 00:30:00+01:00`` is year 0 in UTC: heal's fix_timestamp crashed converting it (OverflowError,
    E_STAGE_FAILED) and report crashed on the valid ``0001-01-01T00:30:00+01:00``. Heal now borrows over it (logged),
    as over any time it cannot convert (here the run's first later time), and report leaves the time it cannot place
    out of the run's span."""
    journal = tmp_path / "y1.jsonl"
    journal.write_bytes(
        b'{"seq":1,"timestamp":"0001-01-01 00:30:00+01:00","type":"run_started","runId":"r","payload":{}}\n'
        b'{"seq":2,"timestamp":"0001-01-01T00:30:00+01:00","type":"run_completed","runId":"r","payload":{}}\n')
    healed = run_replay("heal", str(journal), "--log", str(tmp_path / "log.jsonl"))
    assert healed.returncode == 0, healed.stderr
    first, second = jsonl(healed.stdout)[:2]
    assert (first["timestamp"], second["timestamp"]) == ("0001-01-01T00:30:00+01:00", "0001-01-01T00:30:00+01:00")
    (repair,) = jsonl((tmp_path / "log.jsonl").read_bytes())
    assert (repair["rule"], repair["original"]) == ("fix_timestamp", "0001-01-01 00:30:00+01:00"), repair
    for fmt in ("text", "json"):
        report = run_replay("report", "--format", fmt, str(journal))
        assert report.returncode == 0 and b"E_STAGE_FAILED" not in report.stderr, report.stderr
    (run,) = json.loads(run_replay("report", "--format", "json", str(journal)).stdout)["runs"]
    assert (run["startedAt"], run["endedAt"], run["events"]["total"]) == (None, None, 2)


def test_a_document_whose_first_record_is_an_array_is_reported_not_a_crash(tmp_path):
    """The screen asks whether a document's lone record is read's input mark: a record that is no object is not."""
    document = tmp_path / "runs.json"
    event = {"seq": 1, "runId": "r", "type": "run_started", "timestamp": "2026-01-01T00:00:00Z", "payload": {}}
    for records in ([[1]], [[1], event]):
        document.write_text(json.dumps(records))
        result = run_replay("heal", str(document))
        assert result.returncode == 1 and b"E_STAGE_FAILED" not in result.stderr
        assert [(e["code"], e["path"]) for e in errors_of(result.stderr)] == [("E_EVENT_NOT_OBJECT", "$[0]")]
        assert [json.loads(line).get("seq") for line in result.stdout.splitlines()][:1] == ([1] if len(records) > 1 else [])


@pytest.mark.parametrize("command", [["heal", "--in", "in", "--out", "out"], ["validate", "in"], ["report", "in"]])
def test_a_broken_or_looping_link_is_told_how_to_fix_itself(tmp_path: Path, command: list[str]) -> None:
    """The advice of E_INPUT_UNREADABLE fits its reason: a link to nothing or in a loop is no matter of permissions or
    of the disk (what every unreadable input was told to check)."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.jsonl").write_bytes(broken_bytes())
    (src / "broken.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    (src / "loop.jsonl").symlink_to(src / "loop.jsonl")
    proc = run_replay(*command, cwd=tmp_path)
    advice = {e["source"]: e["howToFix"] for e in errors_of(proc.stderr) if e["code"] == "E_INPUT_UNREADABLE"}
    assert proc.returncode == 1 and sorted(advice) == ["in/broken.jsonl", "in/loop.jsonl"]
    assert "link to nothing" in advice["in/broken.jsonl"] and "permissions" not in advice["in/broken.jsonl"]
    assert "in a loop" in advice["in/loop.jsonl"] and "permissions" not in advice["in/loop.jsonl"]


@pytest.mark.parametrize("command", [["heal", "--in", "IN", "--out", "out"], ["validate", "IN"], ["report", "IN"]])
def test_a_folder_at_a_file_url_reports_its_broken_and_looping_links_as_the_local_folder_does(tmp_path: Path,
                                                                                             command: list[str]) -> None:
    """Listed through fsspec, a link to nothing or in a loop was left out in silence (exit 0 when the rest was fine),
    and a loop looked at again in a task ended the command (exit 2): at file:// they are the local folder's errors."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.jsonl").write_bytes(broken_bytes())
    (src / "broken.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    (src / "loop.jsonl").symlink_to(src / "loop.jsonl")
    url = f"file://{src}"
    local = run_replay(*[str(src) if a == "IN" else a for a in command], cwd=tmp_path)
    remote = run_replay(*[url if a == "IN" else a for a in command[:-1]], "out2" if command[-1] == "out" else
                        (url if command[-1] == "IN" else command[-1]), cwd=tmp_path)
    assert local.returncode == remote.returncode == 1
    assert [(e["code"], e["source"]) for e in errors_of(local.stderr) if e["code"] == "E_INPUT_UNREADABLE"] == \
        [("E_INPUT_UNREADABLE", str(src / "broken.jsonl")), ("E_INPUT_UNREADABLE", str(src / "loop.jsonl"))]
    assert diagnostics(remote.stderr.replace(b"file://", b"")) == diagnostics(local.stderr)  # (warnings: when logged aside)
    assert remote.stdout.replace(b"file://", b"").replace(b"out2/", b"out/") == local.stdout


ORPHANED = b'{"seq":1,"timestamp":"2026-03-01T13:00:01.000Z","type":"tool_completed","runId":"v1","payload":{"callId":"g1"}}\n'


@pytest.mark.parametrize("data", [b'{"a":', ORPHANED, ORPHANED + b'{"seq":2,"ty'], ids=["torn", "orphaned", "both"])
def test_a_journal_with_no_run_left_heals_into_a_folder_as_it_heals_to_stdout(tmp_path: Path, data: bytes):
    """Found by differential fuzzing: a journal heal keeps no run of (only a cut-off line, or only an orphaned result
    heal drops) gets the heal records of those repairs, "runDropped": true, on stdout; `heal --in/--out` wrote an
    empty healed journal (the records went under no input's name), though its heal log lists the repairs."""
    (tmp_path / "in").mkdir()
    path = tmp_path / "in" / "j.jsonl"
    path.write_bytes(data)
    to_stdout = run_replay("heal", str(path))
    into = run_replay("heal", "--in", str(tmp_path / "in"), "--out", str(tmp_path / "out"))
    assert to_stdout.returncode == into.returncode == 0
    healed = (tmp_path / "out" / "j.healed.jsonl").read_bytes()
    assert healed == to_stdout.stdout
    log = json.loads((tmp_path / "out" / "j.heal-log.json").read_bytes())
    assert sum(r["repairs"] for r in map(orjson.loads, healed.splitlines())) == log["summary"]["total"] == len(log["repairs"])


def test_a_max_line_bytes_beyond_64_bits_heals_a_folder(tmp_path: Path):
    """Found by fuzzing the CLI: `heal --in DIR --out OUT --max-line-bytes 99999999999999999999` was E_UNHANDLED
    (TypeError: Integer exceeds 64-bit range), exit 1, where the filter mode takes it: the key of the work in OUT's
    manifest was written with orjson."""
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "run.jsonl").write_bytes((EXAMPLES / "journals" / "two-runs.jsonl").read_bytes())
    for _ in range(2):  # (the second run finds the manifest's key the same: nothing to heal again)
        done = run_replay("heal", "--in", str(runs), "--out", str(tmp_path / "healed"), "--max-line-bytes",
                          "99999999999999999999")
        assert done.returncode == 0, done.stderr
        assert [line["source"] for line in jsonl(done.stdout)] == [str(runs / "run.jsonl")]
    assert (tmp_path / "healed" / "run.healed.jsonl").read_bytes() == (runs / "run.jsonl").read_bytes()


def test_a_heal_log_left_unwritten_by_a_closed_pipe_is_said(tmp_path):
    """`replay heal big --log L | head -1`: the reader goes, heal stops and exits 0 (as any filter does), and the log,
    which would hold part of the run, is not written: that went unsaid, and the user found no log."""
    run = (b'{"seq":%d,"timestamp":"2026-03-01T12:00:00.000Z","type":"user_message","runId":"r","payload":{"text":"'
           + b"x" * 200 + b'"}}\n')
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"".join(run % k for k in range(1, 40_001)))  # (~9 MB: more than a pipe holds)
    proc = subprocess.run(["bash", "-c", f"{REPLAY} heal {big} --log L.jsonl | head -1 > /dev/null; "
                                         "echo ${PIPESTATUS[0]} >&2"], cwd=tmp_path, capture_output=True)
    lines = proc.stderr.decode().splitlines()
    assert lines[-1] == "0" and not (tmp_path / "L.jsonl").exists()
    (said,) = [json.loads(line) for line in lines[:-1] if "heal.log_not_written" in line]
    assert said["path"] == "L.jsonl" and said["level"] == "warning"


def test_an_unanswered_calls_mark_says_its_result_may_be_on_a_line_left_out_of_its_run(tmp_path):
    """heal marked a call `tool_unanswered` ("no result ... was read") when its result was on a line too long to read
    (--max-line-bytes), and its words did not know a line of the run was left out. When a line of the run after the
    call was left out (too long, not JSON), the mark and its log line say the result may have been on it (the log line
    names the line); when every line of the run was read (a line left out of another run, or before the call), the run has none.
    A file and `replay read | replay heal` say the same."""
    call = {"callId": "c1", "toolName": "cat"}
    result = ev(3, "tool_completed", payload={**call, "output": "x" * 5000})
    runs = [ev(1, "run_started"), ev(2, "tool_called", payload=call), result, ev(4, "run_completed"),
            ev(1, "run_started", run="r2"), ev(2, "tool_called", run="r2", payload={"callId": "c2"}),
            ev(3, "run_completed", run="r2"),
            ev(1, "run_started", run="r3"), ev(2, "note", run="r3", payload={"big": "y" * 5000}),
            ev(3, "tool_called", run="r3", payload={"callId": "c3"}), ev(4, "run_completed", run="r3")]
    lines = lines_of(runs)
    lines.insert(6, b'{"seq": 3, "not json')  # r2's result, cut: a line that is no JSON
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    piped = run_replay("read", "--max-line-bytes", "1000", str(path))
    for how in (("heal", "--max-line-bytes", "1000", str(path)), ("heal", "--max-line-bytes", "1000")):
        log = tmp_path / "log.jsonl"
        done = run_replay(*how, "--log", str(log), input=None if str(path) in how else piped.stdout)
        assert done.returncode == 1, done.stderr  # (the lines left out are errors)
        marks = {e["runId"]: e["payload"]["reason"] for e in jsonl(done.stdout) if e.get("type") == "tool_unanswered"}
        assert "a line of the run after the call was left out (E_JSONL_LINE_TOO_LONG)" in marks["r1"], marks
        assert "may have been on it" in marks["r1"] and "may have been on it" in marks["r2"]
        assert "a line of the run after the call was left out (E_JSONL_LINE_INVALID)" in marks["r2"], marks
        assert "the run has none (every line of it after the call was read)" in marks["r3"], marks  # (its long line: before)
        logged = {e["runId"]: e["message"] for e in jsonl(log.read_bytes()) if e["rule"] == "pair_tool_calls"}
        assert "line 3 after it was left out, E_JSONL_LINE_TOO_LONG: the result may have been on it" in logged["r1"]
        assert "left out" not in logged["r3"]
    whole = run_replay("heal", str(path))  # every line read: r1 answered, r2's cut line is still left out
    assert [e["runId"] for e in jsonl(whole.stdout) if e.get("type") == "tool_unanswered"] == ["r2", "r3"]


def test_a_line_left_out_after_blank_lines_is_still_the_runs_before_them(tmp_path):
    """The lines left out after a run's last event, up to where the next run of its input begins (or its input ends),
    are the run's, blank lines among them or not: an unanswered call's mark says its result may have been on one. A
    file said "the run has none" when a blank line came right after the run's last line, and `replay read | replay
    heal` (read leaves blank lines out) said "left out": the two wrote different streams."""
    r1 = [ev(1, "run_started"), ev(2, "tool_called", payload={"callId": "c1", "toolName": "bash"})]
    r3 = [ev(1, "run_started", run="r3"), ev(2, "run_completed", run="r3")]
    r2 = [ev(1, "run_started", run="r2"), ev(2, "tool_called", run="r2", payload={"callId": "c2", "toolName": "bash"})]
    data = b"\n".join([*lines_of(r1), b"", b"  ", b'{"seq": 3, "not json', b"", *lines_of(r3), *lines_of(r2),
                       b"", b"", b'{"seq": 3, "ty'])
    path = tmp_path / "runs.jsonl"
    path.write_bytes(data)
    whole = run_replay("heal", str(path))
    piped = run_replay("heal", input=run_replay("read", str(path)).stdout)
    assert whole.stdout == piped.stdout
    marks = {e["runId"]: e["payload"]["reason"] for e in jsonl(whole.stdout) if e.get("type") == "tool_unanswered"}
    assert "a line of the run after the call was left out (E_JSONL_LINE_INVALID)" in marks["r1"], marks
    assert "a line of the run after the call was left out (E_JSONL_LINE_TORN)" in marks["r2"], marks
