"""A byte order mark starting a line after a stream's first (files that each begin with one, joined with cat) is left
out of the line as the file's first is: the joined stream reads as the files named do (it was refused, E_JSONL_LINE_INVALID
with advice to name the files), and a position on such a line is the byte after the mark, as on a file's first line."""

from __future__ import annotations

from pathlib import Path

from conftest import errors_of, jsonl, run_replay

from replay.pipeline.engine.batch import Batch
from replay.pipeline.io.journals import LineCutter

E = b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r1","payload":{}}'
E2 = b'{"seq":2,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_completed","runId":"r1","payload":{}}'
BOM = b"\xef\xbb\xbf"


def test_files_joined_with_their_byte_order_marks_read_as_the_files_named(tmp_path: Path) -> None:
    one = BOM + E + b"\n" + E2 + b"\n"
    (tmp_path / "a.jsonl").write_bytes(one)
    (tmp_path / "b.jsonl").write_bytes(one)
    named = run_replay("read", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), process=True)
    assert named.returncode == 0 and named.stdout.count(b"run_started") == 2
    joined = run_replay("read", input=one + one, process=True)
    assert (joined.returncode, joined.stderr) == (0, b"")
    assert joined.stdout == (E + b"\n" + E2 + b"\n") * 2  # (no mark in what is written)
    healed = run_replay("heal", input=one + one, process=True)
    assert healed.returncode == 0 and errors_of(healed.stderr) == []


def test_a_bad_line_after_a_mark_is_placed_past_the_mark(tmp_path: Path) -> None:
    data = BOM + E + b"\n" + BOM + b"[1]\n" + BOM + E2[:20]  # a line that is no object, then a torn last line
    done = run_replay("read", input=data, process=True)
    assert done.returncode == 1
    bad, torn = errors_of(done.stderr)
    assert (bad["code"], bad["line"], bad["offset"]) == ("E_EVENT_NOT_OBJECT", 2, len(BOM + E + b"\n" + BOM))
    assert data[bad["offset"]:].startswith(b"[1]")
    assert (torn["code"], torn["line"], torn["received"]) == ("E_JSONL_LINE_TORN", 3, E2[:20].decode())
    assert data[torn["offset"]:] == E2[:20]
    assert [record.get("offset") for record in jsonl(done.stdout)[1:]] == [bad["offset"], torn["offset"]]


def test_a_mark_cut_across_chunks_is_left_out_whatever_the_chunks() -> None:
    data = E + b"\n" + BOM + E2 + b"\n" + BOM + E + b"\n"
    for size in (1, 2, 3, 7, 64, len(data)):
        cutter = LineCutter("x", batch_events=2)
        batches = [item for k in range(0, len(data), size) for item in cutter.feed(data[k:k + size])]
        batches += cutter.finish()
        lines = [(line, offset, raw) for b in batches if isinstance(b, Batch)
                 for line, offset, raw in zip(b.lines, b.offsets, b.raws, strict=True)]
        assert lines == [(1, 0, E), (2, len(E) + 4, E2), (3, len(E) + len(E2) + 8, E)], size
        assert all(data[offset:].startswith(raw) for _, offset, raw in lines)
