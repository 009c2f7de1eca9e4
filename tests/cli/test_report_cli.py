"""`replay report` as a real process: every format over fixtures, artifact directories, exit codes, escaping."""

from __future__ import annotations

import json
import os
import re
import shutil
import xml.etree.ElementTree as ET
from decimal import Decimal
from pathlib import Path

import pytest
from conftest import FIXTURES as FIXTURES_DIR
from conftest import ROOT, errors_of, jsonl, run_replay
from heal_support import SAME_ID_DROPPED

FIXTURES = FIXTURES_DIR / "report"
TWO_RUNS = str(FIXTURES / "healed_two_runs.jsonl")
PLAIN = str(FIXTURES / "no_run_records.jsonl")
ESCAPING = str(FIXTURES / "escaping.jsonl")
BAD_LINES = str(FIXTURES / "bad_lines.jsonl")
ARTIFACTS = str(FIXTURES / "artifacts")
EVIL = "<script>window.__pwned=1;document.title='pwned'</script>"


def report_json(*args: str, input: bytes | None = None) -> dict:
    result = run_replay("report", "--format", "json", *args, input=input)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# text ------------------------------------------------------------------------------------------
def test_text_report_is_column_aligned_with_totals():
    result = run_replay("report", TWO_RUNS)
    assert result.returncode == 0 and result.stderr == b""
    lines = result.stdout.decode().splitlines()
    assert lines[0] == "replay report: 2 runs (1 ok, 1 error)"
    header, row_a, row_b, total = lines[2:6]
    assert header.split() == ["RUN", "STATUS", "DURATION", "EVENTS", "TOOL", "CALLS", "FAILED", "TOKENS", "IN",
                              "TOKENS", "OUT", "COST", "REPAIRS"]
    assert row_a.split() == ["run_a", "ok", "2.10s", "10", "3", "1", "120", "45", "$0.0021", "3"]
    assert row_b.split() == ["run_b", "error", "3.30s", "4", "1", "1", "80", "0", "$0.0009", "1"]
    assert total.split() == ["TOTAL", "1", "error", "5.40s", "14", "4", "2", "200", "45", "$0.003", "4"]
    # numbers are right-aligned: every row ends its EVENTS column where the header does
    end = header.index("EVENTS") + len("EVENTS")
    assert all(line[end - 1].isdigit() and line[end] == " " for line in (row_a, row_b, total))
    text = result.stdout.decode()
    assert "get_prices timed out after 1s" in text and "repairs  3: alias 2, renumber 1" in text


def test_text_is_the_default_and_shows_runs_without_run_records():
    result = run_replay("report", PLAIN)
    assert result.returncode == 0
    text = result.stdout.decode()
    assert "2 runs (1 ok, 1 error)" in text and "Run r1  [ok]" in text and "Run r2  [error]" in text
    assert "agent crashed" in text


def test_text_neutralises_terminal_control_characters():
    text = run_replay("report", ESCAPING).stdout.decode()
    assert "\x1b" not in text and "\u202e" not in text and "\x00" not in text
    assert "\\u001b[31mred" in text and "\\u202e" in text


# json ------------------------------------------------------------------------------------------
def test_json_report_per_run_and_aggregate():
    doc = report_json(TWO_RUNS)
    assert list(doc) == ["runs", "aggregate"]
    a, b = doc["runs"]
    assert (a["runId"], a["status"], a["durationMs"], a["events"]["total"]) == ("run_a", "ok", 2100, 10)
    assert (b["runId"], b["status"], b["durationMs"], b["events"]["total"]) == ("run_b", "error", 3300, 4)
    assert [(c["toolName"], c["status"], c["durationMs"]) for c in a["toolCalls"]["calls"]] == [
        ("get_portfolio", "ok", 300), ("get_prices", "error", 1000), ("get_prices", "ok", 180)]
    agg = doc["aggregate"]
    assert agg["runs"] == {"total": 2, "ok": 1, "error": 1, "unknown": 0}
    assert agg["usage"] == {"inputTokens": 200, "outputTokens": 45, "costUsd": 0.003, "runsWithUsage": 2}
    assert agg["repairs"] == {"total": 4, "byRule": {"alias": 2, "ensure_terminal": 1, "renumber": 1}}
    assert agg["durationMs"] == 5400 and agg["toolCalls"]["error"] == 2


def test_json_is_byte_identical_across_runs():
    first = run_replay("report", "--format", "json", TWO_RUNS, PLAIN).stdout
    assert first == run_replay("report", "--format", "json", TWO_RUNS, PLAIN).stdout


def test_runs_without_run_records_sum_event_usage():
    doc = report_json(PLAIN)
    r1, r2 = doc["runs"]
    assert r1["usage"] == {"inputTokens": 17, "outputTokens": 8, "costUsd": 0.0001}
    assert r1["toolCalls"]["calls"][0] == {"toolName": "read_file", "status": "ok", "durationMs": 2000, "seq": 2,
                                            "startMs": 1000}
    assert r2["durationMs"] == 0 and r2["toolCalls"]["calls"][0]["unfinished"] is True
    assert doc["aggregate"]["usage"]["runsWithUsage"] == 1


def test_stream_on_stdin_from_replay_read():
    piped = run_replay("read", TWO_RUNS).stdout
    doc = report_json(input=piped)
    assert [r["runId"] for r in doc["runs"]] == ["run_a", "run_b"]
    assert doc["runs"][0]["source"] == "<stdin>"
    assert doc["aggregate"]["repairs"]["total"] == 4


def test_several_inputs_make_one_report():
    doc = report_json(TWO_RUNS, "--in", PLAIN)
    assert [r["runId"] for r in doc["runs"]] == ["r1", "r2", "run_a", "run_b"]  # --in first, then the PATHs
    assert doc["aggregate"]["runs"]["total"] == 4 and doc["aggregate"]["events"]["total"] == 23


# artifact directories --------------------------------------------------------------------------
def test_artifact_directory_reports_the_healed_artifact_once_with_its_heal_log():
    doc = report_json("--in", ARTIFACTS)
    runs = {r["runId"]: r for r in doc["runs"]}
    assert sorted(runs) == ["cap_1", "cap_2", "cap_3"]
    assert runs["cap_1"]["source"].endswith("art_1.healed.json")
    assert runs["cap_1"]["events"]["byType"]["tool_completed"] == 1  # the healed events, not the raw aliases
    assert runs["cap_1"]["repairs"] == {"total": 5, "byRule": {"alias": 3, "ensure_terminal": 1,
                                                                "synthesize_assistant_message": 1}}
    assert runs["cap_2"]["status"] == "error" and runs["cap_2"]["repairs"]["total"] == 1
    assert runs["cap_3"]["source"].endswith("art_3.artifact.json") and runs["cap_3"]["repairs"]["total"] == 0
    agg = doc["aggregate"]
    assert agg["runs"] == {"total": 3, "ok": 2, "error": 1, "unknown": 0}
    assert agg["usage"] == {"inputTokens": 155, "outputTokens": 42, "costUsd": 0.0027, "runsWithUsage": 3}
    assert agg["repairs"]["byRule"] == {"alias": 3, "ensure_terminal": 2, "synthesize_assistant_message": 1}


def test_an_artifact_named_explicitly_is_read_as_given():
    doc = report_json("--in", str(Path(ARTIFACTS) / "2026-03-01" / "art_1.artifact.json"))
    # (not its healed copy beside it, which has an assistant_message and a run_completed; its aliases `start`,
    # `tool_start` and `tool_end` are read as the types heal renames them to)
    assert doc["runs"][0]["events"]["byType"] == {"run_started": 1, "tool_called": 1, "tool_completed": 1}


