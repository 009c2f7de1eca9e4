"""Seed inputs for the fuzzers: the real corpus, the fixtures and the example journals, cut to a fuzzable size."""

from __future__ import annotations

import hashlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "tests" / "fixtures", ROOT / "examples" / "journals"]
MAX_SEED = 16 * 1024
# The first byte of a fuzz input picks its target (harness.one): a stage run, the runner protocol, a command.
STAGES, PROTOCOL, COMMAND = 0, 210, 240


def seed_files() -> list[Path]:
    files: list[Path] = []
    for folder in SOURCES:
        files.extend(p for p in sorted(folder.rglob("*")) if p.is_file() and p.suffix in (".jsonl", ".json", ".ndjson"))
    return files


def seeds() -> list[bytes]:
    """Each file's head (whole lines, up to MAX_SEED bytes), once per target."""
    out: list[bytes] = []
    for path in seed_files():
        data = path.read_bytes()
        if len(data) > MAX_SEED:
            cut = data.rfind(b"\n", 0, MAX_SEED)
            data = data[: cut + 1] if cut > 0 else data[:MAX_SEED]
        out.append(bytes([STAGES]) + data)
        out.append(bytes([PROTOCOL]) + data)
        for k in range(6):
            out.append(bytes([COMMAND + k]) + data)
    return out


def write_corpus(folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for seed in seeds():
        name = hashlib.sha1(seed).hexdigest()
        target = folder / name
        if not target.exists():
            target.write_bytes(seed)
            n += 1
    return n
