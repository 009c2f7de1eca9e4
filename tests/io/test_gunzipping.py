"""journals.Gunzipping: a local file read gunzipped in pieces, with the line and offset reading is at; a gzip stream
cut off or corrupt is GzipUnreadable there (golden check, script's session and the walk's journal read through it)."""

from __future__ import annotations

import gzip
import io

import pytest

from replay.pipeline.io.journals import Gunzipping, GzipUnreadable

TEXT = b'{"a":1}\n{"b":2}\n{"c":3}\n'


@pytest.mark.parametrize("packed", [False, True])
def test_pieces_and_where_reading_is(packed: bool) -> None:
    reading = Gunzipping(io.BufferedReader(io.BytesIO(gzip.compress(TEXT) if packed else TEXT)),
                         lambda stream: stream.readline())
    seen = [(piece, reading.line, reading.offset) for piece in reading]
    assert seen == [(b'{"a":1}\n', 1, 0), (b'{"b":2}\n', 2, 8), (b'{"c":3}\n', 3, 16)]
    assert (reading.line, reading.offset) == (4, 24)


def test_a_stream_cut_off_is_gzip_unreadable_where_reading_stopped() -> None:
    cut = gzip.compress(TEXT * 4000, mtime=0)[:-20]
    reading = Gunzipping(io.BufferedReader(io.BytesIO(cut)), lambda stream: stream.readline())
    lines = 0
    with pytest.raises(GzipUnreadable) as raised:
        for _ in reading:
            lines += 1
    assert (raised.value.truncated, raised.value.line, raised.value.offset) == (True, lines + 1, lines * 8)


def test_a_corrupt_stream_is_gzip_unreadable_not_truncated() -> None:
    packed = bytearray(gzip.compress(TEXT))
    packed[-8] ^= 0xFF  # (its CRC: all its text comes out first)
    with pytest.raises(GzipUnreadable) as raised:
        list(Gunzipping(io.BufferedReader(io.BytesIO(bytes(packed))), lambda stream: stream.read1(65536)))
    assert (raised.value.truncated, raised.value.line, raised.value.offset) == (False, 4, 24)
