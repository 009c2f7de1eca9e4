"""`replay capture` with a real runner (tests/fixtures/runners/say.py) at the edges of the answer contract: a failed run's
own error when the runner then exits non-zero, `events` items that are no event, and what follows the output object."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import FIXTURES, errors_of, jsonl, run_replay

SAY = str(FIXTURES / "runners" / "say.py")
TIMEOUT_ERROR = {"code": "RUNNER_TOOL_TIMEOUT", "message": "get_portfolio timed out", "retryable": True}


def say(cwd: Path, stdout: str | dict, exit: int = 0) -> subprocess.CompletedProcess:
    context = {"stdout": stdout, "exit": exit}
    return run_replay("capture", "--runner", SAY, "--context", json.dumps(context), "the prompt", input=b"", cwd=cwd,
                      env={"REPLAY_RUNNER": ""})


def files(cwd: Path, done: subprocess.CompletedProcess) -> tuple[dict, dict[str, dict], list[dict]]:
    """The summary line, the run's .json files (raw, artifact, healed, healLog) and its journal's lines."""
    [summary] = jsonl(done.stdout)
    written = {k: json.loads((cwd / v).read_text()) for k, v in summary["files"].items() if k != "journal"}
    return summary, written, jsonl((cwd / summary["files"]["journal"]).read_bytes())


# a failed run's own error, then a non-zero exit -------------------------------------------------------
@pytest.mark.parametrize(("error", "kept"), [(TIMEOUT_ERROR, TIMEOUT_ERROR),
                                              ("database connection refused", {"code": "E_RUNNER_EXIT_NON_ZERO",
                                                                               "message": "database connection refused"})])
def test_a_runner_that_reports_its_failure_and_exits_non_zero_keeps_its_own_error(tmp_path, error, kept):
    """The runner's {"status": "error", "error": {...}} was replaced by E_RUNNER_EXIT_NON_ZERO in the artifact ("the run
    as the runner reported it"), the healed copy and the journal, without a word: its code, message and retryable
    lost. The run's error is now the runner's; the non-zero exit is the capture's error (stderr, exit 1, raw capture).
    A bare message, which says no code, takes the exit's (found by review: the summary line named no error at all)."""
    done = say(tmp_path, {"status": "error", "error": error, "events": []}, exit=2)
    assert done.returncode == 1, done.stderr
    [failure] = errors_of(done.stderr)
    assert failure["code"] == "E_RUNNER_EXIT_NON_ZERO" and failure["received"] == "exit code 2"
    assert "that error stays the run's" in failure["message"]
    summary, written, journal = files(tmp_path, done)
    assert summary["status"] == "error" and summary.get("error") == kept.get("code")
    assert written["raw"]["error"]["code"] == "E_RUNNER_EXIT_NON_ZERO" and written["raw"]["process"]["exitCode"] == 2
    for run in (written["artifact"], written["healed"], journal[0]):
        assert run["status"] == "error" and run["error"] == kept
    rules = [r["rule"] for r in written["healLog"]["repairs"]]  # (a bare message made an object is said, as at exit 0)
    assert ("normalize_runner_error" in rules) == isinstance(error, str)


@pytest.mark.parametrize(("error", "shown"), [("database connection refused", {"errorMessage": "database connection refused"}),
                                              ({"message": "database connection refused"},
                                               {"errorMessage": "database connection refused"}),
                                              (TIMEOUT_ERROR, {"error": "RUNNER_TOOL_TIMEOUT",
                                                               "errorMessage": "get_portfolio timed out"})])
@pytest.mark.parametrize("heal", [True, False], ids=["healed", "no-heal"])
def test_the_summary_line_shows_a_failed_runs_error_message(tmp_path, error, shown, heal):
    """A runner that answers {"status": "error", "error": "a bare message"} (exit 0): the summary line said status error
    and nothing of why (it named the error's code only, and a bare message has none). It shows the message now, as
    `errorMessage`, beside the code when there is one."""
    context = {"stdout": {"status": "error", "error": error, "events": []}}
    done = run_replay("capture", "--runner", SAY, "--context", json.dumps(context), *([] if heal else ["--no-heal"]),
                      "the prompt", input=b"", cwd=tmp_path, env={"REPLAY_RUNNER": ""})
    assert done.returncode == 0, done.stderr
    [summary] = jsonl(done.stdout)
    assert summary["status"] == "error"
    assert {key: summary[key] for key in ("error", "errorMessage") if key in summary} == shown

