"""GunzipReader over concatenated gzip members (rotated logs, `gzip -c b >> all.gz`): each member's bytes come out once,
in order, whatever the size asked of each read, and a refused byte is named at its offset in the compressed file."""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

import anyio
from conftest import run_replay
from hypothesis import example, given
from hypothesis import strategies as st

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.io.fdio import FdReader, GunzipReader


def _inflated(path: Path, n: int) -> tuple[bytes, ReplayError | None]:
    """Everything a GunzipReader of ``path`` hands out, ``n`` bytes asked at a time, and the error it ends with."""
    async def read() -> tuple[bytes, ReplayError | None]:
        out = bytearray()
        fd = os.open(path, os.O_RDONLY)
        try:
            reader = GunzipReader(FdReader(fd), path.name)
            while chunk := await reader.read(n):
                out += chunk
        except ReplayError as error:
            return bytes(out), error
        finally:
            os.close(fd)
        return bytes(out), None
    return anyio.run(read)


def _first_refused(blob: bytes) -> int:
    """The oracle: the offset of the first byte zlib refuses, the blob fed a byte at a time, a new member after each."""
    inflate = zlib.decompressobj(wbits=31)
    for at in range(len(blob)):
        try:
            inflate.decompress(blob[at:at + 1])
        except zlib.error:
            return at
        if inflate.eof:
            inflate = zlib.decompressobj(wbits=31)
    raise AssertionError("no byte refused")


members = st.lists(st.binary(max_size=3000) | st.builds(lambda k, b: b * k, st.integers(1, 400), st.binary(min_size=1, max_size=40)),
                   min_size=1, max_size=5)


@given(parts=members, n=st.integers(1, 5000))
@example(parts=[b"x" * 20000, b"tail"], n=100)  # a member ends in a read fed what a size-limited read left: once, not twice
def test_each_member_comes_out_once_whatever_a_read_asks(tmp_path_factory, parts: list[bytes], n: int) -> None:
    path = tmp_path_factory.mktemp("gz") / "all.jsonl.gz"
    path.write_bytes(b"".join(gzip.compress(part) for part in parts))
    assert _inflated(path, n) == (b"".join(parts), None)


@given(parts=members, n=st.integers(1, 5000), flip=st.integers(0, 7))
def test_a_bad_check_after_members_is_named_at_its_compressed_byte(tmp_path_factory, parts: list[bytes], n: int,
                                                                   flip: int) -> None:
    packed = [gzip.compress(part) for part in parts]
    last = bytearray(packed[-1])
    last[-8 + flip] ^= 0xFF  # the last member's CRC or size: zlib refuses a byte of its trailer
    blob = b"".join(packed[:-1]) + bytes(last)
    path = tmp_path_factory.mktemp("gz") / "bad.jsonl.gz"
    path.write_bytes(blob)
    out, error = _inflated(path, n)
    assert error is not None and error.code == "E_GZIP_INVALID"
    assert error.message.endswith(f"(compressed byte {_first_refused(blob)})")
    assert out == b"".join(parts)  # (every member's bytes, the last one's too: its refusal is in its trailer)


def test_replay_read_of_rotated_logs_gives_each_line_once(tmp_path: Path) -> None:
    """The hunt's case: members each inflating to more than a read's 256 KiB, appended one after another."""
    runs = [b"".join(b'{"seq":%d,"timestamp":"2026-03-01T12:00:00.000Z","type":"note","runId":"r%d","payload":{"text":"%s"}}\n'
                     % (i + 1, r, b"x" * 180) for i in range(2000)) for r in range(3)]
    runs.append(b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"note","runId":"last","payload":{}}\n')
    path = tmp_path / "all.jsonl.gz"
    path.write_bytes(b"".join(gzip.compress(run) for run in runs))
    done = run_replay("read", str(path), process=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"".join(runs)
