"""`replay validate` as a real process: every artifact error code from its situation, exit codes, stdout summaries."""

from __future__ import annotations

import copy
import gzip
import os
import pty
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import EXAMPLES, REPLAY, ROOT, errors_of, jsonl, run_replay

from replay.pipeline.engine import exactjson
from replay.pipeline.model.validation import is_no_event

T0 = "2026-03-01T12:00:00.000Z"


def ev(seq: Any, type_: str = "tool_called", **more: Any) -> dict[str, Any]:
    return {"seq": seq, "timestamp": T0, "type": type_, "runId": "run_1", "payload": {}, **more}


GOOD: dict[str, Any] = {
    "schemaVersion": "1.0.0", "artifactType": "replay", "id": "run_1", "runId": "run_1", "timestamp": T0,
    "prompt": "Top holdings?", "query": "Top holdings?", "status": "ok", "response": "AAPL",
    "events": [ev(1, "run_started"), ev(2, "assistant_message"), ev(3, "run_completed")],
}


def write_json(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    return path


def write_lines(path: Path, records: list[Any]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def changed(change: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    doc = copy.deepcopy(GOOD)
    change(doc)
    return doc


# every artifact code, produced by the situation it names ----------------------------------------------
# (code, artifact content (bytes are written as they are), path, expected, received)
SITUATIONS: list[tuple[str, Any, str, Any, Any]] = [
    ("E_ARTIFACT_JSON_INVALID", b'{"schemaVersion": "1.0.0", "events": [', "$", "one JSON object", '{"schemaVersion": "1.0.0", "events": ['),
    ("E_ARTIFACT_SHAPE_INVALID", 42, "$", "object", 42),  # (an array is no artifact: a journal written as one)
    ("E_ARTIFACT_TYPE_INVALID", changed(lambda d: d.update(artifactType="heal-log")), "$.artifactType", "replay", "heal-log"),
    ("E_SCHEMA_VERSION_UNSUPPORTED", changed(lambda d: d.update(schemaVersion="2.0.0")), "$.schemaVersion", "1.0.0", "2.0.0"),
    ("E_ARTIFACT_ID_INVALID", changed(lambda d: d.pop("id")), "$.id", "non-empty string", "missing"),
    ("E_ARTIFACT_STATUS_INVALID", changed(lambda d: d.update(status="done")), "$.status", '"ok" or "error"', "done"),
    ("E_ARTIFACT_EVENTS_INVALID", changed(lambda d: d.update(events={"seq": 1})), "$.events", "array", "object"),
    ("E_ARTIFACT_EVENT_INVALID", changed(lambda d: d["events"].__setitem__(1, ["assistant_message"])), "$.events[1]", "object", "array"),
    ("E_ARTIFACT_EVENT_TYPE_INVALID", changed(lambda d: d["events"][2].update(type=42)), "$.events[2].type",
     'non-empty string, e.g. "tool_called"', 42),
    ("E_ARTIFACT_EVENT_SEQ_INVALID", changed(lambda d: d["events"][2].update(seq=7)), "$.events[2].seq", 3, 7),
    ("E_ARTIFACT_EVENT_TIMESTAMP_INVALID", changed(lambda d: d["events"][0].update(timestamp="03/01/2026 12:00")),
     "$.events[0].timestamp", "RFC 3339 date-time string, e.g. 2026-03-01T12:00:00.000Z", "03/01/2026 12:00"),
]


@pytest.mark.parametrize(("code", "content", "path", "expected", "received"), SITUATIONS, ids=[s[0] for s in SITUATIONS])
def test_each_artifact_code_from_its_situation(tmp_path: Path, code: str, content: Any, path: str, expected: Any,
                                                received: Any) -> None:
    target = tmp_path / "run_1.healed.json"
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        write_json(target, content)
    done = run_replay("validate", "--in", str(target))
    assert done.returncode == 1
    (error,) = errors_of(done.stderr)
    assert error["code"] == code
    assert (error["path"], error["expected"], error["received"]) == (path, expected, received)
    assert error["source"] == str(target)
    assert error["howToFix"] and error["message"]
    (summary,) = jsonl(done.stdout)
    assert summary == {"source": str(target), "kind": "artifact", "valid": False, "errors": 1,
                       # (its events that are objects with an event type: an element that is none, or one whose
                       # `type` is none, is no event, as in a stream, and as report counts them)
                       "events": sum(type(e) is dict and not is_no_event(e) for e in content["events"])
                       if isinstance(content, dict) and isinstance(content.get("events"), list) else 0}


def test_json_syntax_errors_say_where(tmp_path: Path) -> None:
    target = tmp_path / "a.json"
    target.write_bytes(b'{\n  "id": "a",\n  "status": ok\n}\n')
    (error,) = errors_of(run_replay("validate", "--in", str(target)).stderr)
    assert (error["code"], error["line"], error["column"]) == ("E_ARTIFACT_JSON_INVALID", 3, 13)


def test_a_valid_artifact_exits_zero_with_its_summary(tmp_path: Path) -> None:
    target = write_json(tmp_path / "ok.json", GOOD)
    done = run_replay("validate", "--in", str(target))
    assert (done.returncode, errors_of(done.stderr)) == (0, [])
    assert jsonl(done.stdout) == [{"source": str(target), "kind": "artifact", "valid": True, "errors": 0, "events": 3}]


# unusable --in paths: refused before any output ------------------------------------------------------
def test_a_missing_path_is_refused(tmp_path: Path) -> None:
    missing = str(tmp_path / "nowhere")
    done = run_replay("validate", "--in", missing)
    assert (done.returncode, done.stdout) == (2, b"")
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"], error["received"]) == ("E_INPUT_PATH_NOT_FOUND", missing, "nothing")
    assert error["expected"] and error["howToFix"]


def test_a_journal_of_another_name_named_as_a_path_is_read_as_read_reads_it(tmp_path: Path) -> None:
    """`replay validate run.log` was E_INPUT_FILE_NOT_JSON (advice about --in), while read, heal and report read it."""
    log = tmp_path / "run.log"
    log.write_bytes((EXAMPLES / "journals" / "two-runs.jsonl").read_bytes())
    done = run_replay("validate", str(log))
    assert done.returncode == 0 and jsonl(done.stdout) == [
        {"source": str(log), "kind": "stream", "valid": True, "errors": 0, "events": 11, "runs": 2}]


def test_a_file_that_is_not_json_is_refused(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("{}")
    done = run_replay("validate", "--in", str(notes))
    assert (done.returncode, done.stdout) == (2, b"")
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"], error["received"]) == ("E_INPUT_FILE_NOT_JSON", str(notes), "notes.txt")  # (the name, as heal and report give it)
    assert ".json" in error["expected"] and error["howToFix"]


def test_a_named_pipe_is_neither_file_nor_directory(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    # must not open (and block on) the pipe; a real process, so that a hang times out (in this one it hung the suite:
    # validate read every FIFO as a stream, where only this process's descriptors, `<(...)`'s /dev/fd/N, are one)
    done = run_replay("validate", "--in", str(fifo), timeout=30, process=True)
    assert (done.returncode, done.stdout) == (2, b"")
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"], error["received"]) == ("E_INPUT_NOT_FILE_OR_DIR", str(fifo), "named pipe")
    assert error["expected"] and error["howToFix"]


def test_an_unusable_path_refuses_the_whole_run_before_output(tmp_path: Path) -> None:
    good = write_json(tmp_path / "ok.json", GOOD)
    done = run_replay("validate", "--in", str(good), "--in", str(tmp_path / "missing.json"))
    assert (done.returncode, done.stdout) == (2, b"")
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_INPUT_PATH_NOT_FOUND"]


# directories -------------------------------------------------------------------------------------------
def test_a_directory_is_walked_in_order_skipping_side_files(tmp_path: Path) -> None:
    root = tmp_path / "artifacts"
    write_json(root / "2026-03-02" / "b.healed.json", GOOD)
    write_json(root / "2026-03-01" / "a.healed.json", changed(lambda d: d.update(status="?", id="")))
    write_json(root / "2026-03-01" / "a.raw.json", {"stdout": "not an artifact"})
    write_json(root / "2026-03-01" / "a.heal-log.json", {"artifactType": "heal-log"})
    (root / "README.md").write_text("# notes")
    write_lines(root / "journal.jsonl", [ev(1), ev(3)])
    done = run_replay("validate", "--in", str(root))
    assert done.returncode == 1
    summaries = jsonl(done.stdout)
    assert [Path(s["source"]).relative_to(root).as_posix() for s in summaries] == [
        "2026-03-01/a.healed.json", "2026-03-02/b.healed.json", "journal.jsonl",
    ]
    assert [(s["kind"], s["valid"], s["errors"]) for s in summaries] == [
        ("artifact", False, 2), ("artifact", True, 0), ("stream", False, 1),
    ]
    errors = errors_of(done.stderr)
    assert [(Path(e["source"]).name, e["code"]) for e in errors] == [
        ("a.healed.json", "E_ARTIFACT_ID_INVALID"), ("a.healed.json", "E_ARTIFACT_STATUS_INVALID"),
        ("journal.jsonl", "E_ARTIFACT_EVENT_SEQ_INVALID"),
    ]


def test_a_directory_of_valid_artifacts_exits_zero(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        write_json(tmp_path / f"{name}.json", changed(lambda d, n=name: d.update(id=n)))
    done = run_replay("validate", "--in", str(tmp_path))
    assert (done.returncode, errors_of(done.stderr)) == (0, [])
    assert [s["valid"] for s in jsonl(done.stdout)] == [True, True, True]


def test_an_empty_directory_is_valid_but_says_so_on_stderr(tmp_path: Path) -> None:
    done = run_replay("validate", "--in", str(tmp_path))
    assert (done.returncode, done.stdout) == (0, b"")
    assert b"nothing_found" in done.stderr


def test_a_file_that_cannot_be_read_is_a_problem_of_that_file_only(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", GOOD)
    (tmp_path / "b.json").symlink_to(tmp_path / "gone.json")
    (tmp_path / "c.jsonl").symlink_to(tmp_path / "gone.jsonl")
    (tmp_path / "d.jsonl").symlink_to(tmp_path / "d.jsonl")  # a link that loops (the walk stopped at it: E_UNHANDLED)
    done = run_replay("validate", "--in", str(tmp_path))
    assert done.returncode == 1
    assert [(Path(s["source"]).name, s["valid"]) for s in jsonl(done.stdout)] == [
        ("a.json", True), ("b.json", False), ("c.jsonl", False), ("d.jsonl", False)]
    assert [(Path(e["source"]).name, e["code"]) for e in errors_of(done.stderr)] == [
        ("b.json", "E_INPUT_UNREADABLE"), ("c.jsonl", "E_INPUT_UNREADABLE"), ("d.jsonl", "E_INPUT_UNREADABLE"),
    ]
    read = run_replay("read", str(tmp_path))
    assert read.returncode == 1 and b'"type":"run_started"' in read.stdout
    assert [e["code"] for e in errors_of(read.stderr)] == ["E_INPUT_UNREADABLE"] * 3


def test_inputs_are_never_modified(tmp_path: Path) -> None:
    target = write_json(tmp_path / "bad.json", changed(lambda d: d["events"].reverse()))
    before = (target.read_bytes(), target.stat().st_mtime_ns)
    assert run_replay("validate", "--in", str(target)).returncode == 1
    assert (target.read_bytes(), target.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json"]


# other kinds of file ------------------------------------------------------------------------------------
def test_a_jsonl_journal_is_validated_as_a_stream_with_line_positions(tmp_path: Path) -> None:
    journal = write_lines(tmp_path / "run.jsonl", [{"$record": "run", "runId": "run_1", "status": "ok"}, ev(1), ev(2, payload=[])])
    with journal.open("ab") as f:
        f.write(b"{not json}\n")
    done = run_replay("validate", "--in", str(journal))
    assert done.returncode == 1
    errors = errors_of(done.stderr)
    assert sorted((e["line"], e["code"], e.get("path")) for e in errors) == [
        (3, "E_EVENT_INVALID", "$.payload"), (4, "E_JSONL_LINE_INVALID", None),
    ]
    assert jsonl(done.stdout) == [{"source": str(journal), "kind": "stream", "valid": False, "errors": 2, "events": 2, "runs": 1}]


def test_a_source_record_naming_another_input_adds_no_input(tmp_path: Path) -> None:
    # Inside a journal that does not open with one, a source record relabels nothing: what follows is still the
    # journal's, and no input of the name it gives was read (it was summarised as one, valid and empty).
    journal = write_lines(tmp_path / "run.jsonl", [ev(1, "run_started"), {"$record": "source", "source": "other.jsonl"},
                                                   ev(2, "run_completed")])
    done = run_replay("validate", "--in", str(journal))
    assert (done.returncode, errors_of(done.stderr)) == (0, [])
    assert jsonl(done.stdout) == [{"source": str(journal), "kind": "stream", "valid": True, "errors": 0, "events": 2, "runs": 1}]


def test_a_gzipped_artifact_is_read(tmp_path: Path) -> None:
    target = tmp_path / "a.json.gz"
    target.write_bytes(gzip.compress(orjson.dumps(changed(lambda d: d.update(schemaVersion="0.1")))))
    done = run_replay("validate", "--in", str(target))
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_SCHEMA_VERSION_UNSUPPORTED"]


def test_a_cut_off_gzipped_artifact_is_reported_where_read_and_heal_report_it(tmp_path: Path) -> None:
    """A .json.gz cut off mid-member: validate (which reads an artifact whole) said E_GZIP_INVALID with no position;
    read, heal and report say line 1, offset 0 (none of the document came out). One error, one place."""
    packed = gzip.compress(orjson.dumps(changed(lambda d: None)))
    target = tmp_path / "a.json.gz"
    target.write_bytes(packed[: len(packed) // 2])
    said = {}
    for command in ("validate", "read", "heal", "report"):
        done = run_replay(command, str(target))
        assert done.returncode == 1, command
        [error] = errors_of(done.stderr)
        said[command] = error
    assert said["validate"]["code"] == "E_GZIP_INVALID" and (said["validate"]["line"], said["validate"]["offset"]) == (1, 0)
    assert all(error == said["validate"] for error in said.values())


# the stream on stdin --------------------------------------------------------------------------------------
STREAM = [
    {"$record": "run", "runId": "run_1", "status": "ok"}, ev(1, "run_started"), ev(2), ev(3, "run_completed"),
    {"$record": "run", "runId": "run_2"}, {**ev(1), "runId": "run_2"},
]


def test_stdin_stream_valid() -> None:
    data = b"".join(orjson.dumps(r) + b"\n" for r in STREAM)
    done = run_replay("validate", input=data)
    assert (done.returncode, errors_of(done.stderr)) == (0, [])
    assert jsonl(done.stdout) == [{"source": "<stdin>", "kind": "stream", "valid": True, "errors": 0, "events": 4, "runs": 2}]


def test_stdin_stream_problems_point_at_line_and_byte_offset() -> None:
    records = copy.deepcopy(STREAM)
    records[2]["timestamp"] = "2026-03-01T25:00:00Z"
    records[4]["status"] = "failed"
    lines = [orjson.dumps(r) + b"\n" for r in records]
    done = run_replay("validate", input=b"".join(lines))
    assert done.returncode == 1
    errors = errors_of(done.stderr)
    assert [(e["code"], e["line"], e["offset"], e["path"], e["source"]) for e in errors] == [
        ("E_ARTIFACT_EVENT_TIMESTAMP_INVALID", 3, len(lines[0] + lines[1]), "$.timestamp", "<stdin>"),
        ("E_ARTIFACT_STATUS_INVALID", 5, len(b"".join(lines[:4])), "$.status", "<stdin>"),
    ]
    assert jsonl(done.stdout)[0]["errors"] == 2


def test_read_then_validate_in_a_pipe(tmp_path: Path) -> None:
    artifact = write_json(tmp_path / "a.json", changed(lambda d: d["events"][1].update(seq=9)))
    read = subprocess.run([REPLAY, "read", str(artifact)], capture_output=True, check=True)
    done = run_replay("validate", input=read.stdout)
    assert done.returncode == 1
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["line"], error["received"]) == ("E_ARTIFACT_EVENT_SEQ_INVALID", 3, 9)


def test_read_then_validate_gives_the_summaries_in_input_order_as_validate_of_the_folder_does(tmp_path: Path) -> None:
    """An error found before validate (parse's: a line that is no JSON) came to the summary ahead of the records of
    the inputs before its own, and its input's summary came first (the test corpus's codex rollout, every time; a
    folder of small files, now and then)."""
    folder = tmp_path / "in"
    shutil.copytree(ROOT / "tests" / "fixtures" / "corpus", folder / "corpus")
    for name in ("a", "c", "e"):
        shutil.copy(EXAMPLES / "journals" / "two-runs.jsonl", folder / f"{name}.jsonl")
    for name in ("b", "d"):
        (folder / f"{name}.jsonl").write_bytes(b'{"$record":"run","runId":"x","prompt":"p","status":"ok"}\n{bad\n')
    named = run_replay("validate", "in", cwd=tmp_path)
    sources = [s["source"] for s in jsonl(named.stdout)]
    assert sources == sorted(sources) and len(sources) == 14
    read = run_replay("read", "in", cwd=tmp_path)
    for _ in range(3):
        piped = run_replay("validate", input=read.stdout, cwd=tmp_path)
        assert piped.stdout == named.stdout
        assert piped.returncode == named.returncode == 1


def test_a_json_array_of_records_is_validated_as_the_journal_it_holds_as_read_reads_it(tmp_path: Path) -> None:
    """validate read a .json file whole, as an artifact, and refused an array (E_ARTIFACT_SHAPE_INVALID, "not array",
    events 0) that read, report and heal read as a journal written as an array."""
    records = jsonl((EXAMPLES / "journals" / "two-runs.jsonl").read_bytes())
    array = write_json(tmp_path / "arr.json", records)
    done = run_replay("validate", str(array))
    assert (done.returncode, errors_of(done.stderr)) == (0, [])
    assert jsonl(done.stdout) == [{"source": str(array), "kind": "stream", "valid": True, "errors": 0, "events": 11,
                                   "runs": 2}]
    piped = run_replay("validate", input=run_replay("read", str(array)).stdout)
    assert jsonl(piped.stdout)[0] == {**jsonl(done.stdout)[0], "source": "<stdin>"}


def test_a_mixed_json_array_has_each_problem_at_its_records_path_as_read_says_it(tmp_path: Path) -> None:
    """An element that is no record is what read says it is (E_EVENT_NOT_OBJECT at ``$[3]``), once; the events are
    checked where they sit in the array."""
    records: list[Any] = jsonl((EXAMPLES / "journals" / "two-runs.jsonl").read_bytes())
    records[3] = 7
    records[5] = {**records[5], "seq": 9}
    array = write_json(tmp_path / "mixed.json", records)
    done = run_replay("validate", str(array))
    assert done.returncode == 1
    got = [(e["code"], e["path"]) for e in errors_of(done.stderr)]
    # (the element that is no object takes its place, seq 3: seq 4 after it is in order, as in an artifact; only the
    # seq 9 is out of place, and seq 6 after it has its place's)
    assert got == [("E_EVENT_NOT_OBJECT", "$[3]"), ("E_ARTIFACT_EVENT_SEQ_INVALID", "$[5].seq")]
    read = run_replay("read", str(array))
    assert errors_of(read.stderr) == errors_of(done.stderr)[:1]
    assert jsonl(done.stdout) == [{"source": str(array), "kind": "stream", "valid": False, "errors": 2, "events": 10,
                                   "runs": 2}]


def test_pass_through_keeps_the_stream_byte_for_byte() -> None:
    data = b"".join(orjson.dumps(r) + b"\n" for r in STREAM) + orjson.dumps(ev(5)) + b"\n"
    done = run_replay("validate", "--pass-through", input=data)
    assert done.stdout == data
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_ARTIFACT_EVENT_SEQ_INVALID"]
    assert done.returncode == 1


def test_pass_through_is_for_stdin_only(tmp_path: Path) -> None:
    target = write_json(tmp_path / "a.json", GOOD)
    done = run_replay("validate", "--pass-through", "--in", str(target))
    assert (done.returncode, done.stdout) == (2, b"")
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_USAGE_INVALID"]


def test_strict_stops_at_the_first_problem(tmp_path: Path) -> None:
    target = write_json(tmp_path / "a.json", changed(lambda d: d.update(status="?", id="", artifactType="x")))
    done = run_replay("validate", "--strict", "--in", str(target))
    assert done.returncode == 1
    assert len(errors_of(done.stderr)) == 1


def test_a_terminal_on_stdin_without_in_is_a_usage_error() -> None:
    controller, terminal = pty.openpty()
    try:
        done = subprocess.run([REPLAY, "validate"], stdin=terminal, capture_output=True, timeout=30)
    finally:
        os.close(controller)
        os.close(terminal)
    assert (done.returncode, done.stdout) == (2, b"")
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_USAGE_INVALID"]


def test_help_documents_the_summary_and_exit_codes() -> None:
    done = run_replay("validate", "--help")
    assert done.returncode == 0
    text = done.stdout.decode()
    for words in ("--in", "--pass-through", '"valid"', "Exit 0"):
        assert words in text


def test_a_fifo_in_the_folder_is_skipped_not_waited_on(tmp_path):
    import os

    (tmp_path / "ok.jsonl").write_bytes(b'{"seq":1,"timestamp":"2026-03-01T12:00:00Z","type":"run_started","runId":"r","payload":{}}\n')
    os.mkfifo(tmp_path / "live.jsonl")
    proc = run_replay("validate", "--in", str(tmp_path), timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert [line["source"].rsplit("/", 1)[-1] for line in jsonl(proc.stdout)] == ["ok.jsonl"]


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"])
def test_an_input_with_no_records_still_gets_its_summary_line(tmp_path: Path, content: bytes) -> None:
    """One line per input, an empty one too: named, through stdin, and alone or beside another."""
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    empty = {"kind": "stream", "valid": True, "errors": 0, "events": 0, "runs": 0}
    done = run_replay("validate", str(path))
    assert done.returncode == 0 and jsonl(done.stdout) == [{"source": str(path), **empty}]
    done = run_replay("validate", input=content)
    assert done.returncode == 0 and jsonl(done.stdout) == [{"source": "<stdin>", **empty}]
    assert jsonl(run_replay("validate", str(path), str(path)).stdout) == [{"source": str(path), **empty}] * 2


def test_an_artifact_larger_than_max_line_bytes_is_refused_as_read_refuses_it(tmp_path: Path) -> None:
    """validate reads a .json whole only up to --max-line-bytes, as read does: one larger is one E_JSONL_LINE_TOO_LONG
    (read's error, its advice), not checked field by field."""
    path = write_json(tmp_path / "big.json", {**GOOD, "response": "x" * 2000})
    done = run_replay("validate", "--max-line-bytes", "1000", str(path))
    read = run_replay("read", "--max-line-bytes", "1000", str(path))
    assert done.returncode == 1
    [error] = errors_of(done.stderr)
    assert error == errors_of(read.stderr)[0]
    assert (error["code"], error["line"], error["offset"]) == ("E_JSONL_LINE_TOO_LONG", 1, 0)
    assert "--max-line-bytes" in error["howToFix"]
    assert jsonl(done.stdout) == [{"source": str(path), "kind": "artifact", "valid": False, "errors": 1, "events": 0}]
    whole = run_replay("validate", "--max-line-bytes", str(path.stat().st_size), str(path))
    assert whole.returncode == 0 and whole.stderr == b""


def test_an_artifact_larger_than_max_line_bytes_is_not_read_into_memory(tmp_path: Path) -> None:
    """A .json.gz that unpacks to 256 MiB, checked with --max-line-bytes 1000: validate stops reading at the limit
    (the process's peak memory stays that of a small artifact's check)."""
    small = write_json(tmp_path / "small.json", GOOD)
    big = tmp_path / "big.json.gz"
    with gzip.open(big, "wb", compresslevel=1) as f:
        f.write(b'{"events": [')
        for _ in range(256):
            f.write(b" " * (1 << 20))
        f.write(b"]}")
    measure = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], capture_output=True, check=False); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")

    def peak_kib(path: Path) -> int:
        done = subprocess.run([sys.executable, "-c", measure, REPLAY, "validate", "--max-line-bytes", "1000", str(path)],
                              capture_output=True, timeout=120, check=True)
        return int(done.stdout)

    assert peak_kib(big) < peak_kib(small) + 64 * 1024


@pytest.mark.parametrize(("written", "said"), [(b"1e400", "1e400"), (b"-1e400", "-1e400"), (b"1e300", "1e+300"),
                                               (b"3.14159265358979323846", "3.14159265358979323846")])
def test_a_number_in_a_message_is_written_as_json_not_as_python_spells_it(tmp_path, written, said):
    """named() promises "never a Python spelling": a seq of 1e400 was "event `seq` is number inf" (and heal's
    fix_timestamp said "timestamp -inf is not RFC 3339"), though `received` said 1e400."""
    path = tmp_path / "n.jsonl"
    path.write_bytes(b'{"seq":' + written + b',"timestamp":' + written + b',"type":"run_started","runId":"r","payload":{}}\n')
    done = run_replay("validate", str(path))
    messages = [exactjson.loads(line)["error"]["message"] for line in done.stderr.splitlines()  # (received: 1e400)
                if line.startswith(b'{"error"')]  # (and the warning that this run has no end)
    assert f"event `seq` is number {said}; it must be an integer >= 1" in messages, messages
    done = run_replay("heal", str(path), "--log", str(tmp_path / "log.jsonl"))
    log = [exactjson.loads(line) for line in (tmp_path / "log.jsonl").read_bytes().splitlines()]  # (1e400: not orjson)
    [fixed] = [e for e in log if e["rule"] == "fix_timestamp"]
    assert fixed["message"].startswith(f"timestamp {said} is not RFC 3339"), fixed


# leap seconds ------------------------------------------------------------------------------------------------
LEAP_EVENTS = [ev(1, "run_started", timestamp="2016-12-31T23:59:59.500Z"),
               ev(2, "tool_called", timestamp="2016-12-31T23:59:60.250Z", payload={"callId": "c1", "toolName": "bash"}),
               ev(3, "tool_completed", timestamp="2016-12-31T18:59:60.750-05:00", payload={"callId": "c1"}),
               ev(4, "run_completed", timestamp="2017-01-01T00:00:00.500Z")]


def test_a_journal_and_an_artifact_with_leap_seconds_are_valid(tmp_path: Path) -> None:
    """RFC 3339's leap second (second 60 where the time in UTC is 23:59, in any zone) is a date-time: the real
    executable finds nothing wrong, in a journal or in an artifact (its own timestamp one too)."""
    journal = write_lines(tmp_path / "leap.jsonl", LEAP_EVENTS)
    done = run_replay("validate", str(journal), process=True)
    assert (done.returncode, done.stderr) == (0, b"")
    assert jsonl(done.stdout) == [{"source": str(journal), "kind": "stream", "valid": True, "errors": 0, "events": 4, "runs": 1}]
    artifact = write_json(tmp_path / "leap.json", {**GOOD, "timestamp": "2016-12-31T23:59:60Z", "events": LEAP_EVENTS})
    done = run_replay("validate", "--in", str(artifact), process=True)
    assert (done.returncode, done.stderr) == (0, b"")
    assert jsonl(done.stdout) == [{"source": str(artifact), "kind": "artifact", "valid": True, "errors": 0, "events": 4}]


@pytest.mark.parametrize("stamp", ["2016-12-31T23:58:60Z", "2016-12-31T12:00:60Z", "2016-12-31T22:59:60Z",
                                   "2016-12-31T23:59:60+01:00", "2016-12-31T23:59:61Z"])
def test_second_60_anywhere_but_23_59_utc_is_refused_with_the_error_any_bad_timestamp_gets(tmp_path: Path, stamp: str) -> None:
    def error_for(value: str) -> dict[str, Any]:
        target = write_lines(tmp_path / "j.jsonl", [ev(1, "run_started"), ev(2, "run_completed", timestamp=value)])
        done = run_replay("validate", str(target), process=True)
        assert done.returncode == 1
        (error,) = errors_of(done.stderr)
        return error

    error = error_for(stamp)
    assert error == {**error_for("03/01/2026 12:00"), "message": f"event `timestamp` '{stamp}' is not an RFC 3339 date-time",
                     "received": stamp}
    assert error["code"] == "E_ARTIFACT_EVENT_TIMESTAMP_INVALID" and error["path"] == "$.timestamp" and error["line"] == 2


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_a_pipe_of_the_shell_is_validated_as_a_stream(tmp_path: Path, workers: list[str]) -> None:
    """`replay validate <(zcat run.jsonl.gz)`: read, heal and report read such a pipe (/dev/fd/N); validate refused it
    (E_INPUT_NOT_FILE_OR_DIR, exit 2, advising --in, which was not given). It is a stream, as stdin is, and it is read
    in this process (a worker process would find another descriptor there, or none)."""
    journal = Path(__file__).resolve().parents[2] / "examples" / "journals"
    script = (f'exec "$0" validate {" ".join(workers)} <(cat "$1") <(cat "$2")')
    done = subprocess.run(["bash", "-c", script, REPLAY, str(journal / "two-runs.jsonl"), str(journal / "odd.jsonl")],
                          capture_output=True, timeout=120, check=False)
    summaries = jsonl(done.stdout)
    assert [(s["kind"], s["valid"], s["runs"]) for s in summaries] == [("stream", True, 2), ("stream", False, 1)], done.stderr
    assert done.returncode == 1 and all(s["source"].startswith("/dev/fd/") for s in summaries)
    assert {e["code"] for e in errors_of(done.stderr)} <= {"E_JSONL_LINE_INVALID", "E_JSONL_LINE_TORN"}


def test_a_named_pipe_given_as_a_path_is_read_as_a_stream(tmp_path: Path) -> None:
    """A named pipe given as a PATH (not --in) is a stream, as read, heal and report read it (and as validate reads
    `<(...)`'s /dev/fd/N): it was refused, E_INPUT_NOT_FILE_OR_DIR, with advice to pass a pipe."""
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    journal = EXAMPLES / "journals" / "two-runs.jsonl"
    writer = subprocess.Popen(["sh", "-c", 'cat "$0" > "$1"', str(journal), str(fifo)])
    try:
        done = run_replay("validate", str(fifo), timeout=30, process=True)
    finally:
        writer.kill()
        writer.wait()
    assert done.returncode == 0, done.stderr
    summary = orjson.loads(done.stdout)
    assert (summary["kind"], summary["valid"], summary["runs"]) == ("stream", True, 2)
