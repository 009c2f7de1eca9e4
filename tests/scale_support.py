"""Helpers for the tests of runs over many inputs: a folder of small generated journals, a folder's bytes."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "bench"))

from journal_gen import write_journal

from replay.pipeline.io.manifest import MANIFEST


def make_journals(folder: Path, count: int = 12, size: int = 12_000) -> Path:
    """``count`` journals in ``folder`` (some in a sub-folder), every third with a bad line and a torn tail."""
    whole = folder / ".all.tmp"
    write_journal(whole, count * size)  # one generated stream, cut into journals at line ends
    lines = whole.read_bytes().splitlines(keepends=True)
    whole.unlink()
    per = len(lines) // count
    for k in range(count):
        path = folder / ("nested" if k % 4 == 3 else "") / f"j{k:03d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(lines[k * per:(k + 1) * per]))
        if k % 3 == 1:
            with path.open("ab") as handle:
                handle.write(b"this is not json\n")
                handle.write(b'{"seq": 99, "type": "tool_called", "runId": "r", "payload": {"callId": "cut')
    return folder


def tree_bytes(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` but the manifest, by relative path (hidden and temp files too)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != MANIFEST}