def test_a_runner_that_answers_ok_and_exits_non_zero_still_fails_with_the_exit(tmp_path):
    done = say(tmp_path, {"status": "ok", "response": "half", "events": []}, exit=3)
    summary, written, _journal = files(tmp_path, done)
    assert done.returncode == 1 and summary["error"] == "E_RUNNER_EXIT_NON_ZERO"
    assert written["artifact"]["error"]["code"] == "E_RUNNER_EXIT_NON_ZERO"


# an `events` item that is no event ---------------------------------------------------------------------
@pytest.mark.parametrize("item", [1, "tool_called", None, [], {"payload": {}}], ids=repr)
def test_an_events_item_that_is_no_event_fails_the_run_as_the_same_line_streamed_does(tmp_path, item):
    """A listed non-object (or an object with no `type`) gave a run recorded "ok" in every file (and an exit 1 from
    parse), while the same thing streamed fails the run with E_RUNNER_OUTPUT_SHAPE. Both fail it now, the item left out."""
    started = {"type": "run_started", "payload": {}}
    (tmp_path / "listed").mkdir()
    listed = say(tmp_path / "listed", {"status": "ok", "response": "x", "events": [started, item]})
    assert listed.returncode == 1, listed.stderr
    [failure] = errors_of(listed.stderr)
    assert failure["code"] == "E_RUNNER_OUTPUT_SHAPE" and failure["path"] == "$.events[1]", failure
    summary, written, journal = files(tmp_path / "listed", listed)
    assert summary["status"] == "error" and summary["error"] == "E_RUNNER_OUTPUT_SHAPE"
    assert written["artifact"]["events"] == [started]
    assert journal[0]["status"] == "error" and journal[0]["error"]["code"] == "E_RUNNER_OUTPUT_SHAPE"
    (tmp_path / "streamed").mkdir()  # (an object without `type`, `status`, `response`, `events` is no output object either)
    streamed = say(tmp_path / "streamed", "\n".join(json.dumps(v) for v in (
        started, item, {"status": "ok", "response": "x", "events": []})) + "\n")
    assert streamed.returncode == 1 and errors_of(streamed.stderr)[0]["code"] == "E_RUNNER_OUTPUT_SHAPE"
    _summary, streamed_files, _ = files(tmp_path / "streamed", streamed)
    assert streamed_files["artifact"]["events"] == [started] and streamed_files["artifact"]["response"] == "x"


# what follows the output object --------------------------------------------------------------------------
@pytest.mark.parametrize("after", ['{"type": "tool_called", "payload": {}}', "done",
                                   '{"status": "ok", "response": "again", "events": []}'], ids=["event", "text", "output"])
@pytest.mark.parametrize("indent", [None, 2], ids=["one-line", "pretty"])
def test_nothing_but_white_space_may_follow_the_output_object(tmp_path, after, indent):
    """An event line printed after a one-line output object was kept as a run event (exit 0), where text after it, or
    anything after a pretty-printed one, failed the run with E_RUNNER_INVALID_JSON. Each fails it now, left out."""
    started = {"type": "run_started", "payload": {}}
    output = json.dumps({"status": "ok", "response": "x", "events": []}, indent=indent)
    done = say(tmp_path, json.dumps(started) + "\n" + output + "\n" + after + "\n")
    assert done.returncode == 1, done.stderr
    [failure] = errors_of(done.stderr)
    assert failure["code"] == "E_RUNNER_INVALID_JSON" and failure["line"] == 3 + output.count("\n"), failure
    summary, written, _journal = files(tmp_path, done)
    assert summary["status"] == "error" and summary["error"] == "E_RUNNER_INVALID_JSON"
    assert written["artifact"]["events"] == [started]  # the event before the output object kept, nothing after it
    assert written["raw"]["stdout"].endswith(after + "\n")


