"""`replay script`: the example sessions into replay scripts, the sidecar by default, refusals and exit codes."""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest
from conftest import CORPUS, EXAMPLES, REPLAY, ROOT, errors_of, run_replay
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from replay.pipeline.model.session import load_session_groups, script_document

SCENARIOS = EXAMPLES / "echo-agent" / "scenarios"
ECHO = SCENARIOS / "echo" / "session.jsonl"
OVERLOADED = SCENARIOS / "overloaded" / "session.jsonl"


@functools.cache
def schema(stem: str) -> Draft202012Validator:
    docs = [orjson.loads(p.read_bytes()) for p in (ROOT / "schemas").glob("*.schema.json")]
    registry = Registry().with_resources([(d["$id"], Resource.from_contents(d)) for d in docs])
    return Draft202012Validator(orjson.loads((ROOT / "schemas" / f"{stem}.schema.json").read_bytes()), registry=registry)


def keys(document: dict) -> list[tuple[int, int]]:
    return [(g["turn"], g["step"]) for g in document["groups"]]


def test_the_echo_session_becomes_its_script():
    done = run_replay("script", str(ECHO))
    assert done.returncode == 0 and done.stderr == b""
    document = orjson.loads(done.stdout)
    assert list(schema("replay-script").iter_errors(document)) == []
    assert keys(document) == [(1, 0), (1, 1), (2, 0)]
    assert document == script_document(load_session_groups(ECHO), str(ECHO))  # the Python API agrees
    assert done.stdout.count(b"\n") == 5  # header, one line per group, footer


@pytest.mark.parametrize("content", [b"", b"\n\n", b"not json\n"], ids=["empty", "blank-lines", "every-line-refused"])
def test_a_session_no_line_of_which_reaches_the_script_is_none_and_gets_no_script(tmp_path: Path, content: bytes):
    """A file with no line at all is no session (a harness that stopped before writing one): it printed the empty script
    and exit 0; it is now said to be none (E_SESSION_LINE_INVALID, exit 1), as a file of no session line is, and no
    script is printed (it printed the empty one, which named no `session`, then one that did)."""
    session = tmp_path / "session.jsonl"
    session.write_bytes(content)
    done = run_replay("script", str(session))
    assert done.returncode == 1
    if content.strip():  # the line refused, and then what it means: no session line was read (said once, at the end)
        refused, error = errors_of(done.stderr)
        assert (refused["code"], error["code"], error["source"], error["received"]) == (
            "E_JSONL_LINE_INVALID", "E_SESSION_LINE_INVALID", str(session), "1 line refused")
        assert error["message"].startswith("no session lines read")
    else:
        (error,) = errors_of(done.stderr)
        assert (error["code"], error["source"], error["received"]) == ("E_SESSION_LINE_INVALID", str(session), "no line")
    assert (run_replay("script", str(session), "--out", str(tmp_path / "s.json")).returncode,
            (tmp_path / "s.json").exists()) == (1, False)
    assert done.stdout == b""
    assert run_replay("script", input=content).stdout == b""


def test_a_session_cut_off_mid_line_says_to_delete_that_line_not_to_heal_it(tmp_path: Path):
    """The torn line's advice was read's: `replay heal` drops it. Heal turns a session into a run journal (a run_started,
    every time 1970), which script then refuses as no session."""
    session = tmp_path / "session.jsonl"
    session.write_bytes(ECHO.read_bytes() + b'{"type":"session/end","ts":"2026-11-30T08:18:58.538Z","ses')
    done = run_replay("script", str(session))
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_JSONL_LINE_TORN" and "delete the cut-off last line" in error["howToFix"]
    assert "`replay heal` drops" not in error["howToFix"]


