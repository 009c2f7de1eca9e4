"""walk's look at an input's head (``_head``) is linear in the head's size: a large ``.json`` artifact on one line was
joined chunk by chunk (``head += data``) and ``head_format`` rerun on the whole head after every chunk, time growing
with the square of the file's size; now the chunks are joined once and head_format runs only when it can tell."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_one_line_artifact

from replay.pipeline.model import walk_journal


def test_a_one_line_artifact_has_its_head_judged_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "big.json"
    write_one_line_artifact(path, 20000, 200)
    size = path.stat().st_size
    assert size > 4 * walk_journal.SCAN_CHUNK
    judged: list[int] = []  # the bytes head_format was given, each time

    def head_format(head: bytes) -> str | None:
        judged.append(len(head))
        return real(head)

    real = walk_journal.head_format
    monkeypatch.setattr(walk_journal, "head_format", head_format)
    assert walk_journal._scan(str(path), None, 64 << 20).document
    assert walk_journal.journal_dialect(str(path)) == "canonical"
    # each pass gives head_format its first chunk, then nothing more (no newline follows: it cannot tell), and the
    # scan tries the whole of it once; without the fix, every chunk's head again (1 + 2 + ... MiB)
    assert sum(judged) <= 2 * (walk_journal.SCAN_CHUNK + size), judged
    assert len(judged) <= 4, judged
