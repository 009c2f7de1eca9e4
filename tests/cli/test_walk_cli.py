"""`replay walk` as a command: run ids and paths, both output modes, --at, every refusal with its exit code.

Canonical journals are made here by capturing the bundled example runners into a temporary data dir;
flows-style journals are the hand-written ones in tests/fixtures/walk/.
"""

from __future__ import annotations

import gzip
import os
import shlex
import shutil
import zlib
from pathlib import Path

import orjson
import pytest
from conftest import EXAMPLES, FIXTURES, errors_of, run_replay
from hypothesis import given
from hypothesis import strategies as st

from replay.pipeline.model.walk_journal import is_run_id, journal_of

WALK = FIXTURES / "walk"
RUNNERS = EXAMPLES / "runners"


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A folder whose .replay/ holds real captures of the example runners: {runner: run id}."""
    home = tmp_path_factory.mktemp("captured")
    ids = {}
    for runner in ("echo_runner.py", "broken_trace_runner.py", "streaming_crash_runner.py"):
        done = run_replay("capture", "--runner", str(RUNNERS / runner), "What are my top holdings?", cwd=home)
        assert done.returncode in (0, 1), done.stderr
        ids[runner] = orjson.loads(done.stdout)["runId"]
    return home, ids




def journal_lines(home: Path, run_id: str) -> list[bytes]:
    return (home / ".replay" / "journal" / f"{run_id}.jsonl").read_bytes().splitlines()


# a full walk ---------------------------------------------------------------------------------------------
def test_a_captured_run_walks_one_line_per_record_ending_at_its_terminal_record(captured, cli):
    home, ids = captured
    code, out, errors = cli("walk", ids["echo_runner.py"], cwd=home)
    assert (code, errors) == (0, [])
    lines = out.splitlines()
    records = journal_lines(home, ids["echo_runner.py"])
    assert len(lines) == len(records)
    assert [line.split()[0].decode() for line in lines] == [
        "$run", "run_started", "user_message", "tool_called", "tool_completed", "assistant_message", "run_completed"]
    assert lines[-1].split()[-1] == b"[terminal]"


def test_a_healed_capture_ends_with_its_terminal_event_then_the_heal_record(captured, cli):
    home, ids = captured
    code, out, _ = cli("walk", ids["broken_trace_runner.py"], cwd=home)
    lines = out.splitlines()
    assert code == 0 and len(lines) == len(journal_lines(home, ids["broken_trace_runner.py"]))
    assert lines[-2].split()[0] == b"run_completed" and lines[-2].split()[-1] == b"[terminal]"
    assert lines[-1].split()[0] == b"$heal"


def test_a_crashed_capture_walks_to_its_run_failed(captured, cli):
    home, ids = captured
    code, out, _ = cli("walk", ids["streaming_crash_runner.py"], cwd=home)
    kinds = [line.split()[0] for line in out.splitlines()]
    assert code == 0 and kinds[-2:] == [b"run_failed", b"$heal"]
    assert b"error=E_RUNNER_EXIT_NON_ZERO" in out.splitlines()[-2]


def test_json_mode_passes_each_record_through_byte_for_byte(captured, cli):
    home, ids = captured
    code, out, _ = cli("walk", "--json", ids["broken_trace_runner.py"], cwd=home)
    assert code == 0
    for line, record in zip(out.splitlines(), journal_lines(home, ids["broken_trace_runner.py"]), strict=True):
        assert b'"event":' + record + b',"verification":' in line
        parsed = orjson.loads(line)
        assert parsed["kind"] == (parsed["event"].get("type") or "$" + parsed["event"]["$record"])


def test_json_output_is_byte_identical_across_runs(captured, cli):
    home, ids = captured
    first = cli("walk", "--json", ids["streaming_crash_runner.py"], cwd=home)
    second = cli("walk", "--json", ids["streaming_crash_runner.py"], cwd=home)
    assert first[0] == 0 and first[1] and first[1] == second[1]


def test_a_flows_journal_by_path(cli):
    code, out, _ = cli("walk", "--json", str(WALK / "hello.jsonl"))
    objects = [orjson.loads(line) for line in out.splitlines()]
    assert code == 0 and len(objects) == 9
    assert objects[0]["step_id"] is None and objects[-1]["step_id"] is None
    assert objects[3] == {"step_id": "step-1", "kind": "step.completed", "event": objects[3]["event"],
                          "verification": {"type": "exit_code", "verdict": "ok"}, "spend": None}


def test_a_kind_is_quoted_like_a_step_and_a_step_named_dash_is_not_taken_for_none(tmp_path: Path, cli):
    """A step with whitespace was quoted but a kind with whitespace was not (one field read as two), and a step
    named `-` printed as `-`, the mark of a run-level record."""
    journal = tmp_path / "odd.jsonl"
    journal.write_bytes(b'{"kind":"tool call","step_id":"s 1"}\n{"kind":"k","step_id":"-"}\n{"kind":"k"}\n')
    code, out, _ = cli("walk", str(journal))
    columns = [shlex.split(line) for line in out.decode().splitlines()]
    assert code == 0 and [(c[0], c[1], c[-1]) for c in columns] == [
        ("tool call", "s 1", "[info]"), ("k", '-', "[info]"), ("k", "-", "[info]")]
    assert [line.split()[1] for line in out.decode().splitlines()[1:]] == ['"-"', "-"]


def test_a_run_in_another_data_dir(tmp_path: Path, cli):
    (tmp_path / "flows" / "journal").mkdir(parents=True)
    shutil.copy(WALK / "hello.jsonl", tmp_path / "flows" / "journal" / "hello-1.jsonl")
    code, out, _ = cli("walk", "--data-dir", str(tmp_path / "flows"), "hello-1")
    assert code == 0 and len(out.splitlines()) == 9


def test_gzip_and_artifacts_walk_too(captured, tmp_path: Path, cli):
    home, ids = captured
    packed = tmp_path / "hello.jsonl.gz"
    packed.write_bytes(gzip.compress((WALK / "hello.jsonl").read_bytes()))
    assert cli("walk", str(packed))[1] == cli("walk", str(WALK / "hello.jsonl"))[1]
    artifact = next((home / ".replay" / "artifacts").rglob(f"{ids['echo_runner.py']}.artifact.json"))
    code, out, _ = cli("walk", str(artifact), "--at", "call_1")
    assert code == 0 and out.splitlines()[-1].split()[:2] == [b"tool_completed", b"call_1"]


# --at ---------------------------------------------------------------------------------------------------
def test_at_a_tool_call_of_a_captured_run(captured, cli):
    home, ids = captured
    code, out, _ = cli("walk", ids["echo_runner.py"], "--at", "call_1", cwd=home)
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()][-2:] == [b"tool_called", b"tool_completed"]


def test_at_a_terminated_step_includes_its_terminal_record_and_nothing_after(cli):
    code, out, _ = cli("walk", str(WALK / "hello.jsonl"), "--at", "step-1")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 4 and lines[-1].split()[:2] == [b"step.completed", b"step-1"]
    code, out, _ = cli("walk", str(WALK / "interleaved.jsonl"), "--at", "fetch-a", "--json")
    assert [orjson.loads(x)["step_id"] for x in out.splitlines()][-3:] == ["fetch-b", "fetch-a", "fetch-a"]


def test_at_an_unterminated_step_stops_at_its_last_record(cli):
    code, out, _ = cli("walk", str(WALK / "parked.jsonl"), "--at", "approve")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 8
    assert lines[-1].split()[:2] == [b"step.attempt.started", b"approve"]
    assert b"run.parked" not in out


def test_at_a_step_that_retried_stops_at_its_own_end_not_at_a_failed_attempt(tmp_path: Path, cli):
    path = tmp_path / "retry.jsonl"
    path.write_bytes(b'{"kind":"run.spawned"}\n'
                     b'{"kind":"step.attempt.started","step_id":"s","attempt":1}\n'
                     b'{"kind":"step.attempt.failed","step_id":"s","attempt":1}\n'
                     b'{"kind":"step.attempt.started","step_id":"s","attempt":2}\n'
                     b'{"kind":"step.failed","step_id":"s","retrying":true}\n'
                     b'{"kind":"step.attempt.started","step_id":"s","attempt":3}\n'
                     b'{"kind":"step.completed","step_id":"s"}\n'
                     b'{"kind":"run.completed"}\n')
    for args in ((), ("--json",)):
        code, out, errors = cli("walk", str(path), "--at", "s", *args)
        assert code == 0 and errors == [] and len(out.splitlines()) == 7
        assert b"step.completed" in out.splitlines()[-1] and b"run.completed" not in out


@pytest.mark.parametrize("tail", [
    b'{"kind":"step.completed","run_id":"hello-1","step_id":"step-1","exit_co',  # the step's own record, cut off
    b'{"kind":"step.comp',  # cut off before its step id
])
def test_at_a_step_whose_terminal_record_was_cut_off_fails_as_without_at(tail: bytes, tmp_path: Path, cli):
    path = tmp_path / "torn.jsonl"
    head = b"".join((WALK / "hello.jsonl").read_bytes().splitlines(keepends=True)[:3])
    path.write_bytes(head + tail)
    without = cli("walk", str(path))
    code, out, errors = cli("walk", str(path), "--at", "step-1")
    assert (code, out, errors) == without
    assert code == 1 and len(out.splitlines()) == 3
    (error,) = errors
    assert error["code"] == "E_JOURNAL_READ_FAILED" and error["offset"] == len(head) and "cut off" in error["message"]


@pytest.mark.parametrize("tail, reason", [
    (b'{"kind":"step.started","run_id":"w1","step_id":"s1","note":"a\x00b"}', "unexpected control character"),
    (b'{"kind":"step.started","run_id":"w1","step_id":"s1"}}', "unexpected content after"),
    (b'{"kind":"step.started","note":"caf\xe9"}', "UTF-8"),
])
def test_a_last_line_without_newline_with_a_wrong_byte_in_it_is_not_called_cut_off(tail: bytes, reason: str,
                                                                                     tmp_path: Path, cli):
    """It was `the write was cut off`: every invalid last line without a newline was taken for a torn write."""
    path = tmp_path / "w.jsonl"
    path.write_bytes(b'{"kind":"run.started","run_id":"w1"}\n' + tail)
    code, out, (error,) = cli("walk", str(path))
    assert code == 1 and len(out.splitlines()) == 1
    assert (error["code"], error["line"], error["offset"]) == ("E_JOURNAL_READ_FAILED", 2, 37)
    assert "cut off" not in error["message"] and reason.lower() in error["message"].lower()


def test_at_a_step_named_by_an_unreadable_line_mid_journal_fails_there(tmp_path: Path, cli):
    code, out, (error,) = cli("walk", str(WALK / "mid-journal-error.jsonl"), "--at", "step-1")
    assert code == 1 and len(out.splitlines()) == 3
    assert error["code"] == "E_JOURNAL_READ_FAILED" and error["line"] == 4 and error["offset"] == 254
    # a bad line after the step ended is not read: the walk stops at the step's end
    path = tmp_path / "torn-later.jsonl"
    path.write_bytes(b"".join((WALK / "hello.jsonl").read_bytes().splitlines(keepends=True)[:4]) + b'{"kind":"step.sch')
    code, out, errors = cli("walk", str(path), "--at", "step-1")
    assert code == 0 and errors == [] and len(out.splitlines()) == 4


def test_at_works_with_a_byte_order_mark_and_a_gzip_file(tmp_path: Path, cli):
    data = (WALK / "interleaved.jsonl").read_bytes()
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + data)
    (tmp_path / "packed.jsonl.gz").write_bytes(gzip.compress(data))
    expected = cli("walk", str(WALK / "interleaved.jsonl"), "--at", "fetch-b")[1]
    assert len(expected.splitlines()) == 6
    assert cli("walk", str(tmp_path / "bom.jsonl"), "--at", "fetch-b")[1] == expected
    assert cli("walk", str(tmp_path / "packed.jsonl.gz"), "--at", "fetch-b")[1] == expected


# refusals: exit 2, nothing on stdout -------------------------------------------------------------------------
def refused(result: tuple[int, bytes, list[dict]], code: str, refusal: str) -> dict:
    exit_code, out, errors = result
    assert exit_code == 2 and out == b""
    (error,) = errors
    assert error["code"] == code and error["refusal"] == refusal
    assert error["message"].startswith(f"REFUSED [{refusal}] ")  # the walk specification's refusal text
    return error


def test_an_unknown_run_is_refused(captured, cli):
    home, _ = captured
    error = refused(cli("walk", "does-not-exist", cwd=home), "E_RUN_NOT_FOUND", "run_not_found")
    assert error["path"] == os.path.join(".replay", "journal", "does-not-exist.jsonl")
    refused(cli("walk", "missing.jsonl", cwd=home), "E_RUN_NOT_FOUND", "run_not_found")


def test_an_unknown_run_in_another_data_dir_says_where_to_look(tmp_path: Path, cli):
    """The howToFix said `ls .replay/journal` whatever --data-dir named."""
    data = tmp_path / "my data"
    error = refused(cli("walk", "--data-dir", str(data), "run_x"), "E_RUN_NOT_FOUND", "run_not_found")
    assert f"`ls '{data / 'journal'}'`" in error["howToFix"] and ".replay" not in error["howToFix"]


@pytest.mark.parametrize("bad", ["..", "a..b", "run 1", "run/1", "", "é", "a" * 201, "run\x001"])
def test_a_malformed_run_id_is_refused(bad: str, tmp_path: Path, cli):
    refused(cli("walk", "--data-dir", str(tmp_path), bad), "E_INVALID_RUN_ID", "invalid_run_id")


def test_a_run_id_cannot_reach_outside_the_data_dir(tmp_path: Path, cli):
    """A journal sits where an escaping run id would lead; every way there is refused."""
    data = tmp_path / "data"
    (data / "journal").mkdir(parents=True)
    secret = tmp_path / "secret.jsonl"
    secret.write_bytes(b'{"kind":"secret.revealed","step_id":"s"}\n')
    for attempt in ("../../secret", "../secret", str(secret)[:-len(".jsonl")], "journal/../../../secret",
                    "..%2f..%2fsecret", "..\\..\\secret"):
        code, out, errors = cli("walk", "--data-dir", str(data), attempt)
        assert code == 2 and out == b"" and b"secret.revealed" not in out
        assert errors[0]["code"] in ("E_INVALID_RUN_ID", "E_RUN_NOT_FOUND")
    refused(cli("walk", "--data-dir", str(data), "../../secret"), "E_INVALID_RUN_ID", "invalid_run_id")


@given(st.text(max_size=40))
def test_no_run_id_names_a_file_outside_the_journal_folder(text: str):
    if is_run_id(text):
        path = journal_of("/data", text)
        assert os.path.dirname(os.path.normpath(path)) == "/data/journal"
        assert os.path.basename(path) == text + ".jsonl"


def test_a_step_that_never_appears_is_refused_before_any_output(captured, cli):
    home, ids = captured
    error = refused(cli("walk", ids["echo_runner.py"], "--at", "nonexistent-step", cwd=home), "E_STEP_NOT_FOUND",
                    "step_not_found")
    assert error["received"] == "nonexistent-step"
    refused(cli("walk", str(WALK / "hello.jsonl"), "--at", "step"), "E_STEP_NOT_FOUND", "step_not_found")


def test_the_step_not_found_hint_is_a_command_that_runs_for_a_path_with_spaces(tmp_path: Path, cli):
    journal = tmp_path / "data dir" / "hello world.jsonl"
    journal.parent.mkdir()
    shutil.copy(WALK / "hello.jsonl", journal)
    error = refused(cli("walk", str(journal), "--at", "nonexistent-step"), "E_STEP_NOT_FOUND", "step_not_found")
    hint = error["howToFix"].split("`")[1]
    assert shlex.split(hint) == ["replay", "walk", str(journal)]


def test_an_unreadable_first_record_is_refused(tmp_path: Path, cli):
    error = refused(cli("walk", str(WALK / "bad-first-record.jsonl")), "E_JOURNAL_READ_FAILED", "journal_read_failed")
    assert (error["line"], error["offset"]) == (1, 0)
    (tmp_path / "torn.jsonl").write_bytes(b'\n{"kind":"run.spaw')
    error = refused(cli("walk", str(tmp_path / "torn.jsonl")), "E_JOURNAL_READ_FAILED", "journal_read_failed")
    assert (error["line"], error["offset"]) == (2, 1)
    (tmp_path / "broken.json").write_bytes(b'{"events": [')
    refused(cli("walk", str(tmp_path / "broken.json")), "E_JOURNAL_READ_FAILED", "journal_read_failed")
    (tmp_path / "bad.jsonl.gz").write_bytes(gzip.compress(b'{"kind":"a"}\n' * 100)[:20])  # (cut in its first line)
    refused(cli("walk", str(tmp_path / "bad.jsonl.gz")), "E_JOURNAL_READ_FAILED", "journal_read_failed")


def _cut_gzip(data: bytes, keep: int, mid_line: bool) -> bytes:
    """A gzip stream of ``data`` cut off after its first ``keep`` lines (and, with ``mid_line``, half of the next):
    its bytes flushed there, with no end-of-stream marker after them, as a writer killed mid-write leaves it."""
    lines = data.splitlines(keepends=True)
    head = b"".join(lines[:keep]) + (lines[keep][: len(lines[keep]) // 2] if mid_line else b"")
    packer = zlib.compressobj(wbits=31)
    return packer.compress(head) + packer.flush(zlib.Z_SYNC_FLUSH)


@pytest.mark.parametrize("mid_line", [True, False], ids=["mid-line", "at-a-line-end"])
@pytest.mark.parametrize("at", [None, "step-2"], ids=["whole", "at-an-unended-step"])
def test_a_gzip_journal_cut_off_walks_its_records_then_fails_where_it_stops(tmp_path: Path, mid_line: bool,
                                                                            at: str | None):
    # the pre-scan read the gzip stream a MiB at a time, and a cut-off stream gave nothing of that MiB: the walk was
    # refused at "byte 0" (exit 2) with none of the records before the cut, which read and diff show
    data = (WALK / "hello.jsonl").read_bytes()
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(_cut_gzip(data, 7, mid_line))  # step-2 has begun by line 7; its end (line 8) is cut off
    done = run_replay("walk", str(path), *(("--at", at) if at else ()), process=True)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == run_replay("walk", str(WALK / "hello.jsonl"), process=True).stdout.splitlines()[:7]
    (error,) = errors_of(done.stderr)
    offset = sum(len(line) for line in data.splitlines(keepends=True)[:7])
    assert (error["code"], error["refusal"], error["line"], error["offset"]) == (
        "E_JOURNAL_READ_FAILED", "journal_read_failed", 8, offset), error
    assert f"at byte {offset}" in error["message"] and "truncated" in error["message"]
    assert (error["cause"], error["howToFix"]) == ("E_GZIP_INVALID", "Recompress the file or read the uncompressed journal.")


@pytest.mark.parametrize("packed, words", [
    (gzip.compress(b'{"kind":"a"}\n' * 100)[:20], "gzip stream is truncated"),  # cut in its first line
    (b"\x1f\x8b" + b"\x63" * 40, "gzip stream is corrupt"),
], ids=["cut-off", "corrupt"])
def test_a_gzip_journal_unreadable_in_its_first_line_is_refused_at_that_line(tmp_path: Path, packed: bytes, words: str):
    # it was refused "at byte 9" (as far as the stream inflated, inside line 1), without a line, in Python's words
    # ("Compressed file ended before the end-of-stream marker was reached") and advice about torn lines, where read
    # and diff say E_GZIP_INVALID at line 1, offset 0
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(packed)
    for args in ((), ("--at", "a")):
        done = run_replay("walk", str(path), *args, process=True)
        (error,) = errors_of(done.stderr)
        assert (done.returncode, done.stdout, error["code"], error["refusal"]) == (
            2, b"", "E_JOURNAL_READ_FAILED", "journal_read_failed"), error
        assert (error["line"], error["offset"], error["cause"]) == (1, 0, "E_GZIP_INVALID"), error
        assert words in error["message"] and "at byte 0" in error["message"], error
        assert error["howToFix"] == "Recompress the file or read the uncompressed journal.", error


def test_a_saved_stream_with_a_dropped_record_ends_the_walk_there(tmp_path: Path):
    # `replay read` writes a dropped record where it left a line out (here where a gzip stream was cut off); heal,
    # validate and diff report that line again and fail, but the walk showed it as a `$dropped ... [info]` line and
    # exited 0, as if the journal had been read whole
    data = (WALK / "hello.jsonl").read_bytes()
    packed = tmp_path / "cut.jsonl.gz"
    packed.write_bytes(_cut_gzip(data, 7, mid_line=True))
    saved = tmp_path / "saved.jsonl"
    read = run_replay("read", str(packed), process=True)
    assert read.returncode == 1 and read.stdout.endswith(b"\n"), read.stderr
    saved.write_bytes(read.stdout)
    offset = sum(len(line) for line in data.splitlines(keepends=True)[:7])
    whole = run_replay("walk", str(WALK / "hello.jsonl"), process=True).stdout.splitlines()
    for args in ((), ("--at", "step-2"), ("--json",)):  # (step-2 never ended before the cut: its end may be what was lost)
        done = run_replay("walk", str(saved), *args, process=True)
        (error,) = errors_of(done.stderr)
        assert done.returncode == 1, error
        assert len(done.stdout.splitlines()) == 7 and (args or done.stdout.splitlines() == whole[:7])
        assert (error["code"], error["cause"], error["line"], error["offset"]) == (
            "E_JOURNAL_READ_FAILED", "E_GZIP_INVALID", 8, offset), error
    assert run_replay("walk", str(saved), "--at", "step-1", process=True).returncode == 0  # (it ended before)
    first = tmp_path / "first.jsonl"
    first.write_bytes(read.stdout.splitlines(keepends=True)[-1] + data)
    error = refused(cli_result(run_replay("walk", str(first), process=True)), "E_JOURNAL_READ_FAILED", "journal_read_failed")
    assert (error["line"], error["offset"], error["cause"]) == (1, 0, "E_GZIP_INVALID")


def test_a_dropped_record_without_a_message_is_said_without_one(tmp_path: Path, cli):
    # (its message was read as Python's None: "line 2 stands for what `replay read` left out there: None")
    (tmp_path / "a.jsonl").write_bytes((WALK / "hello.jsonl").read_bytes().splitlines(keepends=True)[0]
                                       + b'{"$record":"dropped","code":"E_JSONL_LINE_INVALID"}\n')
    code, _, (error,) = cli("walk", str(tmp_path / "a.jsonl"))
    assert (code, error["code"], error["line"], error["cause"]) == (1, "E_JOURNAL_READ_FAILED", 2, "E_JSONL_LINE_INVALID")
    assert error["message"].endswith("line 2 stands for what `replay read` left out there"), error


def cli_result(done) -> tuple[int, bytes, list[dict]]:
    return done.returncode, done.stdout, errors_of(done.stderr)


def test_a_document_whose_first_record_is_no_object_is_refused(tmp_path: Path, cli):
    (tmp_path / "a.jsonl").write_bytes(b"[1,2]\n")  # one JSON array: a document of records
    error = refused(cli("walk", str(tmp_path / "a.jsonl")), "E_JOURNAL_READ_FAILED", "journal_read_failed")
    assert (error["path"], error["cause"], error["received"]) == ("$[0]", "E_EVENT_NOT_OBJECT", "1")


def test_a_captures_raw_side_file_is_refused_naming_what_to_walk_instead(captured, cli, tmp_path: Path):
    """capture's <id>.raw.json is valid JSON, but the runner's raw output, not a journal: the refusal says so and
    names the run's journal and healed artifact to walk (no "fix the line at the byte offset")."""
    home, ids = captured
    run_id = ids["echo_runner.py"]
    [raw] = (home / ".replay" / "artifacts").glob(f"*/{run_id}.raw.json")
    relative = str(raw.relative_to(home))
    error = refused(cli("walk", relative, cwd=home), "E_JOURNAL_READ_FAILED", "journal_read_failed")
    assert "capture's raw runner output" in error["message"] and "neither JSONL" not in error["message"]
    healed = str(raw.relative_to(home)).removesuffix(".raw.json") + ".healed.json"
    assert error["howToFix"] == (f"Walk the run's journal or its healed artifact instead: "
                                 f"`replay walk .replay/journal/{run_id}.jsonl` or `replay walk {healed}`.")
    for named in (f".replay/journal/{run_id}.jsonl", healed):  # (what it names walks)
        assert cli("walk", named, cwd=home)[0] == 0
    moved = tmp_path / "kept.json"  # renamed, away from its run: known by its artifactType, the advice in general words
    moved.write_bytes(raw.read_bytes())
    error = refused(cli("walk", str(moved)), "E_JOURNAL_READ_FAILED", "journal_read_failed")
    assert "capture's raw runner output" in error["message"] and "replay walk RUN_ID" in error["howToFix"]


