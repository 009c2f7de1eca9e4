"""walk's scan of a named .json artifact parses it once: its parsed document, the side-file check and the refusal
check share one value, so its memory peak is one parse's (two parsed copies at once were held, and three parses run,
of a 74 MB artifact: 998 MB, 27 s)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from conftest import write_one_line_artifact

from replay.pipeline.engine import exactjson
from replay.pipeline.model.walk_journal import _scan


def test_the_scan_of_a_named_artifact_holds_one_parsed_copy(tmp_path: Path):
    path = tmp_path / "big.json"
    write_one_line_artifact(path, 20000, 40)
    data = path.read_bytes()
    tracemalloc.start()
    try:
        value = exactjson.loads(data)
        parsed, one_parse = tracemalloc.get_traced_memory()  # (what the value holds; the parse's own peak)
        del value
        tracemalloc.stop()
        tracemalloc.start()
        assert _scan(str(path), None, 64 << 20).document
        scan = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # one parse, the file's bytes (read, then joined), and less than another parsed copy
    assert scan < one_parse + 2 * len(data) + parsed // 2, (scan, one_parse, parsed, len(data))
