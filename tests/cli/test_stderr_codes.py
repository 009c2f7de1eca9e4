"""Every diagnostic on stderr carries a code of the catalogue: errors, warnings and heal's notices (which name their
rule beside it), over the fixtures and journals made to set off each notice, in real `replay` processes."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import CORPUS, EXAMPLES, FIXTURES, REPLAY, ROOT, run_replay
from jsonschema import Draft202012Validator

from replay.pipeline.engine.errors import CATALOGUE
from replay.pipeline.engine.parallel import Work


def _event(run: str, seq: int, kind: str, at: str, **more: object) -> bytes:
    return orjson.dumps({"runId": run, "seq": seq, "type": kind, "timestamp": at, "payload": {}, **more}) + b"\n"


# a journal that sets off each notice check: a timestamp going back (check_order), a run with no run_started and no
# end (check_runs), a runId coming back after another run (check_run_ids), an id used again with other content
# (drop_resume_duplicates)
NOTICED = b"".join([
    _event("r1", 1, "run_started", "2024-01-01T00:00:02Z"),
    _event("r1", 2, "user_message", "2024-01-01T00:00:01Z", id="m1"),
    _event("r1", 3, "user_message", "2024-01-01T00:00:03Z", id="m1", text="other"),
    _event("r2", 1, "user_message", "2024-01-01T00:00:04Z"),
    _event("r1", 4, "run_completed", "2024-01-01T00:00:05Z"),
])


def uncoded(stderr: bytes) -> list[dict]:
    """The lines of ``stderr`` that are diagnostics (an error, or a log line at warning or error level) with no code
    of the catalogue; also those that are no JSON object."""
    bad = []
    for line in stderr.splitlines():
        record = orjson.loads(line)
        body = record.get("error") if isinstance(record.get("error"), dict) else record
        if record is body and record.get("level") not in ("warning", "error"):
            continue  # (an info or debug line)
        if body.get("code") not in CATALOGUE:
            bad.append(record)
    return bad


@pytest.mark.parametrize("command", [["read"], ["validate"], ["heal"], ["report"], ["export", "--otlp"],
                                     ["--max-errors", "1", "validate"]])
def test_every_diagnostic_of_a_command_over_the_fixtures_has_a_catalogue_code(tmp_path: Path, command: list[str]):
    (tmp_path / "noticed.jsonl").write_bytes(NOTICED)
    done = run_replay(*command, str(FIXTURES), str(EXAMPLES / "journals"), str(tmp_path / "noticed.jsonl"),
                      process=True, timeout=120)
    assert done.stderr, "the fixtures set off diagnostics"
    assert uncoded(done.stderr) == []


@pytest.mark.parametrize("command", [["validate"], ["heal"]])
def test_a_notice_names_its_code_beside_its_rule(tmp_path: Path, command: list[str]):
    done = run_replay(*command, "-", input=NOTICED, process=True)
    notices = [r for r in map(orjson.loads, done.stderr.splitlines()) if r.get("action") == "reported"]
    own = ("check_runs", "E_RUN_NOT_WHOLE") if command == ["validate"] else ("drop_resume_duplicates", "E_RECORD_ID_REUSED")
    assert {(r["rule"], r["code"]) for r in notices} == {
        ("check_order", "E_TIMESTAMP_BACKWARDS"), ("check_run_ids", "E_RUN_ID_REUSED"), own}
    assert uncoded(done.stderr) == []


def test_notices_left_out_are_summed_up_by_code_and_rule(tmp_path: Path):
    back = b"".join(_event("r1", n, "run_started" if n == 1 else "user_message", f"2024-01-01T00:00:{60 - n:02}Z")
                    for n in range(1, 5))
    done = run_replay("--max-errors", "1", "validate", "-", input=back, process=True)
    [summary] = [r for r in map(orjson.loads, done.stderr.splitlines()) if r.get("code") == "E_NOTICES_SUPPRESSED"]
    assert (summary["suppressedCode"], summary["suppressedRule"], summary["suppressed"]) == (
        "E_TIMESTAMP_BACKWARDS", "check_order", 2)


@pytest.mark.parametrize("command", [["validate", "{d}"], ["heal", "--in", "{d}", "--out", "{o}"], ["report", "{d}"]])
def test_a_folder_with_no_journal_is_a_coded_warning(tmp_path: Path, command: list[str]):
    (tmp_path / "empty").mkdir()
    args = [a.format(d=tmp_path / "empty", o=tmp_path / "out") for a in command]
    done = run_replay(*args, process=True)
    assert done.returncode == 0, done.stderr
    [warning] = [r for r in map(orjson.loads, done.stderr.splitlines()) if r.get("level") == "warning"]
    assert warning["code"] == "E_INPUTS_NOT_FOUND" and warning["event"].endswith(("nothing_found", "no_inputs"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_a_folder_walk_skips_is_a_coded_warning(tmp_path: Path):
    (tmp_path / "in").mkdir()
    os.mkfifo(tmp_path / "in" / "x.jsonl")
    done = run_replay("read", str(tmp_path / "in"), process=True, timeout=60)
    # (the warning, and then, as validate says it, that the folder held nothing to read)
    warning, nothing = map(orjson.loads, done.stderr.splitlines())
    assert (warning["event"], warning["code"], warning["received"]) == (
        "read.not_a_file", "E_INPUT_NOT_FILE_OR_DIR", "a FIFO (named pipe)")
    assert (nothing["event"], nothing["code"]) == ("read.nothing_found", "E_INPUTS_NOT_FOUND")


def test_a_runner_field_not_kept_is_a_coded_notice_in_the_heal_log(tmp_path: Path):
    output = orjson.dumps({"status": "ok", "response": "a", "framework": 3, "events": []}).decode()
    done = run_replay("capture", "--runner", str(FIXTURES / "runners" / "say.py"), "--context",
                      orjson.dumps({"stdout": output}).decode(), "hi", cwd=tmp_path, input=b"", env={"REPLAY_RUNNER": ""},
                      process=True)
    assert done.returncode == 0, done.stderr
    log = orjson.loads((tmp_path / orjson.loads(done.stdout)["files"]["healLog"]).read_bytes())
    [notice] = log["notices"]
    assert (notice["rule"], notice["code"], notice["field"]) == ("check_runner_output", "E_RUNNER_FIELD_INVALID", "framework")
    schema = orjson.loads((ROOT / "schemas" / "heal-log.schema.json").read_bytes())
    assert Draft202012Validator(schema).is_valid(log)


def _warned(stderr: bytes, event: str) -> dict:
    """The one warning ``event`` on ``stderr``, every diagnostic there having a catalogue code."""
    assert uncoded(stderr) == []
    [warning] = [r for r in map(orjson.loads, stderr.splitlines()) if r.get("event") == event]
    assert warning["level"] == "warning"
    return warning


def test_a_document_piped_as_lines_past_the_hold_is_a_coded_warning():
    lines = run_replay("read", str(CORPUS / "mini-swe-agent" / "github_issue.traj.json"), process=True).stdout
    done = run_replay("heal", "--max-line-bytes", "3000", input=lines, process=True)
    assert done.returncode == 0, done.stderr
    warning = _warned(done.stderr, "dialect.opened_early")
    assert (warning["code"], warning["dialect"]) == ("E_DIALECT_OPENED_EARLY", "mini-swe-agent") and warning["howToFix"]


STOPS = _event("cut", 1, "run_started", "2026-03-01T12:00:00Z") + _event("cut", 2, "user_message", "2026-03-01T12:00:01Z")


@pytest.mark.parametrize(("flag", "journal", "event", "code"), [
    ("--fail-on-error", (FIXTURES / "report" / "healed_two_runs.jsonl").read_bytes(), "report.failed_runs", "E_RUNS_FAILED"),
    ("--fail-on-unknown", STOPS, "report.unknown_runs", "E_RUNS_STATUS_UNKNOWN")])
def test_a_report_gate_that_fails_is_a_coded_warning(flag: str, journal: bytes, event: str, code: str):
    done = run_replay("report", flag, input=journal, process=True)
    assert done.returncode == 1
    warning = _warned(done.stderr, event)
    assert warning["code"] == code and warning["message"]  # (E_RUNS_FAILED's had no message)


def test_the_fail_on_error_warning_says_how_many_runs_failed_and_names_the_first():
    """``report --fail-on-error``'s E_RUNS_FAILED record had no ``message`` (ERROR_CODES.md: code and message always)."""
    journal = "".join(f'{{"$record":"run","runId":"r{k}","status":"{status}"}}\n'
                      for k, status in enumerate(("error", "ok", *["error"] * 6), 1)).encode()
    done = run_replay("report", "--fail-on-error", "-", input=journal)
    assert done.returncode == 1
    warning = _warned(done.stderr, "report.failed_runs")
    assert warning["failed"] == 7
    assert warning["message"] == '7 runs ("r1", "r3", "r4", "r5", "r6", … 2 more) failed (status error)'