def test_a_heal_log_is_refused_naming_what_to_walk_instead(captured, cli, tmp_path: Path):
    """A heal log replay wrote (capture's <id>.heal-log.json, heal --in DIR --out DIR's) is no journal: the refusal
    says it is a heal log and names the run's journal and healed copy (no "fix the line at the byte offset")."""
    home, ids = captured
    run_id = ids["echo_runner.py"]
    [log] = (home / ".replay" / "artifacts").glob(f"*/{run_id}.heal-log.json")
    error = refused(cli("walk", str(log.relative_to(home)), cwd=home), "E_JOURNAL_READ_FAILED", "journal_read_failed")
    assert "it is a heal log" in error["message"] and "neither JSONL" not in error["message"]
    healed = str(log.relative_to(home)).removesuffix(".heal-log.json") + ".healed.json"
    assert error["howToFix"] == (f"Walk the run's journal or its healed copy instead: "
                                 f"`replay walk .replay/journal/{run_id}.jsonl` or `replay walk {healed}`.")
    journal = tmp_path / "in" / "run_1.jsonl"  # heal's folder mode: the input it names, the healed journal beside it
    journal.parent.mkdir()
    journal.write_bytes(b'{"seq":1,"timestamp":"2026-03-01T12:00:00Z","type":"run_started","runId":"r","payload":{}}\n'
                        b'{"seq":3,"timestamp":"2026-03-01T12:00:01Z","type":"run_completed","runId":"r","payload":{}}\n')
    assert run_replay("heal", "--in", "in", "--out", "out", cwd=tmp_path).returncode == 0
    error = refused(cli("walk", "out/run_1.heal-log.json", cwd=tmp_path), "E_JOURNAL_READ_FAILED", "journal_read_failed")
    assert error["howToFix"] == ("Walk the run's journal or its healed copy instead: `replay walk in/run_1.jsonl` or "
                                 "`replay walk out/run_1.healed.jsonl`.")
    moved = tmp_path / "kept.json"  # renamed, away from its run: known by its artifactType, the advice in general words
    moved.write_bytes((tmp_path / "out" / "run_1.heal-log.json").read_bytes())
    error = refused(cli("walk", str(moved)), "E_JOURNAL_READ_FAILED", "journal_read_failed")
    assert "it is a heal log" in error["message"] and "replay walk RUN_ID" in error["howToFix"]