def test_no_heal_logs_flag_ignores_the_heal_logs():
    doc = report_json("--in", ARTIFACTS, "--no-heal-logs")
    assert doc["aggregate"]["repairs"]["total"] == 0


def test_empty_directory_gives_an_empty_report(tmp_path):
    result = run_replay("report", "--in", str(tmp_path), "--format", "json")
    assert result.returncode == 0 and errors_of(result.stderr) == []
    assert json.loads(result.stdout)["aggregate"]["runs"]["total"] == 0


# markdown --------------------------------------------------------------------------------------
def test_markdown_report_has_tables():
    result = run_replay("report", TWO_RUNS, "--format", "markdown", "--title", "Nightly")
    assert result.returncode == 0
    md = result.stdout.decode()
    lines = md.splitlines()
    assert lines[0] == "# Nightly"
    head = lines.index("| Run | Status | Duration | Events | Tool calls | Failed | Tokens in | Tokens out | Cost | Repairs |")
    assert lines[head + 1].startswith("| --- | --- | ---: |")
    assert lines[head + 2].startswith("| [run\\_a](#run-1) | ✅ ok | 2.10s | 10 | 3 | 1 | 120 | 45 | \\$0.0021 | 3 |")
    assert "### Tool calls (3, 1 failed)" in md and "## All runs" in md and "### Repairs by rule" in md
    for line in lines:  # every table row has the same number of cells as its header
        if line.startswith("| "):
            assert line.endswith(" |")


def test_markdown_escapes_pipes_newlines_and_html():
    md = run_replay("report", ESCAPING, "--format", "markdown").stdout.decode()
    own_anchors = re.sub(r'<a id="run-\d+"></a>', "", md)
    assert re.findall(r"(?<!\\)[<>]", own_anchors) == []  # every angle bracket from the data is escaped
    assert "\\<script\\>" in md and "\\<svg onload" in md
    prompt_line = next(line for line in md.splitlines() if line.startswith("- **Prompt**"))
    assert "\\| pipe newline" in prompt_line  # the newline folded, the pipe escaped


def test_text_and_markdown_show_a_tool_name_s_line_breaks_and_tabs_as_a_space_each(tmp_path):
    """U+2028 and U+2029 (Unicode's line and paragraph separators) became spaces in Markdown and were written raw in
    the text table; README: line breaks and tabs are a space in a text or Markdown table. Other blanks stay."""
    name = "ab\u2028cd\u2029ef\tg\nh\ri\u00a0j\u3000k  l"
    shown = "ab cd ef g h i\u00a0j\u3000k  l"
    path = tmp_path / "names.jsonl"
    path.write_bytes(b"".join(json.dumps({"seq": k, "timestamp": f"2026-03-01T12:00:0{k}.000Z", "type": kind,
                                          "runId": "r", "payload": payload}).encode() + b"\n"
                              for k, (kind, payload) in enumerate([
                                  ("run_started", {}), ("tool_called", {"callId": "c", "toolName": name}),
                                  ("tool_completed", {"callId": "c"}), ("run_completed", {})], start=1)))
    text = run_replay("report", str(path)).stdout.decode()
    markdown = run_replay("report", "--format", "markdown", str(path)).stdout.decode()
    assert f"  {shown}  " in text and f"| {shown} |" in markdown
    for ch in "\u2028\u2029\t\r":
        assert ch not in text and ch not in markdown


# junit -----------------------------------------------------------------------------------------
def test_junit_is_valid_xml_with_one_testcase_per_run():
    result = run_replay("report", TWO_RUNS, PLAIN, "--format", "junit")
    assert result.returncode == 0
    root = ET.fromstring(result.stdout)
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 1
    suite = suites[0]
    assert suite.get("tests") == "4" and suite.get("failures") == "2"
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["run_a", "run_b", "r1", "r2"]
    failed = {c.get("name"): c.find("failure") for c in cases}
    assert failed["run_a"] is None and failed["r1"] is None
    assert failed["run_b"].get("type") == "RUNNER_TOOL_TIMEOUT" and failed["run_b"].get("message") == "search timed out"
    assert failed["r2"].get("type") == "run_failed" and "agent crashed" in failed["r2"].text
    assert cases[0].get("time") == "2.100"
    assert "tool calls: 3 (1 failed)" in cases[0].find("system-out").text


def test_junit_survives_markup_and_characters_xml_forbids():
    result = run_replay("report", ESCAPING, "--format", "junit")
    root = ET.fromstring(result.stdout)  # would raise on a NUL or an unescaped '<'
    case = root.find("testsuite/testcase")
    assert case.get("name") == "run_<b>x</b>"
    failure = case.find("failure")
    assert EVIL in failure.text and "\\u0000\\u0007" in failure.text


def test_junit_makes_input_problems_an_error_ci_sees(tmp_path):
    """Lines that were not read: one more testcase, `input`, with an error counting them by code and listing the first
    few with their line; `errors` counts it. It was tests="0" errors="0" (green) for a command that exits 1."""
    source = tmp_path / "x.jsonl"
    source.write_bytes(b"garbage\n[1]\n")
    result = run_replay("report", str(source), "--format", "junit")
    assert result.returncode == 1
    root = ET.fromstring(result.stdout)
    suite = root.find("testsuite")
    for element in (root, suite):
        assert (element.get("tests"), element.get("failures"), element.get("errors")) == ("1", "0", "1")
    [case] = suite.findall("testcase")
    error = case.find("error")
    assert case.get("name") == "input" and error is not None
    assert error.get("message") == "2 input problems: E_EVENT_NOT_OBJECT 1, E_JSONL_LINE_INVALID 1"
    assert error.get("type") == "E_JSONL_LINE_INVALID"
    lines = error.text.splitlines()
    assert lines[1].startswith(f"{source} line 1: E_JSONL_LINE_INVALID line 1 is not valid JSON")
    assert lines[2] == f"{source} line 2: E_EVENT_NOT_OBJECT line 2 is JSON but not an object"
    # the runs keep their testcases, the input's comes last; the other formats count the same problems
    many = tmp_path / "many.jsonl"
    many.write_bytes(Path(TWO_RUNS).read_bytes() + b"oops\n" * 7)
    root = ET.fromstring(run_replay("report", str(many), "--format", "junit").stdout)
    suite = root.find("testsuite")
    assert [c.get("name") for c in suite.findall("testcase")] == ["run_a", "run_b", "input"]
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    error = suite.find("testcase[@name='input']/error")
    assert len(error.text.splitlines()) == 1 + 5 + 1 and error.text.endswith("… 2 more (all of them on stderr)")
    diagnostics = json.loads(run_replay("report", str(many), "--format", "json").stdout)["aggregate"]["diagnostics"]
    after = Path(TWO_RUNS).read_bytes().count(b"\n")
    assert diagnostics["total"] == 7 and [p["line"] for p in diagnostics["first"]] == list(range(after + 1, after + 6))
    assert "input problems  7: E_JSONL_LINE_INVALID 7" in run_replay("report", str(many)).stdout.decode()


# html (the browser checks live in test_html_browser.py) -------------------------------------------
def test_html_is_self_contained_and_escaped(tmp_path):
    out = tmp_path / "report.html"
    result = run_replay("report", ESCAPING, TWO_RUNS, "--out", str(out))
    assert result.returncode == 0 and result.stdout == b""
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page.lower()
    assert "&lt;script&gt;window.__pwned=1" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page
    assert "default-src 'none'" in page
    assert page.count(' data-tool="') == 4 + 1  # one bar per tool call (the legend's swatches have none)


