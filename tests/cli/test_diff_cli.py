"""`replay diff` as a command: identical, reordered and changed runs; journals, artifacts and run ids; exit codes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import EXAMPLES, FIXTURES, errors_of, run_replay, timeless

WALK = FIXTURES / "walk"
RUNNERS = EXAMPLES / "runners"


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Real captures in one data dir: the echo runner twice, then the broken-trace runner."""
    home = tmp_path_factory.mktemp("captured")
    ids = []
    for runner in ("echo_runner.py", "echo_runner.py", "broken_trace_runner.py"):
        done = run_replay("capture", "--runner", str(RUNNERS / runner), "What are my top holdings?", cwd=home)
        assert done.returncode == 0, done.stderr
        ids.append(orjson.loads(done.stdout)["runId"])
    return home, ids




def journal(home: Path, run_id: str) -> Path:
    return home / ".replay" / "journal" / f"{run_id}.jsonl"


def test_two_captures_of_the_same_run_are_the_same(captured, cli):
    home, (first, second, _) = captured
    code, out, errors = cli("diff", first, second, cwd=home)
    assert (code, errors) == (0, [])
    assert out.decode().splitlines()[-1].startswith("same: 7 records alike")
    code, out, _ = cli("diff", "--json", first, second, cwd=home)
    document = orjson.loads(out)
    assert code == 0 and document["same"] is True and document["summary"]["equal"] == 7


def test_artifacts_and_journals_can_be_compared(captured, cli):
    home, (first, second, _) = captured
    artifacts = {a.name: a for a in (home / ".replay" / "artifacts").rglob("*.artifact.json")}
    code, _, _ = cli("diff", str(artifacts[f"{first}.artifact.json"]), str(artifacts[f"{second}.artifact.json"]))
    assert code == 0
    code, out, _ = cli("diff", "--json", str(journal(home, first)), str(artifacts[f"{second}.artifact.json"]))
    # an artifact's run record also sums up its tool calls, which its events say again: left out by default (a
    # capture's .healed.json and its own journal were "different" by it alone)
    assert code == 0 and orjson.loads(out)["same"] is True
    healed = next((home / ".replay" / "artifacts").rglob(f"{first}.healed.json"))
    assert cli("diff", str(healed), first, cwd=home)[0] == 0
    code, out, _ = cli("diff", "--json", "--no-default-ignore", str(journal(home, first)),
                       str(artifacts[f"{second}.artifact.json"]))
    assert code == 1 and "$.toolCalls" in [f["path"] for d in orjson.loads(out)["differences"] for f in d["fields"]]


def test_a_reordered_run_is_reported_as_moved_records(captured, tmp_path: Path, cli):
    home, (first, _, _) = captured
    lines = journal(home, first).read_bytes().splitlines(keepends=True)
    reordered = tmp_path / "reordered.jsonl"
    reordered.write_bytes(b"".join([lines[0], lines[1], lines[3], lines[4], lines[2], *lines[5:]]))  # the question after the tool call
    code, out, errors = cli("diff", "--json", str(journal(home, first)), str(reordered))
    document = orjson.loads(out)
    assert code == 1 and errors[0]["code"] == "E_RUNS_DIFFER"
    assert {d["change"] for d in document["differences"]} == {"moved"}
    assert document["summary"]["missing"] == document["summary"]["extra"] == 0
    assert document["firstDivergence"]["a"]["index"] == 3


def test_reordered_parallel_steps_of_a_flows_run(tmp_path: Path, cli):
    lines = (WALK / "interleaved.jsonl").read_bytes().splitlines(keepends=True)
    swapped = tmp_path / "swapped.jsonl"
    swapped.write_bytes(b"".join([*lines[:5], lines[6], lines[7], lines[5], *lines[8:]]))  # fetch-a finishes first
    code, out, _ = cli("diff", "--json", str(WALK / "interleaved.jsonl"), str(swapped))
    document = orjson.loads(out)
    assert code == 1 and document["summary"]["moved"] >= 1
    assert document["summary"]["changed"] == document["summary"]["missing"] == document["summary"]["extra"] == 0


