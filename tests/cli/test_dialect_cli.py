"""`replay read --dialect`, `replay heal --dialect/--dialect-out` as real processes and pipes, on real agent logs
(attribution: tests/fixtures/corpus/SOURCES.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from conftest import ROOT, errors_of, jsonl, run_replay
from dialect_support import CORPUS
from jsonschema import Draft202012Validator

from replay.pipeline.cli.commands.read import DIALECTS
from replay.pipeline.model.dialects import AUTO, NAMES, ORIGIN_KEY

CLAUDE = CORPUS / "claude-code" / "representative_messages.jsonl"
CODEX_BAD = CORPUS / "codex" / "rollout-66666666-6666-4666-8666-666666666666.jsonl"
OPENHANDS = CORPUS / "openhands" / "basic.json"
SCHEMAS = ROOT / "schemas"


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
    out = jsonl(done.stdout)
    assert [r.get("type") for r in out] == [None, "run_started", "event_msg.user_message", None]
    assert (out[-1]["$record"], out[-1]["code"], out[-1]["line"]) == ("dropped", "E_JSONL_LINE_INVALID", 3)  # (for a pipe)


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


def test_a_trajectory_read_as_lines_down_a_pipe_is_written_back_as_one_document():
    """`replay read x.json` writes a trajectory's records as lines; `heal --dialect-out` down the pipe still writes
    the OpenHands / mini-swe-agent document (a JSON array), as `heal --dialect-out x.json` does, not JSONL."""
    for path in (OPENHANDS, CORPUS / "mini-swe-agent" / "github_issue.traj.json"):
        lines = run_replay("read", str(path))
        assert lines.returncode == 0 and len(lines.stdout.splitlines()) > 1
        for back in (run_replay("heal", "--dialect-out", "auto", input=lines.stdout),
                     run_replay("write", "--dialect", path.parent.name,
                                input=run_replay("read", "--dialect", "auto", "-", input=lines.stdout).stdout)):
            assert back.returncode == 0, back.stderr
            assert jsonl(back.stdout) == [orjson.loads(path.read_bytes())], path


def test_a_trajectory_of_more_than_a_thousand_records_piped_as_lines_heals_as_the_file_does(tmp_path):
    """Down a pipe a whole-document log was held to its end for 1,000 records only: a longer one opened its run before
    its end, so its run record lacked how the run ended (status, response) and heal inferred a run_failed. It is held
    within --max-line-bytes, the size heal reads the file whole up to; past that it opens early with a warning."""
    messages = orjson.loads((CORPUS / "mini-swe-agent" / "github_issue.traj.json").read_bytes())
    middle = messages[2:-2] * (1100 // len(messages[2:-2]) + 1)  # the exchanges, again and again, then the submission
    path = tmp_path / "long.traj.json"
    path.write_bytes(orjson.dumps([*messages[:2], *middle, *messages[-2:]], option=orjson.OPT_INDENT_2))
    lines = run_replay("read", str(path))
    assert lines.returncode == 0 and len(lines.stdout.splitlines()) > 1000
    whole = run_replay("heal", str(path))
    piped = run_replay("heal", input=lines.stdout)
    assert whole.returncode == piped.returncode == 0, piped.stderr
    named = jsonl(whole.stdout)  # read's source line keeps the file's name down the pipe: the run is `long` there too
    assert named[0]["status"] == "ok" and named[-2]["type"] == "run_completed"
    assert jsonl(piped.stdout) == [{"$record": "source", "source": str(path)}, *named] and piped.stderr == b""
    early = run_replay("heal", "--max-line-bytes", "20000", input=lines.stdout)
    assert "status" not in jsonl(early.stdout)[0]
    [warning] = [w for w in jsonl(early.stderr) if w.get("event") == "dialect.opened_early"]
    assert warning["level"] == "warning" and warning["howToFix"]


def test_heal_and_read_warn_of_a_key_written_twice_in_a_mapped_record(tmp_path):
    """A mapped record is written anew (its events, and its origin under `$origin`), so only the last value of a key
    written twice survives: heal and `read --dialect` say so (E_JSON_DUPLICATE_KEY, a warning, once, from the dialect
    stage), as heal does for an event it changes."""
    lines = CLAUDE.read_bytes().splitlines()
    lines[1] = lines[1][:-1] + b', "isSidechain": true}'  # the record has `"isSidechain": false` already
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    for command, args in (("heal", ()), ("heal", ("--dialect-out", "claude-code")), ("read", ("--dialect", "claude-code")),
                          ("read", ("--dialect", "auto"))):
        done = run_replay(command, str(path), *args)
        assert done.returncode == 0, done.stderr
        notes = [orjson.loads(line) for line in done.stderr.splitlines() if b"E_JSON_DUPLICATE_KEY" in line]
        assert [(n["keys"], n["line"], n["offset"], n["source"], n["level"], n["event"]) for n in notes] == [
            (["$.isSidechain"], 2, len(lines[0]) + 1, str(path), "warning", f"{command}.notice")], done.stderr


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


# a record split across lines, healed by the command ------------------------------------------------------
def split_session(tmp_path) -> tuple[Path, list[bytes], bytes]:
    """The sample with its Bash output written unescaped (raw newlines in the strings): five physical lines."""
    lines = CLAUDE.read_bytes().splitlines()
    broken = lines[8].replace(b"\\n", b"\n")
    data = b"\n".join([*lines[:8], broken, *lines[9:]]) + b"\n"
    path = tmp_path / "session.jsonl"
    path.write_bytes(data)
    return path, lines, broken


def test_heal_joins_a_split_record_logs_it_and_dialect_out_writes_it_whole(tmp_path):
    path, lines, broken = split_session(tmp_path)
    assert run_replay("read", str(path)).returncode == 1  # read reports the pieces: repairing is heal's
    log = tmp_path / "repairs.jsonl"
    done = run_replay("heal", str(path), "--log", str(log), "--dialect-out", "claude-code")
    assert done.returncode == 0, done.stderr
    assert errors_of(done.stderr) == []
    (entry,) = [e for e in jsonl(log.read_bytes()) if e["rule"] == "join_split_records"]
    assert (entry["line"], entry["offset"], entry["joined"]) == (9, path.read_bytes().index(broken), 5)
    assert jsonl(done.stdout) == [orjson.loads(line) for line in lines]


# heal's directory mode on agent logs --------------------------------------------------------------------
def test_heal_in_out_maps_every_corpus_log_in_a_folder(tmp_path):
    src = tmp_path / "logs"
    for path in CORPUS.rglob("*"):
        if path.suffix in (".json", ".jsonl"):
            (src / path.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, src / path.parent.name / path.name)
    split, _lines, _broken = split_session(tmp_path)
    shutil.copy(split, src / "claude-code" / "split-session.jsonl")
    done = run_replay("heal", "--in", str(src), "--out", str(tmp_path / "healed"))
    written = jsonl(done.stdout)
    assert len(written) == 10
    # edge_cases.jsonl's non-objects, and the codex sample's malformed last line (a newline ends it: not torn)
    assert {e["code"] for e in errors_of(done.stderr)} == {"E_EVENT_NOT_OBJECT", "E_JSONL_LINE_INVALID"}
    assert done.returncode == 1
    checked = run_replay("validate", "--in", str(tmp_path / "healed"))
    assert checked.returncode == 0, checked.stderr  # every healed copy is valid: the logs were mapped first
    for line in written:
        healed = Path(line["healed"])
        if healed.suffix == ".jsonl":
            run = jsonl(healed.read_bytes())[0]
        else:
            run = orjson.loads(healed.read_bytes())
        assert run["framework"] == healed.parent.name, healed
    log = orjson.loads((tmp_path / "healed" / "claude-code" / "split-session.heal-log.json").read_bytes())
    assert log["summary"]["byRule"]["join_split_records"] == 1
    (entry,) = [r for r in log["repairs"] if r["rule"] == "join_split_records"]
    assert (entry["source"], entry["line"]) == (str(src / "claude-code" / "split-session.jsonl"), 9)
    assert Draft202012Validator(orjson.loads((SCHEMAS / "heal-log.schema.json").read_bytes())).is_valid(log)
    openhands = orjson.loads((tmp_path / "healed" / "openhands" / "basic.healed.json").read_bytes())
    assert openhands["status"] == "ok" and openhands["events"][-1]["type"] == "run_completed"


def test_a_trajectory_healed_into_an_artifact_keeps_its_run_facts_and_is_written_back_whole(tmp_path):
    """`heal --in/--out` writes a trajectory as an artifact: the run record's facts a dialect adds (model, $origin
    with the trajectory's other keys) stay in it, so `replay write --dialect` gives the document back, as it does
    from `replay heal FILE`'s stream."""
    src = tmp_path / "logs"
    src.mkdir()
    messages = orjson.loads((CORPUS / "mini-swe-agent" / "github_issue.traj.json").read_bytes())
    trajectory = {"info": {"exit_status": "Submitted", "submission": "the patch", "model_stats": {"instance_cost": 0.5},
                           "config": {"model": {"model_name": "m1"}}},
                  "messages": messages, "trajectory_format": "mini-swe-agent-1"}
    (src / "run.traj.json").write_bytes(orjson.dumps(trajectory))
    shutil.copy(OPENHANDS, src / "basic.json")
    done = run_replay("heal", "--in", str(src), "--out", str(tmp_path / "healed"))
    assert done.returncode == 0, done.stderr
    streamed = {path.name: jsonl(run_replay("heal", str(src / path.name)).stdout)[0] for path in src.iterdir()}
    for name, original in (("run.traj", trajectory), ("basic", orjson.loads(OPENHANDS.read_bytes()))):
        healed = tmp_path / "healed" / f"{name}.healed.json"
        artifact = orjson.loads(healed.read_bytes())
        run = streamed[f"{name}.json" if name == "basic" else "run.traj.json"]
        assert artifact["model"] == run["model"] and artifact[ORIGIN_KEY] == run[ORIGIN_KEY]
        back = run_replay("write", "--dialect", "auto", str(healed))
        assert back.returncode == 0, back.stderr
        assert jsonl(back.stdout) == [original], name
        read = jsonl(run_replay("read", str(healed)).stdout)[0]  # and read gives the run record its facts back
        assert read["model"] == run["model"] and read[ORIGIN_KEY] == run[ORIGIN_KEY]


