"""diff compares a line with a key written twice by the last value of each, as every reader keeps it, and warns
(E_JSON_DUPLICATE_KEY, with the line's position) as heal and golden check do; once, where dialect or read say it."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import CORPUS, run_replay


def _notices(stderr: bytes) -> list[dict]:
    return [orjson.loads(line) for line in stderr.splitlines() if b'"E_JSON_DUPLICATE_KEY"' in line]


def test_diff_warns_of_a_key_written_twice_in_a_line(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_bytes(b'{"type":"x","payload":{"n":0}}\n{"type":"x","payload":{"n":1,"n":2}}\n')
    b.write_bytes(b'{"type":"x","payload":{"n":0}}\n{"type":"x","payload":{"n":2}}\n')
    done = run_replay("diff", str(a), str(b))
    assert done.returncode == 0, done.stderr  # (the same: the last value of each is compared)
    [note] = _notices(done.stderr)
    assert (note["keys"], note["source"], note["line"], note["offset"], note["level"]) == \
        (["$.payload.n"], str(a), 2, 31, "warning"), note
    assert "compared" in note["message"]


def test_diff_warns_once_of_a_key_written_twice_in_a_document_or_a_mapped_log(tmp_path: Path) -> None:
    document = tmp_path / "d.json"
    document.write_bytes(b'{"events":[{"type":"x","payload":{"n":1,"n":2}}]}\n')
    one = tmp_path / "one.jsonl"
    one.write_bytes(b'{"type":"x","payload":{"n":2}}\n')
    [note] = _notices(run_replay("diff", str(document), str(one)).stderr)  # (read's, reading it whole)
    assert note["stage"] == "read" and note["path"] == "$.events[0].payload.n"
    log = CORPUS / "claude-code" / "session_b.jsonl"
    lines = log.read_bytes().split(b"\n")
    k = [n for n, line in enumerate(lines) if line.startswith(b"{")][1]
    lines[k] = b'{"zz":1,"zz":2,' + lines[k][1:]
    twice = tmp_path / "twice.jsonl"
    twice.write_bytes(b"\n".join(lines))
    [note] = _notices(run_replay("diff", str(twice), str(log)).stderr)  # (dialect's, mapping the line)
    assert (note["stage"], note["line"], note["keys"]) == ("dialect", k + 1, ["$.zz"])
