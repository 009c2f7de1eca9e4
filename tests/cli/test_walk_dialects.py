"""`replay walk` over other agents' logs: each is walked as its canonical journal, the one `replay heal` writes of it
(mapped by the dialect stage, then healed, in memory), `--at` a step of those events, read-only."""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import orjson
import pytest
from conftest import errors_of, run_replay
from dialect_support import CORPUS, CORPUS_FILES

CLAUDE = CORPUS / "claude-code" / "session_b.jsonl"
EDGE = CORPUS / "claude-code" / "edge_cases.jsonl"
CODEX = CORPUS / "codex" / "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"
ids = {"ids": lambda p: f"{p.parent.name}/{p.name}"}


def healed(tmp_path: Path, path: Path, *flags: str) -> tuple[Path, list[dict]]:
    """The canonical journal `replay heal FLAGS PATH` writes of a log, saved, and the errors heal said on the way."""
    done = run_replay("heal", *flags, str(path))
    journal = tmp_path / "healed.jsonl"
    journal.write_bytes(done.stdout)
    return journal, errors_of(done.stderr)


def _said(errors: list[dict]) -> list[tuple[str, object, object]]:
    """What each error is about, not who said it: its code, line and JSON path."""
    return [(e["code"], e.get("line"), e.get("path")) for e in errors]


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("path", CORPUS_FILES, **ids)
def test_a_log_walks_as_the_journal_heal_writes_of_it(tmp_path: Path, path: Path, as_json: bool):
    flags = ["--json"] if as_json else []
    journal, heal_errors = healed(tmp_path, path)
    canonical = run_replay("walk", *flags, str(journal))
    assert canonical.returncode == 0, canonical.stderr
    walked = run_replay("walk", *flags, str(path))
    assert walked.stdout == canonical.stdout
    # (the lines that are no record of the log: said as heal says them, and the walk goes on past them, exit 1)
    problems = [e for e in heal_errors if e["code"] != "E_HEALED_ARTIFACT_INVALID"]
    assert _said(errors_of(walked.stderr)) == _said(problems)
    assert walked.returncode == (1 if problems else 0)


@pytest.mark.parametrize("split", ["pretty-printed", "raw newline in a string"])
@pytest.mark.parametrize("path", [CLAUDE, CODEX], **ids)
def test_a_log_whose_records_span_lines_is_detected_and_walks_as_heal_writes_it(tmp_path: Path, path: Path, split: str):
    """No line of it is a record alone (`jq . log.jsonl`, or a writer that left newlines in strings unescaped): heal
    joins them and maps the log; walk detects its dialect from the joined records, not the lines, and walks the same."""
    lines = []
    for line in path.read_bytes().splitlines():
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if split == "pretty-printed":
            lines.append(orjson.dumps(record, option=orjson.OPT_INDENT_2))
        else:  # the record's first escaped line break, else a space after a comma: now a raw newline, cutting the line
            lines.append(line.replace(b"\\n", b"\n", 1) if b"\\n" in line else line.replace(b",", b",\n", 1))
    log = tmp_path / f"split-{path.name}"
    log.write_bytes(b"\n".join(lines) + b"\n")
    assert not any(_is_record(line) for line in log.read_bytes().splitlines())
    journal, _ = healed(tmp_path, log)
    canonical = run_replay("walk", str(journal))
    assert canonical.returncode == 0, canonical.stderr
    walked = run_replay("walk", str(log))
    assert walked.returncode == 0, walked.stderr
    assert walked.stdout == canonical.stdout and b"$run" in walked.stdout and b"run_started" in walked.stdout


def _is_record(line: bytes) -> bool:
    try:
        return isinstance(orjson.loads(line), dict)
    except orjson.JSONDecodeError:
        return False


