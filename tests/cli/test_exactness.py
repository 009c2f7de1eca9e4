"""Nothing lost, nothing changed (issue 7): exact integers in everything replay re-writes, torn vs invalid
last lines, the same audit trail through a pipe as from a file, duplicate keys said out loud."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from conftest import FIXTURES, errors_of, jsonl, run_replay

BIG = 123456789012345678901234567890
NEG = -(2**80)
SAY = str(FIXTURES / "runners" / "say.py")


def exact(data: bytes) -> list[dict]:
    """JSONL parsed with the standard library: integers of any size stay exact."""
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def event(seq: int, etype: str, **extra) -> dict:
    return {"seq": seq, "timestamp": "2026-03-01T12:00:00.000Z", "type": etype, "runId": "r1", "payload": {}, **extra}


def text(*records: dict) -> bytes:
    return b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records)


# 1. integers beyond 64 bits --------------------------------------------------------------------------
def test_heal_keeps_big_integers_exact_in_an_event_it_changes(tmp_path: Path):
    src = tmp_path / "a.jsonl"
    src.write_bytes(text(event(1, "run_started"), event(2, "tool_end", payload={"n": BIG, "m": [NEG, 1.5, -0.0]}),
                         event(3, "run_completed")))
    done = run_replay("heal", str(src))
    assert done.returncode == 0, done.stderr
    changed = exact(done.stdout)[1]
    assert changed["type"] == "tool_completed"  # alias: the event was written anew
    assert changed["payload"]["n"] == BIG and changed["payload"]["m"][0] == NEG
    assert str(BIG).encode() in done.stdout and b"e+29" not in done.stdout


def test_heal_log_and_diagnostics_keep_big_integers_exact(tmp_path: Path):
    src = tmp_path / "a.jsonl"
    src.write_bytes(text(event(1, "run_started"), {**event(2, "run_completed"), "seq": BIG}))
    log = tmp_path / "log.jsonl"
    done = run_replay("heal", str(src), "--log", str(log))
    assert done.returncode == 0, done.stderr
    [entry] = [e for e in exact(log.read_bytes()) if e["rule"] == "renumber"]
    assert entry["seqBefore"] == BIG


def test_capture_files_keep_big_integers_exact(tmp_path: Path):
    output = ('{"status":"ok","response":"done","usage":{"inputTokens":BIG},"events":['
              '{"type":"tool_end","payload":{"n":BIG}},{"type":"assistant_message","payload":{"big":NEG}}]}'
              ).replace("BIG", str(BIG)).replace("NEG", str(NEG))
    done = run_replay("capture", "--runner", SAY, "--context", json.dumps({"stdout": output}), "the prompt",
                      cwd=tmp_path, env={"REPLAY_RUNNER": ""})
    assert done.returncode == 0, done.stderr
    files = jsonl(done.stdout)[0]["files"]
    for kind in ("artifact", "healed", "journal"):
        data = (tmp_path / files[kind]).read_bytes()
        assert str(BIG).encode() in data and str(NEG).encode() in data, kind
        assert b"e+29" not in data and b"e+24" not in data, kind
    healed = json.loads((tmp_path / files["healed"]).read_text())
    assert [e["payload"] for e in healed["events"] if e["type"] == "tool_completed"] == [{"n": BIG}]


def test_report_json_keeps_big_integers_exact(tmp_path: Path):
    src = tmp_path / "a.jsonl"
    src.write_bytes(text({"$record": "run", "runId": "r1", "status": "ok", "usage": {"inputTokens": BIG}},
                         event(1, "run_started"), event(2, "run_completed")))
    done = run_replay("report", str(src), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert str(BIG).encode() in done.stdout and b"e+29" not in done.stdout


def test_walk_json_keeps_big_integers_exact(tmp_path: Path):
    src = tmp_path / "a.jsonl"
    src.write_bytes(text(event(1, "run_started", payload={"n": BIG}), event(2, "run_completed")))
    done = run_replay("walk", str(src), "--json")
    assert done.returncode == 0, done.stderr
    assert str(BIG).encode() in done.stdout and b"e+29" not in done.stdout


# 2. only a last line with no newline is torn ---------------------------------------------------------
def test_heal_reports_a_complete_invalid_last_line_instead_of_dropping_it_as_torn(tmp_path: Path):
    good = text(event(1, "run_started"), event(2, "run_completed"))
    src = tmp_path / "a.jsonl"
    src.write_bytes(good + b"NaN\n")
    log = tmp_path / "log.jsonl"
    done = run_replay("heal", str(src), "--log", str(log))
    assert done.returncode == 1
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_JSONL_LINE_INVALID" and error["line"] == 3 and error["offset"] == len(good)
    assert b"drop_torn_line" not in log.read_bytes()


def test_heal_drops_and_logs_a_last_line_without_newline_as_torn(tmp_path: Path):
    good = text(event(1, "run_started"), event(2, "run_completed"))
    src = tmp_path / "a.jsonl"
    src.write_bytes(good + b'{"seq":3,"ty')
    log = tmp_path / "log.jsonl"
    done = run_replay("heal", str(src), "--log", str(log))
    assert done.returncode == 0, done.stderr
    [entry] = exact(log.read_bytes())
    assert entry["rule"] == "drop_torn_line" and entry["offset"] == len(good) and entry["original"] == '{"seq":3,"ty'


# 6. a pipe heals what a file does; each repair is one line ---------------------------------------------
BROKEN = Path(__file__).resolve().parents[2] / "examples" / "journals" / "broken.jsonl"


def _without_source(entries: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k not in ("source", "line", "offset", "message", "runId", "value")} for e in entries]


def test_a_pipe_logs_the_torn_line_a_file_logs_and_exits_the_same_way(tmp_path: Path):
    file_log, pipe_log = tmp_path / "file.jsonl", tmp_path / "pipe.jsonl"
    by_file = run_replay("heal", str(BROKEN), "--log", str(file_log))
    read = run_replay("read", str(BROKEN))
    by_pipe = run_replay("heal", "--log", str(pipe_log), input=read.stdout)
    assert by_pipe.returncode == by_file.returncode
    file_entries, pipe_entries = exact(file_log.read_bytes()), exact(pipe_log.read_bytes())
    assert [e["rule"] for e in pipe_entries] == [e["rule"] for e in file_entries]
    assert "drop_torn_line" in [e["rule"] for e in pipe_entries]
    [torn_file] = [e for e in file_entries if e["rule"] == "drop_torn_line"]
    [torn_pipe] = [e for e in pipe_entries if e["rule"] == "drop_torn_line"]
    assert (torn_pipe["line"], torn_pipe["offset"], torn_pipe["original"]) == \
        (torn_file["line"], torn_file["offset"], torn_file["original"])
    assert _without_source(pipe_entries) == _without_source(file_entries)


def test_a_pipe_reports_an_invalid_line_a_file_reports_at_the_same_line_and_offset(tmp_path: Path):
    good = text(event(1, "run_started"))
    src = tmp_path / "a.jsonl"
    src.write_bytes(good + b"oops\n" + text(event(2, "run_completed")))
    by_file = run_replay("heal", str(src))
    by_pipe = run_replay("heal", input=run_replay("read", str(src)).stdout)
    assert by_file.returncode == by_pipe.returncode == 1
    [a], [b] = errors_of(by_file.stderr), errors_of(by_pipe.stderr)
    assert (a["code"], a["line"], a["offset"], a["message"]) == (b["code"], b["line"], b["offset"], b["message"])
    assert by_pipe.stdout == by_file.stdout


def test_the_heal_records_repair_count_is_the_number_of_lines_in_the_log(tmp_path: Path):
    log = tmp_path / "log.jsonl"
    done = run_replay("heal", str(BROKEN), "--log", str(log))
    [heal] = [r for r in jsonl(done.stdout) if r.get("$record") == "heal"]
    entries = jsonl(log.read_bytes())
    assert heal["repairs"] == len(entries)
    assert sum(heal["byRule"].values()) == len(entries)
    assert heal["byRule"]["renumber"] == len([e for e in entries if e["rule"] == "renumber"])


def test_directory_mode_heal_log_summary_counts_one_per_entry(tmp_path: Path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.jsonl").write_bytes(text(event(5, "run_started"), event(6, "run_completed"), event(7, "run_completed")))
    done = run_replay("heal", "--in", str(src), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    [log] = (tmp_path / "out").rglob("*.heal-log.json")
    document = json.loads(log.read_text())
    assert document["summary"]["total"] == len(document["repairs"])


def test_report_counts_repairs_as_the_heal_log_lines(tmp_path: Path):
    healed = run_replay("heal", str(BROKEN))
    done = run_replay("report", "--format", "json", input=healed.stdout)
    [heal] = [r for r in jsonl(healed.stdout) if r.get("$record") == "heal"]
    report = json.loads(done.stdout)
    assert str(heal["repairs"]) in json.dumps(report)


# duplicate keys ---------------------------------------------------------------------------------------
def test_validate_can_warn_about_a_key_written_twice_and_does_not_fail(tmp_path: Path):
    src = tmp_path / "a.jsonl"
    line = b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r1","payload":{"a":1,"a":2}}\n'
    src.write_bytes(line + text(event(2, "run_completed")))  # a whole valid run: the screen's fast lane takes it
    plain = run_replay("validate", "--in", str(src))
    assert plain.returncode == 0 and b"E_JSON_DUPLICATE_KEY" not in plain.stderr  # opt-in: it costs a full parse
    spec = (Path(__file__).resolve().parents[2] / "pipeline" / "specs" / "validate.toml").read_text()
    config = tmp_path / "validate-dups.toml"
    config.write_text(spec.replace('type = "validate"', 'type = "validate"\nduplicate_keys = true', 1))
    done = run_replay("run", str(config), str(src))
    assert done.returncode == 0, done.stderr
    notices = [json.loads(x) for x in done.stderr.splitlines() if b"E_JSON_DUPLICATE_KEY" in x]
    assert len(notices) == 1 and notices[0]["keys"] == ["$.payload.a"] and notices[0]["line"] == 1
    assert notices[0]["level"] == "warning"


def test_heal_keeps_the_bytes_of_an_untouched_line_with_a_duplicate_key_and_warns_when_it_rewrites_one(tmp_path: Path):
    kept = b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r1","payload":{"a":1,"a":2}}'
    changed = b'{"seq":2,"timestamp":"2026-03-01T12:00:00.000Z","type":"tool_end","runId":"r1","payload":{"b":1,"b":2}}'
    src = tmp_path / "a.jsonl"
    src.write_bytes(kept + b"\n" + changed + b"\n" + text(event(3, "run_completed")))
    done = run_replay("heal", str(src))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(b"\n")[0] == kept
    notices = [json.loads(x) for x in done.stderr.splitlines() if b"E_JSON_DUPLICATE_KEY" in x]
    assert [(n["line"], n["keys"]) for n in notices] == [(2, ["$.payload.b"])]


# found by the property test: orjson writes 255 levels of nesting but reads 1024 -----------------------
def test_heal_rewrites_an_event_nested_deeper_than_orjson_writes(tmp_path: Path):
    deep = "[" * 400 + str(BIG) + "]" * 400
    src = tmp_path / "a.jsonl"
    line = '{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"tool_end","runId":"r1","payload":{"x":' + deep + "}}"
    src.write_bytes(text(event(1, "run_started")).replace(b'"seq":1', b'"seq":0') + line.encode() + b"\n")
    done = run_replay("heal", "--no-summary", str(src))
    assert done.returncode == 0, done.stderr
    changed = done.stdout.split(b"\n")[1]
    assert json.loads(changed)["payload"] == json.loads(line)["payload"]


def test_numbers_beyond_a_double_are_valid_json_and_written_back_as_read(tmp_path: Path):
    """orjson refuses 1e400 (not a double); it is valid JSON: read passes it, heal rewrites it digit for digit."""
    huge = "1" + "0" * 400
    src = tmp_path / "a.jsonl"
    line = ('{"seq":2,"timestamp":"2026-03-01T12:00:00.000Z","type":"tool_end","runId":"r1",'
            '"payload":{"x":1e400,"y":-2.5E+999,"z":' + huge + "}}")
    src.write_bytes(text(event(1, "run_started")) + line.encode() + b"\n" + text(event(3, "run_completed")))
    read = run_replay("read", str(src))
    assert read.returncode == 0, read.stderr
    done = run_replay("heal", "--no-summary", str(src))
    assert done.returncode == 0, done.stderr
    changed = done.stdout.split(b"\n")[1]
    assert b'"x":1e400,"y":-2.5E+999,"z":' + huge.encode() in changed and b'"type":"tool_completed"' in changed


def test_heal_in_out_logs_a_rewritten_line_with_a_duplicate_key_in_its_heal_log(tmp_path: Path):
    """The filter warns of it (above); `heal --in --out` dropped the notice: no warning, and none in the heal log."""
    changed = b'{"seq":2,"timestamp":"2026-03-01T12:00:00.000Z","type":"tool_end","runId":"r1","payload":{"b":1,"b":2}}'
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_bytes(text(event(1, "run_started")) + changed + b"\n" + text(event(3, "run_completed")))
    done = run_replay("heal", "--in", str(tmp_path / "in"), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    log = json.loads((tmp_path / "out" / "a.heal-log.json").read_bytes())
    notices = [n for n in log["notices"] if n.get("code") == "E_JSON_DUPLICATE_KEY"]
    assert [(n["line"], n["keys"], n["source"]) for n in notices] == [(2, ["$.payload.b"], str(tmp_path / "in" / "a.jsonl"))]
    heal_log = json.loads((Path(__file__).resolve().parents[2] / "schemas" / "heal-log.schema.json").read_bytes())
    jsonschema.Draft202012Validator(heal_log).validate(log)  # a notice of this kind has a code, not a rule
