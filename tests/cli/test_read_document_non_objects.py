"""`replay read` of a JSON document (an array of records, an artifact) with an element that is no object: a dropped
record stands in its place, so a heal, validate or report down the pipe reports it as one of the file does."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import errors_of, jsonl, run_replay

START = {"seq": 1, "timestamp": "2026-03-01T12:00:00Z", "type": "run_started", "runId": "r", "payload": {}}
END = {"seq": 2, "timestamp": "2026-03-01T12:00:01Z", "type": "run_completed", "runId": "r", "payload": {}}
DOCUMENTS = {
    "array": ([START, 3, END], "$[1]"),
    "artifact": ({"runId": "r", "prompt": "p", "status": "ok", "response": "x", "events": [START, "oops", END]},
                 "$.events[1]"),
}


def _same(error: dict) -> tuple:
    """What a diagnostic says but where it was read from (the pipe's source is stdin)."""
    return error["code"], error["message"], error.get("path"), error.get("howToFix")


@pytest.mark.parametrize("kind", DOCUMENTS)
def test_read_writes_a_dropped_record_in_place_of_the_element(tmp_path: Path, kind: str) -> None:
    document, pointer = DOCUMENTS[kind]
    path = tmp_path / "doc.json"
    path.write_bytes(orjson.dumps(document))
    read = run_replay("read", str(path))
    assert read.returncode == 1
    records = jsonl(read.stdout)
    dropped = [r for r in records if r.get("$record") == "dropped"]
    assert len(dropped) == 1 and dropped[0]["code"] == "E_EVENT_NOT_OBJECT" and dropped[0]["path"] == pointer
    assert records.index(dropped[0]) == records.index(START) + 1  # where the element was, between its neighbours
    assert [e["code"] for e in errors_of(read.stderr)] == ["E_EVENT_NOT_OBJECT"]


@pytest.mark.parametrize("kind", DOCUMENTS)
@pytest.mark.parametrize("command", ["heal", "report", "validate"])
def test_a_pipe_from_read_reports_the_element_as_the_file_does(tmp_path: Path, kind: str, command: str) -> None:
    document, pointer = DOCUMENTS[kind]
    path = tmp_path / "doc.json"
    path.write_bytes(orjson.dumps(document))
    stream = run_replay("read", str(path)).stdout
    piped = run_replay(command, input=stream)
    assert piped.returncode == 1, piped.stderr
    piped_errors = [_same(e) for e in errors_of(piped.stderr)]
    assert ("E_EVENT_NOT_OBJECT", f"{pointer} is not an object", pointer) in [e[:3] for e in piped_errors]
    if command == "validate":
        assert jsonl(piped.stdout)[0]["valid"] is False
        return
    direct = run_replay(command, str(path))
    assert (piped.returncode, piped_errors) == (direct.returncode, [_same(e) for e in errors_of(direct.stderr)])
    if command == "heal":
        assert piped.stdout == direct.stdout


@pytest.mark.parametrize(("kind", "advice"), [
    ("array", "Each element of the array must be one JSON object (a record): fix or remove $[1]."),
    ("artifact", "Each element of the artifact's `events` must be one JSON object (an event): fix or remove $.events[1]."),
])
def test_the_advice_names_the_element_not_a_line(tmp_path: Path, kind: str, advice: str) -> None:
    document, _ = DOCUMENTS[kind]
    path = tmp_path / "doc.json"
    path.write_bytes(orjson.dumps(document))
    read = run_replay("read", str(path))
    [error] = errors_of(read.stderr)
    [dropped] = [r for r in jsonl(read.stdout) if r.get("$record") == "dropped"]
    assert error["howToFix"] == dropped["howToFix"] == advice
    assert [e["howToFix"] for e in errors_of(run_replay("heal", input=read.stdout).stderr)] == [advice]  # (down the pipe)