# an event whose `type` is no non-empty string -------------------------------------------------------------
@pytest.mark.parametrize("etype", ["", 5, ["a"]], ids=repr)
@pytest.mark.parametrize("form", ["streamed", "listed"])
def test_an_event_whose_type_is_no_non_empty_string_fails_the_run_and_is_left_out(tmp_path, etype, form):
    """It was written into the journal and the healed copy, which capture then refused itself: the summary said
    "status": "ok" with "error": "E_HEALED_ARTIFACT_INVALID", exit 1 (found by a read-only tester, hunt 21)."""
    started, odd = {"type": "run_started", "payload": {}}, {"type": etype, "payload": {}}
    if form == "streamed":
        done = say(tmp_path, "\n".join(json.dumps(v) for v in (
            started, odd, {"status": "ok", "response": "x", "events": []})) + "\n")
    else:
        done = say(tmp_path, {"status": "ok", "response": "x", "events": [started, odd]})
    assert done.returncode == 1, done.stderr
    [failure] = errors_of(done.stderr)
    assert failure["code"] == "E_RUNNER_OUTPUT_SHAPE", failure
    assert (failure["line"] == 2) if form == "streamed" else (failure["path"] == "$.events[1]"), failure
    summary, written, journal = files(tmp_path, done)
    assert summary["status"] == "error" and summary["error"] == "E_RUNNER_OUTPUT_SHAPE"
    assert written["artifact"]["events"] == [started]
    events = written["healed"]["events"] + [r for r in journal if "$record" not in r]
    assert events and all(isinstance(e["type"], str) and e["type"] for e in events)


# a member of the runner's `error` of another type ---------------------------------------------------------
@pytest.mark.parametrize(("error", "member"), [({"code": 5, "message": "m"}, "code"), ({"code": "X", "message": 3}, "message"),
                                               ({"code": "X", "message": "m", "retryable": "yes"}, "retryable")])
def test_an_error_member_of_another_type_is_a_notice_and_the_run_is_captured(tmp_path, error, member):
    """README: exit 0 "when the runner answered (also with "status": "error")". An `error` with a wrong-typed member
    made capture exit 1 with E_HEALED_ARTIFACT_INVALID at $.error.code: it wrote a healed copy it then refused. The
    member is left out now (the rest kept), with a notice E_RUNNER_FIELD_INVALID naming it (found by a read-only tester)."""
    done = say(tmp_path, {"status": "error", "error": error, "events": []})
    assert done.returncode == 0, done.stderr
    assert b"E_HEALED_ARTIFACT_INVALID" not in done.stderr
    summary, written, journal = files(tmp_path, done)
    kept = {k: v for k, v in error.items() if k != member}
    assert summary["status"] == "error" and summary.get("error") == kept.get("code")
    for run in (written["artifact"], written["healed"], journal[0]):
        assert run["status"] == "error" and run["error"] == kept
    [notice] = [n for n in written["healLog"]["notices"] if n.get("code") == "E_RUNNER_FIELD_INVALID"]
    assert (notice["rule"], notice["field"], notice["path"]) == ("check_runner_output", f"error.{member}", f"$.error.{member}")
    assert notice["original"] == error[member]
    assert written["raw"]["stdout"] == json.dumps({"status": "error", "error": error, "events": []})  # as it came
    valid = run_replay("validate", summary["files"]["healed"], cwd=tmp_path)
    assert valid.returncode == 0, valid.stdout + valid.stderr


def test_an_error_member_of_another_type_then_a_non_zero_exit_takes_the_exits_code(tmp_path):
    done = say(tmp_path, {"status": "error", "error": {"code": 5, "message": "m"}, "events": []}, exit=2)
    assert done.returncode == 1 and errors_of(done.stderr)[0]["code"] == "E_RUNNER_EXIT_NON_ZERO", done.stderr
    summary, written, _journal = files(tmp_path, done)
    assert summary["error"] == "E_RUNNER_EXIT_NON_ZERO"
    assert written["healed"]["error"] == {"code": "E_RUNNER_EXIT_NON_ZERO", "message": "m"}