def test_heal_in_out_takes_the_dialect_flag_and_refuses_dialect_out(tmp_path):
    src = tmp_path / "logs"
    src.mkdir()
    shutil.copy(CLAUDE, src / "session.jsonl")
    done = run_replay("heal", "--in", str(src), "--out", str(tmp_path / "healed"), "--dialect", "codex")
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_DIALECT_MISMATCH"]  # mapped as asked, and said so
    refused = run_replay("heal", "--in", str(src), "--out", str(tmp_path / "other"), "--dialect-out", "claude-code")
    assert refused.returncode == 2 and errors_of(refused.stderr)[0]["code"] == "E_USAGE_INVALID"
    assert not (tmp_path / "other").exists()


def test_a_log_read_twice_is_two_inputs_each_mapped_afresh(tmp_path):
    """`replay read --dialect claude-code S S`: the second copy went on numbering the first's run (seq 15, 16, ...
    with no run record), which validate then refused as a run opening at seq 15. Read's mark before each input
    begins another input, the same file too: the copies come out as a file and its copy under another name do."""
    session = CORPUS / "claude-code" / "representative_messages.jsonl"
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(session.read_bytes())
    twice = run_replay("read", "--dialect", "claude-code", str(session), str(session))
    named = run_replay("read", "--dialect", "claude-code", str(session), str(copy))
    assert twice.returncode == named.returncode == 0, twice.stderr
    assert twice.stdout == named.stdout.replace(str(copy).encode(), str(session).encode())
    assert twice.stdout.count(b'"$record":"run"') == 2
    checked = run_replay("validate", input=twice.stdout)
    assert b"E_ARTIFACT_EVENT_SEQ_INVALID" not in checked.stderr


