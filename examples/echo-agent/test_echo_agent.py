"""The echo agent under test without a model: replay's pytest fixture serves the recorded session's calls.

    pytest examples/echo-agent/test_echo_agent.py
"""

import pytest
from agent import run


@pytest.fixture
def anyio_backend():
    return "asyncio"  # the agent is written for asyncio


@pytest.mark.anyio
async def test_the_echo_session_replays(replay_session, tmp_path):
    model = replay_session("scenarios/echo/session.jsonl")
    transcript = await run(model, ["echo hello world", "thanks"], tmp_path / "session.jsonl")
    assert "The echo tool said: hello world" in transcript


@pytest.mark.anyio
async def test_the_overloaded_model_call_raises_the_recorded_error(replay_session, tmp_path):
    model = replay_session("scenarios/overloaded/session.jsonl")  # with replay.override.json beside it
    transcript = await run(model, ["echo before", "overload", "echo after"], tmp_path / "session.jsonl")
    assert "[model error] APIError: overloaded" in transcript