def test_a_changed_run_says_what_changed_and_where_the_runs_part(captured, cli):
    home, (first, _, broken) = captured
    code, out, errors = cli("diff", first, broken, cwd=home)
    text = out.decode().splitlines()
    assert code == 1 and errors[0]["code"] == "E_RUNS_DIFFER"
    assert text[0].startswith(f"a  .replay/journal/{first}.jsonl") and text[1].startswith(f"b  .replay/journal/{broken}.jsonl")
    assert any(line.split()[:2] == ["changed", "tool_name"] and '"lookup" -> "get_portfolio"' in line for line in text)
    assert text[-2].startswith("different: the runs part at a#1:1 b#1:1")
    assert text[-1].startswith("summary: ")
    code, out, _ = cli("diff", "--json", first, broken, cwd=home)
    document = orjson.loads(out)
    assert document["summary"]["categories"]["tool_name"] == 2
    assert document["firstDivergence"]["a"] == {"index": 1, "kind": "$run", "line": 1, "offset": 0}


def test_ignore_extends_the_default(tmp_path: Path, cli):
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    a.write_bytes(b'{"kind":"step.completed","step_id":"s","model":"m1","ts":"1"}\n')
    b.write_bytes(b'{"kind":"step.completed","step_id":"s","model":"m2","ts":"2"}\n')
    assert cli("diff", str(a), str(b))[0] == 1
    assert cli("diff", str(a), str(b), "--ignore", "model")[0] == 0
    assert cli("diff", str(a), str(b), "--ignore", "model", "--no-default-ignore")[0] == 1


def test_numbers_too_large_for_a_double_are_named_where_they_differ(tmp_path: Path, cli):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_bytes(b'{"type":"a","payload":{"n":1e400}}\n')
    b.write_bytes(b'{"type":"a","payload":{"n":2e400}}\n')
    exit_code, out, _ = cli("diff", str(a), str(b), "--json")
    assert exit_code == 1 and b'"fields":[{"path":"$.payload.n","a":1e400,"b":2e400}]' in out
    exit_code, out, _ = cli("diff", str(a), str(b))
    assert exit_code == 1 and b"$.payload.n: 1e400 -> 2e400" in out


def test_a_kind_with_a_newline_or_an_escape_stays_on_its_difference_s_line(tmp_path: Path, cli):
    """The record's kind was printed raw: a newline in it split a difference over two lines, and an escape
    sequence went to the terminal as it was."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_bytes(b'{"type":"a\\u001b[31mX\\nY","payload":{"s":"one"}}\n{"type":"gone\\r"}\n')
    b.write_bytes(b'{"type":"a\\u001b[31mX\\nY","payload":{"s":"two"}}\n')
    exit_code, out, _ = cli("diff", str(a), str(b))
    lines = out.decode().splitlines()
    assert exit_code == 1 and len(lines) == 6 and "\x1b" not in out.decode() and "\r" not in out.decode()
    assert lines[2].endswith('a\\x1b[31mX\\nY  $.payload.s: "one" -> "two"')
    assert lines[3].endswith("-gone\\r")



def test_records_nested_as_deep_as_replay_reads_are_compared(tmp_path: Path):
    """Leaving out the ignored fields and naming a changed leaf recursed a level at a time with the interpreter's
    default limit: a record nested 500 levels (replay reads 1,024) failed the diff stage (E_STAGE_FAILED, a
    RecursionError), even against itself."""
    head = '{"type":"run_started","runId":"r","payload":{"x":'
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(head + "[" * 1000 + "1" + "]" * 1000 + "}}\n")
    b.write_text(head + "[" * 1000 + "2" + "]" * 1000 + "}}\n")
    same = run_replay("diff", str(a), str(a), process=True)
    assert (same.returncode, same.stderr) == (0, b"") and same.stdout.splitlines()[-1].startswith(b"same: 1 record ")
    differ = run_replay("diff", "--json", str(a), str(b), process=True)
    [change] = orjson.loads(differ.stdout)["differences"]
    assert differ.returncode == 1 and change["fields"][0]["path"] == "$.payload.x" + "[0]" * 1000
    assert [e["code"] for e in errors_of(differ.stderr)] == ["E_RUNS_DIFFER"]


def test_a_value_s_c1_controls_and_bidi_overrides_are_shown_escaped(tmp_path: Path):
    """A changed field's values are written as JSON, which escapes C0 controls only: DEL, a C1 control (U+009B, a
    terminal's CSI) and a bidi override (U+202E) reached the terminal as they were."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_bytes(rb'{"type":"user_message","payload":{"text":"\u202egnp.exe\u202c \u009b31m \u007f"}}' + b"\n")
    b.write_bytes(rb'{"type":"user_message","payload":{"text":"\u202egnp.exe\u202c \u009b32m"}}' + b"\n")
    done = run_replay("diff", str(a), str(b), process=True)
    exit_code, out = done.returncode, done.stdout
    assert exit_code == 1 and not set(out.decode()) & {"\u202e", "\u202c", "\x9b", "\x7f"}
    assert '$.payload.text: "\\u202egnp.exe\\u202c \\x9b31m \\x7f" -> "\\u202egnp.exe\\u202c \\x9b32m"' in out.decode()


