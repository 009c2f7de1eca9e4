"""What a ReplayError says as text (a traceback, pytest's report): its code, its message and its advice."""

from __future__ import annotations

import orjson

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.testing import ReplayModelError


def test_str_of_a_replay_error_carries_its_code_and_how_to_fix():
    """pytest printed only the message (`ReplayError: the model call ... ends without a finish chunk`): the code and
    the advice, which the CLI's JSON error has, were only in ``e.body``."""
    error = ReplayError("E_SESSION_GROUP_UNFINISHED", "the model call (turn 2, step 0) ends without a finish chunk",
                        howToFix="Say what happened in replay.override.json.")
    said = str(error)
    assert said.startswith("E_SESSION_GROUP_UNFINISHED: the model call (turn 2, step 0) ends without a finish chunk")
    assert "Say what happened in replay.override.json." in said
    assert error.message == "the model call (turn 2, step 0) ends without a finish chunk"
    # the JSON form is the body, as before: the message alone
    assert orjson.loads(error.to_json())["error"]["message"] == error.message


def test_the_catalogues_advice_is_said_when_the_error_gives_none():
    error = ReplayError("E_CONFIG_OPTION_INVALID", "stage 'x' has a bad option")
    assert str(error) == ("E_CONFIG_OPTION_INVALID: stage 'x' has a bad option\n"
                          "  howToFix: Run `replay stages` to see each option's type.")


def test_a_replay_model_error_says_its_advice_too():
    error = ReplayModelError("E_REPLAY_OUT_OF_ORDER", "asked for (turn 2, step 0)", turn=2, step=0, howToFix="Ask in order.")
    assert str(error) == "E_REPLAY_OUT_OF_ORDER: asked for (turn 2, step 0)\n  howToFix: Ask in order."
