"""`replay read`'s fast lane (check_lines: a batch of plain event lines checked in one msgspec pass) follows a source
record whose key is written with escapes (``"\\u0024record"``) as parse does: it looked for the key's bytes, so such a
record in a later batch was taken for an event, and a bad line after it reported in the file before it."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest
from conftest import ROOT, errors_of, run_replay

from replay.pipeline.io.journals import CHUNK_BYTES

sys.path.insert(0, str(ROOT / "tests" / "bench"))
from journal_gen import write_journal

KEYS = [b'"$record"', b'"\\u0024record"', b'"$r\\u0065cord"', b'"\\u0024\\u0072ecord"']


def _stream(tmp_path: Path, key: bytes, later: bool) -> bytes:
    """A saved `replay read a b` stream: a's source record, a's events, b's source record (its key as ``key``
    writes it), then b's events: a batch's worth (``later``: the record in a later batch than the first, and the bad
    line in a later one than the record's), and a line that is no JSON."""
    filler = tmp_path / "filler.jsonl"
    if not filler.exists():
        write_journal(filler, CHUNK_BYTES + 16_000)
    events = filler.read_bytes() if later else b""
    return (b'{"$record":"source","source":"a.jsonl"}\n' + events + b'{%s:"source","source":"b.jsonl"}\n' % key
            + events + b"not json\n")


@pytest.mark.parametrize("later", [False, True], ids=["first-batch", "later-batch"])
@pytest.mark.parametrize("key", KEYS, ids=["plain", "escaped-dollar", "escaped-letter", "escaped-both"])
def test_a_source_record_with_an_escaped_key_is_followed_by_read_as_by_parse(tmp_path: Path, key: bytes, later: bool):
    data = _stream(tmp_path, key, later)
    path = tmp_path / "stream.jsonl"
    path.write_bytes(data)
    read = run_replay("read", str(path))
    validated = run_replay("validate", "--in", str(path))  # (parse, which decodes each line)
    where = [{k: e.get(k) for k in ("code", "source", "line", "offset")} for e in errors_of(read.stderr)]
    expected = {"code": "E_JSONL_LINE_INVALID", "source": "b.jsonl", "line": data.split(b'"source":"b.jsonl"}\n')[1].count(b"\n"),
                "offset": len(data.split(b'"source":"b.jsonl"}\n')[1]) - len(b"not json\n")}
    assert where == [expected]
    assert [{k: e.get(k) for k in expected} for e in errors_of(validated.stderr)] == [expected]
    assert read.returncode == 1
    kept = read.stdout.splitlines()
    assert kept[-1].startswith(b'{"$record":"dropped"') and orjson.loads(kept[-1])["source"] == "b.jsonl"