def test_the_json_output_is_stable(captured, cli):
    home, (first, _, broken) = captured
    assert cli("diff", "--json", first, broken, cwd=home)[1] == cli("diff", "--json", first, broken, cwd=home)[1]


# unusable input: exit 2, nothing on stdout ----------------------------------------------------------------
@pytest.mark.parametrize("args, code", [
    (("missing-run", str(WALK / "hello.jsonl")), "E_RUN_NOT_FOUND"),
    (("--data-dir", ".", "../x", "y"), "E_INVALID_RUN_ID"),
    ((str(WALK / "bad-first-record.jsonl"), str(WALK / "hello.jsonl")), "E_JOURNAL_READ_FAILED"),
    ((str(WALK / "hello.jsonl"), str(WALK / "mid-journal-error.jsonl")), "E_JOURNAL_READ_FAILED"),
    ((str(WALK / "hello.jsonl"), str(WALK / "hello.jsonl"), "--ignore", "a..b"), "E_USAGE_INVALID"),
])
def test_unusable_input_is_refused(args, code, cli):
    exit_code, out, errors = cli("diff", *args)
    assert exit_code == 2 and out == b"" and errors[0]["code"] == code


def test_a_folder_or_stdin_is_refused_naming_diff(tmp_path: Path, cli):
    for arg in (str(tmp_path) + "/", "-"):
        exit_code, out, [error] = cli("diff", str(WALK / "hello.jsonl"), arg)
        assert (exit_code, out, error["code"]) == (2, b"", "E_USAGE_INVALID")
        assert "diff" in error["message"] and "walk" not in error["message"] + error.get("example", "")


def test_a_read_failure_points_at_the_failing_record(cli):
    _, _, errors = cli("diff", str(WALK / "hello.jsonl"), str(WALK / "mid-journal-error.jsonl"))
    assert (errors[0]["line"], errors[0]["offset"], errors[0]["refusal"]) == (4, 254, "journal_read_failed")


def test_a_read_failure_keeps_the_column_of_the_bad_byte(tmp_path: Path, cli):
    # the refusal carries where on the line parse found the fault (a byte that is not UTF-8), not only the line
    (tmp_path / "bad.jsonl").write_bytes(b'{"type":"run_started","runId":"r","payload":{}}\n{"type":"x\xff"}\n')
    exit_code, _, [error] = cli("diff", str(tmp_path / "bad.jsonl"), str(WALK / "hello.jsonl"))
    assert exit_code == 2 and (error["line"], error["column"], error["offset"]) == (2, 11, 48), error



def test_a_record_of_a_document_that_is_no_object_is_named_by_its_path(tmp_path: Path):
    """In a JSON document the record's path is its position (no line, no offset): the refusal left it out, and told
    to cut the journal "at the byte offset given", which it did not give."""
    artifact = tmp_path / "run.artifact.json"
    artifact.write_bytes(b'{"events":[{"type":"run_started","runId":"r","seq":1,"payload":{}},7]}')
    done = run_replay("diff", str(artifact), str(WALK / "hello.jsonl"), process=True)
    [error] = errors_of(done.stderr)
    assert (done.returncode, done.stdout, error["code"], error["cause"]) == (2, b"", "E_JOURNAL_READ_FAILED",
                                                                             "E_EVENT_NOT_OBJECT")
    assert error["path"] == "$.events[1]" and "offset" not in error["howToFix"] and "$.events[1]" in error["howToFix"]

def test_replay_run_of_the_shipped_spec_compares_like_the_command(tmp_path: Path, cli):
    code, spec, _ = cli("stages", "--graph", "diff")
    config = tmp_path / "diff.toml"
    config.write_bytes(spec)
    inputs = (str(WALK / "hello.jsonl"), str(WALK / "interleaved.jsonl"))
    assert code == 0 and cli("run", str(config), *inputs) == cli("diff", *inputs)


CORPUS = FIXTURES / "corpus"  # attribution: fixtures/corpus/SOURCES.md