def test_every_warning_record_with_a_code_has_a_message():
    """A logger call that writes a catalogue code writes a ``message`` beside it (ERROR_CODES.md: "code and message
    always"): E_RUNS_FAILED's and E_OUTPUT_STALE_KEPT's (which said it as ``why``) had none."""
    missing = []
    for path in sorted([*(ROOT / "pipeline").rglob("*.py"), *(ROOT / "stages").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                    "warning", "error", "info"):
                given = {keyword.arg for keyword in node.keywords}
                if "code" in given and "message" not in given and None not in given:  # (None: **fields, not seen here)
                    missing.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert missing == []


def test_a_heal_log_left_unwritten_by_a_closed_pipe_is_a_coded_warning(tmp_path: Path):
    line = (b'{"seq":%d,"timestamp":"2026-03-01T12:00:00.000Z","type":"user_message","runId":"r","payload":{"text":"'
            + b"x" * 200 + b'"}}\n')
    (tmp_path / "big.jsonl").write_bytes(b"".join(line % k for k in range(1, 40_001)))  # (more than a pipe holds)
    done = subprocess.run(["bash", "-c", f"{REPLAY} heal big.jsonl --log L.jsonl | head -1 > /dev/null"], cwd=tmp_path,
                          capture_output=True, timeout=120)
    warning = _warned(done.stderr, "heal.log_not_written")
    assert (warning["code"], warning["path"]) == ("E_HEAL_LOG_NOT_WRITTEN", "L.jsonl")


def test_an_edited_output_of_an_input_gone_is_kept_with_a_coded_warning(tmp_path: Path):
    (tmp_path / "in").mkdir()
    for name in ("a", "b"):
        (tmp_path / "in" / f"{name}.jsonl").write_bytes(NOTICED)
    run_replay("heal", "--in", str(tmp_path / "in"), "--out", str(tmp_path / "out"), process=True)
    (tmp_path / "in" / "a.jsonl").unlink()
    healed = tmp_path / "out" / "a.heal-log.json"
    healed.write_bytes(b"my notes\n")
    done = run_replay("heal", "--in", str(tmp_path / "in"), "--out", str(tmp_path / "out"), process=True)
    warning = _warned(done.stderr, "scale.stale_kept")
    assert (warning["code"], warning["paths"]) == ("E_OUTPUT_STALE_KEPT", [str(healed)]) and warning["message"]


def test_a_python_warning_a_library_issues_is_a_coded_record():
    code = ("import warnings; from replay.pipeline.engine.log import log_warnings, make_logger; "
            "log_warnings(make_logger()); warnings.warn('Port 8787 is already in use.', UserWarning)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert _warned(done.stderr, "python.warning")["code"] == "E_PYTHON_WARNING"


def test_the_warning_of_cluster_tasks_not_stopped_has_a_catalogue_code():
    """(A Dask cluster that keeps a failed command's tasks past the wait is not cheap to make here: the record alone.)"""
    from replay.pipeline.io.dask_backend import tasks_not_stopped

    fields = tasks_not_stopped(Work({"stages": {"w": {"write_dir": "/o"}}}), TimeoutError("not done\nin time"))
    assert (fields["code"], fields["folders"], fields["reason"]) == (
        "E_CLUSTER_TASKS_NOT_STOPPED", ["/o"], "TimeoutError: not done")


def test_a_line_that_starts_with_two_byte_order_marks_is_advised_as_it_is_read(tmp_path: Path):
    """Every reader leaves one mark out at any line's start (io.journals.without_mark), so a line refused for one holds
    two: the advice said `golden check`, a session's reading and NATS messages read a mark otherwise."""
    first, rest = (EXAMPLES / "echo-agent" / "scenarios" / "echo" / "session.jsonl").read_bytes().split(b"\n", 1)
    (tmp_path / "new.jsonl").write_bytes(first + b"\n\xef\xbb\xbf\xef\xbb\xbf" + rest)
    done = run_replay("read", str(tmp_path / "new.jsonl"), process=True)
    [error] = [r["error"] for r in map(orjson.loads, done.stderr.splitlines()) if "error" in r]
    assert (error["code"], error["line"], error["offset"]) == ("E_JSONL_LINE_INVALID", 2, len(first) + 1 + 3)
    assert error["howToFix"].startswith("The line starts with two UTF-8 byte order marks: one is left out")
    assert "`golden check`" not in error["howToFix"]


def test_the_unknown_gate_does_not_send_the_user_to_heal_as_the_fix():
    """E_RUNS_STATUS_UNKNOWN's advice said to run `replay heal` ("it ends each run"); a healed journal's run that just
    stopped is still unknown (heal ends it with status unknown), so the gate still fails: the advice says so, and
    what does fix it (the agent writing how each run ended)."""
    healed = run_replay("heal", input=STOPS, process=True)
    assert healed.returncode == 0, healed.stderr
    done = run_replay("report", "--fail-on-unknown", input=healed.stdout, process=True)
    assert done.returncode == 1
    advice = _warned(done.stderr, "report.unknown_runs")["howToFix"]
    assert "stays unknown" in advice and "run_completed or run_failed" in advice, advice
