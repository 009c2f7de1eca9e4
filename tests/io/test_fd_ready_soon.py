"""``ready_soon``: will a read of an input give something within a short grace? A pipe's while its writer is there and
writes nothing more that long would wait (a live stream's pause: what read holds back goes on then); with bytes in it,
bytes written during the grace, or its writer gone, not."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.io.fdio import PAUSE_GRACE_VARIABLE, FdReader, GunzipReader, PrefixedReader, ready_soon


@pytest.mark.anyio
async def test_a_pipe_is_ready_with_bytes_in_it_or_its_writer_gone_not_while_its_writer_is_silent():
    read_end, write_end = os.pipe()
    try:
        reader = PrefixedReader(b"", FdReader(read_end))
        assert not await ready_soon(reader)
        os.write(write_end, b"x")
        assert await ready_soon(reader)
        os.read(read_end, 1)
        assert not await ready_soon(reader)
        assert not await ready_soon(PrefixedReader(b"{", FdReader(read_end)))  # (its prefix tops up a read: may wait)
        gunzip = GunzipReader(FdReader(read_end), "x.gz")
        assert not await ready_soon(gunzip)  # (nothing inflated nor compressed left over: the pipe's wait is its)
        gunzip.pending = b"{}"
        assert await ready_soon(gunzip)  # (inflated bytes not handed out yet: `cat log.gz |` pauses as `cat log |`)
        os.close(write_end)
        write_end = -1
        assert await ready_soon(PrefixedReader(b"{", FdReader(read_end)))  # (the top-up read gives the end at once)
        assert await ready_soon(GunzipReader(FdReader(read_end), "x.gz"))
        assert await ready_soon(reader) and os.read(read_end, 1) == b""
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


@pytest.mark.anyio
async def test_a_pipe_whose_writer_writes_during_the_grace_is_ready():
    """Empty when asked, written to while it waits (a writer not scheduled yet, `cat` between two writes): no pause.
    (It used to look once, at that instant.)"""
    read_end, write_end = os.pipe()
    try:
        async with anyio.create_task_group() as tg:
            # (a task that starts once the host task awaits: once ``ready_soon`` has looked and begun to wait)
            tg.start_soon(anyio.to_thread.run_sync, os.write, write_end, b"x")
            assert await ready_soon(FdReader(read_end), grace=60)
    finally:
        os.close(read_end)
        os.close(write_end)


def write_later(fd: int) -> None:
    time.sleep(1)  # (a writer silent far longer than the default grace, 50 ms)
    os.write(fd, b"x")


@pytest.mark.anyio
async def test_the_environment_sets_the_grace_in_milliseconds(monkeypatch: pytest.MonkeyPatch):
    """REPLAY_PAUSE_GRACE_MS (a test's knob: `cat FILE |` left unscheduled longer than 50 ms on a loaded machine is
    then no pause): a writer silent for a second is waited for, no pause."""
    monkeypatch.setenv(PAUSE_GRACE_VARIABLE, "600000")
    read_end, write_end = os.pipe()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, write_later, write_end)
            assert await ready_soon(FdReader(read_end))
    finally:
        os.close(read_end)
        os.close(write_end)


@pytest.mark.anyio
@pytest.mark.parametrize("value", ["0", "-5", "lots", "", "1.5", "١٢"])
async def test_a_grace_that_is_no_number_of_milliseconds_is_refused(monkeypatch: pytest.MonkeyPatch, value: str):
    monkeypatch.setenv(PAUSE_GRACE_VARIABLE, value)
    read_end, write_end = os.pipe()
    try:
        with pytest.raises(ReplayError) as refused:
            await ready_soon(FdReader(read_end))
        assert refused.value.code == "E_USAGE_INVALID" and refused.value.body["path"] == PAUSE_GRACE_VARIABLE
    finally:
        os.close(read_end)
        os.close(write_end)


@pytest.mark.anyio
async def test_a_file_is_always_ready(tmp_path: Path):
    (tmp_path / "j.jsonl").write_bytes(b"")
    fd = os.open(tmp_path / "j.jsonl", os.O_RDONLY)
    try:
        assert await ready_soon(PrefixedReader(b"", FdReader(fd, "file")))
    finally:
        os.close(fd)
