"""A bad line in a stream made by hand (source records, not `replay read`'s output) is reported at its line and
offset in the file the source record before it names, as `replay read a b` reports it; not under "<stdin>"."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import errors_of, run_replay

A = (b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"run_a","payload":{}}\n'
     b'{"seq":2,"timestamp":"2026-03-01T12:00:00.120Z","type":"user_message","runId":"run_a","payload":{"text":"hi"}}\n')
B = (b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"user_message","runId":"r2","payload":{"text":"x"}}\n'
     b'{bad json\n'
     b'{"seq":2,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_completed","runId":"r2","payload":{}}\n')


def source(name: str) -> bytes:
    return b'{"$record":"source","source":"%s"}\n' % name.encode()


def where(stderr: bytes) -> list[tuple]:
    return [(e["code"], e["source"], e["line"], e["offset"]) for e in errors_of(stderr)]


@pytest.mark.parametrize("command", [["heal"], ["validate"], ["read"], ["report"]])
def test_an_invalid_line_is_named_by_its_source_record(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "a.jsonl").write_bytes(A)
    (tmp_path / "b.jsonl").write_bytes(B)
    read = run_replay("read", "a.jsonl", "b.jsonl", cwd=tmp_path)
    expected = where(read.stderr)
    assert expected == [("E_JSONL_LINE_INVALID", "b.jsonl", 2, len(B.split(b"\n")[0]) + 1)]
    hand = source("a.jsonl") + A + source("b.jsonl") + B
    assert where(run_replay(*command, input=hand, cwd=tmp_path).stderr) == expected
    if command == ["read"]:  # its dropped record names it there too, so a parse down the pipe reports it the same
        marked = run_replay("read", input=hand, cwd=tmp_path).stdout
        assert where(run_replay("heal", input=marked, cwd=tmp_path).stderr) == expected


def test_a_torn_last_line_is_named_by_its_source_record(tmp_path: Path) -> None:
    hand = source("a.jsonl") + A + source("b.jsonl") + B.replace(b"{bad json\n", b"") + b'{"seq":3,"ty'
    for command in ("validate", "read"):
        (error,) = errors_of(run_replay(command, input=hand, cwd=tmp_path).stderr)
        assert (error["code"], error["source"], error["line"]) == ("E_JSONL_LINE_TORN", "b.jsonl", 3), error
    log = tmp_path / "log.jsonl"
    healed = run_replay("heal", "--log", str(log), input=hand, cwd=tmp_path)
    assert healed.returncode == 0, healed.stderr
    torn = [line for line in log.read_text().splitlines() if "drop_torn_line" in line]
    assert len(torn) == 1 and '"source":"b.jsonl"' in torn[0] and '"line":3' in torn[0], torn


def test_a_torn_lines_repair_names_the_run_it_ends(tmp_path: Path) -> None:
    """drop_torn_line carries the runId of its input's last run, as every heal-log entry names its run; whether the
    line came as bytes, as `replay read`'s dropped record, or in a batch of its own after the run's events."""
    torn = A + b'{"seq":3,"ty'
    log = tmp_path / "log.jsonl"
    for stream in (torn, run_replay("read", input=torn).stdout):
        assert run_replay("heal", "--log", str(log), input=stream).returncode == 0
        entries = [orjson.loads(line) for line in log.read_bytes().splitlines()]
        (entry,) = [e for e in entries if e["rule"] == "drop_torn_line"]
        assert entry["runId"] == "run_a" and list(entry)[:3] == ["rule", "action", "runId"], entry
    events = b"".join(b'{"seq":%d,"timestamp":"2026-03-01T12:00:00.000Z","type":"user_message","runId":"long",'
                      b'"payload":{"text":"x"}}\n' % n for n in range(1, 3001))
    assert run_replay("heal", "--log", str(log), input=events + b'{"seq":3001,"ty').returncode == 0
    (entry,) = [orjson.loads(line) for line in log.read_bytes().splitlines() if b"drop_torn_line" in line]
    assert entry["runId"] == "long", entry