def test_the_stdin_dash_is_a_usage_error_not_a_run_id(cli):
    code, out, [error] = cli("walk", "-", input=(WALK / "hello.jsonl").read_bytes())
    assert (code, out, error["code"]) == (2, b"", "E_USAGE_INVALID")
    assert "stdin" in error["message"] and "file" in error["howToFix"]


def test_an_unreadable_file_is_refused(tmp_path: Path, cli):
    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    path = tmp_path / "locked.jsonl"
    path.write_bytes(b'{"kind":"a"}\n')
    path.chmod(0)
    refused(cli("walk", str(path)), "E_JOURNAL_READ_FAILED", "journal_read_failed")


def test_an_empty_step_and_a_folder_are_usage_errors(tmp_path: Path, cli):
    assert cli("walk", str(WALK / "hello.jsonl"), "--at", "")[2][0]["code"] == "E_USAGE_INVALID"
    assert cli("walk", str(tmp_path) + "/")[2][0]["code"] == "E_USAGE_INVALID"


@pytest.mark.parametrize("command", ["walk", "diff"])
def test_a_name_no_run_has_where_a_folder_or_socket_is_says_it_is_no_file(tmp_path: Path, cli, command: str):
    """`replay walk dir` with a folder (or a socket) of that name here, and no run of that id: what `replay walk ./dir`
    says (E_USAGE_INVALID, not a regular file; a socket E_INPUT_NOT_FILE_OR_DIR, what it is), and that no run has the
    id; not E_RUN_NOT_FOUND alone, whose advice (a run id, the data dir) leads away from the folder."""
    import socket

    (tmp_path / "dir").mkdir()
    server = socket.socket(socket.AF_UNIX)
    no_run = "(and no run has that id: no journal in '.replay/journal')"
    try:
        server.bind(str(tmp_path / "sock"))
        for name in ("dir", "sock", "./sock"):
            code, out, [error] = cli(command, name, *(["other.jsonl"] if command == "diff" else []), cwd=tmp_path)
            if name == "dir":
                assert (code, out, error["code"], error["path"]) == (2, b"", "E_USAGE_INVALID", name)
                assert error["message"] == f"{name!r} is not a regular file; {command} reads journal files {no_run}"
                continue
            assert (code, out, error["code"], error["path"]) == (2, b"", "E_INPUT_NOT_FILE_OR_DIR", name)
            assert error["received"] == "socket" and "run id" in error["howToFix"]
            assert error["message"] == (f"journal {name!r} is neither a regular file nor a directory"
                                        + (f" {no_run}" if name == "sock" else ""))
    finally:
        server.close()
    code, _, [error] = cli(command, "dir", *(["other.jsonl"] if command == "diff" else []), "--data-dir", ".replay",
                           cwd=tmp_path)
    assert (code, error["code"]) == (2, "E_RUN_NOT_FOUND")  # (with --data-dir a run id only)


