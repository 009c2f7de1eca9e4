"""The logger: records on stderr, JSON lines when it is no terminal; Python warnings become records too."""

from __future__ import annotations

import io
import warnings

import orjson
from conftest import run_replay

from replay.pipeline.engine.log import log_warnings, make_logger


def test_a_python_warning_becomes_a_json_record():
    stream = io.StringIO()  # no terminal: JSON lines
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        log_warnings(make_logger("warning", stream))
        warnings.warn("Port 8787 is already in use.\nPerhaps you already have a cluster running?", UserWarning,
                      stacklevel=1)
    (line,) = stream.getvalue().splitlines()
    record = orjson.loads(line)
    assert (record["event"], record["level"], record["category"]) == ("python.warning", "warning", "UserWarning")
    assert record["message"].startswith("Port 8787 is already in use.") and "test_log.py:" in record["where"]


def test_every_command_turns_python_warnings_into_records():
    with warnings.catch_warnings():
        assert run_replay("stages", "--json").returncode == 0
        assert warnings.showwarning.__qualname__ == "log_warnings.<locals>.show"