# output files and exit codes -------------------------------------------------------------------
@pytest.mark.parametrize(("suffix", "marker"), [(".json", b'{\n  "runs"'), (".md", b"# replay report"),
                                                (".xml", b"<?xml"), (".html", b"<!DOCTYPE html>"), (".txt", b"replay report:")])
def test_format_follows_the_out_extension(tmp_path, suffix, marker):
    out = tmp_path / f"report{suffix}"
    assert run_replay("report", TWO_RUNS, "--out", str(out)).returncode == 0
    assert out.read_bytes().startswith(marker)


def test_out_writes_atomically_and_leaves_no_temp_files(tmp_path):
    out = tmp_path / "sub" / "report.json"
    result = run_replay("report", TWO_RUNS, "--format", "json", "--out", str(out))
    assert result.returncode == 0 and result.stdout == b""
    assert json.loads(out.read_text())["aggregate"]["runs"]["total"] == 2
    assert sorted(p.name for p in out.parent.iterdir()) == ["report.json"]


def test_missing_input_is_refused_with_exit_2(tmp_path):
    result = run_replay("report", "--in", str(tmp_path / "nope"), "--out", str(tmp_path / "r.txt"))
    assert result.returncode == 2 and result.stdout == b""
    assert [e["code"] for e in errors_of(result.stderr)] == ["E_INPUT_PATH_NOT_FOUND"]
    assert not (tmp_path / "r.txt").exists()