def test_a_log_shows_its_mapped_events_not_its_raw_records():
    done = run_replay("walk", str(CODEX))
    assert done.returncode == 0, done.stderr
    rows = [line.split()[:2] for line in done.stdout.decode().splitlines()]
    assert rows[:2] == [["$run", "-"], ["run_started", "-"]]
    # each model call a step, as the OTLP export's chat spans (``modelcalls``): the responses that only reason and call
    # tools (no message) too, each tool result in its call's
    assert [row for row in rows if row[0].startswith("tool_")] == [
        ["tool_called", "1"], ["tool_completed", "1"], ["tool_called", "2"], ["tool_completed", "2"],
        ["tool_called", "3"], ["tool_completed", "3"]]
    assert ["assistant_message", "4"] in rows
    assert rows[-2:] == [["run_failed", "-"], ["$heal", "-"]]  # the ending heal gives a log that says none
    assert b"tool=exec_command" in done.stdout


def test_a_named_dialect_walks_as_heal_with_that_dialect_writes(tmp_path: Path):
    journal, _ = healed(tmp_path, CLAUDE, "--dialect", "claude-code")
    walked = run_replay("walk", "--dialect", "claude-code", str(CLAUDE))
    assert (walked.returncode, walked.stdout) == (0, run_replay("walk", str(journal)).stdout)
    assert walked.stdout.split()[:4] == [b"$run", b"-", b"prompt=\"This", b"is"]


def test_a_named_dialect_that_is_not_the_logs_maps_it_as_asked_and_says_so(tmp_path: Path):
    journal, heal_errors = healed(tmp_path, CLAUDE, "--dialect", "codex")
    walked = run_replay("walk", "--dialect", "codex", str(CLAUDE))
    assert walked.stdout == run_replay("walk", str(journal)).stdout
    assert [e["code"] for e in errors_of(walked.stderr)] == [e["code"] for e in heal_errors] == ["E_DIALECT_MISMATCH"]


def test_a_non_object_line_is_reported_and_the_walk_goes_on_past_it():
    done = run_replay("walk", str(EDGE))
    assert done.returncode == 1
    assert [(e["code"], e["line"]) for e in errors_of(done.stderr)] == [
        ("E_EVENT_NOT_OBJECT", 13), ("E_EVENT_NOT_OBJECT", 15), ("E_EVENT_NOT_OBJECT", 16)]
    kinds = [line.split()[0] for line in done.stdout.splitlines()]
    assert kinds[-4:] == [b"tool_unanswered", b"tool_unanswered", b"run_failed", b"$heal"]
    lines = {orjson.loads(line)["event"].get("$origin", {}).get("index") for line in
             run_replay("walk", "--json", str(EDGE)).stdout.splitlines()}
    assert max(i for i in lines if i is not None) > 13  # records after the bad lines are walked too


def test_a_gzipped_log_is_detected_and_walked_the_same(tmp_path: Path):
    packed = tmp_path / "session.jsonl.gz"
    packed.write_bytes(gzip.compress(CODEX.read_bytes()))
    plain = tmp_path / "session.jsonl"
    shutil.copy(CODEX, plain)
    assert run_replay("walk", str(packed)).stdout == run_replay("walk", str(plain)).stdout
    assert b"tool_called              2              tool=apply_patch" in run_replay("walk", str(packed)).stdout


# --at ------------------------------------------------------------------------------------------------------
def test_at_the_step_of_a_tool_only_response_stops_after_its_calls_result():
    # Codex's response that only calls apply_patch (no message, no reasoning) is a model call: step 2, as its chat span
    whole = run_replay("walk", str(CODEX)).stdout.splitlines()
    done = run_replay("walk", str(CODEX), "--at", "2")
    assert done.returncode == 0, done.stderr
    shown = done.stdout.splitlines()
    assert shown == whole[:len(shown)]
    assert [line.split()[:2] for line in shown[-2:]] == [[b"tool_called", b"2"], [b"tool_completed", b"2"]]
    assert b"tool=apply_patch" in shown[-2]
    assert shown[-1].split()[-1] == b"[succeeded]"


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("path", CORPUS_FILES, **ids)
def test_a_walk_of_a_log_up_to_a_step_is_its_whole_walk_cut_after_that_step(path: Path, as_json: bool):
    flags = ["--json"] if as_json else []
    records = run_replay("walk", "--json", str(path)).stdout.splitlines()
    whole = run_replay("walk", *flags, str(path)).stdout.splitlines()
    steps = list(dict.fromkeys(s for s in (orjson.loads(r)["step_id"] for r in records) if s))
    assert steps or "66666666" in path.name  # (one Codex log holds only a prompt: no step)
    for step in steps[:3] + steps[-1:]:
        part = run_replay("walk", *flags, "--at", step, str(path))
        shown = part.stdout.splitlines()
        assert part.returncode in (0, 1) and shown and shown == whole[:len(shown)], (step, part.stderr)
        assert orjson.loads(records[len(shown) - 1])["step_id"] == step


