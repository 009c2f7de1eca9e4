"""Journal I/O: path expansion, line cutting with positions, format detection, gzip, atomic output."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import orjson
import pytest

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.io.journals import (
    DOCUMENT,
    LINES,
    LineCutter,
    as_document,
    expand_paths,
    head_format,
    is_journal_name,
    open_journal,
)
from replay.pipeline.io.staging import atomic_output, write_atomic


def cut(chunks: list[bytes], **kw) -> tuple[list[Batch], list[dict]]:
    cutter = LineCutter("j.jsonl", **kw)
    items = [item for chunk in chunks for item in cutter.feed(chunk)] + cutter.finish()
    return [i for i in items if isinstance(i, Batch)], [i for i in items if isinstance(i, dict)]


def columns(batches: list[Batch]) -> list[tuple[bytes, int, int]]:
    return [(r, ln, off) for b in batches for r, ln, off in zip(b.raws, b.lines, b.offsets, strict=True)]


# expand_paths ------------------------------------------------------------------------------
def test_expand_paths_walks_directories_in_sorted_order_and_skips_non_journals(tmp_path: Path):
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "deep").mkdir(parents=True)
    for name in ("b/2.jsonl", "a/deep/z.jsonl.gz", "a/1.ndjson", "a/x.json", "b/notes.txt",
                 "a/run.raw.json", "a/run.heal-log.json", "top.jsonl"):
        (tmp_path / name).write_bytes(b"")
    found = expand_paths([str(tmp_path)])
    assert [os.path.relpath(p, tmp_path) for p in found] == [
        "a/1.ndjson", "a/deep/z.jsonl.gz", "a/x.json", "b/2.jsonl", "top.jsonl",
    ]


def test_expand_paths_keeps_files_as_given_and_defaults_to_stdin(tmp_path: Path):
    f = tmp_path / "notes.txt"  # an explicit file is read whatever its name
    f.write_bytes(b"")
    assert expand_paths([str(f), "-"]) == [str(f), "-"]
    assert expand_paths([]) == ["-"]


def test_expand_paths_refuses_a_missing_path_before_reading(tmp_path: Path):
    with pytest.raises(ReplayError) as info:
        expand_paths([str(tmp_path), str(tmp_path / "missing.jsonl")])
    assert info.value.code == "E_INPUT_PATH_NOT_FOUND"
    assert info.value.exit_code == 2
    assert info.value.body["path"].endswith("missing.jsonl")


def test_expand_paths_walks_past_fifos_and_sockets_in_directories(tmp_path: Path):
    os.mkfifo(tmp_path / "live.jsonl")  # opening it would wait for a writer forever
    (tmp_path / "real.jsonl").write_bytes(b"")
    assert expand_paths([str(tmp_path)]) == [str(tmp_path / "real.jsonl")]


def test_expand_paths_accepts_a_fifo(tmp_path: Path):
    fifo = tmp_path / "live.jsonl"
    os.mkfifo(fifo)
    assert expand_paths([str(fifo)]) == [str(fifo)]


def test_is_journal_name():
    assert is_journal_name("a.jsonl") and is_journal_name("a.json.gz") and is_journal_name("a.ndjson")
    assert not is_journal_name("a.txt") and not is_journal_name("a.raw.json") and not is_journal_name("x.heal-log.json")


# LineCutter --------------------------------------------------------------------------------
def test_line_cutter_keeps_line_numbers_and_byte_offsets():
    batches, errors = cut([b'{"a":1}\n{"b":22}\n\n{"c":3}\n'])
    assert errors == []
    assert columns(batches) == [(b'{"a":1}', 1, 0), (b'{"b":22}', 2, 8), (b"", 3, 17), (b'{"c":3}', 4, 18)]
    assert not any(b.tail_open for b in batches)


def test_line_cutter_splits_on_newline_only_keeping_carriage_returns():
    batches, _ = cut([b'{"a":1}\r\n{"b":"x\ry"}\r\n'])
    assert [r for r, _, _ in columns(batches)] == [b'{"a":1}\r', b'{"b":"x\ry"}\r']


def test_line_cutter_joins_a_line_split_across_chunks():
    batches, _ = cut([b'{"a"', b":1", b'}\n{"b":2}', b"\n"])
    assert columns(batches) == [(b'{"a":1}', 1, 0), (b'{"b":2}', 2, 8)]


def test_line_cutter_marks_a_last_line_without_newline_as_open():
    batches, _ = cut([b'{"a":1}\n{"b":'])
    assert columns(batches)[-1] == (b'{"b":', 2, 8)
    assert batches[-1].tail_open and not batches[0].tail_open


def test_line_cutter_cuts_batches_of_the_configured_size():
    data = b"".join(b'{"n":%d}\n' % i for i in range(10))
    batches, _ = cut([data], batch_events=4)
    assert [len(b) for b in batches] == [4, 4, 2]
    assert [ln for _, ln, _ in columns(batches)] == list(range(1, 11))


def test_line_cutter_reports_and_skips_a_too_long_line_inside_a_chunk():
    batches, errors = cut([b'{"a":1}\n' + b"x" * 50 + b'\n{"b":2}\n'], max_line_bytes=20)
    assert [r for r, _, _ in columns(batches)] == [b'{"a":1}', b'{"b":2}']
    assert [(e["code"], e["line"], e["offset"]) for e in errors] == [("E_JSONL_LINE_TOO_LONG", 2, 8)]
    assert columns(batches)[1] == (b'{"b":2}', 3, 59)


def test_line_cutter_skips_a_too_long_line_spread_over_many_chunks():
    chunks = [b'{"a":1}\n', *([b"y" * 7] * 10), b'yy\n{"b":2}\n']
    batches, errors = cut(chunks, max_line_bytes=20)
    assert [(e["line"], e["offset"]) for e in errors] == [(2, 8)]
    assert columns(batches) == [(b'{"a":1}', 1, 0), (b'{"b":2}', 3, 8 + 72 + 1)]


def test_line_cutter_drops_a_too_long_torn_tail_silently_after_reporting_it():
    batches, errors = cut([b'{"a":1}\n' + b"z" * 30], max_line_bytes=20)
    assert columns(batches) == [(b'{"a":1}', 1, 0)]
    assert [e["code"] for e in errors] == ["E_JSONL_LINE_TOO_LONG"]


def test_line_cutter_feeding_byte_by_byte_gives_the_same_columns():
    data = b'{"a":1}\n\n{"b":"\xc3\xa9"}\r\n{"c":3}'
    whole, _ = cut([data])
    bytewise, _ = cut([data[i:i + 1] for i in range(len(data))])
    assert columns(bytewise) == columns(whole)


def test_line_cutter_exposes_the_pending_line():
    cutter = LineCutter("j")
    cutter.feed(b'{"a":1}\n{"b"')
    cutter.feed(b":2")
    assert cutter.pending == b'{"b":2'


# format detection --------------------------------------------------------------------------
@pytest.mark.parametrize(("head", "kind"), [
    (b"", None),
    (b"  \n\n", None),
    (b'{"seq":1}', None),  # no whole line yet
    (b'{"seq":1}\n', LINES),
    (b"not json\n", LINES),
    (b'{"$record":"run","runId":"r"}\n', LINES),
    (b"{\n", DOCUMENT),
    (b"  [\n", DOCUMENT),
    (b'{"events":[{"seq":1}]}\n', DOCUMENT),
    (b'[{"seq":1},{"seq":2}]\n', DOCUMENT),
    (b'{"schemaVersion": "1.0.0",\n', None),  # one line is not enough to tell
    (b'{"schemaVersion": "1.0.0",\n  "events": [\n', DOCUMENT),
    (b'{"seq":1,\n{"seq":2}\n', LINES),  # a bad first line in a journal
    (b'[{"seq":1},\n{"seq":2}]\n', DOCUMENT),
    (b"\xef\xbb", None),  # the start of a byte order mark
    (b'\xef\xbb\xbf{"seq":1}\n', LINES),
    (b"\xef\xbb\xbf{\n", DOCUMENT),
])
def test_head_format(head: bytes, kind: str | None):
    assert head_format(head) == kind


def test_as_document_accepts_artifacts_and_arrays_only():
    assert as_document(b'{"events": []}') == {"events": []}
    assert as_document(b"[1, 2]") == [1, 2]
    assert as_document(b'{"seq": 1}') is None
    assert as_document(b'{"$record": "run", "events": []}') is None
    assert as_document(b'{"seq":1}\n{"seq":2}\n') is None


# opening journals -------------------------------------------------------------------------
async def read_all(path: str) -> bytes:
    out = b""
    async with open_journal(path) as reader:
        while chunk := await reader.read(1 << 16):
            out += chunk
    return out


@pytest.mark.anyio
async def test_open_journal_reads_plain_and_gzip_files(tmp_path: Path):
    data = b"".join(b'{"n":%d}\n' % i for i in range(5000))
    plain = tmp_path / "a.jsonl"
    plain.write_bytes(data)
    packed = tmp_path / "a.jsonl.gz"
    packed.write_bytes(gzip.compress(data))
    assert await read_all(str(plain)) == data
    assert await read_all(str(packed)) == data


@pytest.mark.anyio
async def test_open_journal_reads_concatenated_gzip_members(tmp_path: Path):
    packed = tmp_path / "a.jsonl.gz"
    packed.write_bytes(gzip.compress(b'{"a":1}\n') + gzip.compress(b'{"b":2}\n'))
    assert await read_all(str(packed)) == b'{"a":1}\n{"b":2}\n'


@pytest.mark.anyio
async def test_open_journal_detects_gzip_by_content_not_name(tmp_path: Path):
    sneaky = tmp_path / "a.jsonl"
    sneaky.write_bytes(gzip.compress(b'{"a":1}\n'))
    assert await read_all(str(sneaky)) == b'{"a":1}\n'


@pytest.mark.anyio
async def test_open_journal_reports_a_truncated_gzip(tmp_path: Path):
    data = gzip.compress(b"".join(b'{"n":%d}\n' % i for i in range(5000)))
    cut_short = tmp_path / "t.jsonl.gz"
    cut_short.write_bytes(data[: len(data) // 2])
    with pytest.raises(ReplayError) as info:
        await read_all(str(cut_short))
    assert info.value.code == "E_GZIP_INVALID" and info.value.exit_code == 1


@pytest.mark.anyio
async def test_open_journal_reports_a_corrupt_gzip(tmp_path: Path):
    bad = tmp_path / "b.jsonl.gz"
    bad.write_bytes(b"\x1f\x8b" + b"garbage" * 10)
    with pytest.raises(ReplayError) as info:
        await read_all(str(bad))
    assert info.value.code == "E_GZIP_INVALID"


@pytest.mark.anyio
async def test_the_first_read_is_a_full_chunk_not_just_the_sniffed_bytes(tmp_path: Path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a":1}\n' * 100)
    async with open_journal(str(path)) as reader:
        assert len(await reader.read(512)) == 512


@pytest.mark.anyio
async def test_open_journal_of_a_one_byte_file(tmp_path: Path):
    one = tmp_path / "one.jsonl"
    one.write_bytes(b"{")
    assert await read_all(str(one)) == b"{"


@pytest.mark.anyio
async def test_open_journal_of_an_unopenable_path_is_unreadable(tmp_path: Path):
    with pytest.raises(ReplayError) as info:
        await read_all(str(tmp_path / "gone.jsonl"))
    assert info.value.code == "E_INPUT_UNREADABLE"


# atomic output ---------------------------------------------------------------------------
def test_atomic_output_appears_whole(tmp_path: Path):
    target = tmp_path / "sub" / "out.jsonl"
    with atomic_output(target) as handle:
        handle.write(b"one\n")
        assert not target.exists()  # nothing at the target until the end
        handle.write(b"two\n")
    assert target.read_bytes() == b"one\ntwo\n"
    assert os.listdir(target.parent) == ["out.jsonl"]


def test_atomic_output_leaves_nothing_when_the_writer_fails(tmp_path: Path):
    target = tmp_path / "out.jsonl"
    target.write_bytes(b"old\n")
    with pytest.raises(RuntimeError), atomic_output(target) as handle:
        handle.write(b"partial")
        raise RuntimeError("boom")
    assert target.read_bytes() == b"old\n"  # the previous file is untouched
    assert os.listdir(tmp_path) == ["out.jsonl"]


def test_atomic_output_leaves_nothing_on_keyboard_interrupt(tmp_path: Path):
    target = tmp_path / "out.jsonl"
    with pytest.raises(KeyboardInterrupt), atomic_output(target) as handle:
        handle.write(b"partial")
        raise KeyboardInterrupt
    assert os.listdir(tmp_path) == []


def test_write_atomic(tmp_path: Path):
    write_atomic(tmp_path / "x.json", orjson.dumps({"a": 1}))
    assert orjson.loads((tmp_path / "x.json").read_bytes()) == {"a": 1}


def test_a_folder_is_walked_as_os_walk_walks_it_for_journals(tmp_path: Path):
    """Regular files and broken links (a link in a loop too) named as journals, in sorted order, below every folder but a half-staged one;
    not a FIFO, not a link to a folder (nor what is in it)."""
    from replay.pipeline.engine.outputs import TEMP_SUFFIX

    (tmp_path / "sub").mkdir()
    for name in ("a.jsonl", "c.json", "sub/b.jsonl", "sub/skip.heal-log.json", "notes.txt"):
        (tmp_path / name).write_text("{}\n")
    (tmp_path / f".half{TEMP_SUFFIX}").mkdir()
    (tmp_path / f".half{TEMP_SUFFIX}" / "hidden.jsonl").write_text("{}\n")
    os.mkfifo(tmp_path / "live.jsonl")
    (tmp_path / "broken.jsonl").symlink_to(tmp_path / "nowhere")
    (tmp_path / "to-sub.jsonl").symlink_to(tmp_path / "sub")
    (tmp_path / "to-sub").symlink_to(tmp_path / "sub")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "a.jsonl")
    (tmp_path / "loop.jsonl").symlink_to(tmp_path / "loop.jsonl")  # a broken link too (ELOOP), not E_UNHANDLED
    reference = sorted(
        os.path.join(root, name) for root, dirs, names in os.walk(tmp_path) if TEMP_SUFFIX not in root for name in names
        if name.endswith((".jsonl", ".json")) and not name.endswith(".heal-log.json")
        and (os.path.isfile(os.path.join(root, name)) or not os.path.exists(os.path.join(root, name))))
    found = expand_paths([str(tmp_path) + "/"])
    assert found == reference == [str(tmp_path / n) for n in ("a.jsonl", "broken.jsonl", "c.json", "link.jsonl", "loop.jsonl",
                                                                     "sub/b.jsonl")]
