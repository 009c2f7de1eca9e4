"""walk refuses a .json file that is no artifact to read as read, report and heal refuse it (artifact_refusal's code,
as walk's refusal's cause), before any output, with --at too: it took a one-line object as a record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import errors_of, run_replay
from heal_support import ev

CASES = {
    "record.json": (json.dumps(ev(1, "run_started", run="r1")), "E_ARTIFACT_EVENTS_INVALID"),  # one event, no `events`
    "string.json": ('"hello"', "E_ARTIFACT_SHAPE_INVALID"),
    "events5.json": ('{"events": 5}', "E_ARTIFACT_EVENTS_INVALID"),
    "v9.json": ('{"schemaVersion": "9.9.9", "artifactType": "replay", "events": []}', "E_SCHEMA_VERSION_UNSUPPORTED"),
    "other.json": ('{"artifactType": "other", "events": []}', "E_ARTIFACT_TYPE_INVALID"),
    # an artifactType of a side file replay writes, on a document with `events`: no heal log, an artifact read refuses
    "heal-log-type.json": ('{"schemaVersion": "1.0.0", "artifactType": "heal-log", "events": []}', "E_ARTIFACT_TYPE_INVALID"),
    "raw-capture-type.json": ('{"schemaVersion": "1.0.0", "artifactType": "raw-capture", "events": []}',
                              "E_ARTIFACT_TYPE_INVALID"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_walk_refuses_what_read_refuses_with_its_code(tmp_path: Path, name: str) -> None:
    text, code = CASES[name]
    target = tmp_path / name
    target.write_text(text + "\n")
    read = run_replay("read", str(target))
    [said] = errors_of(read.stderr)
    assert said["code"] == code, said
    for at in ([], ["--at", "1"]):
        walk = run_replay("walk", str(target), *at)
        [error] = errors_of(walk.stderr)
        assert walk.returncode == 2 and walk.stdout == b"", (at, walk.stderr)
        assert (error["code"], error["refusal"], error["cause"]) == ("E_JOURNAL_READ_FAILED", "journal_read_failed", code)
        assert error["message"].startswith("REFUSED [journal_read_failed] "), error
        assert said["message"] in error["message"], (error, said)
        if name.startswith("raw-capture"):  # (read says it is capture's raw side file: walk says what to walk instead)
            assert "raw runner output" in said["howToFix"] and error["howToFix"].startswith("Walk the run's journal")
        else:
            assert error["howToFix"] == said["howToFix"], (error, said)
        assert (error["line"], error["offset"], error["path"]) == (said["line"], said["offset"], said["path"])


def test_walk_refuses_the_artifact_type_fixture_as_read_does() -> None:
    """tests/fixtures/artifacts/invalid/E_ARTIFACT_TYPE_INVALID.json (artifactType "heal-log", an `events` array) is
    no heal log: refused before any output (exit 2), not walked into a failure with nothing printed (exit 1)."""
    target = Path(__file__).parents[1] / "fixtures" / "artifacts" / "invalid" / "E_ARTIFACT_TYPE_INVALID.json"
    for at in ([], ["--at", "x"]):
        walk = run_replay("walk", str(target), *at)
        [error] = errors_of(walk.stderr)
        assert walk.returncode == 2 and walk.stdout == b"", (at, walk.stderr)
        assert (error["code"], error["cause"], error["path"]) == ("E_JOURNAL_READ_FAILED", "E_ARTIFACT_TYPE_INVALID",
                                                                  "$.artifactType"), error
        assert error["message"].startswith("REFUSED [journal_read_failed] ") and "artifactType" in error["howToFix"]