@pytest.mark.parametrize("journal", ["claude-code/representative_messages.jsonl", "two-runs"])
def test_a_file_that_is_no_session_is_said_to_be_none(journal: str):
    """A Claude Code log or a run journal gave an empty script and exit 0, as a session with no model call does."""
    path = EXAMPLES / "journals" / "two-runs.jsonl" if journal == "two-runs" else CORPUS / journal
    done = run_replay("script", str(path))
    assert (done.returncode, done.stdout) == (1, b"")  # (it printed an empty script)
    (error,) = errors_of(done.stderr)
    assert error["code"] == "E_SESSION_LINE_INVALID" and "not a session journal" in error["message"]
    assert error["line"] == (1 if journal != "two-runs" else 2) and error["path"] == "$.type"
    harness_only = b'{"type":"session/start"}\n{"type":"turn/start","turn":1}\n'  # (a session with no model call)
    assert run_replay("script", input=harness_only).returncode == 0


def test_the_sidecar_beside_the_session_applies_and_shows_in_the_script():
    done = run_replay("script", str(OVERLOADED))
    assert done.returncode == 0, done.stderr
    document = orjson.loads(done.stdout)
    assert document["override"] == str(SCENARIOS / "overloaded" / "replay.override.json")
    thrown = next(g for g in document["groups"] if (g["turn"], g["step"]) == (2, 0))
    assert thrown == {"turn": 2, "step": 0, "chunks": [{"type": "text-delta", "text": "Let me think"}],
                      "action": "throw", "error": {"name": "APIError", "message": "overloaded"}}
    assert list(schema("replay-script").iter_errors(document)) == []


