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


def upload(folder: Path, url: str) -> str:
    """Every file under ``folder`` copied to the folder URL ``url`` (through fsspec); returns ``url``."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(url)
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            fs.pipe_file(f"{root.rstrip('/')}/{path.relative_to(folder).as_posix()}", path.read_bytes())
    return url


def url_tree(url: str) -> dict[str, bytes]:
    """``tree_bytes`` of a folder URL: every file under it but the manifest (hidden and temp files too)."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(url)
    fs.invalidate_cache()
    root = root.rstrip("/")
    return {name[len(root) + 1:]: fs.cat_file(name) for name in fs.find(root) if not name.endswith("/" + MANIFEST)}


def named(data: bytes, **places: str | Path) -> bytes:
    """``data`` with each place (a folder path or URL) written as its label: outputs compared across places."""
    for label, place in sorted(places.items(), key=lambda kv: -len(str(kv[1]))):
        data = data.replace(str(place).encode(), label.encode())
    return data


def named_tree(tree: dict[str, bytes], **places: str | Path) -> dict[str, bytes]:
    return {name: named(data, **places) for name, data in tree.items()}