# a failure after output began: exit 1 --------------------------------------------------------------------------
def test_a_bad_record_mid_journal_fails_with_its_byte_offset(cli):
    code, out, errors = cli("walk", str(WALK / "mid-journal-error.jsonl"))
    assert code == 1 and len(out.splitlines()) == 3
    (error,) = errors
    data = (WALK / "mid-journal-error.jsonl").read_bytes()
    offset = sum(len(x) + 1 for x in data.split(b"\n")[:3])
    assert error["code"] == "E_JOURNAL_READ_FAILED" and error["refusal"] == "journal_read_failed"
    assert error["offset"] == offset and error["line"] == 4 and f"byte {offset}" in error["message"]


@pytest.mark.parametrize("first", [True, False])
def test_a_byte_that_is_not_utf8_is_named_at_its_column(first: bool, tmp_path: Path, cli):
    # as parse names it: orjson said "str is not valid UTF-8: surrogates not allowed" and the error had no column
    bad = b'{"type":"x\xff","payload":{}}\n'
    head = b"" if first else b'{"type":"run_started","runId":"r","payload":{}}\n'
    (tmp_path / "bad.jsonl").write_bytes(head + bad)
    code, _, (error,) = cli("walk", str(tmp_path / "bad.jsonl"))
    assert code == (2 if first else 1)
    assert (error["line"], error["column"], error["offset"]) == (1 if first else 2, 11, len(head)), error
    assert "byte 0xff at column 11 is not UTF-8" in error["message"] and "surrogates" not in error["message"]