@pytest.mark.parametrize("a, b", [
    (CORPUS / "codex" / "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl",
     CORPUS / "codex" / "rollout-66666666-6666-4666-8666-666666666666.jsonl"),  # (its last line is no JSON)
    (CORPUS / "claude-code" / "session_b.jsonl", CORPUS / "claude-code" / "edge_cases.jsonl"),  # (lines no object)
    (EXAMPLES / "journals" / "messy.jsonl", WALK / "hello.jsonl"),
    (CORPUS / "openhands" / "basic.json", CORPUS / "openhands" / "wrong_initial_state.json"),
    (WALK / "hello.jsonl", WALK / "interleaved.jsonl"),
], ids=lambda p: p.name[:20])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_chains_diff_compares_as_the_command(tmp_path: Path, a: Path, b: Path, as_json: bool):
    """`chain = [{ type = "diff" }]` gets diff.toml's stages in front, wired as it wires them: an input read, parse or
    dialect cannot read whole is refused (exit 2, nothing on stdout) as `replay diff` refuses it. The chain's diff took
    the parse's errors for warnings of the run (on stderr, exit 1) and compared what was left."""
    config = tmp_path / "diff.toml"
    config.write_text('chain = [{ type = "diff"' + (', format = "json"' if as_json else "") + " }]\n")
    chained = run_replay("run", str(config), str(a), str(b), process=True)
    command = run_replay("diff", *(["--json"] if as_json else []), str(a), str(b), process=True)
    assert (chained.returncode, chained.stdout, timeless(chained.stderr)) == (
        command.returncode, command.stdout, timeless(command.stderr))
    assert chained.returncode == (2 if "edge" in b.name or "6666" in b.name or "messy" in a.name else 1)


