"""Session journals: chunks grouped by (turn, step) in journal order, the finish rule, the override sidecar."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.session import (
    Group,
    derive_groups,
    groups_from_script,
    load_overrides,
    load_script,
    load_session_groups,
    parse_overrides,
    script_document,
)


def chunk(turn: int, step: int, kind: str = "text-delta", **fields: Any) -> dict[str, Any]:
    return {"type": "assistant/chunk", "turn": turn, "step": step, "chunk": {"type": kind, **fields}}


def finish(turn: int, step: int, reason: str = "stop") -> dict[str, Any]:
    return chunk(turn, step, "finish", finishReason=reason)


def positioned(records: list[Any]) -> list[tuple[Any, dict[str, Any]]]:
    return [(r, {"source": "s.jsonl", "line": n}) for n, r in enumerate(records, 1)]


def derive(records: list[Any], overrides: Any = None) -> tuple[list[Group], list[dict[str, Any]]]:
    return derive_groups(positioned(records), overrides)


def codes(problems: list[dict[str, Any]]) -> list[str]:
    return [p["code"] for p in problems]


def write(path: Path, records: list[Any]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


# grouping ---------------------------------------------------------------------------------
def test_chunks_are_grouped_by_turn_and_step_in_journal_order_around_harness_lines():
    records = [
        {"type": "session/start", "sessionId": "s"},
        {"type": "turn/start", "turn": 1, "input": "echo hi"},
        chunk(1, 0, "tool-call", toolCallId="c1", toolName="echo", input={"text": "hi"}),
        {"type": "usage", "turn": 1, "step": 0, "usage": {}},
        finish(1, 0, "tool-calls"),
        {"type": "tool/call", "turn": 1, "step": 0, "toolCallId": "c1", "toolName": "echo"},
        {"type": "tool/result", "turn": 1, "step": 0, "toolCallId": "c1", "output": "hi"},
        chunk(1, 1, text="h"),
        {"type": "some/unknown", "x": 1},
        chunk(1, 1, text="i"),
        finish(1, 1),
        {"type": "turn/end", "turn": 1},
        # a later turn may come back to step 0; steps are not sorted, the journal order is kept
        chunk(3, 0, text="third"), finish(3, 0),
        chunk(2, 0, text="second"), finish(2, 0),
    ]
    groups, problems = derive(records)
    assert problems == []
    assert [g.key for g in groups] == [(1, 0), (1, 1), (3, 0), (2, 0)]
    assert [c["type"] for c in groups[0].chunks] == ["tool-call", "finish"]
    assert [c.get("text") for c in groups[1].chunks] == ["h", "i", None]
    assert groups[1].chunks[0] == {"type": "text-delta", "text": "h"}


@st.composite
def sessions(draw: st.DrawFn) -> tuple[list[Any], list[tuple[tuple[int, int], list[dict[str, Any]]]]]:
    """A journal of model calls (each ending in finish) with harness lines anywhere, and the calls."""
    calls = []  # (a session/start first: a session with no model call still has its harness lines, or it is none)
    keys = draw(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), unique=True, max_size=8))
    records: list[Any] = [{"type": "session/start", "sessionId": "s"}]
    for turn, step in keys:
        texts = draw(st.lists(st.text(max_size=5), max_size=4))
        chunks = [{"type": "text-delta", "text": t} for t in texts] + [{"type": "finish", "finishReason": "stop"}]
        calls.append(((turn, step), chunks))
        for c in chunks:
            for _ in range(draw(st.integers(0, 2))):
                records.append({"type": draw(st.sampled_from(["turn/start", "tool/call", "usage", "x/y"])),
                                "turn": draw(st.integers(0, 9)), "step": draw(st.integers(0, 9))})
            records.append({"type": "assistant/chunk", "turn": turn, "step": step, "chunk": c})
    return records, calls


@given(sessions())
@settings(max_examples=150, deadline=None)
def test_grouping_gives_back_every_call_in_order_and_nothing_else(session):
    records, calls = session
    groups, problems = derive(records)
    assert problems == []
    assert [(g.key, g.chunks) for g in groups] == calls


# the finish rule ------------------------------------------------------------------------------
def test_a_group_without_finish_is_refused_naming_its_turn_and_step():
    records = [chunk(1, 0, text="a"), finish(1, 0), {"type": "turn/start", "turn": 2},
               chunk(2, 0, text="half"), {"type": "turn/error", "turn": 2}, chunk(2, 1, text="x"), finish(2, 1)]
    _, problems = derive(records)
    assert codes(problems) == ["E_SESSION_GROUP_UNFINISHED"]
    problem = problems[0]
    assert (problem["turn"], problem["step"]) == (2, 0)
    assert "(turn 2, step 0)" in problem["message"]
    assert problem["line"] == 4 and problem["source"] == "s.jsonl"
    assert '"turn": 2, "step": 0' in problem["howToFix"]


def test_the_last_group_without_finish_is_refused_too():
    _, problems = derive([chunk(1, 0, text="a"), finish(1, 0), chunk(1, 1, text="cut")])
    assert codes(problems) == ["E_SESSION_GROUP_UNFINISHED"]
    assert (problems[0]["turn"], problems[0]["step"]) == (1, 1)


def test_a_finish_in_the_middle_does_not_make_a_group_finished():
    _, problems = derive([chunk(1, 0, text="a"), finish(1, 0), chunk(1, 0, text="more")])
    assert codes(problems) == ["E_SESSION_GROUP_SPLIT"]
    assert "follows its `finish`" in problems[0]["message"]


def test_a_step_whose_chunks_come_back_later_is_a_split_group():
    _, problems = derive([chunk(1, 0, text="a"), chunk(1, 1, text="b"), finish(1, 1), chunk(1, 0, text="c")])
    assert "E_SESSION_GROUP_SPLIT" in codes(problems)
    split = next(p for p in problems if p["code"] == "E_SESSION_GROUP_SPLIT")
    assert (split["turn"], split["step"], split["line"]) == (1, 0, 4)


@pytest.mark.parametrize("record, path", [
    ({"type": "assistant/chunk", "step": 0, "chunk": {"type": "finish"}}, "$.turn"),
    ({"type": "assistant/chunk", "turn": True, "step": 0, "chunk": {"type": "finish"}}, "$.turn"),
    ({"type": "assistant/chunk", "turn": 1, "step": -1, "chunk": {"type": "finish"}}, "$.step"),
    ({"type": "assistant/chunk", "turn": 1, "step": "0", "chunk": {"type": "finish"}}, "$.step"),
    ({"type": "assistant/chunk", "turn": 1, "step": 0}, "$.chunk"),
    ({"type": "assistant/chunk", "turn": 1, "step": 0, "chunk": {"text": "no type"}}, "$.chunk"),
    ({"turn": 1}, "$.type"),
    ([1, 2], "$"),
])
def test_broken_session_lines_are_reported_with_their_position(record, path):
    _, problems = derive([record])
    assert codes(problems) == ["E_SESSION_LINE_INVALID"]
    assert problems[0]["path"] == path and problems[0]["line"] == 1


@pytest.mark.parametrize("record, received", [
    ({"type": "assistant/chunk", "step": 0, "chunk": {"type": "finish"}}, "missing"),
    ({"type": "assistant/chunk", "turn": True, "step": 0, "chunk": {"type": "finish"}}, True),
    ({"type": "assistant/chunk", "turn": None, "step": 0, "chunk": {"type": "finish"}}, "null"),
    ({"type": "assistant/chunk", "turn": 1, "step": "0", "chunk": {"type": "finish"}}, "0"),
    ({"type": "assistant/chunk", "turn": 1.0, "step": 0, "chunk": {"type": "finish"}}, 1.0),
    ({"type": None}, "null"),
    ({"turn": 1}, "missing"),
    ([1, 2], "array"),
])
def test_a_broken_session_line_says_what_it_received_in_json_terms_not_python(record, received):
    _, problems = derive([record])
    assert problems[0]["received"] == received
    assert orjson.loads(orjson.dumps(problems[0]))["received"] == received


def test_lines_of_unknown_types_and_replay_records_pass_without_a_word():
    groups, problems = derive([{"type": "whatever/else"}, {"$record": "source", "source": "s.jsonl"}])
    assert groups == [] and problems == []


# overrides ----------------------------------------------------------------------------------
THROW = {"turn": 2, "step": 0, "action": "throw", "error": {"name": "APIError", "message": "overloaded", "status": 529}}
HANG = {"turn": 1, "step": 1, "action": "hang"}


def test_a_throw_override_makes_an_unfinished_group_replayable_and_shows_in_the_script():
    overrides = parse_overrides({"overrides": [THROW]})
    groups, problems = derive([chunk(1, 0, text="a"), finish(1, 0), chunk(2, 0, text="half")], overrides)
    assert problems == []
    assert groups[1].to_json() == {"turn": 2, "step": 0, "chunks": [{"type": "text-delta", "text": "half"}],
                                   "action": "throw", "error": THROW["error"]}
    assert "action" not in groups[0].to_json()


def test_a_hang_override_replaces_a_recorded_finish():
    overrides = parse_overrides({"overrides": [HANG]})
    groups, problems = derive([chunk(1, 0, text="a"), finish(1, 0), chunk(1, 1, text="b"), finish(1, 1)], overrides)
    assert problems == []
    assert groups[1].to_json() == {"turn": 1, "step": 1, "chunks": [{"type": "text-delta", "text": "b"}], "action": "hang"}
    assert groups[1].chunks[-1]["type"] == "finish"  # the recording itself is kept


def test_an_override_for_a_step_the_session_does_not_have_is_an_error():
    overrides = parse_overrides({"overrides": [THROW, {"turn": 7, "step": 3, "action": "hang"}]})
    _, problems = derive([chunk(2, 0, text="half")], overrides)
    assert codes(problems) == ["E_OVERRIDE_STEP_UNKNOWN"]
    assert (problems[0]["turn"], problems[0]["step"]) == (7, 3)
    assert "(turn 7, step 3)" in problems[0]["message"]


@pytest.mark.parametrize("document, path", [
    ([], "$"),
    ({}, "$.overrides"),
    ({"overrides": {}}, "$.overrides"),
    ({"overrides": [], "extra": 1}, "$.extra"),
    ({"overrides": [5]}, "$.overrides[0]"),
    ({"overrides": [{"turn": 1, "step": 0, "action": "explode"}]}, "$.overrides[0].action"),
    ({"overrides": [{"turn": "1", "step": 0, "action": "hang"}]}, "$.overrides[0].turn"),
    ({"overrides": [{"turn": 1, "action": "hang"}]}, "$.overrides[0].step"),
    ({"overrides": [{"turn": 1, "step": 0, "action": "throw"}]}, "$.overrides[0].error"),
    ({"overrides": [{"turn": 1, "step": 0, "action": "throw", "error": {"name": "", "message": "m"}}]},
     "$.overrides[0].error.name"),
    ({"overrides": [{"turn": 1, "step": 0, "action": "throw", "error": {"name": "E"}}]}, "$.overrides[0].error.message"),
    ({"overrides": [{"turn": 1, "step": 0, "action": "hang", "error": {"name": "E", "message": "m"}}]},
     "$.overrides[0].error"),
    ({"overrides": [{"turn": 1, "step": 0, "action": "hang", "when": "later"}]}, "$.overrides[0].when"),
    ({"overrides": [HANG, HANG]}, "$.overrides[1]"),
])
def test_a_broken_sidecar_is_refused_with_the_key_at_fault(document, path):
    with pytest.raises(ReplayError) as info:
        parse_overrides(document, "replay.override.json")
    assert info.value.code == "E_OVERRIDE_INVALID"
    assert info.value.body["path"] == path and info.value.exit_code == 2


@pytest.mark.parametrize("document, received", [
    ([], "array"),
    ({}, "missing"),
    ({"overrides": None}, "null"),
    ({"overrides": ["x"]}, "string"),
    ({"overrides": [{"turn": "1", "step": 0, "action": "hang"}]}, "1"),
    ({"overrides": [{"turn": 1, "step": None, "action": "hang"}]}, "null"),
    ({"overrides": [{"turn": 1, "step": 0, "action": True}]}, True),
    ({"overrides": [{"turn": 1, "step": 0}]}, "missing"),
    ({"overrides": [{"turn": 1, "step": 0, "action": "throw"}]}, "missing"),
    ({"overrides": [{"turn": 1, "step": 0, "action": "throw", "error": None}]}, "null"),
    ({"overrides": [{"turn": 1, "step": 0, "action": "throw", "error": {"name": True, "message": "m"}}]}, True),
    ({"overrides": [{"turn": 1, "step": 0, "action": "throw", "error": {"name": "E"}}]}, "missing"),
])
def test_a_broken_sidecar_says_what_it_received_in_json_terms_not_python(document, received):
    with pytest.raises(ReplayError) as info:
        parse_overrides(document, "replay.override.json")
    assert info.value.body["received"] == received


@pytest.mark.parametrize("document, received", [
    ({"groups": []}, "missing"), ({"version": None}, "null"), ({"version": "1"}, "1"), ([], "array"),
    ({"version": 1, "groups": {}}, "object"), ({"version": 1}, "missing"),
])
def test_a_broken_script_document_says_what_it_received_in_json_terms_not_python(document, received):
    with pytest.raises(ReplayError) as info:
        groups_from_script(document, "script.json")
    assert info.value.body["received"] == received


def test_a_sidecar_that_is_not_json_is_refused_with_its_line(tmp_path: Path):
    path = tmp_path / "replay.override.json"
    path.write_text('{"overrides": [\n  {"turn": 1,,}\n]}')
    with pytest.raises(ReplayError) as info:
        load_overrides(path)
    assert info.value.code == "E_OVERRIDE_INVALID" and info.value.body["line"] == 2


@pytest.mark.parametrize(("load", "text", "code", "key"), [
    (load_overrides, '{"overrides": [{"turn": 1, "step": 0, "action": "empty"}],\n "overrides": []}', "E_OVERRIDE_INVALID",
     "$.overrides"),
    (load_script, '{"version": 1,\n "version": 1, "groups": []}', "E_SCRIPT_INVALID", "$.version"),
], ids=["sidecar", "script"])
def test_a_document_writing_a_key_twice_is_refused_at_the_second(tmp_path: Path, load: Any, text: str, code: str,
                                                                   key: str):
    """An override sidecar or a replay script with a key written twice in one object: a JSON reader keeps the last
    without a word; refused where the second is. A folder given as either is E_INPUT_UNREADABLE (a script's raised a
    bare IsADirectoryError)."""
    path = tmp_path / "doc.json"
    path.write_text(text)
    with pytest.raises(ReplayError) as info:
        load(path)
    assert info.value.code == code
    assert (info.value.body["path"], info.value.body["line"], info.value.body["column"]) == (key, 2, 2)
    with pytest.raises(ReplayError) as info:
        load(tmp_path)
    assert info.value.code == "E_INPUT_UNREADABLE" and info.value.body["path"] == str(tmp_path)


# whole files ---------------------------------------------------------------------------------
def test_the_sidecar_beside_the_session_applies_by_default(tmp_path: Path):
    session = write(tmp_path / "session.jsonl", [chunk(1, 0, text="a"), finish(1, 0), chunk(2, 0, text="half")])
    with pytest.raises(ReplayError) as info:
        load_session_groups(session)
    assert info.value.code == "E_SESSION_GROUP_UNFINISHED" and info.value.exit_code == 1
    assert info.value.body["line"] == 3
    (tmp_path / "replay.override.json").write_bytes(orjson.dumps({"overrides": [THROW]}))
    groups = load_session_groups(session)
    assert groups[1].override is not None and groups[1].override.action == "throw"
    with pytest.raises(ReplayError):
        load_session_groups(session, use_sidecar=False)


def test_an_explicit_sidecar_must_exist(tmp_path: Path):
    session = write(tmp_path / "session.jsonl", [chunk(1, 0), finish(1, 0)])
    with pytest.raises(ReplayError) as info:
        load_session_groups(session, tmp_path / "missing.json")
    assert info.value.code == "E_INPUT_PATH_NOT_FOUND"


def test_a_line_that_is_not_json_stops_a_session_from_loading(tmp_path: Path):
    session = tmp_path / "session.jsonl"
    session.write_bytes(orjson.dumps(chunk(1, 0)) + b"\n{not json\n")
    with pytest.raises(ReplayError) as info:
        load_session_groups(session)
    assert info.value.code == "E_JSONL_LINE_INVALID" and info.value.body["line"] == 2
    assert "1 more problem" in str(info.value)  # (1, 0) has no finish either


def test_a_session_that_starts_with_a_byte_order_mark_loads_as_replay_script_reads_it(tmp_path: Path):
    """`replay script` (read, parse) skips a byte order mark; ReplayModel.from_session and the replay_session fixture
    refused the same file ("line 1 is not valid JSON: UTF-8 byte order mark (BOM) is not supported")."""
    session = tmp_path / "session.jsonl"
    session.write_bytes(b"\xef\xbb\xbf" + orjson.dumps(chunk(1, 0, text="a")) + b"\n" + orjson.dumps(finish(1, 0)) + b"\n")
    assert [g.to_json() for g in load_session_groups(session)] == [
        {"turn": 1, "step": 0, "chunks": [{"type": "text-delta", "text": "a"}, {"type": "finish", "finishReason": "stop"}]}]
    session.write_bytes(b"\xef\xbb\xbf{not json\n")
    with pytest.raises(ReplayError) as info:
        load_session_groups(session)
    [line] = info.value.body["problems"]  # (its one line refused: no session lines read, as `replay script` ends)
    assert (line["line"], line["column"], line["offset"]) == (1, 2, 3)  # the byte at 3 + 2 - 1


def test_a_gzipped_session_loads_as_replay_script_reads_it(tmp_path: Path):
    """`replay script session.jsonl.gz` reads it (read gunzips); ReplayModel.from_session and the replay_session fixture
    refused the same file ("line 1 is not valid JSON: byte 0x8b at column 2 is not UTF-8")."""
    import gzip

    records = [chunk(1, 0, text="a"), finish(1, 0)]
    plain = write(tmp_path / "session.jsonl", records)
    packed = tmp_path / "session.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert [g.to_json() for g in load_session_groups(packed)] == [g.to_json() for g in load_session_groups(plain)]
    packed.write_bytes(gzip.compress(plain.read_bytes())[:-12])  # cut off
    with pytest.raises(ReplayError) as info:
        load_session_groups(packed)
    assert info.value.code == "E_GZIP_INVALID" and info.value.body["source"] == str(packed)


def test_a_folder_is_no_session_and_a_pipe_is_one(tmp_path: Path):
    """A folder was "session journal ... does not exist"; a pipe (`<(zcat session.jsonl.gz)`) was refused the same way,
    though `replay script` reads both a pipe and, refusing a folder, says it is one."""
    import os

    with pytest.raises(ReplayError) as info:
        load_session_groups(tmp_path)
    assert info.value.code == "E_USAGE_INVALID" and "is a directory" in str(info.value)
    reading, writing = os.pipe()
    os.write(writing, orjson.dumps(chunk(1, 0, text="a")) + b"\n" + orjson.dumps(finish(1, 0)) + b"\n")
    os.close(writing)
    try:
        assert [g.key for g in load_session_groups(f"/dev/fd/{reading}")] == [(1, 0)]
    finally:
        os.close(reading)


@pytest.mark.skipif(not Path("/proc/self/mem").is_file(), reason="needs Linux's /proc")
def test_a_session_that_cannot_be_read_is_e_input_unreadable():
    """It was a bare OSError ("[Errno 5] Input/output error") out of ReplayModel.from_session."""
    with pytest.raises(ReplayError) as info:
        load_session_groups("/proc/self/mem")
    assert info.value.code == "E_INPUT_UNREADABLE"
    assert info.value.message == "cannot read session journal '/proc/self/mem': Input/output error"


@pytest.mark.parametrize(("data", "column", "message"), [
    (b'{"type": "turn/start", "text": "caf\xe9"}\n', 36, "byte 0xe9 at column 36 is not UTF-8"),
    (b'{"type": "turn/start", oops}\n', 24, "at column 24"),
])
def test_a_session_line_that_is_not_json_is_refused_at_its_bad_byte(tmp_path: Path, data: bytes, column: int, message: str):
    """As `replay script` says it: the byte column, and for a byte that is not UTF-8 that byte (it was "str is not valid
    UTF-8: surrogates not allowed", with no column)."""
    session = tmp_path / "session.jsonl"
    session.write_bytes(orjson.dumps(finish(1, 0)) + b"\n" + data)
    with pytest.raises(ReplayError) as info:
        load_session_groups(session)
    body = info.value.body
    assert (info.value.code, body["line"], body["column"]) == ("E_JSONL_LINE_INVALID", 2, column), body
    assert message in body["message"], body
    bad = session.read_bytes()[body["offset"] + body["column"] - 1:]
    assert bad.startswith(b"\xe9" if b"\xe9" in data else b"oops")


def test_a_script_document_gives_back_the_same_groups(tmp_path: Path):
    overrides = parse_overrides({"overrides": [THROW, HANG]})
    groups, _ = derive([chunk(1, 0, text="a"), finish(1, 0), chunk(1, 1, text="b"), finish(1, 1),
                        chunk(2, 0, text="half")], overrides)
    again = groups_from_script(orjson.loads(orjson.dumps(script_document(groups, "s.jsonl"))))
    assert [g.to_json() for g in again] == [g.to_json() for g in groups]
    assert [g.served for g in again] == [g.served for g in groups]


@pytest.mark.parametrize("document", [
    {"groups": []},
    {"version": 1, "groups": {}},
    {"version": 1, "groups": [{"turn": 1, "chunks": []}]},
    {"version": 1, "groups": [{"turn": 1, "step": 0, "chunks": [{"text": "x"}]}]},
    {"version": 1, "groups": [{"turn": 1, "step": 0, "chunks": [{"type": "text-delta"}]}]},
    {"version": 1, "groups": [{"turn": 1, "step": 0, "chunks": [{"type": "finish"}]},
                              {"turn": 1, "step": 0, "chunks": [{"type": "finish"}]}]},
    {"version": 1, "groups": [{"turn": 1, "step": 0, "chunks": [], "action": "throw"}]},
])
def test_a_broken_script_document_is_refused(document):
    with pytest.raises(ReplayError) as info:
        groups_from_script(document, "script.json")
    assert info.value.code == "E_SCRIPT_INVALID"