@pytest.mark.parametrize("document, path", [
    (b'{"events":[1,"x",{"type":"ok"}]}\n', "$.events[0]"),  # an artifact: its $run record is printed first
    (b'[{"type":"a"},"x",{"type":"b"}]\n', "$[1]"),
    (b'[{"type":"a"},"x",{"type":"b"}]', "$[1]"),  # no newline: still one document, as `read` reads it
])
def test_a_record_that_is_no_object_in_a_document_ends_the_walk_there(document: bytes, path: str, tmp_path: Path, cli):
    (tmp_path / "art.json").write_bytes(document)
    code, out, (error,) = cli("walk", str(tmp_path / "art.json"), "--json")
    assert code == 1 and len(out.splitlines()) == 1
    assert error["code"] == "E_JOURNAL_READ_FAILED" and error["refusal"] == "journal_read_failed"
    assert (error["cause"], error["path"], error["source"]) == ("E_EVENT_NOT_OBJECT", path, str(tmp_path / "art.json"))


@pytest.mark.parametrize("gzipped", [False, True], ids=["json", "json.gz"])
def test_a_document_larger_than_max_line_bytes_is_refused_as_too_large(tmp_path: Path, cli, gzipped: bool):
    """A .json document larger than --max-line-bytes is refused for what it is (too large: raise the limit), as read
    reports it, not as "neither JSONL nor one JSON artifact"."""
    data = orjson.dumps({"events": [{"kind": "step.started", "step_id": "a", "pad": "x" * 2000}]}, option=orjson.OPT_INDENT_2)
    path = tmp_path / ("art.json.gz" if gzipped else "art.json")
    path.write_bytes(gzip.compress(data) if gzipped else data)
    code, out, [error] = cli("walk", "--max-line-bytes", "1000", str(path))
    assert code == 2 and out == b""
    assert (error["code"], error["cause"], error["line"], error["offset"]) == \
        ("E_JOURNAL_READ_FAILED", "E_JSONL_LINE_TOO_LONG", 1, 0)
    [read] = [e for e in cli("read", "--max-line-bytes", "1000", str(path))[2]]
    assert "one JSON document (an artifact or an array) longer than 1000 bytes" in error["message"]
    assert "one JSON document (an artifact or an array) longer than 1000 bytes" in read["message"]
    assert (error["howToFix"], error["expected"], error["received"]) == (read["howToFix"], read["expected"], read["received"])
    assert cli("walk", str(path))[0] == 0


def test_a_line_too_long_mid_journal_fails_with_its_offset(tmp_path: Path, cli):
    path = tmp_path / "long.jsonl"
    path.write_bytes(b'{"kind":"a"}\n{"kind":"b","pad":"' + b"x" * 200 + b'"}\n{"kind":"c"}\n')
    code, out, errors = cli("walk", "--max-line-bytes", "100", str(path))
    assert code == 1 and len(out.splitlines()) == 1
    assert errors[0]["code"] == "E_JOURNAL_READ_FAILED" and errors[0]["offset"] == 13
    assert errors[0]["cause"] == "E_JSONL_LINE_TOO_LONG"


@pytest.mark.parametrize("where, args", [
    ("first", ()), ("first", ("--at", "b")), ("mid", ()), ("mid", ("--at", "b")), ("mid", ("--json",))])