def test_in_file_that_is_not_a_journal_is_refused(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    result = run_replay("report", "--in", str(notes))
    assert result.returncode == 2
    assert [e["code"] for e in errors_of(result.stderr)] == ["E_INPUT_FILE_NOT_JSON"]
    heal_log = Path(ARTIFACTS) / "2026-03-01" / "art_1.heal-log.json"
    assert errors_of(run_replay("report", "--in", str(heal_log)).stderr)[0]["code"] == "E_INPUT_FILE_NOT_JSON"


def test_out_that_is_a_directory_is_refused(tmp_path):
    result = run_replay("report", TWO_RUNS, "--out", str(tmp_path))
    assert result.returncode == 2 and errors_of(result.stderr)[0]["code"] == "E_OUTPUT_UNWRITABLE"


def test_unknown_format_is_a_usage_error():
    result = run_replay("report", TWO_RUNS, "--format", "pdf")
    assert result.returncode == 2 and errors_of(result.stderr)[0]["code"] == "E_USAGE_INVALID"


def test_bad_lines_are_reported_and_exit_1_after_the_report(tmp_path):
    out = tmp_path / "report.json"
    result = run_replay("report", BAD_LINES, "--out", str(out))
    assert result.returncode == 1
    errors = errors_of(result.stderr)
    assert [(e["code"], e["line"]) for e in errors] == [("E_JSONL_LINE_INVALID", 2)]
    doc = json.loads(out.read_text())  # the report was still written
    assert doc["runs"][0]["events"]["total"] == 2
    first = {k: errors[0][k] for k in ("code", "source", "line", "message")}
    assert doc["aggregate"]["diagnostics"] == {"total": 1, "byCode": {"E_JSONL_LINE_INVALID": 1}, "first": [first]}


def test_in_that_is_a_pipe_or_a_device_is_refused_not_waited_on(tmp_path):
    """--in names files and folders (spec: E_INPUT_NOT_FILE_OR_DIR), as validate and heal refuse; a FIFO hung."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target in (str(fifo), "/dev/null"):
        done = run_replay("report", "--in", target, timeout=30, process=True)  # (a real process: a hang times out)
        assert done.returncode == 2 and done.stdout == b""
        assert [e["code"] for e in errors_of(done.stderr)] == ["E_INPUT_NOT_FILE_OR_DIR"]


def test_bad_lines_show_in_the_text_report():
    result = run_replay("report", BAD_LINES)
    assert result.returncode == 1
    assert "input problems  1: E_JSONL_LINE_INVALID 1 (details on stderr)" in result.stdout.decode()


def test_failed_runs_exit_0_unless_fail_on_error():
    assert run_replay("report", TWO_RUNS).returncode == 0
    gated = run_replay("report", TWO_RUNS, "--fail-on-error", "--format", "junit")
    assert gated.returncode == 1 and ET.fromstring(gated.stdout).find("testsuite").get("failures") == "1"
    assert errors_of(gated.stderr) == []
    ok_only = run_replay("read", TWO_RUNS).stdout.split(b'{"$record":"run","runId":"run_b"')[0]
    assert run_replay("report", "--fail-on-error", input=ok_only).returncode == 0


STOPS = (b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"cut","payload":{}}\n'
         b'{"seq":2,"timestamp":"2026-03-01T12:00:01.000Z","type":"user_message","runId":"cut","payload":{"text":"hi"}}\n')


def test_a_journal_that_stops_is_unknown_before_and_after_heal_in_every_format(tmp_path):
    healed = run_replay("heal", input=STOPS)
    assert b'"type":"run_failed"' in healed.stdout  # (heal closes the run: with its end of status unknown)
    for journal in (STOPS, healed.stdout):
        doc = report_json(input=journal)
        (run,) = doc["runs"]
        assert run["status"] == "unknown" and run["errors"] == []
        assert doc["aggregate"]["runs"] == {"total": 1, "ok": 0, "error": 0, "unknown": 1}
        text = run_replay("report", input=journal).stdout.decode()
        assert text.startswith("replay report: 1 run (0 ok, 0 error, 1 unknown)\n") and "[unknown]" in text
        assert "TOTAL  1 unknown" in text
        junit = ET.fromstring(run_replay("report", "--format", "junit", input=journal).stdout)
        suite = junit.find("testsuite")
        assert (suite.get("failures"), suite.get("skipped")) == ("0", "1")
        assert suite.find("testcase/skipped") is not None and suite.find("testcase/failure") is None
        markdown = run_replay("report", "--format", "markdown", input=journal).stdout.decode()
        assert "0 ok, 0 error, 1 unknown" in markdown and "❔ unknown" in markdown
        page = run_replay("report", "--format", "html", input=journal).stdout.decode()
        assert '<span class="badge unknown">unknown</span>' in page and "0 ok · 0 failed · 1 unknown" in page
        # no failure to gate on: --fail-on-error passes it, as it fails a run that says it failed
        assert run_replay("report", "--fail-on-error", input=journal).returncode == 0
    failed = STOPS + b'{"seq":3,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_failed","runId":"cut","payload":{}}\n'
    assert run_replay("report", "--fail-on-error", input=failed).returncode == 1


def test_fail_on_unknown_gates_on_runs_that_tell_no_end(tmp_path):
    """A CI gate that wants every run to say how it ended (an agent that crashed leaves a journal that just stops)."""
    completed = STOPS + b'{"seq":3,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_completed","runId":"cut","payload":{}}\n'
    assert run_replay("report", "--fail-on-unknown", input=completed).returncode == 0
    for journal in (STOPS, run_replay("heal", input=STOPS).stdout):
        gated = run_replay("report", "--fail-on-unknown", "--format", "json", input=journal)
        assert gated.returncode == 1 and json.loads(gated.stdout)["aggregate"]["runs"]["unknown"] == 1  # (written first)
        assert '"event":"report.unknown_runs"' in gated.stderr.decode() and errors_of(gated.stderr) == []
    two = tmp_path / "a.jsonl", tmp_path / "b.jsonl"  # (several files: summarized apart, reported as one)
    two[0].write_bytes(completed)
    two[1].write_bytes(STOPS)
    assert run_replay("report", "--fail-on-unknown", *map(str, two)).returncode == 1
    assert run_replay("report", "--fail-on-error", *map(str, two)).returncode == 0


def test_each_failed_gate_is_said_whatever_else_made_the_exit_1(tmp_path):
    """A line not read made the exit 1 already, and the gates were not looked at: a CI reader saw only
    E_JSONL_LINE_INVALID, never which run failed (hunt 26, g/01). And with both gates failing, only the first was said."""
    journal = tmp_path / "j.jsonl"
    ended_not = STOPS.replace(b'"runId":"cut"', b'"runId":"open"')
    journal.write_bytes(Path(TWO_RUNS).read_bytes() + ended_not + b"garbage\n")
    done = run_replay("report", "--fail-on-error", "--fail-on-unknown", str(journal))
    assert done.returncode == 1
    said = [record.get("code") or record["error"]["code"] for record in jsonl(done.stderr)]
    assert said == ["E_JSONL_LINE_INVALID", "E_RUNS_FAILED", "E_RUNS_STATUS_UNKNOWN"], done.stderr
    assert run_replay("report", str(journal)).returncode == 1  # (the line alone: exit 1, no gate said)


def test_counts_name_unknown_only_when_a_run_is():
    text = run_replay("report", TWO_RUNS).stdout.decode()
    assert text.startswith("replay report: 2 runs (1 ok, 1 error)\n") and "unknown" not in text


def test_inputs_are_not_modified(tmp_path):
    copy = tmp_path / "artifacts"
    shutil.copytree(ARTIFACTS, copy)
    before = {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    assert run_replay("report", "--in", str(copy), "--format", "html", "--out", str(tmp_path / "r.html")).returncode == 0
    assert {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()} == before


def test_summarize_and_report_stages_in_a_pipeline_config(tmp_path):
    config = tmp_path / "report.toml"
    config.write_text('chain = ["summarize", {type = "report", format = "json"}]\n')
    result = run_replay("run", str(config), TWO_RUNS)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["aggregate"]["runs"]["total"] == 2


@pytest.mark.parametrize("config, path, given", [
    ('chain = [{type = "report", format = "json"}]\n', "chain[0]", "dialect"),  # (as a chain has it: read, parse, dialect)
    ('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n[stages.sum]\ntype = "summarize"\n'
     'inputs = ["parse"]\n[stages.r]\ntype = "report"\ninputs = ["sum", "parse.errors"]\n', "stages.r.inputs", "parse.errors"),
])
def test_a_report_stage_given_no_summaries_is_refused_with_the_config(tmp_path, config, path, given):
    """It passed the config check, then ran and failed (E_CONFIG_INPUTS_INVALID with no path, exit 1, an empty report)."""
    (tmp_path / "wrong.toml").write_text(config)
    result = run_replay("run", str(tmp_path / "wrong.toml"), TWO_RUNS, BAD_LINES)  # (two inputs: it was an error each)
    assert result.returncode == 2 and result.stdout == b""
    [error] = errors_of(result.stderr)
    assert (error["code"], error["path"], error["received"]) == ("E_CONFIG_INPUTS_INVALID", path, given)


def test_summaries_written_by_one_config_are_reported_by_another(tmp_path):
    """One `summarize` per shard, one report of them all (what `report --workers` does), through the `summaries` stage."""
    (tmp_path / "summarize.toml").write_text('chain = ["summarize"]\n')
    (tmp_path / "report.toml").write_text('chain = ["summaries", {type = "report", format = "json"}]\n')
    written = run_replay("run", str(tmp_path / "summarize.toml"), TWO_RUNS)
    assert written.returncode == 0, written.stderr
    (tmp_path / "summaries.jsonl").write_bytes(written.stdout + b'{"type": "an event, no summary"}\n')
    result = run_replay("run", str(tmp_path / "report.toml"), str(tmp_path / "summaries.jsonl"))
    assert result.returncode == 1
    [error] = errors_of(result.stderr)
    assert (error["code"], error["stage"], error["line"]) == ("E_CONFIG_INPUTS_INVALID", "summaries", 3)
    assert json.loads(result.stdout)["runs"] == report_json(TWO_RUNS)["runs"]


# end to end with the real heal command -----------------------------------------------------------
def test_read_heal_report_end_to_end(tmp_path):
    pytest.importorskip("replay.stages.heal_summary")
    pytest.importorskip("replay.pipeline.cli.commands.heal")
    journal = tmp_path / "raw.jsonl"
    journal.write_text(
        '{"seq":1,"timestamp":"2026-03-01T12:00:00Z","type":"start","runId":"e2e","payload":{}}\n'
        '{"seq":2,"timestamp":"2026-03-01T12:00:01Z","type":"tool_start","runId":"e2e","payload":{"toolName":"t"}}\n'
        '{"seq":3,"timestamp":"2026-03-01T12:00:02Z","type":"tool_end","runId":"e2e","payload":{"toolName":"t"}}\n'
    )
    healed = run_replay("heal", input=run_replay("read", str(journal)).stdout)
    assert healed.returncode == 0, healed.stderr
    doc = report_json(input=healed.stdout)
    run = doc["runs"][0]
    assert run["runId"] == "e2e" and run["toolCalls"]["calls"][0]["status"] == "ok"
    assert run["repairs"]["total"] >= 2 and run["repairs"]["byRule"].get("alias", 0) >= 2
    assert doc["aggregate"]["repairs"] == run["repairs"]


VANISHING = (  # a, then b's lone orphaned result (pair_tool_calls drops it: b vanishes), then c
    b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"a","payload":{}}\n'
    b'{"seq":2,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_completed","runId":"a","payload":{}}\n'
    b'{"seq":1,"timestamp":"2026-03-01T12:00:02.000Z","type":"tool_completed","runId":"b","payload":{"callId":"x"}}\n'
    b'{"seq":1,"timestamp":"2026-03-01T12:00:03.000Z","type":"run_started","runId":"c","payload":{}}\n'
    b'{"seq":2,"timestamp":"2026-03-01T12:00:04.000Z","type":"run_completed","runId":"c","payload":{}}\n')


def test_the_repairs_of_a_run_heal_dropped_whole_are_no_other_runs(tmp_path):
    """Heal writes b's heal record at the end of the stream; the report added its repair to c, the last run. Now it
    shows it apart, in every format, under b's id, and the totals still count it."""
    journal = tmp_path / "v.jsonl"
    journal.write_bytes(VANISHING)
    healed = run_replay("heal", str(journal))
    assert healed.returncode == 0, healed.stderr
    assert healed.stdout.splitlines()[-1] == \
        b'{"$record":"heal","runId":"b","repairs":1,"byRule":{"pair_tool_calls":1},"runDropped":true}'
    doc = report_json(input=healed.stdout)
    assert [(r["runId"], r["repairs"]["total"]) for r in doc["runs"]] == [("a", 0), ("c", 0)]
    assert doc["aggregate"]["repairs"] == {"total": 1, "byRule": {"pair_tool_calls": 1}}
    assert doc["aggregate"]["unattributedRepairs"] == {
        "total": 1, "byRule": {"pair_tool_calls": 1},
        "runs": [{"runId": "b", "source": "<stdin>", "total": 1, "byRule": {"pair_tool_calls": 1}}]}
    text = run_replay("report", input=healed.stdout).stdout.decode()
    assert "repairs     1 (1 in no run of this report, listed below)" in text
    assert re.search(r"\n    b +<stdin> +1  pair_tool_calls 1\n", text)
    assert re.search(r"\nc +ok .* 0\n", text)  # c's row: no repairs
    markdown = run_replay("report", "--format", "markdown", input=healed.stdout).stdout.decode()
    assert "| b | \\<stdin\\> | 1 | pair\\_tool\\_calls 1 |" in markdown
    junit = ET.fromstring(run_replay("report", "--format", "junit", input=healed.stdout).stdout)
    suite = junit.find("testsuite")
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["repairs"] == properties["unattributedRepairs"] == "1"
    assert "b (<stdin>): 1 (pair_tool_calls 1)" in suite.find("system-out").text
    assert [c.find("system-out").text.splitlines()[-1] for c in suite.iter("testcase")] == ["repairs: 0 (-)"] * 2
    html = run_replay("report", "--format", "html", input=healed.stdout).stdout.decode()
    assert re.search(r'id="unattributed-repairs">.*<code>b</code></td><td><code>&lt;stdin&gt;</code></td>'
                     r'<td class="n">1</td>', html)
    # a file of whole runs heal dropped, reported with another: no run of 0 events (validate sees none either)
    only = tmp_path / "only.jsonl"
    only.write_bytes(VANISHING.splitlines(keepends=True)[2])
    (tmp_path / "h1.jsonl").write_bytes(healed.stdout)
    (tmp_path / "h2.jsonl").write_bytes(run_replay("heal", str(only)).stdout)
    paths = [str(tmp_path / "h1.jsonl"), str(tmp_path / "h2.jsonl")]
    one, two = (report_json("--workers", n, *paths) for n in ("1", "2"))
    assert one == two and one["aggregate"]["runs"]["total"] == 2
    assert [(u["runId"], u["source"]) for u in one["aggregate"]["unattributedRepairs"]["runs"]] == [
        ("b", paths[0]), ("b", paths[1])]
    validated = jsonl(run_replay("validate", *paths).stdout)
    assert sum(v["runs"] for v in validated) == 2


def test_capture_then_report_counts_each_run_once_with_its_repairs(tmp_path):
    pytest.importorskip("replay.pipeline.cli.commands.capture")
    runner = ROOT / "examples" / "runners" / "broken_trace_runner.py"
    if not runner.exists():
        pytest.skip("the example runner is not part of this build")
    captured = run_replay("capture", "--runner", str(runner), "What are my top holdings?", cwd=tmp_path)
    assert captured.returncode == 0, captured.stderr
    line = json.loads(captured.stdout.splitlines()[-1])
    from_artifacts = json.loads(run_replay("report", "--in", str(tmp_path / ".replay" / "artifacts"), "--format",
                                           "json").stdout)
    from_journal = json.loads(run_replay("report", "--in", str(tmp_path / ".replay" / "journal"), "--format",
                                         "json").stdout)
    assert [r["runId"] for r in from_artifacts["runs"]] == [line["runId"]]  # artifact + healed: counted once
    assert from_artifacts["runs"][0]["source"].endswith(".healed.json")
    assert from_artifacts["aggregate"]["repairs"]["total"] == line["repairs"] > 0
    assert from_journal["aggregate"]["repairs"] == from_artifacts["aggregate"]["repairs"]
    assert from_journal["aggregate"]["events"] == from_artifacts["aggregate"]["events"]


def test_strict_stops_at_the_first_bad_line_without_a_report(tmp_path):
    out = tmp_path / "report.json"
    result = run_replay("report", BAD_LINES, "--strict", "--out", str(out))
    assert result.returncode == 1 and [e["code"] for e in errors_of(result.stderr)] == ["E_JSONL_LINE_INVALID"]
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_run_record_without_events_still_gets_a_row(tmp_path):
    lonely = tmp_path / "lonely.jsonl"
    lonely.write_text('{"$record":"run","runId":"empty","status":"error","error":{"code":"E_RUNNER_START_FAILED",'
                      '"message":"no such interpreter"}}\n')
    for fmt in ("text", "markdown", "junit", "html"):
        result = run_replay("report", str(lonely), "--format", fmt)
        assert result.returncode == 0 and b"empty" in result.stdout and b"no such interpreter" in result.stdout
    run = report_json(str(lonely))["runs"][0]
    assert run["status"] == "error" and run["events"]["total"] == 0 and run["durationMs"] is None


def test_token_counts_beyond_a_double_are_summed_exactly(tmp_path: Path) -> None:
    """A usage count of 10**400 was an OverflowError (E_STAGE_FAILED) when checked as a float and summed as one."""
    huge = 10**400
    lines = [{"seq": k, "timestamp": f"2026-01-01T00:00:0{k}.000Z", "type": "assistant_message", "runId": run,
              "payload": {"usage": {"inputTokens": huge + k, "outputTokens": 5, "costUsd": 0.25}}}
             for run in ("r1", "r2") for k in (1, 2)]
    path = tmp_path / "huge.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    document = report_json(str(path))
    assert [run["usage"]["inputTokens"] for run in document["runs"]] == [2 * huge + 3] * 2
    assert document["aggregate"]["usage"] == {"inputTokens": 4 * huge + 6, "outputTokens": 20, "costUsd": 1,
                                              "runsWithUsage": 2}
    text = run_replay("report", str(path))
    assert text.returncode == 0 and b"  20,000,000,000," in text.stdout



def test_usage_beyond_a_double_beside_floats_is_summed_not_a_crash(tmp_path: Path) -> None:
    """A count of 10**400 beside a float count, a cost of 10**400 dollars, and float counts adding up past the
    largest double were an OverflowError (E_STAGE_FAILED) or a null: they are summed exactly, in every format."""
    huge, big = 10**400, 1e308
    lines = [{"$record": "run", "runId": "r1", "status": "ok"},
             *({"seq": k, "timestamp": f"2026-01-01T00:00:0{k}.000Z", "type": "assistant_message", "runId": "r1",
                "payload": {"usage": usage}} for k, usage in enumerate(
                 ({"inputTokens": huge, "outputTokens": big, "costUsd": 0.5},
                  {"inputTokens": 1.5, "outputTokens": big, "costUsd": 0.25}), 1)),
             {"$record": "run", "runId": "r2", "status": "ok", "usage": {"inputTokens": 1, "costUsd": huge}}]
    path = tmp_path / "huge.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    document = json.loads(run_replay("report", "--format", "json", str(path)).stdout, parse_float=Decimal)
    assert [run["usage"] for run in document["runs"]] == [  # (1e308 is 10**308 as written, not its double's digits)
        {"inputTokens": Decimal(f"{huge + 1}.5"), "outputTokens": 2 * 10**308, "costUsd": Decimal("0.75")},
        {"inputTokens": 1, "outputTokens": None, "costUsd": huge}]
    assert document["aggregate"]["usage"] == {"inputTokens": Decimal(f"{huge + 2}.5"), "outputTokens": 2 * 10**308,
                                              "costUsd": Decimal(f"{huge}.75"), "runsWithUsage": 2}
    for fmt in ("text", "markdown", "junit", "html"):
        done = run_replay("report", str(path), "--format", fmt)
        assert done.returncode == 0 and str(huge).encode() in done.stdout, (fmt, done.stderr)


def test_usage_of_whole_floats_and_big_integer_costs_is_counted_as_written(tmp_path: Path) -> None:
    """``1e40`` tokens were counted as its double's binary value (10000000000000000303786028427003666890752), and
    integer costs of 10**30 and 1 were summed as doubles (1000000000000000019884624838656): each is the number written,
    and sums of them exact, in every format, with --workers and from stdin, from run records and from events."""
    records = ('{"$record":"run","runId":"t1","status":"ok","usage":{"inputTokens":1e40,"outputTokens":1e30,'
               '"costUsd":1000000000000000000000000000000}}\n'
               '{"$record":"run","runId":"t2","status":"ok","usage":{"inputTokens":1,"outputTokens":0.5,"costUsd":1}}\n')
    events = "".join(f'{{"seq":{k},"timestamp":"2026-01-01T00:00:0{k}.000Z","type":"assistant_message","runId":"e",'
                     f'"payload":{{"usage":{usage}}}}}\n' for k, usage in enumerate(
                         ('{"inputTokens":1e40,"costUsd":1000000000000000000000000000000}',
                          '{"inputTokens":1,"costUsd":0.25}'), 1))
    path = tmp_path / "usage.jsonl"
    path.write_text(records + events)
    ten40, ten30 = 10**40, 10**30
    expected = [{"inputTokens": ten40, "outputTokens": ten30, "costUsd": ten30},
                {"inputTokens": 1, "outputTokens": Decimal("0.5"), "costUsd": 1},
                {"inputTokens": ten40 + 1, "outputTokens": None, "costUsd": Decimal(f"{ten30}.25")}]
    total = {"inputTokens": 2 * ten40 + 2, "outputTokens": Decimal(f"{ten30}.5"), "costUsd": Decimal(f"{2 * ten30 + 1}.25"),
             "runsWithUsage": 3}
    for args, stdin in ((("--workers", "1", str(path)), None), (("--workers", "2", str(path)), None),
                        (("-",), (records + events).encode())):
        done = run_replay("report", "--format", "json", *args, input=stdin)
        assert done.returncode == 0, done.stderr
        document = json.loads(done.stdout, parse_float=Decimal)
        assert [run["usage"] for run in document["runs"]] == expected, args
        assert document["aggregate"]["usage"] == total, args
    for fmt, shown in (("text", b"20,000,000,000,000,000,000,000,000,000,000,000,000,002"),
                       ("markdown", b"2000000000000000000000000000001.25"), ("junit", b"20000000000000000000000000000000000000002"),
                       ("html", b"$2000000000000000000000000000001.25")):
        done = run_replay("report", "--format", fmt, str(path))
        assert done.returncode == 0 and shown in done.stdout and b"0303786" not in done.stdout, (fmt, done.stderr)


def usage_journal(tmp_path: Path, *usages: str) -> Path:
    """A journal of one run per usage object, each written as given (JSON numbers a double does not hold too)."""
    text = "".join(f'{{"seq":1,"timestamp":"2026-01-01T00:00:01.000Z","type":"assistant_message","runId":"r{k}",'
                   f'"payload":{{"usage":{usage}}}}}\n' for k, usage in enumerate(usages, 1))
    path = tmp_path / "usage.jsonl"
    path.write_text(text)
    return path


def test_a_count_written_beyond_a_double_counts_as_the_whole_number_it_writes(tmp_path: Path) -> None:
    """``1e400`` (read as infinity) was no count at all, silently: the run showed 0 tokens in (or no usage). It is
    10**400, as the same number written out in full is."""
    path = usage_journal(tmp_path, '{"inputTokens":1e400,"outputTokens":5,"costUsd":2.5e400}',
                         '{"inputTokens":1' + "0" * 400 + ',"outputTokens":1.5e3}')
    done = run_replay("report", "--format", "json", str(path))
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    document = json.loads(done.stdout)
    assert [run["usage"] for run in document["runs"]] == [
        {"inputTokens": 10**400, "outputTokens": 5, "costUsd": 25 * 10**399},
        {"inputTokens": 10**400, "outputTokens": 1500, "costUsd": None}]
    assert document["aggregate"]["usage"]["inputTokens"] == 2 * 10**400
    text = run_replay("report", str(path))
    assert text.returncode == 0 and b"10,000,000,000," in text.stdout


def test_usage_counts_near_the_digit_limit_still_add_up_to_a_printable_total(tmp_path: Path) -> None:
    """Counts of almost as many digits as Python prints (``sys.get_int_max_str_digits``: 4300) were each taken, and the
    runs' total had one digit more: every format failed, E_STAGE_FAILED, nothing written. A count whose sums could pass
    the limit is no count (a warning, as one beyond it is), whether written out in full or with an exponent."""
    near = "9" * 4300
    path = usage_journal(tmp_path, '{"inputTokens":9e4299,"outputTokens":1}', '{"inputTokens":' + near + '}',
                         '{"inputTokens":2,"outputTokens":3}')
    done = run_replay("report", "--format", "json", str(path))
    assert done.returncode == 0, done.stderr
    assert [run["usage"] for run in json.loads(done.stdout)["runs"]] == [
        None, None, {"inputTokens": 2, "outputTokens": 3, "costUsd": None}]
    notices = [json.loads(line) for line in done.stderr.splitlines()]
    assert [(n["code"], n["line"]) for n in notices] == [("E_USAGE_NOT_COUNTED", 1), ("E_USAGE_NOT_COUNTED", 2)]
    assert run_replay("report", str(path)).returncode == 0


def test_a_usage_value_that_is_no_count_is_a_notice_and_the_rest_of_its_usage_counts(tmp_path: Path) -> None:
    """A token count written as a string (``"45"``), a negative one or ``true`` was left out in silence: the run
    showed "-" or 0 tokens and nothing said why. Each such field is named, with its line, in a warning on stderr; it
    is left out of the sums and the rest of its usage object still counts, in the event-by-event path (html) too."""
    path = usage_journal(tmp_path, '{"inputTokens":"45","outputTokens":7,"costUsd":0.5}',
                         '{"inputTokens":-5,"output_tokens":true,"costUsd":1}',
                         '{"inputTokens":"x","input_tokens":3}', '{"inputTokens":null,"outputTokens":2}')
    for fmt in ("json", "html"):
        done = run_replay("report", "--format", fmt, str(path))
        assert done.returncode == 0, done.stderr
        notices = [json.loads(line) for line in done.stderr.splitlines()]
        assert [(n["code"], n["level"], n["line"], n["runId"], n["received"]) for n in notices] == [
            ("E_USAGE_NOT_COUNTED", "warning", 1, "r1", 'inputTokens "45"'),
            ("E_USAGE_NOT_COUNTED", "warning", 2, "r2", "inputTokens -5, output_tokens true")], fmt
        assert notices[0]["message"].startswith('line 1: usage inputTokens "45" is not a count')
    runs = json.loads(run_replay("report", "--format", "json", str(path)).stdout)["runs"]
    assert [run["usage"] for run in runs] == [{"inputTokens": None, "outputTokens": 7, "costUsd": 0.5},
                                              {"inputTokens": None, "outputTokens": None, "costUsd": 1},
                                              {"inputTokens": 3, "outputTokens": None, "costUsd": None},
                                              {"inputTokens": None, "outputTokens": 2, "costUsd": None}]
    record = tmp_path / "record.jsonl"  # the run record's own usage: the notice names its line
    record.write_text('{"$record":"run","runId":"r","status":"ok","usage":{"inputTokens":"12","outputTokens":4}}\n')
    done = run_replay("report", "--format", "json", str(record))
    [notice] = [json.loads(line) for line in done.stderr.splitlines()]
    assert (done.returncode, notice["line"], notice["received"]) == (0, 1, 'inputTokens "12"')
    assert json.loads(done.stdout)["runs"][0]["usage"] == {"inputTokens": None, "outputTokens": 4, "costUsd": None}


def test_a_usage_number_no_count_holds_is_a_notice_and_the_run_shows_no_usage(tmp_path: Path) -> None:
    """A number beyond a double that is no whole number (or has more digits than replay reads) cannot be counted: a
    warning on stderr names its line and field, its usage object counts for nothing, and the report goes on."""
    fraction = "1." + "0" * 400 + "1e400"
    path = usage_journal(tmp_path, '{"inputTokens":7,"outputTokens":5}',
                         '{"inputTokens":' + fraction + ',"outputTokens":5}', '{"costUsd":1e5000}')
    done = run_replay("report", "--format", "json", str(path))
    assert done.returncode == 0, done.stderr
    assert [run["usage"] for run in json.loads(done.stdout)["runs"]] == [{"inputTokens": 7, "outputTokens": 5,
                                                                          "costUsd": None}, None, None]
    notices = [json.loads(line) for line in done.stderr.splitlines()]
    assert [(n["code"], n["level"], n["event"], n["source"], n["line"], n["runId"]) for n in notices] == [
        ("E_USAGE_NOT_COUNTED", "warning", "report.notice", str(path), 2, "r2"),
        ("E_USAGE_NOT_COUNTED", "warning", "report.notice", str(path), 3, "r3")]
    assert notices[0]["received"].startswith("inputTokens 1.000") and notices[1]["received"] == "costUsd 1e5000"
    assert notices[0]["message"].startswith("line 2: usage inputTokens ") and notices[0]["howToFix"]
    record = tmp_path / "record.jsonl"  # the run record's own usage: the notice names its line
    record.write_text('{"$record":"run","runId":"r","status":"ok","usage":{"outputTokens":' + fraction + '}}\n')
    done = run_replay("report", "--format", "json", str(record))
    [notice] = [json.loads(line) for line in done.stderr.splitlines()]
    assert (done.returncode, notice["line"], json.loads(done.stdout)["runs"][0]["usage"]) == (0, 1, None)


def test_negative_usage_is_not_counted(tmp_path: Path) -> None:
    """validate holds a count or cost to be a number >= 0: a negative one is not summed (it took -5 tokens off)."""
    lines = [{"seq": k, "timestamp": f"2026-01-01T00:00:0{k}.000Z", "type": "assistant_message", "runId": "r1",
              "payload": {"usage": usage}} for k, usage in enumerate(
                 ({"inputTokens": -5, "outputTokens": 3, "costUsd": -1},
                  {"inputTokens": 10, "outputTokens": "7", "costUsd": 0.5}), 1)]
    path = tmp_path / "negative.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    document = report_json(str(path))
    assert document["runs"][0]["usage"] == {"inputTokens": 10, "outputTokens": 3, "costUsd": 0.5}


def test_a_dropped_runs_heal_record_is_no_later_runs_of_its_id(tmp_path):
    """The heal record of a run heal dropped whole comes at the end, after the last run, and here names that run's id
    too: it says it is of a dropped run (``runDropped``), so the report, the OTLP export and capture's artifacts give it
    to no run, where the id alone gave it to the last d."""
    healed = run_replay("heal", input=SAME_ID_DROPPED)
    assert healed.returncode == 0, healed.stderr
    assert healed.stdout.splitlines()[-1] == \
        b'{"$record":"heal","runId":"d","repairs":1,"byRule":{"pair_tool_calls":1},"runDropped":true}'
    doc = report_json(input=healed.stdout)
    assert [(r["runId"], r["repairs"]["total"]) for r in doc["runs"]] == [("a", 0), ("b", 0), ("d", 0)]
    assert [(u["runId"], u["total"]) for u in doc["aggregate"]["unattributedRepairs"]["runs"]] == [("d", 1)]
    exported = run_replay("export", "--otlp", input=healed.stdout)
    assert exported.returncode == 0, exported.stderr
    spans = [span for line in jsonl(exported.stdout) for rs in line["resourceSpans"] for ss in rs["scopeSpans"]
             for span in ss["spans"] if span["name"].startswith("invoke_agent")]
    assert len(spans) == 3 and not [a for s in spans for a in s["attributes"] if a["key"] == "replay.repairs"]


# leap seconds ------------------------------------------------------------------------------------------------
def test_a_run_over_a_leap_second_is_reported_from_and_to_its_own_times(tmp_path: Path):
    """The real executable: a run that ends in a leap second ends at second 60 (the latest of its leap seconds by
    fraction, in whatever zone it was written), and durations count a leap second as 23:59:59.999999 UTC."""
    events = [
        {"seq": 1, "timestamp": "2016-12-31T23:59:58.000Z", "type": "run_started", "runId": "r", "payload": {}},
        {"seq": 2, "timestamp": "2016-12-31T23:59:59.000Z", "type": "tool_called", "runId": "r",
         "payload": {"callId": "c1", "toolName": "bash"}},
        {"seq": 3, "timestamp": "2016-12-31T18:59:60.750-05:00", "type": "tool_completed", "runId": "r",
         "payload": {"callId": "c1"}},
        {"seq": 4, "timestamp": "2016-12-31T23:59:60.250Z", "type": "run_completed", "runId": "r", "payload": {}},
    ]
    path = tmp_path / "leap.jsonl"
    path.write_bytes(b"".join(json.dumps(e).encode() + b"\n" for e in events))
    done = run_replay("report", "--format", "json", str(path), process=True)
    assert (done.returncode, done.stderr) == (0, b"")
    document = json.loads(done.stdout)
    (run,) = document["runs"]
    assert (run["startedAt"], run["endedAt"], run["durationMs"]) == ("2016-12-31T23:59:58.000Z", "2016-12-31T23:59:60.750Z",
                                                                     1999.999)
    assert [call["durationMs"] for call in run["toolCalls"]["calls"]] == [999.999]
    agg = document["aggregate"]
    assert (agg["startedAt"], agg["endedAt"]) == ("2016-12-31T23:59:58.000Z", "2016-12-31T23:59:60.750Z")
    text = run_replay("report", str(path), process=True)
    assert text.returncode == 0 and "2016-12-31T23:59:58.000Z .. 2016-12-31T23:59:60.750Z" in text.stdout.decode()


def test_a_failed_tool_result_that_names_no_tool_is_listed_under_its_calls_tool(tmp_path: Path) -> None:
    """Most tool results name no tool, only their call's id: a failed one was listed with no tool ("-", ``null``)
    among the errors, though its call, paired in the same report, names it (examples/journals/two-runs.jsonl)."""
    path = tmp_path / "failed.jsonl"
    path.write_text("".join(json.dumps(event) + "\n" for event in [
        {"seq": 1, "timestamp": "2026-01-01T00:00:00Z", "type": "tool_called", "runId": "r",
         "payload": {"callId": "c1", "toolName": "http_get"}},
        {"seq": 2, "timestamp": "2026-01-01T00:00:01Z", "type": "tool_called", "runId": "r", "payload": {"toolName": "ls"}},
        {"seq": 3, "timestamp": "2026-01-01T00:00:02Z", "type": "tool_failed", "runId": "r",
         "payload": {"callId": "c1", "error": "timed out"}},
        {"seq": 4, "timestamp": "2026-01-01T00:00:03Z", "type": "tool_failed", "runId": "r",
         "payload": {"callId": "c9", "error": "no call"}},
        {"seq": 5, "timestamp": "2026-01-01T00:00:04Z", "type": "tool_failed", "runId": "r",
         "payload": {"toolName": "ls", "error": "denied"}}]))
    for fmt in ("json", "html"):  # (event by event, with a timeline, too)
        done = run_replay("report", "--format", fmt, "--out", str(tmp_path / f"r.{fmt}"), str(path))
        assert done.returncode == 0, done.stderr
    [run] = json.loads((tmp_path / "r.json").read_text())["runs"]
    assert [(e["message"], e["toolName"]) for e in run["errors"]] == [
        ("timed out", "http_get"), ("no call", None), ("denied", "ls")]
    text = run_replay("report", str(path)).stdout.decode()
    assert re.search(r"tool_failed +- +http_get +3 +timed out", text), text


def test_markdown_and_html_headlines_count_one_run_and_one_input_problem_in_the_singular(tmp_path: Path) -> None:
    """The Markdown headline and the HTML subtitle said "1 runs" (text says "1 run"); a count agrees with its noun."""
    path = tmp_path / "one.jsonl"
    path.write_text('{"$record":"run","runId":"only","status":"ok"}\n')
    markdown = run_replay("report", "--format", "markdown", str(path)).stdout.decode()
    assert "**1 run**: 1 ok" in markdown and "1 runs" not in markdown
    html = run_replay("report", "--format", "html", str(path)).stdout.decode()
    assert '<p class="sub">1 run · ' in html and "1 runs" not in html
    two = run_replay("report", "--format", "markdown", TWO_RUNS).stdout.decode()
    assert "**2 runs**: " in two
    torn = tmp_path / "torn.jsonl"  # (and one input problem is "1 input problem")
    torn.write_text('{"$record":"run","runId":"only","status":"ok"}\n{"seq":1,"timest')
    markdown = run_replay("report", "--format", "markdown", str(torn)).stdout.decode()
    assert "> **1 input problem**: E\\_JSONL\\_LINE\\_TORN 1" in markdown, markdown


def test_a_number_beyond_a_double_is_shown_as_written_in_every_format(tmp_path: Path) -> None:
    """A seq written ``1e400`` (read as infinity) showed as ``inf`` in the text, Markdown and HTML reports, while JSON
    wrote it back as ``1e400``: a report shows a number as it was written (``ExactNumber`` is its text)."""
    path = tmp_path / "huge-seq.jsonl"
    path.write_text('{"seq":1e400,"timestamp":"2026-01-01T00:00:00Z","type":"tool_called","runId":"s",'
                    '"payload":{"callId":"c","toolName":"t"}}\n'
                    '{"seq":2,"timestamp":"2026-01-01T00:00:01Z","type":"tool_completed","runId":"s","payload":{"callId":"c"}}\n')
    for fmt in ("text", "markdown", "html", "json"):
        done = run_replay("report", "--format", fmt, str(path))
        assert done.returncode == 0, done.stderr
        assert b"1e400" in done.stdout and b"inf" not in done.stdout.replace(b"info", b""), (fmt, done.stdout)


def test_a_run_that_tells_no_time_is_undated_in_a_healed_report_not_1970():
    """A run with no timestamp anywhere (a mini-swe-agent trajectory) gets the Unix epoch from heal (fix_timestamp's
    time of last resort); its report dated it 1970 and stretched the aggregate span from 1970 to the other runs'
    end. Such a run is undated (no start, end or duration: `-`), and the aggregate span is the dated runs' own."""
    corpus = ROOT / "tests" / "fixtures" / "corpus"
    healed = run_replay("heal", str(corpus / "mini-swe-agent" / "github_issue.traj.json"),
                        str(corpus / "openhands" / "basic.json"))
    assert healed.returncode == 0 and b"1970-01-01T00:00:00.000Z" in healed.stdout, healed.stderr
    done = run_replay("report", "--format", "json", input=healed.stdout)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    undated, dated = report["runs"]
    assert (undated["runId"], undated["startedAt"], undated["endedAt"], undated["durationMs"]) == (
        "github_issue", None, None, None)
    assert (dated["startedAt"], dated["endedAt"]) == ("2025-01-27T22:44:56.900Z", "2025-01-27T22:45:18.405Z")
    span = report["aggregate"]
    assert (span["startedAt"], span["endedAt"], span["durationMs"]) == (
        dated["startedAt"], dated["endedAt"], dated["durationMs"])
    for how in ("text", "markdown", "html"):
        shown = run_replay("report", "--format", how, input=healed.stdout)
        assert shown.returncode == 0 and b"1970" not in shown.stdout, how


def test_report_reads_heals_built_in_aliases_as_the_types_they_stand_for(tmp_path):
    """`replay report` of a journal not healed yet did not count `tool_start`/`tool_end` (aliases heal renames) as
    tool calls, nor `run_end` as how the run ended: until heal renamed them, the report was of another run. It reads
    them as their canonical types (the same table heal's `alias` stage renames by), and leaves the stream as it is."""
    from replay.pipeline.model.healing import BUILTIN_ALIASES

    events = [
        {"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_start", "runId": "r1", "payload": {}},
        {"seq": 2, "timestamp": "2026-03-01T12:00:01.000Z", "type": "tool_start", "runId": "r1",
         "payload": {"callId": "c1", "toolName": "search"}},
        {"seq": 3, "timestamp": "2026-03-01T12:00:02.000Z", "type": "tool_end", "runId": "r1",
         "payload": {"callId": "c1", "toolName": "search"}},
        {"seq": 4, "timestamp": "2026-03-01T12:00:03.000Z", "type": "tool_call", "runId": "r1",
         "payload": {"callId": "c2", "toolName": "fetch"}},
        {"seq": 5, "timestamp": "2026-03-01T12:00:04.000Z", "type": "tool_error", "runId": "r1",
         "payload": {"callId": "c2", "error": {"code": "E_TIMEOUT", "message": "timed out"}}},
        {"seq": 6, "timestamp": "2026-03-01T12:00:05.000Z", "type": "llm_message", "runId": "r1", "payload": {}},
        {"seq": 7, "timestamp": "2026-03-01T12:00:06.000Z", "type": "run_end", "runId": "r1", "payload": {}},
    ]
    assert all(e["type"] in BUILTIN_ALIASES for e in events)
    path = tmp_path / "aliased.jsonl"
    path.write_bytes(b"".join(json.dumps(e).encode() + b"\n" for e in events))
    healed = run_replay("heal", str(path))
    for how, given in (("unhealed", {"args": (str(path),)}), ("healed", {"args": (), "input": healed.stdout})):
        done = run_replay("report", "--format", "json", *given["args"], input=given.get("input"))
        assert done.returncode == 0, (how, done.stderr)
        [run] = json.loads(done.stdout)["runs"]
        calls = run["toolCalls"]
        assert (run["status"], calls["total"], calls["ok"], calls["error"]) == ("ok", 2, 1, 1), how
        assert run["events"]["byType"] == {"assistant_message": 1, "run_completed": 1, "run_started": 1,
                                           "tool_called": 2, "tool_completed": 1, "tool_failed": 1}, how
        assert [(e["kind"], e["code"], e["toolName"]) for e in run["errors"]] == [("tool_failed", "E_TIMEOUT", "fetch")], how
    html = run_replay("report", "--format", "html", str(path))  # (a timeline reads the events one by one)
    assert html.returncode == 0 and b"tool_start" not in html.stdout and b"E_TIMEOUT" in html.stdout
