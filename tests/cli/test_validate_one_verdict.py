"""The same bytes get the same verdict from validate however they come: an artifact from its file and from stdin (an
artifact is one run: an event naming another runId is one error, its seq checked with its artifact's, not a run of its
own), and a record that is no object takes its place in an artifact, a .json array and a journal alike (reported once,
the event after it may have its place's seq: no follow-on seq error)."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import errors_of, run_replay

T = "2026-03-01T12:00:0{}.000Z"
TYPES = ["run_started", "user_message", "tool_called", "tool_completed", "assistant_message", "run_completed"]


def _event(seq: int, run_id: str = "run_a") -> dict:
    return {"seq": seq, "timestamp": T.format(seq), "type": TYPES[seq - 1], "runId": run_id, "payload": {}}


def _artifact(events: list) -> dict:
    return {"schemaVersion": "1.0.0", "artifactType": "replay", "id": "art_1", "runId": "run_a", "timestamp": T.format(1),
            "prompt": "p", "query": "p", "status": "ok", "response": "r", "events": events}


def _verdict(proc) -> tuple:
    summary = orjson.loads(proc.stdout)
    codes = sorted((e["code"], e.get("path")) for e in errors_of(proc.stderr))
    return proc.returncode, summary["valid"], summary["errors"], summary["events"], codes


def test_an_artifact_event_of_another_run_is_one_error_from_a_file_and_from_stdin(tmp_path: Path) -> None:
    events = [_event(k) for k in range(1, 7)]
    events[2]["runId"] = "other"
    data = orjson.dumps(_artifact(events))
    (tmp_path / "a.json").write_bytes(data)
    by_file = run_replay("validate", "a.json", cwd=tmp_path)
    by_stdin = run_replay("validate", input=data, cwd=tmp_path)
    expected = (1, False, 1, 6, [("E_EVENT_INVALID", "$.events[2].runId")])
    assert _verdict(by_file) == expected, by_file.stderr
    assert _verdict(by_stdin) == expected, by_stdin.stderr
    (error,) = errors_of(by_stdin.stderr)
    assert (error["expected"], error["received"]) == ("run_a", "other") and "one run" in error["message"]
    assert orjson.loads(by_stdin.stdout)["kind"] == "artifact"  # (on stdin too: judged as its file is)


def test_a_record_that_is_no_object_takes_its_place_in_every_form(tmp_path: Path) -> None:
    records = [_event(1), 5, _event(3)]
    (tmp_path / "a.json").write_bytes(orjson.dumps(_artifact(records)))
    (tmp_path / "arr.json").write_bytes(orjson.dumps(records))
    (tmp_path / "j.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    verdicts = {}
    for name in ("a.json", "arr.json", "j.jsonl"):
        proc = run_replay("validate", name, cwd=tmp_path)
        verdicts[name] = _verdict(proc)
        assert [e for e in errors_of(proc.stderr) if e["code"] == "E_ARTIFACT_EVENT_SEQ_INVALID"] == [], proc.stderr
    assert verdicts["a.json"] == (1, False, 1, 2, [("E_ARTIFACT_EVENT_INVALID", "$.events[1]")])
    assert verdicts["arr.json"] == (1, False, 1, 2, [("E_EVENT_NOT_OBJECT", "$[1]")])
    assert verdicts["j.jsonl"] == (1, False, 1, 2, [("E_EVENT_NOT_OBJECT", None)])
    # the same through a pipe (read's dropped record in the line's place), and the artifact on stdin as its file
    piped = run_replay("validate", input=run_replay("read", "j.jsonl", cwd=tmp_path).stdout, cwd=tmp_path)
    assert _verdict(piped) == (1, False, 1, 2, [("E_EVENT_NOT_OBJECT", None)]), piped.stderr
    stdin = run_replay("validate", input=(tmp_path / "a.json").read_bytes(), cwd=tmp_path)
    assert _verdict(stdin) == verdicts["a.json"], stdin.stderr


def test_a_leading_record_that_is_no_object_is_the_run_s_first_place(tmp_path: Path) -> None:
    (tmp_path / "j.jsonl").write_bytes(b"[]\n" + orjson.dumps(_event(2)) + b"\n")
    proc = run_replay("validate", "j.jsonl", cwd=tmp_path)
    assert _verdict(proc) == (1, False, 1, 1, [("E_EVENT_NOT_OBJECT", None)]), proc.stderr


def test_a_seq_out_of_place_after_a_record_that_is_no_object_is_still_said(tmp_path: Path) -> None:
    (tmp_path / "arr.json").write_bytes(orjson.dumps([_event(1), 5, _event(5)]))
    proc = run_replay("validate", "arr.json", cwd=tmp_path)
    assert _verdict(proc)[4] == [("E_ARTIFACT_EVENT_SEQ_INVALID", "$[2].seq"), ("E_EVENT_NOT_OBJECT", "$[1]")]
