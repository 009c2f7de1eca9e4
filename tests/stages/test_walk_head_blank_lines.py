"""A head of megabytes of blank lines is judged in time linear in its size: walk's pre-scan (``walk_journal._head``,
``_refuse_json_lines``) and read's ``_read_head`` joined every chunk read so far and judged the whole head again
(``head_format``, ``json_lines_fault``) after each chunk that held a newline, every blank line's chunk, so a ``.json``
artifact after 20 MB of blank lines took seconds growing with the square of its size. Each is now judged again only
when what was read can change the answer: the bytes handed to the judges add up to a few times the file's size."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from replay.pipeline.io import journals
from replay.pipeline.io.journals import open_journal
from replay.pipeline.io.line_start import offset_refusal
from replay.pipeline.model import validation, walk_journal
from replay.stages.read import ReadJournal

ARTIFACT = Path(__file__).parents[1] / "fixtures" / "artifacts" / "valid" / "full.json"
LINE = b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r0","payload":{}}\n'


def _spy(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[int]:
    """The sizes of the heads ``module.name`` (a judge of heads) is given, each time; it still judges them."""
    real = getattr(module, name)
    judged: list[int] = []

    def judge(head: bytes) -> object:
        judged.append(len(head))
        return real(head)

    monkeypatch.setattr(module, name, judge)
    return judged


@pytest.mark.parametrize("blank", [b"\n", b"  \r\n"])
def test_walks_scan_of_a_json_after_blank_lines_judges_each_byte_a_few_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blank: bytes):
    path = tmp_path / "blank.json"
    path.write_bytes(blank * ((8 * walk_journal.SCAN_CHUNK) // len(blank)) + ARTIFACT.read_bytes())
    size = path.stat().st_size
    formats = _spy(monkeypatch, journals, "head_format")  # (HeadFormat asks it, for the walk as for read)
    faults = _spy(monkeypatch, validation, "json_lines_fault")  # (JsonLinesHead asks it, for the walk as for read)
    walk_journal._SCANS.clear()
    assert walk_journal._scan(str(path), None, 64 << 20).document  # (read whole: an artifact)
    # without the fix, every 1 MiB chunk's head again: 1 + 2 + ... + 9 MiB to each judge
    assert sum(formats) <= 3 * size, formats
    assert sum(faults) <= 2 * size, faults


def _read_head(path: Path, whole: bool, limit: int = 64 << 20) -> tuple[bytes, bool, str | None, object]:
    async def run() -> tuple[bytes, bool, str | None, object]:
        stage = ReadJournal(paths=[str(path)])
        stage.chunk = 1 << 16  # many chunks, each of blank lines
        async with open_journal(str(path), False) as reader:
            return await stage._read_head(reader, limit, [], whole)

    return anyio.run(run)


def test_reads_head_of_a_json_after_blank_lines_judges_each_byte_a_few_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "blank.json"
    path.write_bytes(b"\n" * (4 << 20) + ARTIFACT.read_bytes())
    faults = _spy(monkeypatch, validation, "json_lines_fault")
    head, eof, _, fault = _read_head(path, whole=True)
    assert (head, eof, fault) == (path.read_bytes(), True, None)  # one document: read whole
    assert sum(faults) <= 2 * path.stat().st_size, faults  # (was each 64 KiB chunk's head again: 64 chunks)


def test_reads_head_of_a_journal_after_blank_lines_judges_each_byte_a_few_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b" \n" * (2 << 20) + LINE * 3)
    formats = _spy(monkeypatch, journals, "head_format")
    _, eof, kind, _ = _read_head(path, whole=False)
    assert (eof, kind) == (False, "lines")
    assert sum(formats) <= 2 * path.stat().st_size, formats


def test_a_json_lines_fault_after_blank_chunks_is_told_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A first line that is one JSON value, then blank lines over many chunks, then a second value: told once, where
    it shows, with the head it was told from (no byte past the limit + 1)."""
    path = tmp_path / "lines.json"
    path.write_bytes(b"[1]\n" + b"\n" * (1 << 20) + b"[2]\n" * 1000)
    faults = _spy(monkeypatch, validation, "json_lines_fault")
    head, eof, _, fault = _read_head(path, whole=True)
    assert not eof and fault is not None and fault.lineno == 1 + (1 << 20) + 1
    assert len(faults) == 1 and head == path.read_bytes()[:len(head)]


def test_an_offsets_check_of_a_journal_after_blank_lines_judges_each_byte_a_few_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """read.start_offset asks whether the file reads as one document: its head judged as read judges it."""
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b" \n" * (8 << 20) + LINE * 3)
    formats = _spy(monkeypatch, journals, "head_format")
    assert offset_refusal(str(path), path.stat().st_size - len(LINE), 64 << 20) is None  # (lines: read from there)
    assert sum(formats) <= 2 * path.stat().st_size, formats  # (was the whole head again for each 4 MiB chunk)