# an event printed over several lines ----------------------------------------------------------------------
@pytest.mark.parametrize("place", [0, 1], ids=["first", "second"])
def test_an_event_printed_over_several_lines_is_left_out_and_the_answer_kept(tmp_path, place):
    """A pretty-printed event on stdout's first line gave an artifact with no event and no response ("reading the
    output object that begins on line 1"); the same event second dropped only itself, said as a broken output object.
    Either way it is left out now, at its line, and every other event and the answer kept (found by hunt 23)."""
    events = [{"type": t, "payload": {}} for t in ("run_started", "tool_called", "run_completed")]
    lines = [json.dumps(e, indent=2 if k == place else None) for k, e in enumerate(events)]
    done = say(tmp_path, "\n".join([*lines, json.dumps({"status": "ok", "response": "the answer", "events": []})]) + "\n")
    assert done.returncode == 1, done.stderr
    [failure] = errors_of(done.stderr)
    assert failure["code"] == "E_RUNNER_OUTPUT_SHAPE" and failure["line"] == place + 1, failure
    assert "printed over several lines" in failure["message"], failure
    summary, written, journal = files(tmp_path, done)
    assert written["artifact"]["response"] == "the answer"
    assert written["artifact"]["events"] == [e for k, e in enumerate(events) if k != place]
    assert journal[0]["response"] == "the answer" and summary["error"] == "E_RUNNER_OUTPUT_SHAPE"


# every line or item left out is said, not the first only ---------------------------------------------------
def test_every_line_and_item_that_is_no_event_is_said_and_bounded_by_max_errors(tmp_path):
    """Only the first was said (the run's error); the others were left out without a word, on stderr or in the heal
    log. Each further one is now an error on stderr, E_RUNNER_OUTPUT_SHAPE at its line or `$.events[i]`, bounded by
    --max-errors (E_ERRORS_SUPPRESSED), and a notice in the heal log; the first stays the run's error (hunt 23, 02)."""
    started = {"type": "run_started", "payload": {}}
    output = {"status": "ok", "response": "a", "events": [{"type": "assistant_message", "payload": {}}, 5, {"type": None}]}
    stdout = "\n".join(json.dumps(v) for v in (started, {"type": ""}, {"type": 7}, output)) + "\n"
    done = say(tmp_path, stdout)
    assert done.returncode == 1, done.stderr
    said = errors_of(done.stderr)
    assert [e["code"] for e in said] == ["E_RUNNER_OUTPUT_SHAPE"] * 4, said
    assert [(e.get("line"), e["path"]) for e in said] == [(2, "$"), (3, "$"), (4, "$.events[1]"), (4, "$.events[2]")]
    _summary, written, journal = files(tmp_path, done)
    assert written["raw"]["error"]["line"] == 2 and journal[0]["error"]["code"] == "E_RUNNER_OUTPUT_SHAPE"
    notices = [n for n in written["healLog"]["notices"] if n.get("code") == "E_RUNNER_OUTPUT_SHAPE"]
    assert [(n["rule"], n.get("line"), n["path"]) for n in notices] == [
        ("check_runner_output", 3, "$"), ("check_runner_output", 4, "$.events[1]"), ("check_runner_output", 4, "$.events[2]")]
    assert [e["type"] for e in written["artifact"]["events"]] == ["run_started", "assistant_message"]
    (tmp_path / "bounded").mkdir()
    context = json.dumps({"stdout": stdout, "exit": 0})
    bounded = run_replay("--max-errors", "2", "capture", "--runner", SAY, "--context", context, "p", input=b"",
                         cwd=tmp_path / "bounded", env={"REPLAY_RUNNER": ""})
    shown = errors_of(bounded.stderr)
    assert [e["code"] for e in shown] == ["E_RUNNER_OUTPUT_SHAPE"] * 2 + ["E_ERRORS_SUPPRESSED"], shown
    assert shown[-1]["suppressed"] == 2 and bounded.returncode == 1


