"""The manifest of a run over many inputs: what each input was, what it produced; written last, read to resume.

An output folder written by a command over many inputs (``heal --in DIR --out OUT``) ends with
``OUT/.replay-manifest.json``: the work it records (a key over the bound graph spec and replay's
version), and per input its path (relative to the input folder), size, modification time, SHA-256,
the files it wrote (relative to OUT, with size and SHA-256), its diagnostics by code, the records
read, and what it printed on stdout and stderr. While the run goes on, each finished task leaves a
fragment in ``OUT/.replay-manifest.d/`` (written atomically, after the task's files are in place), so
a run that crashed resumes from what is recorded there; the manifest is written after every other
file, and the fragments are removed after it.

A re-run with the same work skips every input whose size and modification time (or, when those
changed, content hash) match its entry and whose recorded outputs are all still there at their
recorded sizes; it prints the recorded stdout and stderr for them, so its output is the output of a
clean run. Everything else is computed again. Files written by an interrupted writer (atomic
writes' ``.NAME.XXXX.replay.tmp``) are swept away before the manifest is written.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from replay.pipeline.engine.parallel import Outcome
from replay.pipeline.io.journals import is_temp_name, write_atomic

MANIFEST = ".replay-manifest.json"
FRAGMENTS = ".replay-manifest.d"
VERSION = 1


def work_key(doc: dict[str, Any], version: str) -> str:
    """One key for the work: the bound graph spec (sorted keys) and the version of replay that runs it."""
    data = orjson.dumps({"doc": doc, "version": version}, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(data).hexdigest()


@dataclass
class Entry:
    """One input as the manifest records it."""

    input: str  # relative to the input root
    size: int
    mtime_ns: int
    sha256: str
    outputs: list[dict[str, Any]]  # {"path" (relative to the folder), "size", "sha256"}
    errors: int
    codes: dict[str, int]
    records: int
    stdout: str
    stderr: str

    def as_json(self) -> dict[str, Any]:
        return {"input": self.input, "size": self.size, "mtimeNs": self.mtime_ns, "sha256": self.sha256,
                "outputs": self.outputs, "diagnostics": {"total": self.errors, "byCode": self.codes},
                "records": self.records, "stdout": self.stdout, "stderr": self.stderr}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Entry:
        diagnostics = data["diagnostics"]
        return cls(data["input"], int(data["size"]), int(data["mtimeNs"]), str(data["sha256"]), list(data["outputs"]),
                   int(diagnostics["total"]), dict(diagnostics["byCode"]), int(data["records"]),
                   str(data["stdout"]), str(data["stderr"]))

    def outcome(self, path: str) -> Outcome:
        return Outcome(path, stdout=self.stdout.encode(), stderr=self.stderr.encode(), errors=self.errors,
                       codes=dict(self.codes), records=self.records, size=self.size, mtime_ns=self.mtime_ns,
                       sha256=self.sha256, skipped=True)


class Manifest:
    """The manifest of the folder ``folder`` for work ``key`` over inputs under ``root``."""

    def __init__(self, folder: Path, key: str, root: Path, command: str) -> None:
        self.folder = folder
        self.key = key
        self.root = root.resolve()
        self.command = command
        self.entries: dict[str, Entry] = {}  # by input, relative to root

    # reading ---------------------------------------------------------------------------------
    def load(self) -> None:
        """The entries recorded for this work: the manifest, then the fragments of a run that did not finish."""
        for path in [self.folder / MANIFEST, *sorted((self.folder / FRAGMENTS).glob("*" + MANIFEST))]:
            try:
                data = orjson.loads(path.read_bytes())
                if data.get("version") != VERSION or data.get("key") != self.key:
                    continue
                for item in data["inputs"]:
                    entry = Entry.from_json(item)
                    self.entries[entry.input] = entry
            except (OSError, ValueError, KeyError, TypeError):
                continue  # unreadable or from other work: nothing in it is reused

    def reusable(self, paths: list[str]) -> dict[str, Outcome]:
        """The inputs whose recorded outputs still stand, with their recorded outcome."""
        found: dict[str, Outcome] = {}
        for path in paths:
            entry = self.entries.get(self.relative(path))
            if entry is not None and self._unchanged(path, entry) and self._outputs_present(entry):
                found[path] = entry.outcome(path)
        return found

    def _unchanged(self, path: str, entry: Entry) -> bool:
        try:
            st = os.stat(path)
        except OSError:
            return False
        if st.st_size != entry.size:
            return False
        if st.st_mtime_ns == entry.mtime_ns:
            return True
        with open(path, "rb") as handle:  # touched: the content decides
            return hashlib.file_digest(handle, "sha256").hexdigest() == entry.sha256

    def _outputs_present(self, entry: Entry) -> bool:
        for out in entry.outputs:
            try:
                if (self.folder / out["path"]).stat().st_size != out["size"]:
                    return False
            except OSError:
                return False
        return True

    # writing ---------------------------------------------------------------------------------
    def relative(self, path: str) -> str:
        return os.path.relpath(os.path.abspath(path), self.root)

    def entry(self, outcome: Outcome) -> Entry | None:
        """The entry for a finished input; None when it failed or printed what JSON cannot hold."""
        if outcome.failure is not None or outcome.size < 0:
            return None
        try:
            stdout, stderr = outcome.stdout.decode("utf-8"), outcome.stderr.decode("utf-8")
        except UnicodeDecodeError:
            return None
        outputs = [{"path": os.path.relpath(os.path.abspath(p), self.folder.resolve()), "size": size, "sha256": digest}
                   for p, size, digest in outcome.outputs]
        return Entry(self.relative(outcome.path), outcome.size, outcome.mtime_ns, outcome.sha256, outputs,
                     outcome.errors, dict(outcome.codes), outcome.records, stdout, stderr)

    def record(self, outcomes: Iterable[Outcome]) -> None:
        """A task finished: its inputs' entries as one fragment (after its files are in place)."""
        entries = [e for e in map(self.entry, outcomes) if e is not None]
        if not entries:
            return
        for entry in entries:
            self.entries[entry.input] = entry
        name = hashlib.sha256("\0".join(e.input for e in entries).encode()).hexdigest()[:20]
        write_atomic(self.folder / FRAGMENTS / (name + MANIFEST), self._document(entries))

    def finish(self, outcomes: list[Outcome]) -> Path:
        """Every input done: sweep files interrupted writers left, write the manifest, drop the fragments."""
        sweep_temp_files(self.folder)
        entries = []
        for outcome in outcomes:
            entry = self.entries.get(self.relative(outcome.path)) if outcome.skipped else self.entry(outcome)
            if entry is not None:
                entries.append(entry)
        target = self.folder / MANIFEST
        write_atomic(target, self._document(entries))
        shutil.rmtree(self.folder / FRAGMENTS, ignore_errors=True)
        return target

    def _document(self, entries: list[Entry]) -> bytes:
        totals = {"inputs": len(entries), "bytes": sum(e.size for e in entries), "records": sum(e.records for e in entries),
                  "diagnostics": sum(e.errors for e in entries),
                  "outputs": sum(len(e.outputs) for e in entries)}
        return orjson.dumps({"version": VERSION, "command": self.command, "key": self.key, "root": str(self.root),
                             "totals": totals, "inputs": [e.as_json() for e in entries]},
                            option=orjson.OPT_INDENT_2) + b"\n"


def sweep_temp_files(folder: Path) -> list[str]:
    """Remove the temp files of atomic writes whose writer died (a killed worker); returns what went."""
    removed = []
    for base, _dirs, names in os.walk(folder):
        for name in names:
            if is_temp_name(name):  # what atomic_output leaves when its writer is killed
                path = os.path.join(base, name)
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    continue
                removed.append(path)
    return removed
