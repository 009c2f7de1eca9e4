"""walk reads a line with a key written twice in one object (its kind, step, state) by the last value of each, as
every reader keeps it, and warns (E_JSON_DUPLICATE_KEY, with the line's position), as heal, golden check and diff do;
a document's key written twice is said once, by read."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import run_replay


def _notices(stderr: bytes) -> list[dict]:
    return [orjson.loads(line) for line in stderr.splitlines() if b'"E_JSON_DUPLICATE_KEY"' in line]


def test_walk_warns_of_a_key_written_twice_in_a_line(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_bytes(b'{"kind":"step.started","step_id":"s1"}\n{"kind":"step.completed","step_id":"s0","step_id":"s1"}\n')
    for json in ([], ["--json"]):
        done = run_replay("walk", str(path), *json)
        assert done.returncode == 0 and len(done.stdout.splitlines()) == 2, done.stderr
        [note] = _notices(done.stderr)
        assert (note["keys"], note["source"], note["line"], note["offset"], note["stage"], note["level"]) == \
            (["$.step_id"], str(path), 2, 39, "walk", "warning"), note
    assert b'"step_id":"s0","step_id":"s1"' in done.stdout  # (the event keeps its bytes)


def test_walk_warns_once_of_a_key_written_twice_in_a_document(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_bytes(b'{"events":[{"type":"x","payload":{"n":1,"n":2}}]}\n')
    [note] = _notices(run_replay("walk", str(path)).stderr)
    assert (note["stage"], note["path"]) == ("read", "$.events[0].payload.n")
