"""The replay model: recorded calls served in order, throw and hang overrides, and no improvising."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.session import Group, Override
from replay.pipeline.testing import RecordedStreamError, ReplayModel, ReplayModelError

pytestmark = pytest.mark.anyio


def text(t: str) -> dict[str, Any]:
    return {"type": "text-delta", "text": t}


FINISH = {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 3, "outputTokens": 2}}


def model(*groups: Group) -> ReplayModel:
    return ReplayModel(groups, source="s.jsonl")


def three_calls() -> ReplayModel:
    return model(Group(1, 0, [text("a"), text("b"), FINISH]), Group(1, 1, [text("c"), FINISH]),
                 Group(2, 0, [text("d"), FINISH]))


async def drain(stream: Any) -> list[dict[str, Any]]:
    return [chunk async for chunk in stream]


async def test_each_call_gets_its_recorded_chunks_in_order():
    replay = three_calls()
    assert replay.calls == [(1, 0), (1, 1), (2, 0)]
    assert await drain(replay.stream(1, 0, messages=[{"role": "user", "content": "ignored"}])) == [text("a"), text("b"), FINISH]
    assert await drain(replay.stream(turn=1, step=1)) == [text("c"), FINISH]
    assert replay.remaining == [(2, 0)]
    assert await drain(replay.stream(2, 0)) == [text("d"), FINISH]
    replay.check_done()


async def test_the_agent_changing_a_chunk_does_not_change_the_recording():
    group = Group(1, 0, [{"type": "tool-call", "toolCallId": "c1", "toolName": "echo", "input": {"text": "x"}}, FINISH])
    replay = model(group)
    chunks = await drain(replay.stream(1, 0))
    chunks[0]["input"]["text"] = "changed"
    assert group.chunks[0]["input"] == {"text": "x"}


async def test_asking_out_of_order_names_both_calls():
    replay = three_calls()
    await drain(replay.stream(1, 0))
    with pytest.raises(ReplayModelError) as info:
        replay.stream(2, 0)
    error = info.value
    assert error.code == "E_REPLAY_OUT_OF_ORDER"
    assert (error.turn, error.step) == (2, 0)
    assert "(turn 2, step 0)" in str(error) and "(turn 1, step 1)" in str(error)
    assert error.body["expected"] == [1, 1] and error.body["received"] == [2, 0]
    assert replay.remaining == [(1, 1), (2, 0)]  # nothing was consumed by the refused call


async def test_asking_past_the_end_is_an_error():
    replay = model(Group(1, 0, [FINISH]))
    await drain(replay.stream(1, 0))
    with pytest.raises(ReplayModelError) as info:
        replay.stream(1, 1)
    assert info.value.code == "E_REPLAY_PAST_END"
    assert "(turn 1, step 1)" in str(info.value) and "its last was (turn 1, step 0)" in str(info.value)


async def test_calls_left_over_at_the_end_are_an_error_naming_the_first():
    replay = three_calls()
    await drain(replay.stream(1, 0))
    with pytest.raises(ReplayModelError) as info:
        replay.check_done()
    assert info.value.code == "E_REPLAY_LEFTOVER"
    assert (info.value.turn, info.value.step) == (1, 1)
    assert "(turn 1, step 1) and 1 more were never asked for" in str(info.value)  # ("was", once)
    await drain(replay.stream(1, 1))
    with pytest.raises(ReplayModelError, match=r"call \(turn 2, step 0\) was never asked for"):
        replay.check_done()


@pytest.mark.parametrize("turn", ["1", 1.0, True])
async def test_a_turn_or_step_that_is_no_int_is_a_type_error(turn: Any):
    """`stream('1', 0)` was E_REPLAY_OUT_OF_ORDER "asked for (turn 1, step 0) but the recording's next model call is
    (turn 1, step 0)"; `stream(True, 0)` and `stream(1.0, 0)` were taken as turn 1."""
    replay = three_calls()
    with pytest.raises(TypeError, match="`turn` must be an int"):
        replay.stream(turn, 0)
    with pytest.raises(TypeError, match="`step` must be an int"):
        replay.stream(1, turn)
    assert replay.remaining == [(1, 0), (1, 1), (2, 0)] and not replay.failures


async def test_as_a_context_manager_leftovers_fail_on_exit():
    with pytest.raises(ReplayModelError, match="E_REPLAY_LEFTOVER"):
        async with three_calls() as replay:
            await drain(replay.stream(1, 0))


