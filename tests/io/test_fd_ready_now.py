"""``ready_now``: would a read of an input return at once? A pipe's while its writer is there and has written nothing
more would wait (a live stream's pause: what read holds back goes on then); with bytes in it, or its writer gone, not."""

from __future__ import annotations

import os
from pathlib import Path

from replay.pipeline.io.fdio import FdReader, GunzipReader, PrefixedReader, ready_now


def test_a_pipe_is_ready_with_bytes_in_it_or_its_writer_gone_not_while_its_writer_waits():
    read_end, write_end = os.pipe()
    try:
        reader = PrefixedReader(b"", FdReader(read_end))
        assert not ready_now(reader)
        os.write(write_end, b"x")
        assert ready_now(reader)
        os.read(read_end, 1)
        assert not ready_now(reader)
        os.close(write_end)
        write_end = -1
        assert ready_now(reader) and os.read(read_end, 1) == b""
        assert not ready_now(PrefixedReader(b"{", FdReader(read_end)))  # (its prefix tops up a read: may wait)
        assert not ready_now(GunzipReader(FdReader(read_end), "x.gz"))  # (inflating may need more)
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


def test_a_file_is_always_ready(tmp_path: Path):
    (tmp_path / "j.jsonl").write_bytes(b"")
    fd = os.open(tmp_path / "j.jsonl", os.O_RDONLY)
    try:
        assert ready_now(PrefixedReader(b"", FdReader(fd, "file")))
    finally:
        os.close(fd)