def test_a_line_too_long_is_told_to_raise_max_line_bytes(tmp_path: Path, where: str, args: tuple[str, ...]):
    # its advice was the catalogue's "Fix or cut the journal at the byte offset given; `replay heal` drops a torn last
    # line": nothing is torn, and the record is whole; a higher limit reads it (and the excerpt of a first line too long
    # ran on into the next line)
    long = b'{"kind":"a","pad":"' + b"x" * 200 + b'"}\n'
    data = (long if where == "first" else b'{"kind":"a"}\n' + long) + b'{"kind":"step.completed","step_id":"b"}\n'
    path = tmp_path / "long.jsonl"
    path.write_bytes(data)
    done = run_replay("walk", "--max-line-bytes", "100", str(path), *args, process=True)
    (error,) = errors_of(done.stderr)
    assert done.returncode == (2 if where == "first" else 1), error
    assert (error["code"], error["cause"], error["line"]) == ("E_JOURNAL_READ_FAILED", "E_JSONL_LINE_TOO_LONG",
                                                              1 if where == "first" else 2), error
    assert error["howToFix"] == "Raise --max-line-bytes or split the record.", error
    assert "\n" not in error.get("received", "") and "step.completed" not in error.get("received", ""), error
    assert run_replay("walk", "--max-line-bytes", "1000", str(path), *args, process=True).returncode == 0


@pytest.mark.parametrize("long", [b'{"kind":"run.note","pad":"', b'{"kind":"step.completed","step_id":"approve","pad":"'],
                         ids=["other", "the-step's"])
@pytest.mark.parametrize("after", [b"", b'{"kind":"run.resumed","run_id":"parked-7"}\n'], ids=["last", "mid"])
def test_a_line_too_long_after_a_step_that_never_ended_is_reported(tmp_path: Path, cli, long: bytes, after: bytes):
    """A line too long to read, after the last record of a step that never ended (so far), may hold that step's end: the
    walk --at the step reads up to it and reports it, as a walk without --at does, not stops short in silence."""
    parked = (WALK / "parked.jsonl").read_bytes()
    path = tmp_path / "long.jsonl"
    path.write_bytes(parked + long + b"x" * 300 + b'"}\n' + after)
    code, out, errors = cli("walk", "--max-line-bytes", "200", "--at", "approve", str(path))
    assert code == 1 and len(out.splitlines()) == parked.count(b"\n")  # up to run.parked, which comes before it
    [error] = errors
    assert (error["code"], error["cause"]) == ("E_JOURNAL_READ_FAILED", "E_JSONL_LINE_TOO_LONG")
    assert (error["line"], error["offset"]) == (parked.count(b"\n") + 1, len(parked))


@pytest.mark.parametrize("long", [b'{"kind":"run.note","pad":"', b'{"kind":"step.completed","step_id":"approve","pad":"'],
                         ids=["other", "the-step's"])
@pytest.mark.parametrize("after", [b"", b'{"kind":"run.resumed","run_id":"parked-7"}\n'], ids=["last", "mid"])
def test_on_stdin_records_held_after_the_steps_last_are_shown_before_a_line_too_long(tmp_path: Path, cli, long: bytes,
                                                                                     after: bytes):
    """On stdin the records after the step's latest one are held until it shows again; a line too long that follows
    them (it may be the step's end) ends the walk after them, as in a file: they are shown (run.parked), not dropped."""
    parked = (WALK / "parked.jsonl").read_bytes()
    path = tmp_path / "long.jsonl"
    path.write_bytes(parked + long + b"x" * 300 + b'"}\n' + after)
    config = tmp_path / "walk.toml"
    config.write_text('[stages.read]\ntype = "read"\nmax_line_bytes = 200\n'
                      '[stages.walk]\ntype = "walk"\ninputs = ["read", "read.errors"]\nat = "approve"\n'
                      '[stages.out]\ntype = "write"\ninputs = ["walk"]\n')
    code, out, [error] = cli("run", str(config), "-", input=path.read_bytes())
    walked = cli("walk", "--max-line-bytes", "200", "--at", "approve", str(path))
    assert (code, out) == walked[:2] and b"run.parked" in out.splitlines()[-1]
    assert {k: error[k] for k in ("code", "cause", "line", "offset")} == {k: walked[2][0][k] for k in ("code", "cause", "line", "offset")}


def test_in_a_config_the_walks_pre_scan_takes_the_line_limit_of_its_read(tmp_path: Path, cli):
    """The pre-scan for `at` and the read it takes lines from have one line limit, the read's: a config whose read has
    max_line_bytes = 200 walks a file as `replay walk --max-line-bytes 200` (up to the line too long, and reports it),
    not with the pre-scan at its own default; a walk that sets another limit than its read's is refused."""
    path = tmp_path / "long.jsonl"
    path.write_bytes((WALK / "parked.jsonl").read_bytes() + b'{"kind":"run.note","pad":"' + b"x" * 300 + b'"}\n')
    config = tmp_path / "walk.toml"
    stages = ('[stages.read]\ntype = "read"\nmax_line_bytes = 200\n'
              '[stages.walk]\ntype = "walk"\ninputs = ["read", "read.errors"]\nat = "approve"\n{}'
              '[stages.out]\ntype = "write"\ninputs = ["walk"]\n')
    config.write_text(stages.format(""))
    code, out, [error] = cli("run", str(config), str(path))
    walked = cli("walk", "--max-line-bytes", "200", "--at", "approve", str(path))
    assert (code, out, [error]) == walked and code == 1 and len(out.splitlines()) == 9
    config.write_text(stages.format("max_line_bytes = 200\n"))
    assert cli("run", str(config), str(path)) == walked
    config.write_text(stages.format("max_line_bytes = 300\n"))
    code, out, [error] = cli("run", str(config), str(path))
    assert (code, out, error["code"], error["path"]) == (2, b"", "E_CONFIG_OPTION_INVALID", "stages.walk.max_line_bytes")


def test_a_user_config_can_use_the_walk_stage(tmp_path: Path, cli):
    config = tmp_path / "walk.toml"
    config.write_text('chain = [{ type = "walk", format = "json", at = "fetch-b" }]\n')
    code, out, _ = cli("run", str(config), str(WALK / "interleaved.jsonl"))
    assert code == 0 and [orjson.loads(x)["kind"] for x in out.splitlines()][-1] == "step.completed"
    assert len(out.splitlines()) == 6


# the command is its spec -----------------------------------------------------------------------------------
@pytest.mark.parametrize("args, at", [((), None), (("--json",), None), (("--json",), "fetch-a"), ((), "merge")])
def test_replay_run_of_the_shipped_spec_walks_like_the_command(args, at, tmp_path: Path, cli):
    code, spec, _ = cli("stages", "--graph", "walk")
    assert code == 0
    config = tmp_path / "walk.toml"
    text = spec.decode()
    if "--json" in args:
        text = text.replace('\nformat = "text"', '\nformat = "json"')
    if at:
        text = text.replace('\nformat = ', f'\nat = "{at}"\nformat = ', 1)
    config.write_text(text)
    at_args = ("--at", at) if at else ()
    assert cli("run", str(config), str(WALK / "interleaved.jsonl")) == cli("walk", *args, *at_args, str(WALK / "interleaved.jsonl"))


