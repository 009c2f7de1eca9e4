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


def test_a_warning_of_a_catalogue_code_says_how_to_fix_it(tmp_path):
    """A notice on stderr carries the catalogue's howToFix for its code, as an error's report does."""
    from replay.pipeline.engine.errors import how_to_fix

    journal = tmp_path / "run.jsonl"  # a run with no terminal event: validate's E_RUN_NOT_WHOLE warning
    journal.write_bytes(b'{"seq":1,"type":"run_started","runId":"r1","timestamp":"2026-01-01T00:00:00Z","payload":{}}\n')
    done = run_replay("validate", str(journal))
    (notice,) = [orjson.loads(line) for line in done.stderr.splitlines() if b'"warning"' in line]
    assert notice["code"] == "E_RUN_NOT_WHOLE"
    assert notice["howToFix"] == how_to_fix("E_RUN_NOT_WHOLE")


def test_a_warning_keeps_its_own_advice_and_one_of_an_unknown_code_gets_none():
    stream = io.StringIO()
    log = make_logger("warning", stream)
    log.warning("mine.notice", code="E_RUN_NOT_WHOLE", howToFix="do this")
    log.warning("plugin.notice", code="X_PLUGIN_OWN")
    log.warning("plain.notice")
    own, plugin, plain = map(orjson.loads, stream.getvalue().splitlines())
    assert own["howToFix"] == "do this"
    assert "howToFix" not in plugin and "howToFix" not in plain