def test_inputs_saved_by_read_with_their_source_records_are_two_runs(tmp_path: Path, cli):
    """`replay read a b > saved` writes a {"$record": "source"} line before each input; two such files, one input each,
    were four runs to diff (E_DIFF_INPUT_INVALID "the input holds 4"): a source record is no run."""
    inputs = (str(WALK / "hello.jsonl"), str(WALK / "interleaved.jsonl"))
    code, saved, _ = cli("read", *inputs)
    lines = saved.splitlines(keepends=True)
    second = [k for k, line in enumerate(lines) if line.startswith(b'{"$record":"source"')][1]
    (tmp_path / "a.jsonl").write_bytes(b"".join(lines[:second]))
    (tmp_path / "b.jsonl").write_bytes(b"".join(lines[second:]))
    assert code == 0 and lines[0].startswith(b'{"$record":"source"')
    assert cli("diff", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")) == cli("diff", *inputs)
    code, out, errors = cli("diff", str(tmp_path / "a.jsonl"), str(tmp_path / "a.jsonl"))
    assert (code, errors) == (0, []) and out.decode().splitlines()[-1].startswith("same:")


def test_a_stream_saved_from_several_inputs_is_named_by_the_files_it_holds(tmp_path: Path) -> None:
    """`replay read a b > ab.jsonl` then `diff ab.jsonl c`: "diff compares two runs; the input holds 3", naming no file
    and no way out."""
    saved = tmp_path / "ab.jsonl"
    saved.write_bytes(run_replay("read", str(WALK / "hello.jsonl"), str(WALK / "interleaved.jsonl")).stdout)
    done = run_replay("diff", str(saved), str(WALK / "hello.jsonl"))
    [error] = errors_of(done.stderr)
    assert done.returncode == 2 and error["code"] == "E_DIFF_INPUT_INVALID" and error["received"] == 3
    assert "interleaved.jsonl" in error["message"] and "files themselves" in error["howToFix"]


def test_one_record_is_counted_as_one_record(tmp_path: Path):
    one = tmp_path / "one.jsonl"
    one.write_bytes(b'{"seq":1,"timestamp":"2026-03-01T12:00:00Z","type":"run_started","runId":"r","payload":{}}\n')
    proc = run_replay("diff", str(one), str(one))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().splitlines()
    assert lines[:2] == [f"a  {one}  (1 record)", f"b  {one}  (1 record)"]
    assert lines[2].startswith("same: 1 record alike (ignoring ")


@pytest.mark.parametrize("after", ["renumber", "fill_run_id", "redact"])
def test_a_stage_that_takes_events_after_diff_is_refused(tmp_path: Path, after: str):
    """diff's text stands in for a record ({"same": false}): a stage that changed that record failed on its bytes
    (E_STAGE_FAILED: JSONDecodeError), and then wrote the record's JSON in place of the text. A diff is no events: the
    config is refused before anything is read (exit 2); `write` after diff is what the command runs."""
    config = tmp_path / "diff.toml"
    config.write_text(f'chain = [{{ type = "diff" }}, {{ type = "{after}" }}]\n')
    result = run_replay("run", str(config), str(EXAMPLES / "journals" / "two-runs.jsonl"), process=True)
    (error,) = errors_of(result.stderr)
    assert (result.returncode, result.stdout, error["code"]) == (2, b"", "E_CONFIG_INPUTS_INVALID")
    assert error["message"] == f"stage {after!r} takes events, but 'diff' gives a diff of two runs: it would find none in them"


def test_a_line_too_long_is_told_to_raise_max_line_bytes(tmp_path: Path) -> None:
    # its advice was the catalogue's "Fix or cut the journal ...; `replay heal` drops a torn last line"
    path = tmp_path / "long.jsonl"
    path.write_bytes(b'{"type":"a"}\n{"type":"b","pad":"' + b"x" * 200 + b'"}\n')
    done = run_replay("diff", "--max-line-bytes", "100", str(path), str(WALK / "hello.jsonl"), process=True)
    (error,) = errors_of(done.stderr)
    assert (done.returncode, done.stdout, error["code"], error["cause"]) == (
        2, b"", "E_JOURNAL_READ_FAILED", "E_JSONL_LINE_TOO_LONG"), error
    assert (error["line"], error["offset"], error["howToFix"]) == (2, 13, "Raise --max-line-bytes or split the record.")
    # it was "...; skipped" (read's word: read goes on past the line), and --help said "reported and skipped": the diff
    # refuses the input
    assert error["message"].endswith("line 2 is longer than 100 bytes"), error["message"]
    helped = " ".join(run_replay("diff", "--help").stdout.decode().split())
    assert "skipped" not in helped and "longer line cannot be compared: refused" in helped


@pytest.mark.parametrize(("a", "b", "side", "held"), [
    ("two-runs", "one", "a", "2 runs"),  # was compared as one run: rc 1, "6 missing"
    ("empty", "empty", "a", "no run"),  # was `same: 0 records alike`, exit 0
    ("one", "empty", "b", "no run"),  # was rc 1, "7 missing"
])
def test_each_side_must_hold_exactly_one_run(tmp_path: Path, a: str, b: str, side: str, held: str) -> None:
    two_runs = EXAMPLES / "journals" / "two-runs.jsonl"
    files = {"two-runs": two_runs, "one": tmp_path / "one.jsonl", "empty": tmp_path / "empty.jsonl"}
    files["one"].write_bytes(b"".join(two_runs.read_bytes().splitlines(keepends=True)[:7]))
    files["empty"].write_bytes(b"")
    done = run_replay("diff", str(files[a]), str(files[b]), process=True)
    (error,) = errors_of(done.stderr)
    assert (done.returncode, done.stdout, error["code"]) == (2, b"", "E_DIFF_INPUT_INVALID")
    assert error["message"].endswith(f"{side} ({str(files[a if side == 'a' else b])!r}) holds {held}")
    assert run_replay("diff", str(files["one"]), str(files["one"]), process=True).returncode == 0


def test_another_agents_log_is_mapped_first_so_it_and_its_healed_copy_differ_by_what_heal_added(tmp_path: Path) -> None:
    """diff compared a Claude Code log's raw records with canonical events (`user -> $run`, 12 changed, 5 extra): every
    other reader maps the log first."""
    log = FIXTURES / "corpus" / "claude-code" / "representative_messages.jsonl"
    healed = tmp_path / "healed.jsonl"
    healed.write_bytes(run_replay("heal", str(log)).stdout)
    done = run_replay("diff", "--json", str(log), str(healed))
    assert done.returncode == 1, done.stderr
    report = orjson.loads(done.stdout)
    assert [(d["change"], d["b"]["kind"]) for d in report["differences"]] == [("extra", "run_started"),
                                                                              ("extra", "run_failed")]


def test_a_file_without_a_journal_suffix_is_read_when_no_run_has_its_name(tmp_path: Path) -> None:
    """`replay diff before after` with two such files here was E_RUN_NOT_FOUND: a name without a suffix is a run id
    first, and a file of that name when no run has it (with --data-dir, a run id only)."""
    line = b'{"seq":1,"timestamp":"2026-03-01T12:00:00Z","type":"run_started","runId":"r","payload":{}}\n'
    (tmp_path / "before").write_bytes(line)
    (tmp_path / "after").write_bytes(line)
    assert run_replay("diff", "before", "after", cwd=tmp_path).returncode == 0
    assert run_replay("walk", "before", cwd=tmp_path).returncode == 0
    done = run_replay("diff", "before", "after", "--data-dir", ".replay", cwd=tmp_path)
    assert done.returncode == 2 and errors_of(done.stderr)[0]["code"] == "E_RUN_NOT_FOUND"
