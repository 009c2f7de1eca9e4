"""An artifact is judged alike whether its file is named or its bytes come on stdin (one line or pretty-printed):
read, heal, validate and report refuse a format replay does not know on stdin too, and validate checks a piped
artifact against the artifact schema (found by a tester: stdin read it as a valid stream, exit 0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import errors_of, run_replay
from heal_support import ev

T = "2026-03-01T12:00:00Z"
GOOD = {"schemaVersion": "1.0.0", "artifactType": "replay", "id": "a1", "runId": "a1", "timestamp": T, "prompt": "p",
        "query": "p", "status": "ok", "response": "r",
        "events": [ev(1, "run_started", run="a1"), ev(2, "run_completed", run="a1")]}
ARTIFACTS = {
    "good": (GOOD, None),
    "unknown-version": (GOOD | {"schemaVersion": "9.9"}, "E_SCHEMA_VERSION_UNSUPPORTED"),
    "unknown-type": (GOOD | {"artifactType": "nope"}, "E_ARTIFACT_TYPE_INVALID"),
}


def _text(doc: dict, shape: str) -> bytes:
    return (json.dumps(doc, indent=2) if shape == "pretty" else json.dumps(doc)).encode() + b"\n"


def _as_piped(data: bytes, path: Path) -> bytes:
    """What the named file's run says, with the file's name as stdin's (`<stdin>`)."""
    return data.replace(str(path).encode(), b"<stdin>")


@pytest.mark.parametrize("shape", ["one-line", "pretty"])
@pytest.mark.parametrize("artifact", sorted(ARTIFACTS))
@pytest.mark.parametrize("command", ["read", "heal", "validate", "report"])
def test_an_artifact_on_stdin_is_judged_as_its_named_file(tmp_path: Path, command: str, artifact: str, shape: str) -> None:
    doc, code = ARTIFACTS[artifact]
    path = tmp_path / "piped.json"
    path.write_bytes(_text(doc, shape))
    named = run_replay(command, str(path))
    piped = run_replay(command, input=path.read_bytes())
    assert piped.returncode == named.returncode == (0 if code is None else 1), piped.stderr
    assert piped.stdout == _as_piped(named.stdout, path)
    assert piped.stderr == _as_piped(named.stderr, path)
    if code is not None:
        assert [e["code"] for e in errors_of(piped.stderr)] == [code]


@pytest.mark.parametrize("shape", ["one-line", "pretty"])
def test_validate_checks_a_piped_artifact_against_the_artifact_schema(tmp_path: Path, shape: str) -> None:
    """No id, status nor schemaVersion: each its own error on stdin too, and the input is an artifact, not a stream."""
    doc = {k: v for k, v in GOOD.items() if k not in ("id", "status", "schemaVersion")}
    path = tmp_path / "piped.json"
    path.write_bytes(_text(doc, shape))
    named = run_replay("validate", str(path))
    piped = run_replay("validate", input=path.read_bytes())
    assert (piped.returncode, piped.stdout, piped.stderr) == (1, _as_piped(named.stdout, path), _as_piped(named.stderr, path))
    assert {e["code"] for e in errors_of(piped.stderr)} == {"E_ARTIFACT_ID_INVALID", "E_ARTIFACT_STATUS_INVALID",
                                                           "E_SCHEMA_VERSION_UNSUPPORTED"}
    assert json.loads(piped.stdout)["kind"] == "artifact"


def test_a_journal_line_holding_an_artifact_of_an_unknown_format_is_refused(tmp_path: Path) -> None:
    """The one line of a .jsonl file, an artifact read whole, is refused as the artifact it is, not read as its events."""
    path = tmp_path / "one.jsonl"
    path.write_bytes(_text(GOOD | {"schemaVersion": "9.9"}, "one-line"))
    done = run_replay("read", str(path))
    assert done.returncode == 1 and [e["code"] for e in errors_of(done.stderr)] == ["E_SCHEMA_VERSION_UNSUPPORTED"]
    assert b'"type"' not in done.stdout  # (no event of it came out)
