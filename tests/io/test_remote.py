"""io.remote: names under folder URLs, what a listing finds, modification times, reads that stream (gzip
too), writes that appear whole; on memory:// and a filesystem that reports how it is read."""

from __future__ import annotations

import gzip
import hashlib
import os
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

fsspec = pytest.importorskip("fsspec")

from fsspec.implementations.memory import MemoryFileSystem  # noqa: E402

from replay.pipeline.engine.errors import ReplayError  # noqa: E402
from replay.pipeline.io import remote  # noqa: E402
from replay.pipeline.io.journals import expand_paths, is_url, open_journal, path_kind  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from journal_gen import write_journal  # noqa: E402


@pytest.fixture
def folder():
    """A fresh memory:// folder, removed after the test."""
    root = f"memory://r{uuid.uuid4().hex[:10]}"
    yield root
    fs = fsspec.filesystem("memory")
    if fs.exists(root[len("memory://"):]):
        fs.rm(root[len("memory://"):], recursive=True)


def _put(url: str, data: bytes) -> None:
    fs, path = fsspec.core.url_to_fs(url)
    fs.pipe_file(path, data)


def test_urls_and_local_paths_are_told_apart_by_their_scheme() -> None:
    assert all(map(is_url, ["s3://b/k", "gcs://b", "ftp://h:21/x", "memory://x", "file:///tmp/x", "abfs://c/p"]))
    assert not any(map(is_url, ["runs", "/tmp/runs", "./s3:/x", "a://b/c"[1:], "-", "C:\\runs", "dir/ftp://x"]))


def test_names_under_a_folder_url_keep_its_spelling() -> None:
    assert remote.join("ftp://127.0.0.1:2121/in", "sub/a.jsonl") == "ftp://127.0.0.1:2121/in/sub/a.jsonl"
    assert remote.join("memory://", "a.jsonl") == "memory://a.jsonl"
    assert remote.relative("s3://bucket/runs/2026/a.jsonl", "s3://bucket/runs/") == "2026/a.jsonl"
    assert remote.parent("s3://bucket/runs/a.jsonl") == "s3://bucket/runs" and remote.name("s3://b/x/a.json") == "a.json"
    assert remote.common_root(["memory://r/in/a.jsonl", "memory://r/in/sub/b.jsonl", "memory://r/in/c.jsonl"]) == "memory://r/in"


@pytest.mark.parametrize(("info", "seconds"), [
    ({"mtime": 1_700_000_000.5}, 1_700_000_000.5),  # local, sftp
    ({"LastModified": datetime(2026, 3, 1, 12, 0, tzinfo=UTC)}, datetime(2026, 3, 1, 12, 0, tzinfo=UTC).timestamp()),  # s3
    ({"updated": "2026-03-01T12:00:00.250Z"}, datetime(2026, 3, 1, 12, 0, tzinfo=UTC).timestamp() + 0.25),  # gcs
    ({"modify": "20260301120000"}, datetime(2026, 3, 1, 12, 0, tzinfo=UTC).timestamp()),  # ftp MLSD, UTC
    ({"created": 1_700_000_001.0}, 1_700_000_001.0),  # memory
    ({"size": 3}, 0),  # none: the content decides
])
def test_modification_times_come_from_whatever_field_the_filesystem_fills(info, seconds) -> None:
    assert remote._mtime_ns(info) == pytest.approx(seconds * 1e9, abs=1e3)


def test_a_folder_url_is_walked_like_a_local_folder(folder: str) -> None:
    for name in ["b.jsonl", "a.json", "sub/c.jsonl.gz", "sub/d.ndjson", "notes.txt", "a.heal-log.json", "r.raw.json",
                 ".replay-manifest.json", ".b.jsonl.1234.replay.tmp", ".out.partial.replay.tmp/e.jsonl"]:
        _put(f"{folder}/in/{name}", b"{}\n")
    found = expand_paths([f"{folder}/in"])
    assert found == [f"{folder}/in/{n}" for n in ["a.json", "b.jsonl", "sub/c.jsonl.gz", "sub/d.ndjson"]]
    assert expand_paths([f"{folder}/in/notes.txt"]) == [f"{folder}/in/notes.txt"]  # a file named: read as given
    with pytest.raises(ReplayError) as missing:
        expand_paths([f"{folder}/nothing"])
    assert missing.value.code == "E_INPUT_PATH_NOT_FOUND" and missing.value.exit_code == 2