def _unreadable_journals(folder: Path) -> dict[str, tuple[Path, int, int]]:
    """examples/journals/two-runs.jsonl with a line that cannot be read: {name: (path, its line, its byte offset)}."""
    lines = (EXAMPLES / "journals" / "two-runs.jsonl").read_bytes().splitlines(keepends=True)
    made = {"invalid": ([*lines[:3], b"{not json\n", *lines[3:]], 4),
            "torn": ([*lines, b'{"seq":99,"type":"us'], len(lines) + 1),
            "nonutf8": ([*lines[:2], lines[2].replace(b'"type"', b'"t\xffype"', 1), *lines[3:]], 3)}
    out = {}
    for name, (content, line) in made.items():
        path = folder / f"{name}.jsonl"
        path.write_bytes(b"".join(content))
        out[name] = (path, line, len(b"".join(content[:line - 1])))
    return out


@pytest.mark.parametrize("name", ["invalid", "torn", "nonutf8"])
@pytest.mark.parametrize("json", [False, True])
def test_a_step_not_found_where_a_line_could_not_be_read_names_that_line(tmp_path: Path, cli, name: str, json: bool):
    """`--at STEP` in none of a journal's records, where a line could not be read (not JSON, a torn last line, a byte
    that is no UTF-8): the step may be in that line, so the refusal (E_STEP_NOT_FOUND, exit 2, nothing printed) says
    so, with the line and its byte offset, and does not say the step never appears; on stdin too."""
    path, line, offset = _unreadable_journals(tmp_path)[name]
    error = refused(cli("walk", *(["--json"] if json else []), "--at", "nope", path.name, cwd=tmp_path),
                    "E_STEP_NOT_FOUND", "step_not_found")
    assert (error["line"], error["offset"], error["source"], error["received"]) == (line, offset, path.name, "nope")
    assert "never appears" not in error["message"]
    assert f"could not be read at byte {offset}: line {line} " in error["message"]
    assert "may be in" in error["message"] and "may be in" in error["howToFix"]
    config = tmp_path / "walk.toml"
    config.write_text('chain = [{ type = "walk", at = "nope" }]\n')
    piped = refused(cli("run", str(config), "-", input=path.read_bytes()), "E_STEP_NOT_FOUND", "step_not_found")
    assert (piped["line"], piped["offset"], "source" in piped) == (line, offset, False)
    assert piped["message"] == error["message"].replace(repr(path.name), "the journal")


def test_a_step_not_found_in_a_gzip_journal_cut_off_names_where_it_stops(tmp_path: Path, cli):
    """A step in none of the records of a gzip journal cut off after them may be in what was cut: refused as for a
    plain journal's torn last line (E_STEP_NOT_FOUND naming where it stops), not E_JOURNAL_READ_FAILED (hunt 26, b/02)."""
    data = (WALK / "hello.jsonl").read_bytes()
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(_cut_gzip(data, 7, mid_line=True))
    error = refused(cli("walk", "--at", "nope", str(path)), "E_STEP_NOT_FOUND", "step_not_found")
    offset = sum(len(line) for line in data.splitlines(keepends=True)[:7])
    assert (error["line"], error["offset"], error["cause"]) == (8, offset, "E_GZIP_INVALID"), error
    assert f"may be in one that could not be: the journal could not be read at byte {offset}: gzip stream is truncated" \
        in error["message"], error


def test_a_step_not_found_counts_the_other_lines_that_could_not_be_read(tmp_path: Path, cli):
    journals = _unreadable_journals(tmp_path)
    both = tmp_path / "both.jsonl"
    both.write_bytes(journals["invalid"][0].read_bytes() + journals["torn"][0].read_bytes()[-21:])
    error = refused(cli("walk", "--at", "nope", str(both)), "E_STEP_NOT_FOUND", "step_not_found")
    assert (error["line"], error["offset"]) == journals["invalid"][1:]
    assert error["message"].endswith("; 1 more line could not be read either")


def test_a_step_found_before_or_after_a_line_that_could_not_be_read_is_walked_as_before(tmp_path: Path, cli):
    """The step's end before the line: walked to it (exit 0), the line not read; the step after it: the walk shows the
    records before the line and fails there (exit 1, E_JOURNAL_READ_FAILED with its byte offset)."""
    journals = _unreadable_journals(tmp_path)
    code, out, errors = cli("walk", "--at", "c1", str(journals["torn"][0]))
    assert (code, len(out.splitlines()), errors) == (0, 5, [])
    path, line, offset = journals["invalid"]
    code, out, [error] = cli("walk", "--at", "c1", str(path))
    assert (code, len(out.splitlines()), error["code"], error["line"], error["offset"]) == (
        1, 3, "E_JOURNAL_READ_FAILED", line, offset)


def test_a_step_not_found_on_stdin_is_refused_with_nothing_printed(tmp_path: Path, cli):
    """`replay run CONFIG -` with a walk `at` a step: on stdin the walk holds every record until the step shows, so a
    step that never does is refused as in a file (exit 2, REFUSED [step_not_found], nothing on stdout); one that does
    is walked as in a file."""
    config = tmp_path / "walk.toml"
    config.write_text('chain = [{ type = "walk", at = "nonexistent-step" }]\n')
    journal = (WALK / "hello.jsonl").read_bytes()
    refused(cli("run", str(config), "-", input=journal), "E_STEP_NOT_FOUND", "step_not_found")
    config.write_text('chain = [{ type = "walk", at = "approve" }]\n')
    parked = (WALK / "parked.jsonl").read_bytes()
    assert cli("run", str(config), "-", input=parked) == cli("run", str(config), str(WALK / "parked.jsonl"))