async def test_an_error_the_agent_swallowed_is_raised_again_at_the_end():
    replay = three_calls()
    with contextlib.suppress(Exception):
        replay.stream(1, 1)
    for key in replay.remaining:
        await drain(replay.stream(*key))
    with pytest.raises(ReplayModelError) as info:
        replay.check_done()
    assert info.value.code == "E_REPLAY_OUT_OF_ORDER"


async def test_throw_yields_the_recorded_chunks_then_raises_the_recorded_error():
    error = {"name": "APIError", "message": "overloaded", "status": 529}
    replay = model(Group(1, 0, [text("Let me")], Override(1, 0, "throw", error)))
    got: list[dict[str, Any]] = []
    with pytest.raises(RecordedStreamError) as info:
        async for chunk in replay.stream(1, 0):
            got.append(chunk)
    assert got == [text("Let me")]
    exc = info.value
    assert type(exc).__name__ == "APIError"
    assert (exc.name, exc.message, str(exc), exc.data) == ("APIError", "overloaded", "overloaded", {"status": 529})
    replay.check_done()  # the call was made; a recorded throw is not a replay failure


async def test_throw_replaces_a_recorded_finish():
    replay = model(Group(1, 0, [text("a"), FINISH], Override(1, 0, "throw", {"name": "x y", "message": "m"})))
    got: list[dict[str, Any]] = []
    with pytest.raises(RecordedStreamError) as info:
        async for chunk in replay.stream(1, 0):
            got.append(chunk)
    assert got == [text("a")]
    assert type(info.value) is RecordedStreamError and info.value.name == "x y"  # not a class name: the base class


async def test_hang_blocks_until_the_caller_cancels_its_scope():
    replay = model(Group(1, 0, [text("a"), text("b")], Override(1, 0, "hang")))
    got: list[dict[str, Any]] = []
    all_in = anyio.Event()
    ended: list[str] = []

    async def consume(scope: anyio.CancelScope) -> None:
        with scope:
            async for chunk in replay.stream(1, 0):
                got.append(chunk)
                if len(got) == 2:
                    all_in.set()
            ended.append("stream finished")  # must never happen: the stream hangs
        ended.append("cancelled" if scope.cancelled_caught else "left the scope otherwise")

    scope = anyio.CancelScope()
    async with anyio.create_task_group() as tg:
        tg.start_soon(consume, scope)
        await all_in.wait()
        for _ in range(50):  # give the stream every chance to end on its own
            await anyio.lowlevel.checkpoint()
        assert ended == []
        scope.cancel()
    assert got == [text("a"), text("b")]
    assert ended == ["cancelled"]


async def test_hang_ends_with_a_timeout():
    replay = model(Group(1, 0, [text("a"), FINISH], Override(1, 0, "hang")))
    got: list[dict[str, Any]] = []
    with pytest.raises(TimeoutError):
        with anyio.fail_after(0.05):
            async for chunk in replay.stream(1, 0):
                got.append(chunk)
    assert got == [text("a")]


async def test_a_session_and_its_script_replay_the_same(tmp_path: Path):
    lines = [
        {"type": "turn/start", "turn": 1},
        {"type": "assistant/chunk", "turn": 1, "step": 0, "chunk": text("hi")},
        {"type": "assistant/chunk", "turn": 1, "step": 0, "chunk": FINISH},
        {"type": "assistant/chunk", "turn": 2, "step": 0, "chunk": text("half")},
    ]
    session = tmp_path / "session.jsonl"
    session.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    (tmp_path / "replay.override.json").write_bytes(orjson.dumps(
        {"overrides": [{"turn": 2, "step": 0, "action": "throw", "error": {"name": "APIError", "message": "boom"}}]}))
    from replay.pipeline.model.session import load_session_groups, script_document

    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps(script_document(load_session_groups(session))))
    for replay in (ReplayModel.from_session(session), ReplayModel.load(script), ReplayModel.load(session)):
        assert await drain(replay.stream(1, 0)) == [text("hi"), FINISH]
        with pytest.raises(RecordedStreamError, match="boom"):
            await drain(replay.stream(2, 0))
        replay.check_done()