def test_every_command_with_a_dialect_stage_warns_of_a_key_written_twice(tmp_path):
    """`export --otlp`, `replay run` of examples/pipelines/heal.toml (neither names `dialect.notices`: a stage's notices
    nobody takes are warnings on stderr) and `heal --in/--out` (in each input's heal log, with heal's own notices)."""
    lines = CLAUDE.read_bytes().splitlines()
    lines[1] = lines[1][:-1] + b', "isSidechain": true}'
    path = tmp_path / "in" / "session.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"\n".join(lines) + b"\n")
    for args in (("export", "--otlp", str(path)), ("run", str(ROOT / "examples" / "pipelines" / "heal.toml"), str(path))):
        done = run_replay(*args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        notes = [orjson.loads(line) for line in done.stderr.splitlines() if b"E_JSON_DUPLICATE_KEY" in line]
        assert [(n["keys"], n["line"], n["source"], n["level"], n["event"], n["stage"]) for n in notes] == [
            (["$.isSidechain"], 2, str(path), "warning", "notice", "dialect")], (args, done.stderr)
    done = run_replay("heal", "--in", str(path.parent), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    logs = list((tmp_path / "out").rglob("*heal-log*"))
    assert len(logs) == 1, logs
    text = logs[0].read_text()
    assert "E_JSON_DUPLICATE_KEY" in text and "isSidechain" in text, text


def test_heal_and_read_warn_of_another_dialects_lines_in_one_file(tmp_path):
    """Replay's own run with a Claude Code session written after it, and the session with a Codex rollout after it:
    each file is read as the dialect of its first records, and the first line of the other's is a warning
    (E_DIALECT_MISMATCH, a notice from the dialect stage) with its line and offset; the exit status is unchanged."""
    own = (ROOT / "examples" / "journals" / "two-runs.jsonl").read_bytes()
    claude = CLAUDE.read_bytes().rstrip(b"\n") + b"\n"
    rollout = (CORPUS / "codex" / "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl").read_bytes()
    for name, data, first, expected, received in (("own-then-claude.jsonl", own + claude, own, "canonical", "claude-code"),
                                                   ("claude-then-codex.jsonl", claude + rollout, claude, "claude-code", "codex")):
        path = tmp_path / name
        path.write_bytes(data)
        for command, args in (("heal", ()), ("read", ("--dialect", "auto"))):
            done = run_replay(command, str(path), *args)
            assert done.returncode == 0, done.stderr
            notes = [orjson.loads(line) for line in done.stderr.splitlines() if b"E_DIALECT_MISMATCH" in line]
            assert [(n["line"], n["offset"], n["expected"], n["received"], n["level"], n["event"]) for n in notes] == [
                (len(first.splitlines()) + 1, len(first), expected, received, "warning", f"{command}.notice")], done.stderr


def test_a_whole_document_log_piped_from_read_is_named_after_its_file_as_heal_of_the_file_names_it(tmp_path):
    """`replay read x.json | replay heal` named an OpenHands or mini-swe-agent run `stdin` (read wrote no source line
    for its only input), where `replay heal x.json` names it `x`: read marks such a file's records with its name, so the
    pipe heals, reports and logs the run under the file's name, the rest as the file's heal writes it."""
    for path, name in ((OPENHANDS, "basic"), (CORPUS / "mini-swe-agent" / "github_issue.traj.json", "github_issue")):
        lines = run_replay("read", str(path))
        assert lines.returncode == 0, lines.stderr
        assert jsonl(lines.stdout)[0] == {"$record": "source", "source": str(path)}
        whole = run_replay("heal", str(path), "--log", str(tmp_path / "whole.jsonl"))
        piped = run_replay("heal", "--log", str(tmp_path / "piped.jsonl"), input=lines.stdout)
        assert whole.returncode == piped.returncode == 0, piped.stderr
        assert jsonl(piped.stdout)[1:] == jsonl(whole.stdout) and jsonl(whole.stdout)[0]["runId"] == name
        logged = jsonl((tmp_path / "piped.jsonl").read_bytes())
        assert logged and {(e["runId"], e["source"]) for e in logged} == {(name, str(path))}
        report = run_replay("report", "--format", "json", input=lines.stdout)
        assert report.returncode == 0, report.stderr
        assert [r["runId"] for r in orjson.loads(report.stdout)["runs"]] == [name]
    alone = run_replay("read", "-", input=OPENHANDS.read_bytes())  # stdin has no name to give: no source line
    assert alone.returncode == 0 and b'"$record":"source"' not in alone.stdout


def test_a_file_of_two_claude_code_sessions_one_after_another_is_two_runs(tmp_path):
    """Two Claude Code sessions written into one file (two `sessionId`s) were read as one run, named after the first:
    each session is a run of its own, its own run record, run_started and seq from 1. A resumed session's records,
    which Claude Code writes under the new session's id linked to the records before (`parentUuid`), go on with the
    run they continue."""
    first, second = CLAUDE.read_bytes(), (CORPUS / "claude-code" / "session_b.jsonl").read_bytes()
    both = tmp_path / "both.jsonl"
    both.write_bytes(first.rstrip(b"\n") + b"\n" + second)
    healed = run_replay("heal", str(both))
    assert healed.returncode == 0, healed.stderr
    out = jsonl(healed.stdout)
    runs = [r for r in out if r.get("$record") == "run"]
    assert [r["runId"] for r in runs] == ["test_session", "session_b"]
    assert runs[1]["prompt"].startswith("This is from a different session file")
    assert [e["seq"] for e in out if e.get("runId") == "session_b" and "seq" in e][:2] == [1, 2]
    report = run_replay("report", "--format", "json", str(both))
    assert [r["runId"] for r in orjson.loads(report.stdout)["runs"]] == ["test_session", "session_b"], report.stderr
    resumed = [orjson.loads(line) for line in second.splitlines()]
    last_uuid = [orjson.loads(line) for line in first.splitlines() if b'"uuid"' in line][-1]["uuid"]
    for record in resumed:  # the new session goes on from the last record of the one before, each from the one before it
        record["parentUuid"], last_uuid = last_uuid, record["uuid"]
    lineage = tmp_path / "resumed.jsonl"
    lineage.write_bytes(first.rstrip(b"\n") + b"\n" + b"\n".join(orjson.dumps(r) for r in resumed) + b"\n")
    one = run_replay("heal", str(lineage))
    assert [r["runId"] for r in jsonl(one.stdout) if r.get("$record") == "run"] == ["test_session"], one.stderr


def test_a_named_dialect_the_log_is_not_in_is_an_error_and_the_catalogue_says_so():
    """A whole log that is not the dialect --dialect names: E_DIALECT_MISMATCH as an {"error": ...}, exit 1 (a
    line of another dialect inside a log is the warning); ERROR_CODES.md and the catalogue say when it is which."""
    from replay.pipeline.engine.errors import CATALOGUE

    done = run_replay("read", "--dialect", "codex", str(ROOT / "examples" / "journals" / "two-runs.jsonl"))
    assert done.returncode == 1
    assert [orjson.loads(line)["error"]["code"] for line in done.stderr.splitlines() if line.startswith(b'{"error"')] == [
        "E_DIALECT_MISMATCH"]
    meaning = CATALOGUE["E_DIALECT_MISMATCH"][0]
    assert "--dialect` names (an error, exit 1" in meaning and "is a warning" in meaning


@pytest.mark.parametrize("records", [2, 100])  # fewer records than the look-ahead (told at the end), and more
def test_a_named_dialect_over_a_log_that_looks_like_no_dialect_is_the_same_error(tmp_path, records):
    """A log none of whose records is another agent's or replay's own (no dialect claims any), read with --dialect
    NAME, was mapped as NAME in silence, every record an ``unknown`` event, exit 0: now E_DIALECT_MISMATCH at its
    first line, exit 1, and still mapped as asked, as a log of another dialect is."""
    log = tmp_path / "nobody.jsonl"
    log.write_bytes(b"".join(orjson.dumps({"foo": i}) + b"\n" for i in range(records)))
    done = run_replay("read", "--dialect", "codex", str(log))
    assert done.returncode == 1, done.stderr
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["line"], error["offset"], error["expected"]) == ("E_DIALECT_MISMATCH", 1, 0, "codex")
    assert "looks like no dialect" in error["message"]
    events = [r for r in jsonl(done.stdout) if "seq" in r]
    assert [e["type"] for e in events] == ["unknown"] * records  # (mapped as named all the same)
    walked = run_replay("walk", "--dialect", "claude-code", str(ROOT / "tests" / "fixtures" / "walk" / "hello.jsonl"))
    assert walked.returncode == 1 and [e["code"] for e in errors_of(walked.stderr)] == ["E_DIALECT_MISMATCH"]


def test_a_named_dialect_log_whose_first_records_no_dialect_claims_is_no_mismatch(tmp_path):
    """Records no dialect claims before the first that is the named dialect's (a line with no type, say): the log is
    judged by the first record some dialect claims, as auto judges it, so nothing is said and the output is auto's."""
    log = tmp_path / "late.jsonl"
    log.write_bytes(b'{"note": "written by a wrapper"}\n' + CLAUDE.read_bytes())
    named = run_replay("read", "--dialect", "claude-code", str(log))
    auto = run_replay("read", "--dialect", "auto", str(log))
    assert named.returncode == 0 and b"E_DIALECT_MISMATCH" not in named.stderr, named.stderr
    assert named.stdout == auto.stdout and any(r.get("type") == "assistant_message" for r in jsonl(named.stdout))


def test_a_time_heal_borrows_comes_from_a_record_it_keeps_not_from_a_resumes_copy_it_drops(tmp_path):
    """A resume writes records 2-6 again before a summary line with no timestamp: the copies are dropped
    (drop_resume_duplicates) before times are borrowed (fix_timestamp), so the summary takes the time of the record
    before it that heal keeps, and no timestamp heal itself made goes backwards."""
    lines = CLAUDE.read_bytes().rstrip(b"\n").split(b"\n")
    resumed = tmp_path / "resume.jsonl"
    resumed.write_bytes(b"\n".join([*lines[:11], *lines[1:6], *lines[11:]]) + b"\n")
    done = run_replay("heal", str(resumed))
    assert b"E_TIMESTAMP_BACKWARDS" not in done.stderr, done.stderr
    events = [r for r in jsonl(done.stdout) if "seq" in r]
    stamps = [e["timestamp"] for e in events]
    assert stamps == sorted(stamps)
