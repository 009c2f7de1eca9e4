"""Journals with half of a surrogate pair in a string (``"\\ud83d"``, valid JSON a JavaScript writer leaves where it
cut a string inside an emoji), through every command as real processes: nothing dropped, nothing crashes, what is
written stays valid UTF-8 with the half as its escape."""

from __future__ import annotations

import json

import orjson
from conftest import run_replay

START = rb'{"seq":1,"timestamp":"2026-01-01T00:00:00Z","type":"run_started","runId":"r\udc00","payload":{"prompt":"p \ud83d"}}'
CALL = (rb'{"seq":7,"timestamp":"2026-01-01T00:00:01Z","type":"tool_call","runId":"r\udc00",'
        rb'"payload":{"callId":"c","toolName":"t\ud83d","args":{"k\ud83d":"v"}}}')
FAILED = (rb'{"seq":3,"timestamp":"2026-01-01T00:00:02Z","type":"tool_failed","runId":"r\udc00",'
          rb'"payload":{"callId":"c","toolName":"t\ud83d","error":"boom \ud83d"}}')
END = rb'{"seq":4,"timestamp":"2026-01-01T00:00:03Z","type":"run_completed","runId":"r\udc00","payload":{}}'


def _journal(tmp_path, *lines: bytes):
    path = tmp_path / "cut.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_heal_keeps_each_event_and_writes_a_changed_one_with_the_half_escaped(tmp_path):
    path = _journal(tmp_path, START, CALL, FAILED, END)
    result = run_replay("heal", str(path), "--log", str(tmp_path / "log.jsonl"))
    assert result.returncode == 0 and result.stderr == b""
    out = result.stdout.splitlines()
    assert out[0] == START and out[2:4] == [FAILED, END]  # (unchanged: its bytes)
    assert json.loads(out[1]) == {**json.loads(CALL), "type": "tool_called", "seq": 2}  # the alias and seq repaired
    assert rb'"t\ud83d"' in out[1] and rb'"k\ud83d"' in out[1]
    result.stdout.decode("utf-8")
    assert [json.loads(line)["rule"] for line in (tmp_path / "log.jsonl").read_bytes().splitlines()] == ["alias", "renumber"]


def test_validate_finds_it_valid_and_says_a_fault_beside_it(tmp_path):
    valid = _journal(tmp_path, START, FAILED.replace(b'"seq":3', b'"seq":2'), END.replace(b'"seq":4', b'"seq":3'))
    assert run_replay("validate", str(valid)).returncode == 0
    bad = _journal(tmp_path, START, rb'{"seq":2,"type":"x","runId":"r\udc00","payload":{},"t":"\ud83d", }', END)
    result = run_replay("validate", str(bad))
    [error] = [e for e in (json.loads(line)["error"] for line in result.stderr.splitlines())
               if e["code"] == "E_JSONL_LINE_INVALID"]
    assert (error["line"], error["column"], error["message"]) == (2, 64, "line 2 is not valid JSON: trailing comma is "
                                                                  "not allowed at column 64")


def test_report_in_every_format_shows_it_as_its_escape(tmp_path):
    path = str(_journal(tmp_path, START, CALL, FAILED, END))
    for fmt in ("text", "json", "markdown", "junit", "html"):
        result = run_replay("report", "--format", fmt, path)
        assert result.returncode == 0, (fmt, result.stderr)
        result.stdout.decode("utf-8")
    text = run_replay("report", path).stdout.decode()
    assert "r\\udc00" in text and "boom \\ud83d" in text


def test_walk_diff_export_and_heal_into_a_folder_take_it(tmp_path):
    path = _journal(tmp_path, START, CALL, FAILED, END)
    walk = run_replay("walk", str(path))
    assert walk.returncode == 0 and b"tool=t\\ud83d" in walk.stdout
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"\n".join([START, CALL, FAILED.replace(b"boom", b"bang"), END]) + b"\n")
    diff = run_replay("diff", str(path), str(other))
    assert diff.returncode == 1 and b"E_RUNS_DIFFER" in diff.stderr and b'"boom \\ud83d" -> "bang \\ud83d"' in diff.stdout
    export = run_replay("export", "--otlp", str(path))
    assert export.returncode == 0 and json.loads(export.stdout)["resourceSpans"]
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "cut.jsonl").write_bytes(path.read_bytes())
    healed = run_replay("heal", "--in", str(folder), "--out", str(tmp_path / "out"))
    assert healed.returncode == 0, healed.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if not p.name.startswith(".")) == [
        "cut.heal-log.json", "cut.healed.jsonl"]


def test_a_claude_code_message_cut_inside_an_emoji_is_mapped(tmp_path):
    line = (rb'{"type":"assistant","uuid":"u1","sessionId":"s","timestamp":"2026-01-01T00:00:00Z",'
            rb'"message":{"role":"assistant","content":[{"type":"text","text":"done \ud83d"}]}}')
    result = run_replay("read", "--dialect", "claude-code", str(_journal(tmp_path, line)))
    assert result.returncode == 0, result.stderr
    events = [json.loads(x) for x in result.stdout.splitlines()]
    assert [e["payload"].get("text") for e in events if e.get("type") == "assistant_message"] == ["done \ud83d"]


def test_what_goes_to_stderr_is_json_any_reader_takes(tmp_path):
    doubled = (rb'{"seq":2,"timestamp":"2026-01-01T00:00:01Z","type":"tool_result","runId":"r\udc00",'
               rb'"payload":{"callId":"c","k\ud83d":1,"k\ud83d":2}}')
    healed = run_replay("heal", str(_journal(tmp_path, START, doubled, END)))
    checked = run_replay("validate", str(_journal(tmp_path, START, rb'{"seq":"x\udc00","type":"a","runId":"r",'
                                                                  rb'"timestamp":"2026-01-01T00:00:01Z","payload":{}}')))
    lines = healed.stderr.splitlines() + checked.stderr.splitlines()
    assert b'"E_JSON_DUPLICATE_KEY"' in healed.stderr and b'"E_ARTIFACT_EVENT_SEQ_INVALID"' in checked.stderr
    shown = [orjson.loads(line) for line in lines]  # (orjson refuses a lone \ud83d escape: none is written here)
    assert ['$.payload["k\\ud83d"]'] in [note.get("keys") for note in shown]


def test_a_half_that_looks_like_a_name_byte_is_shown_as_its_escape_too(tmp_path):
    """U+DC80..U+DCFF is also how Python holds a byte of a name that is not UTF-8: from the data, it is still a half."""
    # (one run: the call names the run's id too; `diff` takes one run a side)
    path = _journal(tmp_path, START.replace(rb"\udc00", rb"\udcff"),
                    CALL.replace(rb"t\ud83d", rb"t\udcff").replace(rb"r\udc00", rb"r\udcff"))
    walk = run_replay("walk", str(path))
    (tmp_path / "b").mkdir()
    diff = run_replay("diff", str(path), str(_journal(tmp_path / "b", START, END)))
    for out in (walk.stdout, diff.stdout):
        out.decode("utf-8")
    assert b"tool=t\\udcff" in walk.stdout and b"\\udcff" in diff.stdout