def test_a_write_appears_whole_and_leaves_no_temp_name(folder: str) -> None:
    target = f"{folder}/out/deep/er/x.json"
    remote.write_atomic(target, b"first\n")
    remote.write_atomic(target, b"second\n")  # replaces it
    assert remote.read_bytes(target) == b"second\n"
    assert remote.sizes_under(f"{folder}/out") == {"deep/er/x.json": 7}
    assert remote.URL_FILES.output_digest(target) == (7, hashlib.sha256(b"second\n").hexdigest())  # as written


def test_temp_files_of_dead_writers_are_swept_and_nothing_else(folder: str) -> None:
    _put(f"{folder}/out/a.healed.jsonl", b"whole\n")
    _put(f"{folder}/out/sub/.a.healed.jsonl.0badc0de.replay.tmp", b"half")
    assert remote.sweep_temp_files(f"{folder}/out") == [f"{folder}/out/sub/.a.healed.jsonl.0badc0de.replay.tmp"]
    assert remote.sizes_under(f"{folder}/out") == {"a.healed.jsonl": 6}


class ReportedReads(MemoryFileSystem):
    """memory://, but every read of a file opened for reading is recorded (how much was asked for)."""

    protocol = "reportedreads"
    asked: list[int] = []

    def _open(self, path, mode="rb", **kwargs):
        file = super()._open(path, mode, **kwargs)
        if mode != "rb":
            return file
        asked = self.asked
        data = file.getvalue()

        class Recorded:
            def __init__(self) -> None:
                self.at = 0

            def read(self, n: int = -1) -> bytes:
                asked.append(n)
                end = len(data) if n is None or n < 0 else self.at + n
                piece, self.at = data[self.at:end], min(end, len(data))
                return piece

            def close(self) -> None:
                pass

        return Recorded()


def test_a_big_gzipped_journal_at_a_url_is_streamed_not_loaded_whole(tmp_path: Path) -> None:
    fsspec.register_implementation("reportedreads", ReportedReads, clobber=True)
    journal = tmp_path / "big.jsonl"
    write_journal(journal, 6 << 20)
    packed = gzip.compress(journal.read_bytes())
    url = f"reportedreads://big/{uuid.uuid4().hex[:8]}.jsonl.gz"
    _put(url, packed)
    ReportedReads.asked.clear()

    async def read_all() -> bytes:
        parts = []
        async with open_journal(url) as reader:
            while data := await reader.read(64 * 1024):
                parts.append(data)
        return b"".join(parts)

    assert anyio.run(read_all) == journal.read_bytes()
    assert ReportedReads.asked and all(0 < n <= remote.READ_BYTES for n in ReportedReads.asked)  # never "all of it"
    assert len(ReportedReads.asked) > len(packed) // remote.READ_BYTES  # block by block
    ReportedReads().rm_file(url)


def test_an_unknown_protocol_is_refused_with_what_to_do() -> None:
    with pytest.raises(ReplayError) as refused:
        remote.kind("nosuchfs://x/y")
    assert refused.value.code == "E_FILESYSTEM_NOT_INSTALLED" and refused.value.exit_code == 2


def test_path_kind_says_the_same_of_a_url_as_of_a_local_path(folder, tmp_path: Path):
    _put(f"{folder}/sub/a.jsonl", b"{}\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.jsonl").write_bytes(b"{}\n")
    for root in (folder, str(tmp_path)):
        assert [path_kind(f"{root}/{name}") for name in ("sub", "sub/a.jsonl", "nothing")] == ["directory", "file", None]
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    assert [path_kind(tmp_path / name) for name in ("pipe", "dangling")] == ["other", None]
    assert path_kind(Path("memory://x")) is None  # a Path is local, whatever it spells