@pytest.mark.parametrize("path", CORPUS_FILES, **ids)
def test_a_logs_run_level_events_are_no_steps_and_its_end_is_terminal(path: Path):
    """A mapped event is numbered with the model call it came in (``step``), the run's end too (an OpenHands
    ``finish``): walk shows run-level events step-less, the run's end ``[terminal]``, so `--at` no step ends on it."""
    records = [orjson.loads(r) for r in run_replay("walk", "--json", str(path)).stdout.splitlines()]
    text = run_replay("walk", str(path)).stdout.splitlines()
    for record, line in zip(records, text, strict=True):
        if record["kind"] in ("run_started", "run_completed", "run_failed"):
            assert record["step_id"] is None, record["kind"]
            assert line.split()[1] == b"-"
            if record["kind"] != "run_started":
                assert line.split()[-1] == b"[terminal]"


def test_an_openhands_finish_ends_the_run_not_a_step():
    path = CORPUS / "openhands" / "basic.json"
    assert run_replay("walk", str(path)).stdout.splitlines()[-2].split() == [b"run_completed", b"-", b"[terminal]"]
    shown = run_replay("walk", "--at", "2", str(path)).stdout.splitlines()
    assert b"run_completed" not in shown[-1] and shown[-1].split()[:2] == [b"assistant_message", b"2"]


def test_a_logs_shell_commands_are_shown_whole():
    """mini-swe-agent's bash calls: the command, whatever its length, is never cut (other arguments may be)."""
    path = CORPUS / "mini-swe-agent" / "github_issue.traj.json"
    commands = [orjson.loads(r)["event"]["payload"]["args"]["command"]
                for r in run_replay("walk", "--json", str(path)).stdout.splitlines() if b'"kind":"tool_called"' in r]
    calls = [line for line in run_replay("walk", str(path)).stdout.splitlines() if line.startswith(b"tool_called ")]
    assert len(calls) == len(commands) and any(len(c) > 100 for c in commands)
    for line, command in zip(calls, commands, strict=True):
        assert b" command=" + orjson.dumps(command) + b" " in line


def test_at_a_step_the_log_does_not_have_is_refused_with_nothing_printed():
    done = run_replay("walk", str(CODEX), "--at", "call-nowhere")
    assert (done.returncode, done.stdout) == (2, b"")
    [error] = errors_of(done.stderr)
    assert (error["code"], error["refusal"], error["received"], error["source"]) == (
        "E_STEP_NOT_FOUND", "step_not_found", "call-nowhere", str(CODEX))
    assert error["message"].startswith("REFUSED [step_not_found] step 'call-nowhere' never appears in ")
    assert str(CODEX) in error["howToFix"]


def test_a_refusal_after_a_bad_line_of_a_log_comes_last_and_the_bad_line_is_still_said():
    """The log is read whole before `--at` is refused: a line of it that is no record is reported (as heal reports it:
    the step may have been in it), then the refusal, last; nothing on stdout, exit 2 (README: Walk a run)."""
    path = CORPUS / "codex" / "rollout-66666666-6666-4666-8666-666666666666.jsonl"
    done = run_replay("walk", str(path), "--at", "nothing")
    assert (done.returncode, done.stdout) == (2, b"")
    said = errors_of(done.stderr)
    assert [e["code"] for e in said] == ["E_JSONL_LINE_INVALID", "E_STEP_NOT_FOUND"]
    assert said[0]["line"] == 3 and said[-1]["message"].startswith("REFUSED [step_not_found] ")
    helped = " ".join(run_replay("walk", "--help").stdout.decode().split())
    assert "A refusal is the last error on stderr" in helped


