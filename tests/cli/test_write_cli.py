"""`replay write`: `replay read --dialect X | replay write --dialect X` gives every corpus log back (records equal
as JSON values, in order) through a real pipe; without --dialect, a copy of the canonical stream, to --out
atomically (attribution of the logs: tests/fixtures/corpus/SOURCES.md)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import EXAMPLES, REPLAY, errors_of, jsonl, run_replay
from dialect_support import CORPUS, CORPUS_FILES, jsonl_records

from replay.pipeline.model.dialects import NAMES

TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"


def source_values(path: Path) -> list[Any]:
    """What a log holds, read without replay: its JSON document whole, or its lines that are JSON objects
    (a line that is not JSON, or JSON but no object, is no record: `replay read` reports it)."""
    data = path.read_bytes()
    if path.suffix == ".json":
        return [orjson.loads(data)]
    return [r for r in jsonl_records(data) if isinstance(r, dict)]


def pipe(first: list[str], second: list[str]) -> tuple[subprocess.CompletedProcess[bytes], int, bytes]:
    """``replay FIRST | replay SECOND`` as two processes joined by an OS pipe: (second's result, first's exit
    code and stderr)."""
    with subprocess.Popen([REPLAY, *first], stdout=subprocess.PIPE, stderr=subprocess.PIPE) as reader:
        done = subprocess.run([REPLAY, *second], stdin=reader.stdout, capture_output=True, timeout=120, check=False)
        assert reader.stdout is not None
        reader.stdout.close()
        err = reader.stderr.read() if reader.stderr is not None else b""
        code = reader.wait(timeout=120)
    return done, code, err


@pytest.mark.parametrize("dialect", NAMES)
def test_read_then_write_gives_every_corpus_log_of_the_dialect_back(dialect: str):
    files = [p for p in CORPUS_FILES if p.parent.name == dialect]
    assert files, f"no corpus file for {dialect}"
    done, read_code, read_err = pipe(["read", "--dialect", dialect, *map(str, files)], ["write", "--dialect", dialect])
    # a line read left out (a dropped record in its place) is said again down the pipe, at its line and offset
    assert [(e["code"], e["line"], e["offset"]) for e in errors_of(done.stderr)] == [
        (e["code"], e["line"], e["offset"]) for e in errors_of(read_err)]
    assert done.returncode == read_code, done.stderr
    # The files are read in order, each its own run; the output is their records, one after the other.
    assert jsonl(done.stdout) == [value for path in files for value in source_values(path)]
    bad = [e for e in errors_of(read_err) if e["code"] != "E_EVENT_NOT_OBJECT"]  # lines that are no record
    assert read_code == (1 if errors_of(read_err) else 0)
    assert all(e["code"] == "E_JSONL_LINE_INVALID" and "rollout-6666" in e["source"] for e in bad)


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_each_corpus_log_comes_back_through_a_pipe_and_auto(path: Path):
    done, code, _err = pipe(["read", "--dialect", "auto", str(path)], ["write", "--dialect", "auto"])
    assert done.returncode == code, done.stderr  # (1: a line that is no record, said by read and again down the pipe)
    assert jsonl(done.stdout) == source_values(path)
    if path.suffix == ".jsonl":  # one record per line, as the agent wrote them
        assert len(done.stdout.splitlines()) == len(source_values(path))


def test_write_out_writes_the_dialect_log_to_a_file(tmp_path: Path):
    path = CORPUS / "claude-code" / "representative_messages.jsonl"
    mapped = run_replay("read", "--dialect", "claude-code", str(path)).stdout
    out = tmp_path / "deep" / "session.jsonl"
    done = run_replay("write", "--dialect", "claude-code", "--out", str(out), input=mapped)
    assert (done.returncode, done.stdout) == (0, b""), done.stderr
    assert jsonl(out.read_bytes()) == source_values(path)
    assert [p.name for p in out.parent.iterdir()] == ["session.jsonl"]  # no temp file left


def test_without_a_dialect_write_copies_the_canonical_stream():
    read = run_replay("read", str(TWO_RUNS))
    done = run_replay("write", input=read.stdout)
    assert done.returncode == 0, done.stderr
    assert done.stdout == read.stdout == TWO_RUNS.read_bytes()  # untouched records keep their bytes
    mapped = run_replay("read", "--dialect", "openhands", str(CORPUS / "openhands" / "basic.json")).stdout
    assert run_replay("write", input=mapped).stdout == mapped  # $origin and all: the stream, not the dialect


def test_write_out_is_atomic(tmp_path: Path):
    out = tmp_path / "copy.jsonl"
    done = run_replay("write", str(TWO_RUNS), "--out", str(out))
    assert (done.returncode, done.stdout) == (0, b"")
    assert out.read_bytes() == TWO_RUNS.read_bytes()
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(TWO_RUNS.read_bytes().replace(b"\n", b"\nnot json\n", 1))
    refused = tmp_path / "refused.jsonl"
    done = run_replay("write", "--strict", str(broken), "--out", str(refused))
    assert done.returncode == 1 and [e["code"] for e in errors_of(done.stderr)] == ["E_JSONL_LINE_INVALID"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.jsonl", "copy.jsonl"]  # nothing half-written
    done = run_replay("write", str(tmp_path / "missing.jsonl"), "--out", str(refused))
    assert done.returncode == 2 and not refused.exists()


def test_a_stream_mapped_from_no_dialect_is_reported_not_written_as_nothing():
    done = run_replay("write", "--dialect", "claude-code", str(TWO_RUNS))
    assert (done.returncode, done.stdout) == (1, b"")
    (error,) = errors_of(done.stderr)
    assert error["code"] == "E_DIALECT_NO_ORIGIN" and error["source"] == str(TWO_RUNS)
    assert "replay read --dialect" in error["howToFix"]


def test_heal_then_write_gives_the_repaired_log(tmp_path: Path):
    path = CORPUS / "claude-code" / "representative_messages.jsonl"
    lines = path.read_bytes().splitlines()
    del lines[8]  # the session stopped before the Bash call's result: heal marks the call, invents nothing
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"\n".join(lines) + b"\n")
    healed = run_replay("heal", str(cut))
    assert healed.returncode == 0, healed.stderr
    assert b"tool_unanswered" in healed.stdout
    done = run_replay("write", "--dialect", "claude-code", input=healed.stdout)
    assert done.returncode == 0, done.stderr
    assert jsonl(done.stdout) == [orjson.loads(line) for line in lines]


def test_a_run_of_another_dialect_is_left_out_with_advice_that_names_the_command_s_own_flag():
    """`replay write --dialect claude-code` of a Codex run advised "--dialect-out codex", which is `heal`'s flag (write
    has none of that name); each command names its own, and a config its option."""
    rollout = next((CORPUS / "codex").glob("rollout-*.jsonl"))
    read = run_replay("read", "--dialect", "codex", str(rollout))
    written = run_replay("write", "--dialect", "claude-code", input=read.stdout)
    healed = run_replay("heal", "--dialect-out", "claude-code", str(rollout))
    fixes = [[e["howToFix"] for e in errors_of(done.stderr) if e["code"] == "E_DIALECT_MISMATCH"] for done in (written, healed)]
    assert fixes == [["Write it with --dialect codex, or --dialect auto."],
                     ["Write it with --dialect-out codex, or --dialect-out auto."]]