# a run capture failed whose runner's events end with run_completed ------------------------------------------
def test_a_run_capture_failed_though_its_events_completed_says_whose_status_error_is(tmp_path):
    """The runner answered ok with run_started and run_completed, then exited 2: capture marks the run "error"
    (E_RUNNER_EXIT_NON_ZERO), and validate on capture's own journal blamed the runner ("the runner contradicts itself")
    for a status capture decided, the heal log silent. The heal log now says why; validate names the record's error
    as capture's; the runner's events stay as they were (hunt 23, 04)."""
    events = [{"type": "run_started", "payload": {}}, {"type": "run_completed", "payload": {}}]
    done = say(tmp_path, {"status": "ok", "response": "fine", "events": events}, exit=2)
    assert done.returncode == 1, done.stderr
    summary, written, journal = files(tmp_path, done)
    assert journal[0]["status"] == "error" and [r["type"] for r in journal[1:] if "type" in r][-1] == "run_completed"
    [notice] = [n for n in written["healLog"]["notices"] if n.get("field") == "status"]
    assert (notice["code"], notice["value"], notice["original"]) == ("E_RUNNER_EXIT_NON_ZERO", "error", "ok"), notice
    assert "capture failed the run" in notice["message"] and "end with run_completed" in notice["message"], notice
    checked = run_replay("validate", summary["files"]["journal"], cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    [warning] = [w for w in map(json.loads, checked.stderr.splitlines()) if w.get("rule") == "check_runs"]
    assert "contradicts itself" not in warning["message"], warning
    assert "E_RUNNER_EXIT_NON_ZERO, is capture's" in warning["message"], warning
    ok = tmp_path / "own"
    ok.mkdir()  # a runner that says "error" itself with run_completed is not capture's doing: no such notice
    own = say(ok, {"status": "error", "error": {"code": "X", "message": "m"}, "events": events})
    _s, own_files, _j = files(ok, own)
    assert not [n for n in own_files["healLog"]["notices"] if n.get("field") == "status"]


# a line that is no JSON on stdout's first line, and a log line in a stream ---------------------------------
STARTED = {"type": "run_started", "payload": {}}
CALLED = {"type": "tool_called", "payload": {"callId": "c1", "toolName": "search"}}
ANSWER = {"status": "ok", "response": "The answer is 42", "events": [{"type": "run_completed", "payload": {}}]}


def line_runner(tmp_path: Path, lines: list[bytes]) -> Path:
    """A runner that prints ``lines`` as they are, bytes that are not UTF-8 too."""
    runner = tmp_path / "lines_runner.py"
    stdout = b"".join(line + b"\n" for line in lines)
    runner.write_text(f"import sys\nsys.stdin.read()\nsys.stdout.buffer.write({stdout!r})\n")
    return runner


@pytest.mark.parametrize("bad", [b"{'type': 'debug'}", b'{"type": "debug",}', b'{"type": "debug", "value": NaN}',
                                 b'{"type": "debug", "text": "caf\xe9"}'], ids=["dict-repr", "trailing-comma", "nan", "latin-1"])
@pytest.mark.parametrize("at", [1, 2])
def test_a_line_that_is_no_json_is_left_out_alone_on_the_first_line_as_on_any_other(tmp_path, bad, at):
    """A first stdout line that opens a `{` but is no JSON (a Python dict printed, a trailing comma, NaN, a byte that is
    not UTF-8) was read as the start of an output object printed over several lines: all of stdout one broken document,
    the journal a synthetic run_started and run_failed, every event and the answer lost. The same line second was
    left out alone (found by a read-only tester, hunt 25). Both are now: the run fails at that line, the rest is kept."""
    lines = [json.dumps(STARTED).encode(), json.dumps(CALLED).encode(), json.dumps(ANSWER).encode()]
    lines.insert(at - 1, bad)
    done = run_replay("capture", "--runner", str(line_runner(tmp_path, lines)), "the prompt", input=b"", cwd=tmp_path,
                      env={"REPLAY_RUNNER": ""})
    assert done.returncode == 1, done.stderr
    [failure] = errors_of(done.stderr)
    assert failure["code"] == "E_RUNNER_INVALID_JSON" and failure["line"] == at, failure
    assert "output object" not in failure["message"], failure  # (a line of its own, not a document that begins there)
    summary, written, journal = files(tmp_path, done)
    assert summary["error"] == "E_RUNNER_INVALID_JSON"
    assert written["artifact"]["events"] == [STARTED, CALLED, *ANSWER["events"]]
    assert journal[0]["response"] == "The answer is 42"
    assert [r["type"] for r in journal[1:] if "$record" not in r and not r.get("synthetic")] == [
        "run_started", "tool_called", "run_completed"]


@pytest.mark.parametrize("indent", [None, 2], ids=["one-line", "pretty"])
def test_a_log_line_in_a_stream_is_left_out_and_the_answer_after_it_kept(tmp_path, indent):
    """A JSON log line with no `type` ({"level": "info", "msg": ...}) between the events was taken for the output
    object: "status missing" at its line, and the real answer after it dropped without a word (found by a read-only
    tester, hunt 25). It is neither an event nor the answer now: left out (E_RUNNER_OUTPUT_SHAPE), the answer kept."""
    log = json.dumps({"level": "info", "msg": "agent starting"}, indent=indent)
    done = say(tmp_path, "\n".join([json.dumps(STARTED), log, json.dumps(CALLED), json.dumps(ANSWER)]) + "\n")
    assert done.returncode == 1, done.stderr
    [failure] = errors_of(done.stderr)
    assert failure["code"] == "E_RUNNER_OUTPUT_SHAPE" and failure["line"] == 2, failure
    summary, written, journal = files(tmp_path, done)
    assert summary["error"] == "E_RUNNER_OUTPUT_SHAPE"
    assert written["artifact"]["events"] == [STARTED, CALLED, *ANSWER["events"]]
    assert written["artifact"]["response"] == journal[0]["response"] == "The answer is 42"
    assert written["raw"]["stdout"].count("agent starting") == 1  # (the raw capture keeps it)


@pytest.mark.parametrize("first", [{"type": 5}, {"status": 200, "msg": "connected"}], ids=["no-event", "answer-shaped"])
def test_what_follows_the_answer_is_said_also_when_it_is_not_the_runs_first_problem(tmp_path, first):
    """Only a run's first problem was said: a line after the answer object, left out, went unsaid when an earlier line
    had failed the run (README: "each one after it is said too"). An object with a `status` is the answer even when
    its status is wrong: the real answer after it is then said to follow it, not dropped without a word."""
    done = say(tmp_path, "\n".join(json.dumps(v) for v in (first, ANSWER, CALLED)) + "\n")
    assert done.returncode == 1, done.stderr
    errors = errors_of(done.stderr)
    assert [(e["code"], e["line"]) for e in errors] == [
        ("E_RUNNER_OUTPUT_SHAPE" if "type" in first else "E_RUNNER_STATUS_INVALID", 1),
        ("E_RUNNER_INVALID_JSON", 2 if "status" in first else 3)], errors
    assert "follows the output object" in errors[1]["message"]
    _summary, written, _journal = files(tmp_path, done)
    notices = [n for n in written["healLog"]["notices"] if n.get("code") == "E_RUNNER_INVALID_JSON"]
    assert [n["line"] for n in notices] == [errors[1]["line"]]  # (and a notice in the heal log, as each such line)


# what is left out is said whatever ended the runner ------------------------------------------------------------
ENDS = {"timeout": "E_RUNNER_TIMEOUT", "crash": "E_RUNNER_EXIT_NON_ZERO", "signal": "E_RUNNER_EXIT_NON_ZERO", "exit-0": None}
ENDING_RUNNER = """import json, os, signal, sys, time
context = json.load(sys.stdin)["context"]
sys.stdout.write(context["stdout"])
sys.stdout.flush()
if context["end"] == "timeout":
    time.sleep(120)  # (killed at --timeout-ms)
if context["end"] == "signal":
    os.kill(os.getpid(), signal.SIGKILL)
os._exit(1 if context["end"] == "crash" else 0)
"""


def ending(cwd: Path, stdout: str, end: str) -> subprocess.CompletedProcess:
    """Capture with a runner that prints ``stdout`` and then ends as ``end`` says (a key of ``ENDS``)."""
    runner = cwd / "ending_runner.py"
    runner.write_text(ENDING_RUNNER)
    context = json.dumps({"stdout": stdout, "end": end})
    return run_replay("capture", "--runner", str(runner), "--timeout-ms", "2000", "--context", context, "the prompt",
                      input=b"", cwd=cwd, env={"REPLAY_RUNNER": ""})


STARTED_LINE = json.dumps(STARTED) + "\n"


@pytest.mark.parametrize("end", ENDS)
@pytest.mark.parametrize(("before", "cut"), [
    (STARTED_LINE, '{"status": "ok", "response": "partial ans'),
    (STARTED_LINE, '{\n  "status": "ok",\n  "response": "partial ans'),
    ("", '{\n  "status": "ok",\n  "response": "partial ans'),
], ids=["one-line", "pretty", "pretty-alone"])
def test_an_answer_cut_off_over_several_lines_is_a_dropped_torn_line_as_one_cut_off_on_one_line_is(tmp_path, end,
                                                                                                   before, cut):
    """A runner that timed out or crashed while it printed its answer pretty-printed: the cut-off lines were only in the
    raw capture, no drop_torn_line repair, no notice, no error but the process's (hunt 26, e/01); on one line such a
    line was a drop_torn_line repair. Over several lines it is one too now, holding every line of it, whatever ended the
    runner; the process's failure is still the run's error (exit 0: the cut-off answer is, as on one line)."""
    done = ending(tmp_path, before + cut, end)
    assert done.returncode == 1, done.stderr
    said = errors_of(done.stderr)
    assert [e["code"] for e in said] == [ENDS[end] or "E_RUNNER_INVALID_JSON"], said  # (the repair says the line)
    assert end != "exit-0" or "is cut off" in said[0]["message"], said
    summary, written, journal = files(tmp_path, done)
    [torn] = [r for r in written["healLog"]["repairs"] if r["rule"] == "drop_torn_line"]
    assert (torn["action"], torn["line"], torn["offset"], torn["original"]) == (
        "dropped", 1 + bool(before), len(before), cut), torn
    assert "cut off" in torn["message"] and summary["repairs"] == written["healLog"]["summary"]["total"]
    assert written["artifact"]["events"] == ([STARTED] if before else [])
    assert journal[-1]["$record"] == "heal" and journal[-1]["byRule"]["drop_torn_line"] == 1


@pytest.mark.parametrize("end", ENDS)
@pytest.mark.parametrize("bad", ["{'type': 'debug', 'msg': 'step 1'}", '{"type": "debug",}'], ids=["dict-repr", "comma"])
def test_a_line_that_is_no_json_is_said_whatever_ended_the_runner(tmp_path, end, bad):
    """A stdout line that is no JSON, then an event, then the runner crashed, timed out or was killed: only the
    process's error was said, the line left out without a word (hunt 26, e/02), while a JSON log line in its place was
    said (E_RUNNER_OUTPUT_SHAPE and a heal-log notice). It is said now as that one is, at its line and offset, and so
    is each further such line (the second, left unsaid even at exit 0). Exit 0: the first is the run's error, as
    before; the process's failure stays the run's error otherwise (exit 1)."""
    lines = [json.dumps(STARTED), bad, json.dumps(CALLED), "Thinking..."]
    done = ending(tmp_path, "\n".join(lines) + "\n", end)
    assert done.returncode == 1, done.stderr
    said = errors_of(done.stderr)
    offsets = {n: len("\n".join(lines[:n - 1])) + 1 for n in (2, 4)}
    assert [(e["code"], e.get("line"), e.get("offset")) for e in said] == [
        *([(ENDS[end], None, None)] if ENDS[end] else []),
        ("E_RUNNER_INVALID_JSON", 2, offsets[2]), ("E_RUNNER_INVALID_JSON", 4, offsets[4])], said
    summary, written, _journal = files(tmp_path, done)
    assert summary["error"] == (ENDS[end] or "E_RUNNER_INVALID_JSON")
    notices = [(n["rule"], n.get("code"), n.get("line")) for n in written["healLog"]["notices"]
               if n.get("code") == "E_RUNNER_INVALID_JSON"]
    assert notices == [("check_runner_output", "E_RUNNER_INVALID_JSON", n) for n in ((2, 4) if ENDS[end] else (4,))]
    assert written["artifact"]["events"] == [STARTED, CALLED]
