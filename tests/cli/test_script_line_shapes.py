"""What a session line must be, said alike by `replay script` and ReplayModel (the replay_session fixture's loader):
JSON lines of objects (an array is no session), not replay's own records alone, chunks typed as `replay schema
session` says and no deeper than a script can hold; a key written twice anywhere on a line is a warning."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import errors_of, run_replay

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.session_rules import CHUNK_MAX_DEPTH
from replay.pipeline.testing.replay_model import ReplayModel

ARRAY = (b'[{"type":"turn/start","turn":1},{"type":"assistant/chunk","turn":1,"step":0,"chunk":{"type":"text-delta",'
         b'"text":"hi"}},{"type":"assistant/chunk","turn":1,"step":0,"chunk":{"type":"finish","finishReason":"stop"}}]\n')


def refusal(path: Path) -> ReplayError:
    with pytest.raises(ReplayError) as caught:
        ReplayModel.load(path)
    return caught.value


def test_a_session_whose_line_is_an_array_is_refused_by_the_cli_as_by_replay_model(tmp_path: Path):
    """`replay script` read a one-line array as a journal written as one (a script, exit 0; stdin too) where ReplayModel
    refused it: a session is JSON lines of objects. Both now refuse the line as no object, and the file as no session."""
    session = tmp_path / "session.jsonl"
    session.write_bytes(ARRAY)
    for done in (run_replay("script", str(session)), run_replay("script", input=ARRAY)):
        assert (done.returncode, done.stdout) == (1, b""), done.stderr
        assert [(e["code"], e.get("line")) for e in errors_of(done.stderr)] == [
            ("E_EVENT_NOT_OBJECT", 1), ("E_SESSION_LINE_INVALID", None)]
    error = refusal(session)
    assert error.code == "E_SESSION_LINE_INVALID" and error.message.startswith("no session lines read")
    assert [(p["code"], p["line"], p["received"]) for p in error.body["problems"]] == [("E_EVENT_NOT_OBJECT", 1, "array")]
    two = tmp_path / "two.jsonl"  # on line 2: the same code and words from both
    two.write_bytes(b'{"type":"session/start"}\n' + ARRAY)
    (by_cli,) = errors_of(run_replay("script", str(two)).stderr)
    by_model = refusal(two).body
    assert [(e["code"], e["message"], e["line"]) for e in (by_cli, by_model)] == [
        ("E_EVENT_NOT_OBJECT", "line 2 is JSON but not an object", 2)] * 2


def test_a_run_journal_of_its_run_record_alone_is_no_session(tmp_path: Path):
    """What `replay read` prints for a run with no events (its run record) was scripted as an empty session, exit 0,
    and loaded with no calls: no line of it is a session line."""
    run = tmp_path / "run.jsonl"
    run.write_bytes(b'{"$record":"run","runId":"run_1","prompt":"hi","status":"ok","response":"hello"}\n')
    done = run_replay("script", str(run))
    assert (done.returncode, done.stdout) == (1, b""), done.stderr
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"], error["line"], error["received"]) == (
        "E_SESSION_LINE_INVALID", "$.$record", 1, "a 'run' record")
    by_model = refusal(run)
    assert (by_model.code, by_model.body["path"], by_model.body["line"]) == ("E_SESSION_LINE_INVALID", "$.$record", 1)


def test_a_line_that_writes_its_type_twice_is_a_warning(tmp_path: Path):
    """A chunk line whose last `type` is another is no chunk: its model call left the script without a word."""
    session = tmp_path / "session.jsonl"
    session.write_bytes(b'{"type":"assistant/chunk","turn":1,"step":0,"chunk":{"type":"finish","finishReason":"tool-calls"}}\n'
                        b'{"type":"assistant/chunk","turn":1,"step":1,"chunk":{"type":"finish"},"type":"usage"}\n')
    done = run_replay("script", str(session))
    assert done.returncode == 0, done.stderr
    notes = [orjson.loads(line) for line in done.stderr.splitlines() if b"E_JSON_DUPLICATE_KEY" in line]
    assert [(n["line"], n["keys"], n["level"]) for n in notes] == [(2, ["$.type"], "warning")]
    assert "'usage'" in notes[0]["message"]


@pytest.mark.parametrize("chunk, path", [
    ({"type": "text-delta", "text": 5}, "$.chunk.text"),
    ({"type": "tool-call", "toolCallId": 7, "toolName": "echo"}, "$.chunk.toolCallId"),
    ({"type": "tool-call", "toolCallId": "c", "toolName": None}, "$.chunk.toolName"),
    ({"type": "tool-call-delta", "toolCallId": "c", "inputTextDelta": []}, "$.chunk.inputTextDelta"),
    ({"type": "finish", "finishReason": 0}, "$.chunk.finishReason"),
    ({"type": "finish", "finishReason": "stop", "usage": "lots"}, "$.chunk.usage"),
])
def test_a_chunk_field_of_the_wrong_type_is_refused_by_both(tmp_path: Path, chunk: dict, path: str):
    """`replay schema session` types a chunk's fields; a session breaking them was scripted (exit 0) into a script that
    broke its own schema."""
    session = tmp_path / "session.jsonl"
    lines = [{"type": "assistant/chunk", "turn": 1, "step": 0, "chunk": chunk}]
    if chunk["type"] != "finish":
        lines.append({"type": "assistant/chunk", "turn": 1, "step": 0, "chunk": {"type": "finish"}})
    session.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    done = run_replay("script", str(session))
    assert (done.returncode, done.stdout) == (1, b""), done.stderr
    error = errors_of(done.stderr)[0]
    assert (error["code"], error["path"], error["line"]) == ("E_SESSION_LINE_INVALID", path, 1)
    assert error["received"] == chunk[path.rpartition(".")[2]] or error["received"] in ("null", "array", "object")
    by_model = refusal(session)
    assert (by_model.code, by_model.body["path"]) == ("E_SESSION_LINE_INVALID", path)


def deep_session(path: Path, depth: int) -> None:
    """A session of one finished call whose chunk nests ``depth`` levels (the chunk object itself one)."""
    inner = b"[" * (depth - 1) + b"]" * (depth - 1)
    path.write_bytes(b'{"type":"assistant/chunk","turn":1,"step":0,"chunk":{"type":"finish","x":' + inner + b"}}\n")


def test_a_chunk_too_deep_for_a_script_is_refused_in_the_session(tmp_path: Path):
    """A script nests a chunk 4 levels deeper than its session line: a chunk nested past 1020 levels made a script
    (exit 0) that ReplayModel could not load (E_SCRIPT_INVALID "depth limit exceeded", whose advice was to make it
    again). It is refused in the session, by both, with its depth; one at the limit makes a script that loads."""
    session, script = tmp_path / "session.jsonl", tmp_path / "script.json"
    deep_session(session, CHUNK_MAX_DEPTH + 1)
    done = run_replay("script", str(session), "--out", str(script))
    assert done.returncode == 1 and not script.exists()
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"], error["received"]) == (
        "E_SESSION_LINE_INVALID", "$.chunk", f"{CHUNK_MAX_DEPTH + 1} levels")
    assert "howToFix" in error and "script" in error["howToFix"]
    assert refusal(session).code == "E_SESSION_LINE_INVALID"
    deep_session(session, CHUNK_MAX_DEPTH)
    assert run_replay("script", str(session), "--out", str(script)).returncode == 0
    assert ReplayModel.load(script).calls == ReplayModel.load(session).calls == [(1, 0)]