def test_an_override_given_with_a_replay_script_is_refused_not_ignored(tmp_path: Path):
    """A script holds its actions; a sidecar given with one was dropped without a word, so the throw it names never
    happened and the test passed against another recording than the one asked for."""
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps({"version": 1, "groups": [{"turn": 1, "step": 0, "chunks": [FINISH]}]}))
    sidecar = tmp_path / "replay.override.json"
    sidecar.write_bytes(orjson.dumps({"overrides": [{"turn": 1, "step": 0, "action": "hang"}]}))
    with pytest.raises(ReplayError) as raised:
        ReplayModel.load(script, sidecar)
    assert raised.value.code == "E_USAGE_INVALID"
    assert ReplayModel.load(script).calls == [(1, 0)]


@pytest.mark.parametrize("content", [b"", b"\n\n", b'{"type":"user","message":"hi"}\n{"type":"assistant"}\n'],
                         ids=["empty", "blank-lines", "another-agents-log"])
async def test_a_file_that_is_no_session_is_refused_as_replay_script_refuses_it(tmp_path: Path, content: bytes):
    """ReplayModel.from_session took an empty file, or a log none of whose lines is a session line, as a session with no
    model call: a test of it passed, replaying nothing. It is no session (E_SESSION_LINE_INVALID), said as the script
    stage says it (one check: ``SessionShape``)."""
    from conftest import run_replay

    path = tmp_path / "session.jsonl"
    path.write_bytes(content)
    with pytest.raises(ReplayError) as caught:
        ReplayModel.from_session(path)
    error = caught.value.body
    by_script = orjson.loads(run_replay("script", str(path), process=True).stderr.splitlines()[0])["error"]
    assert error["code"] == by_script["code"] == "E_SESSION_LINE_INVALID"
    assert (error["source"], error["received"]) == (by_script["source"], by_script["received"])
    assert error["message"] == by_script["message"] and caught.value.exit_code == 1
    path.write_bytes(b'{"type":"session/start"}\n{"type":"turn/start","turn":1}\n')  # a session with no model call
    assert ReplayModel.from_session(path).remaining == []


def test_a_cut_off_last_line_is_refused_as_replay_script_refuses_it(tmp_path: Path):
    """A session whose last line has no newline and is no JSON is torn: `replay script` said E_JSONL_LINE_TORN (with
    the session's advice), ReplayModel.load E_JSONL_LINE_INVALID (``session_lines`` never looked for the newline)."""
    from conftest import run_replay

    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"type":"session/start","ts":"2026-01-01T00:00:00Z"}\n{"type":"assistant/chu')
    with pytest.raises(ReplayError) as caught:
        ReplayModel.load(path)
    error = caught.value.body
    by_script = orjson.loads(run_replay("script", str(path), process=True).stderr.splitlines()[0])["error"]
    by_script.pop("stage")
    assert error == by_script and error["code"] == "E_JSONL_LINE_TORN"


def test_a_session_whose_every_line_is_refused_is_refused_as_replay_script_ends(tmp_path: Path):
    """`replay script` ends with E_SESSION_LINE_INVALID "no session lines read"; ReplayModel.load raised the first line's
    E_JSONL_LINE_INVALID "(and 2 more problems)", and those problems were nowhere in the error. Now the same refusal,
    with every line's refusal in the body's ``problems``."""
    from conftest import run_replay

    path = tmp_path / "s.jsonl"
    path.write_bytes(b"hello\nworld\n")
    with pytest.raises(ReplayError) as caught:
        ReplayModel.load(path)
    error = caught.value.body
    said = [orjson.loads(line)["error"] for line in run_replay("script", str(path), process=True).stderr.splitlines()]
    for body in said:
        body.pop("stage")
    *lines, last = said
    assert error["code"] == last["code"] == "E_SESSION_LINE_INVALID"
    assert (error["source"], error["received"]) == (last["source"], last["received"])
    assert error["message"].startswith("no session lines read: each of the input's 2 lines was refused")
    assert error["problems"] == lines and [p["line"] for p in lines] == [1, 2]


def test_a_refusal_of_the_python_api_names_each_way_in(tmp_path: Path):
    """The advice said "Give `ReplayModel.from_session` ..." also to a caller of ReplayModel.load or the replay_session
    fixture; it names the three."""
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"")
    with pytest.raises(ReplayError) as caught:
        ReplayModel.load(path)
    advice = caught.value.body["howToFix"]
    assert all(way in advice for way in ("`ReplayModel.load`", "`ReplayModel.from_session`", "`replay_session` fixture"))