def test_at_a_step_of_the_raw_records_is_no_step_of_the_mapped_log():
    """A step is the mapped events' (what the walk shows): a raw record's own id is none."""
    raw_id = orjson.loads(CLAUDE.read_bytes().splitlines()[0])["uuid"]
    done = run_replay("walk", str(CLAUDE), "--at", raw_id)
    assert (done.returncode, [e["code"] for e in errors_of(done.stderr)]) == (2, ["E_STEP_NOT_FOUND"])


# read-only --------------------------------------------------------------------------------------------------
def test_walking_a_log_writes_nothing(tmp_path: Path):
    log = tmp_path / "session.jsonl"
    shutil.copy(EDGE, log)
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in tmp_path.rglob("*")}
    for args in ([str(log)], ["--json", str(log)], ["--at", "2", str(log)]):
        done = run_replay("walk", *args, cwd=tmp_path, process=True)  # a real process, as a user runs it
        assert done.returncode == 1 and b"tool_called" in done.stdout
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in tmp_path.rglob("*")} == before
    assert os.listdir(tmp_path) == ["session.jsonl"]


FLOWS = Path(__file__).resolve().parent.parent / "fixtures" / "walk" / "hello.jsonl"
# flows records that look like another agent's to the dialect claims alone: a message's role and content (mini-swe-agent),
# an action with an id (OpenHands)
FLOWS_LOOKALIKES = [
    {"kind": "llm.message", "run_id": "hello-1", "step_id": "step-2", "ts": "2026-03-01T12:00:00.400Z",
     "role": "assistant", "content": "The diff adds one file."},
    {"kind": "tool.action", "run_id": "hello-1", "step_id": "step-2", "ts": "2026-03-01T12:00:00.400Z",
     "action": "run", "id": 7},
]


@pytest.mark.parametrize("record", FLOWS_LOOKALIKES, ids=["role-content", "action-id"])
@pytest.mark.parametrize("as_document", [False, True], ids=["jsonl", "json-array"])
def test_a_flows_journal_with_records_that_look_like_another_agents_is_walked_as_flows(
        tmp_path: Path, record: dict, as_document: bool):
    lines = FLOWS.read_bytes().splitlines()
    lines.insert(5, orjson.dumps(record))
    path = tmp_path / ("flows.json" if as_document else "flows.jsonl")
    path.write_bytes(b"[" + b",".join(lines) + b"]" if as_document else b"\n".join(lines) + b"\n")
    walked = run_replay("walk", str(path))
    assert (walked.returncode, walked.stderr) == (0, b"")
    kinds = [line.split()[0] for line in walked.stdout.decode().splitlines()]
    assert kinds == [orjson.loads(line)["kind"] for line in lines]  # its own records, none mapped


def test_a_cut_off_last_line_of_a_log_is_reported_with_its_position(tmp_path: Path):
    """A log still being written ends mid-record: the walk shows what came before and reports the cut-off line (where
    heal drops it and counts the repair), as walk reports one in a journal."""
    data = CLAUDE.read_bytes()
    cut = tmp_path / "live.jsonl"
    cut.write_bytes(data[:-40])
    walked = run_replay("walk", str(cut))
    assert walked.returncode == 1
    (error,) = errors_of(walked.stderr)
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    assert (error["code"], error["line"], error["offset"]) == ("E_JSONL_LINE_TORN", data.count(b"\n", 0, last) + 1, last)
    assert b"user_message" in walked.stdout and walked.stdout.endswith(b"[info]\n")


def test_a_step_not_in_an_empty_log_is_refused_naming_the_log(tmp_path: Path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    walked = run_replay("walk", "--dialect", "claude-code", str(empty), "--at", "x")
    assert (walked.returncode, walked.stdout) == (2, b"")
    (error,) = errors_of(walked.stderr)
    assert error["code"] == "E_STEP_NOT_FOUND" and error["source"] == str(empty) and str(empty) in error["howToFix"]
