"""What a ReplayError says as text (a traceback, pytest's report): its code, its message and its advice; and what an
exception is said to be in one (``exc_reason``)."""

from __future__ import annotations

import errno
import os

import orjson

from replay.pipeline.engine.errors import ReplayError, exc_reason
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


def test_an_exception_with_no_text_is_said_by_its_type():
    """An error message naming why something failed never ends in an empty reason: E_CLUSTER_UNREACHABLE said
    `no Dask scheduler answered at 'tcp://...': ` for a MemoryError() distributed raised."""
    assert exc_reason(MemoryError()) == "MemoryError"
    assert exc_reason(TimeoutError()) == "TimeoutError"
    assert exc_reason(ValueError("bad port")) == "bad port"
    # an OSError: the system's words, also when raised with the path only (fsspec's FileNotFoundError(path))
    assert exc_reason(ConnectionRefusedError(errno.ECONNREFUSED, os.strerror(errno.ECONNREFUSED))) == "Connection refused"
    assert exc_reason(FileNotFoundError("s3://b/k")) == os.strerror(errno.ENOENT)
    assert exc_reason(OSError("Timed out trying to connect")) == "Timed out trying to connect"
