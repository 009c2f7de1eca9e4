"""A UTF-8 byte order mark at the start of a line after the first (files that each begin with one, joined) is left out
by every reader of lines as `replay read` leaves it out (io.journals.without_mark), in real processes: `golden check`
and ReplayModel's session reading refused such a line (E_JSONL_LINE_INVALID), reading a mark only at a file's start.
(NATS messages: tests/e2e/test_nats_bom_advice.py.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
from conftest import EXAMPLES, errors_of, jsonl, run_replay

BOM = b"\xef\xbb\xbf"
SESSION = EXAMPLES / "echo-agent" / "scenarios" / "echo" / "session.jsonl"


def _joined(path: Path, *parts: bytes) -> Path:
    """``parts`` as files that each begin with a mark, joined (`cat a.jsonl b.jsonl`)."""
    path.write_bytes(b"".join(BOM + part for part in parts))
    return path


def _placed(error: dict) -> tuple:
    return error["code"], error["line"], error["column"], error["offset"]


def test_golden_check_reads_a_journal_with_a_mark_mid_stream(tmp_path: Path) -> None:
    first, rest = SESSION.read_bytes().split(b"\n", 1)
    joined = _joined(tmp_path / "joined.jsonl", first + b"\n", rest)
    same = run_replay("golden", "check", str(joined), str(joined), process=True)
    assert (same.returncode, errors_of(same.stderr)) == (0, [])  # (it was exit 2: line 2 no JSON)
    done = run_replay("golden", "check", str(SESSION), str(joined), process=True)
    [result], [error] = jsonl(done.stdout), errors_of(done.stderr)
    assert (done.returncode, error["code"], result["line"]) == (1, "E_GOLDEN_MISMATCH", 1)  # (line 1 has a mark too)
    assert result["difference"] == "line 1: the lines differ only in that the new file begins with a byte order mark"
    (tmp_path / "marked.jsonl").write_bytes(first + b"\n" + BOM + rest)
    done = run_replay("golden", "check", str(SESSION), str(tmp_path / "marked.jsonl"), process=True)
    [result] = jsonl(done.stdout)
    assert done.returncode == 1
    assert result["difference"] == "line 2: the lines differ only in that the new line begins with a byte order mark"


def test_golden_check_places_a_bad_line_after_a_mark_mid_stream_as_read_does(tmp_path: Path) -> None:
    joined = _joined(tmp_path / "joined.jsonl", b'{"a":1}\n', b"{oops\n")
    done = run_replay("golden", "check", str(joined), str(joined), process=True)
    [recorded, _] = errors_of(done.stderr)
    [read] = errors_of(run_replay("read", str(joined)).stderr)
    assert _placed(recorded) == _placed(read) == ("E_JSONL_LINE_INVALID", 2, 2, 3 + 8 + 3)  # the byte after the mark


SESSION_READ = """
import sys, orjson
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.session import load_session_groups  # (what ReplayModel.from_session reads a session with)
try:
    groups = load_session_groups(sys.argv[1], use_sidecar=False)
except ReplayError as exc:
    print(orjson.dumps({"problems": [exc.body, *exc.body.pop("problems", [])]}).decode())  # (the first, the others)
else:
    print(orjson.dumps({"groups": [g.to_json() for g in groups]}).decode())
"""


def _session(path: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", SESSION_READ, str(path)], capture_output=True, check=True, timeout=60)
    return orjson.loads(done.stdout)


def test_a_session_with_a_mark_mid_stream_loads_as_replay_script_reads_it(tmp_path: Path) -> None:
    chunk = {"type": "assistant/chunk", "turn": 1, "step": 0, "chunk": {"type": "text-delta", "text": "a"}}
    finish = {"type": "assistant/chunk", "turn": 1, "step": 0, "chunk": {"type": "finish", "finishReason": "stop"}}
    joined = _joined(tmp_path / "session.jsonl", orjson.dumps(chunk) + b"\n", orjson.dumps(finish) + b"\n")
    assert _session(joined) == {"groups": [{"turn": 1, "step": 0, "chunks": [
        {"type": "text-delta", "text": "a"}, {"type": "finish", "finishReason": "stop"}]}]}
    bad = _joined(tmp_path / "bad.jsonl", orjson.dumps(chunk) + b"\n", b"{oops\n")
    [problem] = [p for p in _session(bad)["problems"] if p["code"] == "E_JSONL_LINE_INVALID"]  # (and no finish)
    [read] = errors_of(run_replay("read", str(bad)).stderr)
    assert _placed(problem) == _placed(read) == ("E_JSONL_LINE_INVALID", 2, 2, len(orjson.dumps(chunk)) + 4 + 3)


def test_two_marks_opening_the_file_are_refused_as_on_any_later_line(tmp_path: Path) -> None:
    """One mark a line, the first line too: two marks opening a file are one left out and one that is no JSON, as on a
    later line (the file's first mark was left out before the line cutter left out another: both went)."""
    event = b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r1","payload":{}}'
    first = tmp_path / "first.jsonl"
    first.write_bytes(BOM + BOM + event + b"\n")
    later = tmp_path / "later.jsonl"
    later.write_bytes(event + b"\n" + BOM + BOM + event.replace(b'"seq":1', b'"seq":2') + b"\n")
    for command in ("read", "validate", "heal"):
        at_first = [(e["code"], e["line"], e["offset"]) for e in errors_of(run_replay(command, str(first)).stderr)]
        at_later = [(e["code"], e["line"], e["offset"]) for e in errors_of(run_replay(command, str(later)).stderr)]
        assert at_first == [("E_JSONL_LINE_INVALID", 1, 3)], command
        assert at_later == [("E_JSONL_LINE_INVALID", 2, len(event) + 1 + 3)], command
