"""`replay walk --at` finds a dropped record, or a step's record, however JSON writes its key and value.

The pre-scan that decides where `--at` stops looked for a dropped record by its bytes as `replay read` writes them,
`"$record":"dropped"`, and for a step by its id's bytes. The parser reads `"\\u0024record"`, `"$r\\u0065cord"`,
`"dr\\u006fpped"` and `"$record": "dropped"` as the same dropped record, and `"step\\u002d2"` as step `step-2`: the scan
passed those by, so a walk at a step that never ended stopped before the dropped record that may hold its end (exit 0,
nothing said), and one at a step whose end was written escaped stopped before its end.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, errors_of, run_replay

from replay.pipeline.engine import exactjson
from replay.pipeline.model.walk_journal import find_step_end

HELLO = (FIXTURES / "walk" / "hello.jsonl").read_bytes().splitlines(keepends=True)
REST = b'"code":"E_JSONL_LINE_INVALID","message":"line 8 is not valid JSON","line":8}\n'


@pytest.mark.parametrize("opening", [
    pytest.param(b'{"$record":"dropped",', id="as-read-writes-it"),
    pytest.param(b'{"\\u0024record":"dropped",', id="key-escaped"),
    pytest.param(b'{"$r\\u0065cord":"dropped",', id="key-letter-escaped"),
    pytest.param(b'{"$record":"dr\\u006fpped",', id="value-escaped"),
    pytest.param(b'{"$record" : "dropped", ', id="spaced"),
])
def test_a_dropped_record_after_a_step_that_never_ended_ends_the_walk_there(tmp_path: Path, opening: bytes) -> None:
    """step-2 has not ended when line 8, a dropped record, stands for a line `replay read` left out: its end may be
    there. The walk shows its seven lines and reports line 8 (exit 1), however the record's key is written."""
    path = tmp_path / "saved.jsonl"
    path.write_bytes(b"".join(HELLO[:7]) + opening + REST)
    done = run_replay("walk", str(path), "--at", "step-2", process=True)
    errors = errors_of(done.stderr)
    assert done.returncode == 1 and len(done.stdout.splitlines()) == 7, (done.returncode, errors)
    assert [(e["code"], e["cause"], e["line"], e["offset"]) for e in errors] == [
        ("E_JOURNAL_READ_FAILED", "E_JSONL_LINE_INVALID", 8, sum(map(len, HELLO[:7])))]


def test_a_steps_end_written_with_an_escaped_id_is_where_the_walk_stops(tmp_path: Path) -> None:
    path = tmp_path / "escaped.jsonl"
    path.write_bytes(b"".join(HELLO[:7]) + HELLO[7].replace(b'"step-2"', b'"step\\u002d2"') + HELLO[8])
    done = run_replay("walk", str(path), "--at", "step-2", process=True)
    lines = done.stdout.splitlines()
    assert (done.returncode, errors_of(done.stderr), len(lines)) == (0, [], 8)
    assert lines[-1].startswith(b"step.completed") and b"[succeeded]" in lines[-1]


def test_a_line_with_an_escape_that_is_no_record_after_the_step_is_passed_by_as_before(tmp_path: Path) -> None:
    """A line the scan finds only by its escape and cannot read holds no text of the step's: the walk at a step that
    never ended still stops at the step's last record (exit 0), as it did."""
    path = tmp_path / "note.jsonl"
    path.write_bytes(b"".join(HELLO[:7]) + b'{"note":"caf\\u00e9 not json\n')
    done = run_replay("walk", str(path), "--at", "step-2", process=True)
    assert (done.returncode, errors_of(done.stderr), len(done.stdout.splitlines())) == (0, [], 7)


def test_only_lines_with_an_escape_a_name_may_have_are_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan stays a byte search where escapes cannot write `$record`, `dropped` or a plain step id: a line with
    `\\u00e9`, `\\"` or Go's `\\u003c` is not parsed, one with `\\u0041` (an escaped letter) is."""
    parsed: list[bytes] = []
    loads = exactjson.loads
    monkeypatch.setattr(exactjson, "loads", lambda raw: parsed.append(bytes(raw)) or loads(raw))
    other = b'{"kind":"note","run_id":"hello-1","text":"caf\\u00e9 \\"q\\" \\u003cb\\u003e"}\n'
    letter = b'{"kind":"note","run_id":"hello-1","text":"\\u0041"}\n'
    end = find_step_end([b"".join(HELLO[:7]) + other * 500 + letter], "step-2")
    assert (end.found, end.terminated, end.line) == (True, False, 7)
    assert parsed == [line.rstrip(b"\n") for line in HELLO[4:7]] + [letter.rstrip(b"\n")]