@pytest.mark.parametrize("step, found", [("approve", True), ("nonexistent-step", False)])
def test_a_line_too_long_on_stdin_before_the_step_is_as_in_a_file(tmp_path: Path, cli, step: str, found: bool):
    """A line read cannot read before the step showed on stdin: when the step comes after it, the walk shows the records
    before the line and fails there (exit 1), as `replay walk FILE --at STEP`; when it never comes, it is refused
    (exit 2), its message saying what could not be read."""
    parked = (WALK / "parked.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"".join(parked[:2]) + b'{"kind":"run.note","pad":"' + b"x" * 300 + b'"}\n' + b"".join(parked[2:]))
    config = tmp_path / "walk.toml"
    config.write_text('[stages.read]\ntype = "read"\nmax_line_bytes = 200\n'
                      f'[stages.walk]\ntype = "walk"\ninputs = ["read", "read.errors"]\nat = "{step}"\n'
                      '[stages.out]\ntype = "write"\ninputs = ["walk"]\n')
    piped = cli("run", str(config), "-", input=path.read_bytes())
    if not found:
        error = refused(piped, "E_STEP_NOT_FOUND", "step_not_found")
        assert "could not be read at byte" in error["message"] and "longer than 200 bytes" in error["message"]
        return
    code, out, [error] = piped
    walked = cli("walk", "--max-line-bytes", "200", "--at", step, str(path))
    assert (code, out) == walked[:2] and code == 1 and len(out.splitlines()) == 2
    assert (error["code"], error["offset"]) == (walked[2][0]["code"], walked[2][0]["offset"])


def test_a_stdin_journal_larger_than_the_spools_memory_is_walked_in_bounded_memory(tmp_path: Path):
    """On stdin every record before the `at` step is held until it shows: a real process walking ~48 MB of them holds
    them in a spool (memory up to a bound, then a temporary file) and gives them back a piece at a time, so its peak
    memory stays far below what they take as records (~6x the journal held in a list, then all rendered at once)."""
    import subprocess
    import sys

    from conftest import REPLAY

    record = b'{"kind":"step.completed","step_id":"s%d","n":%d,"pad":"' + b"y" * 120 + b'"}\n'
    journal = tmp_path / "big.jsonl"
    with journal.open("wb") as f:
        for k in range(0, 300_000, 1000):
            f.write(b"".join(record % (n % 1000, n) for n in range(k, k + 1000)))
        f.write(b'{"kind":"step.started","step_id":"at"}\n{"kind":"step.completed","step_id":"at"}\n')
    config = tmp_path / "walk.toml"
    config.write_text('chain = [{ type = "walk", at = "at" }]\n')
    measure = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], stdin=sys.stdin, "
               "stdout=subprocess.PIPE); print(done.returncode, done.stdout.count(b'\\n'), "
               "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    with journal.open("rb") as stdin:
        done = subprocess.run([sys.executable, "-c", measure, REPLAY, "run", str(config), "-"], stdin=stdin,
                              capture_output=True, timeout=120, check=True)
    code, lines, peak_kib = map(int, done.stdout.split())
    assert (code, lines) == (0, 300_002)
    assert peak_kib < 120 * 1024, f"peak RSS {peak_kib} KiB for a {journal.stat().st_size >> 20} MiB journal"


def test_a_config_is_refused_before_any_output_too(tmp_path: Path, cli):
    config = tmp_path / "walk.toml"
    config.write_text('chain = [{ type = "walk", at = "nonexistent-step" }]\n')
    refused(cli("run", str(config), str(WALK / "hello.jsonl")), "E_STEP_NOT_FOUND", "step_not_found")
    config.write_text('chain = ["walk"]\n')
    refused(cli("run", str(config), str(WALK / "bad-first-record.jsonl")), "E_JOURNAL_READ_FAILED", "journal_read_failed")


def test_c1_controls_and_bidi_overrides_are_shown_escaped(tmp_path: Path):
    """Only C0 controls were escaped: a C1 control (U+009B, which a terminal obeys as it does ESC [) and a bidi
    override (U+202E, which shows the rest of the line in another order than written) went to the terminal as
    they were, where the report's text shows them as \\uXXXX."""
    journal = tmp_path / "run.jsonl"
    journal.write_bytes(b'{"seq":1,"timestamp":"2026-03-01T12:00:00Z","type":"user_message","runId":"r",'
                        b'"payload":{"text":"pay \\u202egnp.exe\\u202c now \\u009b31m red \\u007f"}}\n')
    done = run_replay("walk", str(journal), process=True)
    out = done.stdout.decode()
    assert (done.returncode, done.stderr) == (0, b"")
    assert not set(out) & {"\u202e", "\u202c", "\x9b", "\x7f"}
    assert '"pay \\u202egnp.exe\\u202c now \\x9b31m red \\x7f"' in out


def test_a_line_that_is_no_record_mid_journal_is_advised_as_one_not_as_a_torn_end():
    """The advice spoke of a torn last line for any unreadable line (here line 3 of 5: a log message in the journal)."""
    done = run_replay("walk", str(EXAMPLES / "journals" / "messy.jsonl"))
    (error,) = [e for e in errors_of(done.stderr) if e["code"] == "E_JOURNAL_READ_FAILED"]
    assert error["line"] == 3 and "a line that is no record" in error["howToFix"]


def test_a_line_too_long_ends_the_walk_and_says_so(cli):
    """read skips a line longer than --max-line-bytes and goes on; the walk ends at it, and its error and --help say
    that (not read's "skipped")."""
    code, out, [error] = cli("walk", "--max-line-bytes", "130", str(WALK / "hello.jsonl"))
    assert code == 1 and len(out.splitlines()) == 1
    assert (error["code"], error["cause"], error["line"]) == ("E_JOURNAL_READ_FAILED", "E_JSONL_LINE_TOO_LONG", 2)
    assert error["message"].endswith("line 2 is longer than 130 bytes; the walk ends there"), error["message"]
    helped = " ".join(run_replay("walk", "--help").stdout.decode().split())
    assert "the walk ends there" in helped and "longer lines are reported and skipped" not in helped



def test_a_run_level_record_has_no_step_whatever_step_id_it_carries(tmp_path: Path, cli):
    (tmp_path / "journal").mkdir()
    (tmp_path / "journal" / "parkrun.jsonl").write_bytes(
        b'{"kind":"run.spawned","step_id":"s 1"}\n'
        b'{"kind":"step.completed","step_id":"s 1"}\n'
        b'{"kind":"run.parked","step_id":"s 1","reason":"approval"}\n')
    code, out, errors = cli("walk", "--data-dir", str(tmp_path), "parkrun", "--json")
    assert code == 0 and not errors
    assert [(orjson.loads(x)["kind"], orjson.loads(x)["step_id"]) for x in out.splitlines()] == [
        ("run.spawned", None), ("step.completed", "s 1"), ("run.parked", None)]
    code, out, _ = cli("walk", "--data-dir", str(tmp_path), "parkrun")
    last = out.splitlines()[-1].split()
    assert code == 0 and last[:2] == [b"run.parked", b"-"] and last[-1] == b"[terminal]"


@pytest.mark.parametrize("command", ["walk", "diff"])
def test_a_folder_where_a_runs_journal_is_cannot_be_read_and_is_not_a_run_not_found(tmp_path: Path, cli, command: str):
    """Seed 001: run_not_found is a journal that does not exist, journal_read_failed one that exists and cannot be read
    (an IO error): a folder at <data-dir>/journal/<run-id>.jsonl is there (reading it fails: EISDIR), so walk and diff
    refuse it with journal_read_failed, naming it."""
    (tmp_path / "journal" / "dirrun.jsonl").mkdir(parents=True)
    (tmp_path / "journal" / "ok.jsonl").write_bytes(b'{"kind":"run.spawned"}\n')
    args = ["dirrun", *(["ok"] if command == "diff" else []), "--data-dir", str(tmp_path)]
    error = refused(cli(command, *args), "E_JOURNAL_READ_FAILED", "journal_read_failed")
    assert error["source"] == str(tmp_path / "journal" / "dirrun.jsonl") and "it is a directory" in error["message"]
    assert "<data-dir>/journal/<run-id>.jsonl" in error["howToFix"]