def test_a_sidecar_from_a_pipe_is_read_once_and_applies() -> None:
    """`replay script S --override <(...)`: a pipe, read once (the stage is built to check the graph, then again for
    the run; the second read found the pipe empty, so a pipe was refused as 'not a regular file')."""
    sidecar = SCENARIOS / "overloaded" / "replay.override.json"
    done = subprocess.run(["bash", "-c", 'exec "$0" script "$1" --override <(cat "$2")', REPLAY, str(OVERLOADED),
                           str(sidecar)], capture_output=True, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (0, b"")
    piped = orjson.loads(done.stdout)
    assert piped.pop("override").startswith("/dev/fd/")
    by_file = orjson.loads(run_replay("script", str(OVERLOADED), "--override", str(sidecar)).stdout)
    assert by_file.pop("override") == str(sidecar) and piped == by_file
    assert any(g.get("action") == "throw" for g in piped["groups"])


def test_a_sidecar_a_windows_editor_saved_with_a_byte_order_mark_applies(tmp_path: Path):
    """It was refused (E_OVERRIDE_INVALID: BOM not supported) while the session beside it, BOM and all, is read."""
    sidecar = tmp_path / "with-bom.json"
    sidecar.write_bytes(b"\xef\xbb\xbf" + (SCENARIOS / "overloaded" / "replay.override.json").read_bytes())
    done = run_replay("script", str(OVERLOADED), "--override", str(sidecar))
    assert done.returncode == 0, done.stderr
    assert done.stdout == run_replay("script", str(OVERLOADED)).stdout.replace(
        str(SCENARIOS / "overloaded" / "replay.override.json").encode(), str(sidecar).encode())


def test_without_the_sidecar_the_thrown_stream_is_refused_naming_its_step():
    done = run_replay("script", str(OVERLOADED), "--no-override")
    assert done.returncode == 1
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_SESSION_GROUP_UNFINISHED" and (error["turn"], error["step"]) == (2, 0)
    assert error["source"] == str(OVERLOADED) and error["line"] == 17
    assert done.stdout == b""  # (it printed the script without that step: (1, 0), (1, 1), (3, 0), (3, 1))


def test_strict_stops_at_the_refusal():
    done = run_replay("script", str(OVERLOADED), "--no-override", "--strict")
    assert done.returncode == 1
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_SESSION_GROUP_UNFINISHED"]


def test_an_explicit_override_and_one_for_a_step_that_does_not_exist(tmp_path: Path):
    sidecar = tmp_path / "flaky.json"
    sidecar.write_bytes(orjson.dumps({"overrides": [{"turn": 1, "step": 1, "action": "hang"},
                                                    {"turn": 4, "step": 0, "action": "hang"}]}))
    done = run_replay("script", str(ECHO), "--override", str(sidecar))
    assert done.returncode == 1
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_OVERRIDE_STEP_UNKNOWN" and (error["turn"], error["step"]) == (4, 0)
    assert done.stdout == b""  # (nor a script that did not do what the sidecar says)
    sidecar.write_bytes(orjson.dumps({"overrides": [{"turn": 1, "step": 1, "action": "hang"}]}))
    done = run_replay("script", str(ECHO), "--override", str(sidecar))
    assert done.returncode == 0, done.stderr
    hang = orjson.loads(done.stdout)["groups"][1]
    assert hang["action"] == "hang" and hang["chunks"][-1]["type"] == "text-delta"


@pytest.mark.parametrize("content, code", [
    (b'{"overrides": [{"turn": 1, "step": 0, "action": "throw"}]}', "E_OVERRIDE_INVALID"),
    (b"not json", "E_OVERRIDE_INVALID"),
])
def test_a_broken_sidecar_is_refused_before_any_output(tmp_path: Path, content: bytes, code: str):
    shutil.copy(ECHO, tmp_path / "session.jsonl")
    (tmp_path / "replay.override.json").write_bytes(content)
    done = run_replay("script", str(tmp_path / "session.jsonl"))
    assert (done.returncode, done.stdout) == (2, b"")
    assert [e["code"] for e in errors_of(done.stderr)] == [code]


@pytest.mark.parametrize("args, code", [
    (["missing.jsonl"], "E_INPUT_PATH_NOT_FOUND"),
    ([str(ECHO), "--override", "missing.json"], "E_INPUT_PATH_NOT_FOUND"),
    ([str(ECHO), "--override", "x.json", "--no-override"], "E_USAGE_INVALID"),
])
def test_unusable_inputs_are_refused_with_exit_2(tmp_path: Path, args: list[str], code: str):
    done = run_replay("script", *args, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, b"")
    assert [e["code"] for e in errors_of(done.stderr)] == [code]


def test_stdin_and_out_file(tmp_path: Path):
    out = tmp_path / "script.json"
    done = run_replay("script", "--out", str(out), input=ECHO.read_bytes())
    assert done.returncode == 0 and done.stdout == b""
    document = orjson.loads(out.read_bytes())
    assert "session" not in document and keys(document) == [(1, 0), (1, 1), (2, 0)]
    assert [p.name for p in tmp_path.iterdir()] == ["script.json"]  # no temp file left behind


@pytest.mark.parametrize("existing", [True, False])
def test_a_refused_script_writes_no_out_file(tmp_path: Path, existing: bool):
    out = tmp_path / "script.json"
    if existing:
        out.write_bytes(b"the old script")
    done = run_replay("script", str(OVERLOADED), "--no-override", "--out", str(out))
    assert (done.returncode, done.stdout) == (1, b"")
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_SESSION_GROUP_UNFINISHED"]
    assert (out.read_bytes() == b"the old script") if existing else not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == (["script.json"] if existing else [])  # no temp file either


def test_a_float_turn_is_refused_and_no_script_is_written(tmp_path: Path):
    session = tmp_path / "session.jsonl"
    session.write_bytes(b'{"type":"assistant/chunk","turn":1.0,"step":0,"chunk":{"type":"text-delta","text":"hi"}}\n'
                        b'{"type":"assistant/chunk","turn":1,"step":0,"chunk":{"type":"finish","finishReason":"stop"}}\n')
    done = run_replay("script", str(session), "--out", str(tmp_path / "script.json"))
    assert (done.returncode, done.stdout) == (1, b"")
    [error] = errors_of(done.stderr)
    assert (error["code"], error["path"], error["line"], error["received"]) == ("E_SESSION_LINE_INVALID", "$.turn", 1, 1.0)
    assert not (tmp_path / "script.json").exists()


@pytest.mark.parametrize("chunk, received", [(b"", "missing"), (b',"chunk":null', "null"), (b',"chunk":"x"', '"x"')],
                         ids=["missing", "null", "string"])
def test_a_chunk_line_without_its_chunk_says_it_is_missing(tmp_path: Path, chunk: bytes, received: str):
    # a line with no `chunk` at all was said to have received "null"
    session = tmp_path / "session.jsonl"
    session.write_bytes(b'{"type":"assistant/chunk","turn":1,"step":0' + chunk + b'}\n')
    done = run_replay("script", str(session), process=True)
    [error] = errors_of(done.stderr)
    assert (done.returncode, error["code"], error["path"], error["received"]) == (1, "E_SESSION_LINE_INVALID", "$.chunk",
                                                                                   received), error


def test_a_folder_is_refused_naming_a_session_file(tmp_path: Path):
    shutil.copytree(SCENARIOS, tmp_path / "scenarios")
    (tmp_path / "empty").mkdir()
    for folder in ("scenarios/", "empty"):
        done = run_replay("script", folder, cwd=tmp_path)
        assert (done.returncode, done.stdout) == (2, b"")
        [error] = errors_of(done.stderr)
        assert error["code"] == "E_USAGE_INVALID" and error["path"] == folder
        assert "directory" in error["message"] and "session.jsonl" in error["howToFix"]


def test_the_printed_spec_refuses_a_folder_as_the_command_does(tmp_path: Path):
    """`replay run script.toml DIR` of a folder holding one session made its script, where `replay script DIR` refuses
    every folder: both refuse it alike now (the script stage's check, before anything runs), one session or none."""
    spec = tmp_path / "script.toml"
    spec.write_bytes(run_replay("stages", "--graph", "script").stdout)
    (tmp_path / "one").mkdir()
    shutil.copy(ECHO, tmp_path / "one" / "session.jsonl")
    (tmp_path / "empty").mkdir()
    shutil.copytree(SCENARIOS, tmp_path / "scenarios")
    for folder in ("one", "one/", "empty", "scenarios"):
        said = []
        for args in (["script", folder], ["run", "script.toml", folder]):
            done = run_replay(*args, cwd=tmp_path)
            assert (done.returncode, done.stdout) == (2, b""), (args, done.stderr)
            said.append(errors_of(done.stderr))
        assert said[0] == said[1], said
        [error] = said[0]
        assert error["code"] == "E_USAGE_INVALID" and error["path"] == folder and "directory" in error["message"]


def test_an_override_that_is_a_folder_is_called_one(tmp_path: Path):
    done = run_replay("script", str(ECHO), "--override", str(tmp_path))
    assert (done.returncode, done.stdout) == (2, b"")
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_INPUT_UNREADABLE" and error["message"].endswith("Is a directory")
    assert "does not exist" not in error["message"] and "replay.override.json" in error["howToFix"]


def test_the_formats_are_bundled_schemas():
    listed = run_replay("schema").stdout.decode().split()
    assert {"session", "replay-script", "replay-override"} <= set(listed)


def test_every_line_of_the_example_sessions_fits_the_session_schema():
    for session in SCENARIOS.glob("*/session.jsonl"):
        for n, line in enumerate(session.read_bytes().splitlines(), 1):
            assert list(schema("session").iter_errors(orjson.loads(line))) == [], f"{session} line {n}"
    for sidecar in SCENARIOS.glob("*/replay.override.json"):
        assert list(schema("replay-override").iter_errors(orjson.loads(sidecar.read_bytes()))) == []


@pytest.mark.parametrize("line", [
    {"type": "assistant/chunk", "step": 0, "chunk": {"type": "finish"}},
    {"type": "assistant/chunk", "turn": 1, "step": 0, "chunk": {"text": "no type"}},
    {"turn": 1},
])
def test_lines_the_script_stage_rejects_the_session_schema_rejects_too(tmp_path: Path, line: dict):
    assert list(schema("session").iter_errors(line)) != []
    path = tmp_path / "session.jsonl"
    path.write_bytes(orjson.dumps(line) + b"\n")
    done = run_replay("script", str(path))
    assert done.returncode == 1 and [e["code"] for e in errors_of(done.stderr)] == ["E_SESSION_LINE_INVALID"]


def test_the_script_never_overwrites_its_override_sidecar(tmp_path: Path):
    sidecar = tmp_path / "o.json"
    shutil.copy(SCENARIOS / "overloaded" / "replay.override.json", sidecar)
    before = sidecar.read_bytes()
    done = run_replay("script", str(OVERLOADED), "--override", str(sidecar), "--out", str(sidecar))
    assert (done.returncode, done.stdout) == (2, b"")
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_OUTPUT_UNWRITABLE"]  # (--out names an input)
    assert sidecar.read_bytes() == before


def test_the_printed_spec_run_as_a_config_does_what_the_command_does(tmp_path: Path):
    """The spec found no replay.override.json beside the session (the command did, before binding it): `replay run` of
    the printed graph refused the overloaded session (E_SESSION_GROUP_UNFINISHED, whose fix said to write the sidecar
    that was there) where `replay script` gave its script. The script stage finds the sidecar itself now."""
    spec = tmp_path / "script.toml"
    spec.write_bytes(run_replay("stages", "--graph", "script").stdout)
    by_config = run_replay("run", str(spec), str(OVERLOADED))
    by_command = run_replay("script", str(OVERLOADED))
    assert (by_config.returncode, by_command.returncode) == (0, 0), by_config.stderr
    assert by_config.stdout == by_command.stdout and b'"action":"throw"' in by_config.stdout
    assert by_config.stderr == by_command.stderr == b""
    spec.write_text(spec.read_text().replace('type = "script"', 'type = "script"\nsidecar = false'))  # --no-override
    by_config = run_replay("run", str(spec), str(OVERLOADED))
    by_command = run_replay("script", str(OVERLOADED), "--no-override")
    assert by_config.returncode == by_command.returncode == 1
    assert by_config.stdout == by_command.stdout
    assert errors_of(by_config.stderr) == errors_of(by_command.stderr)


def test_a_chunk_that_writes_a_key_twice_is_a_warning_not_lost_without_a_word(tmp_path: Path):
    """The script writes every chunk anew, where only the last value of a key written twice survives: a warning
    (E_JSON_DUPLICATE_KEY, as heal gives for an event it writes anew) naming the line and the key; the exit status is
    unchanged. A key written twice elsewhere on a session line is one too (its `type` may say whether it is a chunk at
    all: test_script_line_shapes.py)."""
    session = tmp_path / "session.jsonl"
    session.write_bytes(b'{"type":"turn/start","turn":1,"turn":1}\n'
                        b'{"type":"assistant/chunk","turn":1,"step":0,"chunk":{"type":"text-delta","text":"a","text":"b"}}\n'
                        b'{"type":"assistant/chunk","turn":1,"step":0,"ts":1,"ts":2,"chunk":{"type":"finish"}}\n')
    done = run_replay("script", str(session))
    assert done.returncode == 0, done.stderr
    assert b'"text":"b"' in done.stdout
    notes = [orjson.loads(line) for line in done.stderr.splitlines() if b"E_JSON_DUPLICATE_KEY" in line]
    assert [(n["line"], n["keys"], n["level"]) for n in notes] == [
        (1, ["$.turn"], "warning"), (2, ["$.chunk.text"], "warning"), (3, ["$.ts"], "warning")], done.stderr


def test_a_chunk_line_that_writes_its_turn_or_step_twice_is_a_warning(tmp_path: Path):
    """``turn`` and ``step`` say which group a chunk is in, and the script groups by their last values: a line that
    writes one twice moved its chunk to another model call without a word (the warning was for keys in the chunk)."""
    session = tmp_path / "session.jsonl"
    session.write_bytes(b'{"type":"assistant/chunk","turn":1,"step":0,"turn":2,"chunk":{"type":"finish"}}\n'
                        b'{"type":"assistant/chunk","turn":3,"step":0,"step":1,"chunk":{"type":"finish"}}\n')
    done = run_replay("script", str(session))
    assert done.returncode == 0, done.stderr
    assert keys(orjson.loads(done.stdout)) == [(2, 0), (3, 1)]
    notes = [orjson.loads(line) for line in done.stderr.splitlines() if b"E_JSON_DUPLICATE_KEY" in line]
    assert [(n["line"], n["keys"], n["level"]) for n in notes] == [(1, ["$.turn"], "warning"), (2, ["$.step"], "warning")]


def test_a_json_document_of_records_is_no_session(tmp_path: Path):
    """A session is JSON lines of objects, never one JSON document (as ReplayModel reads it): a .json event list (an
    OpenHands one, say) is a line that is no object, and so no session lines read."""
    document = tmp_path / "events.json"
    document.write_bytes(b'[{"id": 1, "action": "run"}, {"id": 2, "observation": "run"}]')
    result = run_replay("script", str(document))
    assert (result.returncode, result.stdout) == (1, b"") and b"E_STAGE_FAILED" not in result.stderr
    errors = errors_of(result.stderr)
    assert [(e["code"], e.get("line")) for e in errors] == [("E_EVENT_NOT_OBJECT", 1), ("E_SESSION_LINE_INVALID", None)]


def test_the_printed_spec_refuses_two_sessions_as_the_command_does(tmp_path: Path):
    """`replay run script.toml DIR` (or two files) made one script of every session read, with bogus
    E_SESSION_GROUP_SPLIT errors blamed on the second; `replay script DIR` refuses a folder. The graph refuses more than
    one session before anything runs (E_USAGE_INVALID, exit 2, nothing on stdout)."""
    spec = tmp_path / "script.toml"
    spec.write_bytes(run_replay("stages", "--graph", "script").stdout)
    for args in ([str(SCENARIOS)], [str(ECHO), str(OVERLOADED)]):
        done = run_replay("run", str(spec), *args)
        assert (done.returncode, done.stdout) == (2, b""), done.stderr
        (error,) = errors_of(done.stderr)
        said = "is a directory" if args == [str(SCENARIOS)] else "one session"  # (a folder: as `replay script DIR`)
        assert error["code"] == "E_USAGE_INVALID" and said in error["message"], error
    assert run_replay("run", str(spec), str(ECHO), str(ECHO), "--workers", "2").returncode == 2
    assert run_replay("run", str(spec), str(OVERLOADED), "--workers", "2").returncode == 0  # (one session: as above)


def test_a_session_every_line_of_which_is_too_long_says_no_session_line_was_read(tmp_path: Path):
    """Every line over --max-line-bytes: the sidecar's override was said to name 'a model call the session does not
    have' (E_OVERRIDE_STEP_UNKNOWN), as if the session had been read. Now: no session lines read."""
    done = run_replay("script", str(OVERLOADED), "--max-line-bytes", "10")
    assert done.returncode == 1
    errors = errors_of(done.stderr)
    assert "E_OVERRIDE_STEP_UNKNOWN" not in [e["code"] for e in errors]
    [said] = [e for e in errors if e["code"] == "E_SESSION_LINE_INVALID"]
    assert said["message"].startswith("no session lines read") and said["received"] == "34 lines refused"


def test_an_unfinished_call_on_stdin_says_to_give_override_not_to_put_a_sidecar_beside_it():
    """On stdin there is no folder to put replay.override.json in: the fix names --override."""
    done = run_replay("script", input=OVERLOADED.read_bytes())
    (error,) = errors_of(done.stderr)
    assert error["code"] == "E_SESSION_GROUP_UNFINISHED" and "--override FILE" in error["howToFix"]
    assert "beside the session:" not in error["howToFix"]
    by_file = errors_of(run_replay("script", str(OVERLOADED), "--no-override").stderr)[0]
    assert "replay.override.json beside the session" in by_file["howToFix"]


def test_the_sidecar_the_stage_finds_is_an_input_no_output_may_write_over(tmp_path: Path):
    """The script stage finds the sidecar beside the session itself: it is one of the graph's inputs all the same."""
    shutil.copy(OVERLOADED, tmp_path / "session.jsonl")
    sidecar = tmp_path / "replay.override.json"
    shutil.copy(SCENARIOS / "overloaded" / "replay.override.json", sidecar)
    before = sidecar.read_bytes()
    done = run_replay("script", str(tmp_path / "session.jsonl"), "--out", str(sidecar))
    assert (done.returncode, [e["code"] for e in errors_of(done.stderr)]) == (2, ["E_OUTPUT_UNWRITABLE"])
    assert sidecar.read_bytes() == before
