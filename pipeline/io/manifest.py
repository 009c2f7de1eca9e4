"""The manifest of a run over many inputs: what each input was, what it produced; written last, read to resume.

An output folder written by a command over many inputs (``heal --in DIR --out OUT``) ends with
``OUT/.replay-manifest.json``: the work it records (a key over the bound graph spec, replay's
version and the content of each other file the work reads: a rules file), and per input its path (relative to the input folder), size, modification time, SHA-256,
the files it wrote (relative to OUT, with size and SHA-256; ``"earlier": true`` on one an earlier run wrote, kept
for an input then refused), its diagnostics by code, the records
read, and what it printed on stdout and stderr. While the run goes on, each finished task leaves a
fragment in ``OUT/.replay-manifest.d/`` (written atomically, after the task's files are in place), so
a run that crashed resumes from what is recorded there; the manifest is written after every other
file, and the fragments are removed after it.

A re-run with the same work skips every input whose size and modification time (or, when those
changed, content hash) match its entry and whose recorded outputs are all still there at their
recorded sizes; it prints the recorded stdout and stderr for them, so its output is the output of a
clean run. Everything else is computed again. An input still there that a run could not read (a link to nothing;
a journal that became a FIFO, which a folder's walk does not open) keeps its entry, and one read but refused (cut off
mid-write: nothing written for it) keeps its earlier outputs in its new entry: they stay, recorded, until it is healed
again or is gone. What an interrupted writer left (atomic writes'
``.NAME.XXXX.replay.tmp``, a staged folder's) is swept away before the manifest is written (``staging.sweep_leftovers``).

The folder and the input root may each be a local path or an fsspec URL (``io.remote``): at a URL
the manifest and its fragments are written there the same way (temp name, then moved), the outputs
are checked against one listing of the folder, and an input's size and modification time come from
the listing of its folder.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import ReplayError, printable
from replay.pipeline.engine.outputs import published_name
from replay.pipeline.engine.parallel import Outcome, file_digest
from replay.pipeline.io.journals import MANIFEST as MANIFEST
from replay.pipeline.io.journals import STDIN, is_url
from replay.pipeline.io.run_files import HEALED, HEALED_JOURNAL, under
from replay.pipeline.io.staging import sweep_leftovers, write_atomic

FRAGMENTS = ".replay-manifest.d"
EARLIER = "earlier"  # a recorded output's mark: an earlier run wrote it, from another version of the input (``_earlier_outputs``)
VERSION = 1


def work_key(doc: dict[str, Any], version: str) -> str:
    """One key for the work: the bound graph spec (sorted keys), the version of replay that runs it, and the content
    of every other file the work reads (``_read_besides``): a rules file edited in place, or a default one that
    appeared or went, is other work."""
    # (printable: a folder not UTF-8; exactjson: a bound number beyond 64 bits, `--max-line-bytes 1e20`'s digits)
    data = exactjson.dumps(printable({"doc": doc, "version": version, "reads": _read_besides(doc)}),
                           option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(data).hexdigest()


def _read_besides(doc: dict[str, Any]) -> dict[str, str | None]:
    """The files the graph of ``doc`` reads besides its inputs (its input is left unbound, stdin: ``-``), each with its
    SHA-256 (None: it cannot be read, and is refused when the work runs): a file a stage option names (``--rules``),
    or one a stage reads when it is there (``.replay/heal.rules.json``: not there, not listed). One that can be read
    once only (``--rules <(...)``, a pipe) is not read again: what it held cannot be told, so it is new work each time."""
    from replay.pipeline.engine.config import graph_from_config

    found: dict[str, str | None] = {}
    for path in graph_from_config(doc).files_read():
        if path == STDIN or path in found:
            continue
        try:
            found[path] = file_digest(path)[1] if stat.S_ISREG(os.stat(path).st_mode) else "once:" + os.urandom(16).hex()
        except OSError:
            found[path] = None
    return found


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
        """The entry ``as_json`` wrote; TypeError, KeyError or ValueError for anything else (an edited manifest)."""
        diagnostics = data["diagnostics"]
        if not isinstance(data["input"], str):
            raise TypeError("an entry's input is a path")
        return cls(data["input"], int(data["size"]), int(data["mtimeNs"]), str(data["sha256"]),
                   [_output(out) for out in data["outputs"]], int(diagnostics["total"]), dict(diagnostics["byCode"]),
                   int(data["records"]), str(data["stdout"]), str(data["stderr"]))

    def outcome(self, path: str) -> Outcome:
        return Outcome(path, stdout=self.stdout.encode(), stderr=self.stderr.encode(), errors=self.errors,
                       codes=dict(self.codes), records=self.records, size=self.size, mtime_ns=self.mtime_ns,
                       sha256=self.sha256, skipped=True)


def _output(out: Any) -> dict[str, Any]:
    """A recorded output as ``Manifest.entry`` writes it: {"path", "size", "sha256"} (TypeError for anything else)."""
    if not (isinstance(out, dict) and isinstance(out.get("path"), str) and type(out.get("size")) is int
            and isinstance(out.get("sha256"), str)):
        raise TypeError("a recorded output is {path, size, sha256}")
    return out


class _LocalFolder:
    """The manifest's folder on this machine."""

    def __init__(self, folder: Path) -> None:
        self.path = folder

    def read(self, rel: str) -> bytes:
        return (self.path / rel).read_bytes()

    def fragments(self) -> list[str]:
        return [f"{FRAGMENTS}/{p.name}" for p in sorted((self.path / FRAGMENTS).glob("*" + MANIFEST))]

    def size_of(self) -> Any:
        def size(rel: str) -> int | None:
            try:
                return (self.path / rel).stat().st_size
            except OSError:
                return None
        return size

    def relative(self, path: str) -> str:
        return os.path.relpath(os.path.abspath(path), self.path.resolve())

    def write(self, rel: str, data: bytes) -> None:
        write_atomic(self.path / rel, data)

    def remove_fragments(self) -> None:
        shutil.rmtree(self.path / FRAGMENTS, ignore_errors=True)

    def sweep(self) -> None:
        sweep_leftovers(self.path)

    def name(self, rel: str) -> str:
        """``rel`` as a diagnostic names it: where it is once a folder staged under a temp name is in place."""
        return published_name(str(self.path / rel))

    def digest(self, rel: str) -> str | None:
        try:
            return file_digest(str(self.path / rel))[1]
        except OSError:
            return None

    def remove(self, rel: str) -> None:
        """The file ``rel``, and the folders it leaves empty up to this one."""
        path = self.path / rel
        path.unlink()
        for folder in path.parents:
            if folder == self.path or not folder.is_relative_to(self.path):
                break
            try:
                folder.rmdir()
            except OSError:
                break


class _UrlFolder:
    """The manifest's folder at an fsspec URL."""

    def __init__(self, url: str) -> None:
        from replay.pipeline.io import remote

        self.remote = remote
        self.url = url

    def read(self, rel: str) -> bytes:
        return self.remote.read_bytes(self.remote.join(self.url, rel))

    def fragments(self) -> list[str]:
        return sorted(f"{FRAGMENTS}/{rel}" for rel in self.remote.sizes_under(self.remote.join(self.url, FRAGMENTS))
                      if "/" not in rel and rel.endswith(MANIFEST))

    def size_of(self) -> Any:
        return self.remote.sizes_under(self.url).get  # one listing for every output of every input

    def relative(self, path: str) -> str:
        return self.remote.relative(path, self.url)

    def write(self, rel: str, data: bytes) -> None:
        self.remote.write_atomic(self.remote.join(self.url, rel), data)

    def remove_fragments(self) -> None:
        self.remote.remove_tree(self.remote.join(self.url, FRAGMENTS))

    def sweep(self) -> None:
        self.remote.sweep_temp_files(self.url)

    def name(self, rel: str) -> str:
        return self.remote.join(self.url, rel)

    def digest(self, rel: str) -> str | None:
        try:
            return self.remote.sha256(self.remote.join(self.url, rel))
        except (OSError, ReplayError):
            return None

    def remove(self, rel: str) -> None:
        self.remote.remove_file(self.remote.join(self.url, rel))


@dataclass
class Stale:
    """What ``Manifest.finish`` found of inputs that are gone: the outputs it removed, those it kept (changed since)."""

    removed: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)


def _inside(rel: str) -> bool:
    """Is the recorded output ``rel`` a file inside the manifest's folder (relative, no ``..``)? Only such a file is
    ever removed: a manifest edited or copied from elsewhere may name any path."""
    path = PurePosixPath(rel)
    return not path.is_absolute() and ".." not in path.parts


def _not_a_file(path: str) -> bool:
    """Is something other than a file at the local input ``path`` (a FIFO, a socket: an input read passes over)? At
    a URL there is only ever a file, a folder or nothing: no."""
    return not is_url(path) and os.path.lexists(path) and not os.path.isfile(path)


class Manifest:
    """The manifest of the folder ``folder`` for work ``key`` over inputs under ``root`` (each a path or a URL)."""

    def __init__(self, folder: Path | str, key: str, root: Path | str, command: str) -> None:
        self.place: _LocalFolder | _UrlFolder = _UrlFolder(str(folder)) if is_url(str(folder)) else _LocalFolder(Path(folder))
        self.key = key
        self.root: Path | str = str(root) if is_url(str(root)) else Path(root).resolve()
        self.command = command
        self.entries: dict[str, Entry] = {}  # by input, relative to root
        self._recorded: list[tuple[str, list[Entry]]] = []  # what earlier runs of the command recorded (``load``)
        self.stale = Stale()  # (after finish)
        self.totals: dict[str, int] = {}  # (after finish) the manifest's totals: inputs, bytes, records, diagnostics, outputs
        self.unrecorded = 0  # files written for inputs the manifest cannot record (a name JSON cannot hold)

    # reading ---------------------------------------------------------------------------------
    def load(self) -> None:
        """The entries recorded for this work: the manifest, then the fragments of a run that did not finish; and,
        for ``finish`` (``_remove_stale``), the root and the entries of each document of this command, whatever its
        work (one with an entry that is none is passed over)."""
        for data in self._documents():
            entries: list[Entry] = []
            try:
                for item in data["inputs"]:
                    entries.append(Entry.from_json(item))
                whole = True
            except (ValueError, KeyError, TypeError, AttributeError):
                whole = False
            if data.get("key") == self.key:  # (from other work: nothing in it is reused)
                self.entries.update((entry.input, entry) for entry in entries)
            if whole and data.get("command") == self.command and "root" in data:
                self._recorded.append((str(data["root"]), entries))

    def _documents(self) -> Iterator[dict[str, Any]]:
        """The documents of this version in the folder, each a JSON object: the manifest, then the fragments of a run
        that did not finish. One that cannot be read, or is no such object, is passed over."""
        for rel in [MANIFEST, *self.place.fragments()]:
            try:
                data = orjson.loads(self.place.read(rel))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and data.get("version") == VERSION:
                yield data

    def reusable(self, paths: list[str]) -> dict[str, Outcome]:
        """The inputs whose recorded outputs still stand, with their recorded outcome."""
        found: dict[str, Outcome] = {}
        size_of = self.place.size_of() if self.entries else None
        for path in paths:
            entry = self.entries.get(self.relative(path))
            if entry is not None and size_of is not None and self._unchanged(path, entry) \
                    and all(size_of(out["path"]) == out["size"] for out in entry.outputs):
                found[path] = entry.outcome(path)
        return found

    @staticmethod
    def _unchanged(path: str, entry: Entry) -> bool:
        """The same size, and the same modification time or (touched, or no time kept: a URL) the same content; an
        input that cannot be looked at (gone meanwhile) is changed."""
        try:
            if is_url(path):
                from replay.pipeline.io import remote

                content: Callable[[str], str] = remote.sha256
                found = remote.stat(path)  # as the listing of its folder said
            else:
                st = os.stat(path)
                found, content = (st.st_size, st.st_mtime_ns), _local_sha256
            if found is None or found[0] != entry.size:
                return False
            if found[1] and found[1] == entry.mtime_ns:
                return True
            return content(path) == entry.sha256
        except (OSError, ReplayError):
            return False

    # writing ---------------------------------------------------------------------------------
    def relative(self, path: str) -> str:
        if isinstance(self.root, str):
            from replay.pipeline.io import remote

            return remote.relative(path, self.root)
        return os.path.relpath(os.path.abspath(path), self.root)

    def entry(self, outcome: Outcome) -> Entry | None:
        """The entry for a finished input; None when it failed or printed what JSON cannot hold, or when its name or an
        output's is not UTF-8 (JSON cannot hold it either: such an input is healed again each run)."""
        if outcome.failure is not None or outcome.size < 0:
            return None
        try:
            stdout, stderr = outcome.stdout.decode("utf-8"), outcome.stderr.decode("utf-8")
        except UnicodeDecodeError:
            return None
        outputs = [{"path": self.place.relative(p), "size": size, "sha256": digest} for p, size, digest in outcome.outputs]
        name = self.relative(outcome.path)
        if not outputs:  # read, but refused (cut off mid-write): its earlier outputs stay, and stay recorded
            outputs = self._earlier_outputs(name)
        try:
            for path in (name, *(str(out["path"]) for out in outputs)):
                path.encode("utf-8")
        except UnicodeEncodeError:
            return None
        return Entry(name, outcome.size, outcome.mtime_ns, outcome.sha256, outputs,
                     outcome.errors, dict(outcome.codes), outcome.records, stdout, stderr)

    def _earlier_outputs(self, name: str) -> list[dict[str, Any]]:
        """The outputs an earlier run recorded for the input ``name`` that are still there as written: an input read
        but refused (nothing written for it: outputs whole or not at all) keeps them, recorded, so that they go once it
        is gone (``_remove_stale``) rather than stay behind unrecorded for ever. Each is marked ``EARLIER``: it was
        made from another version of the input (``healed_copies`` pairs no such copy with it)."""
        entry = self.entries.get(name)
        if entry is None or not entry.outputs:
            return []
        size_of = self.place.size_of()
        return [{**out, EARLIER: True} for out in entry.outputs if size_of(out["path"]) == out["size"]]

    def record(self, outcomes: Iterable[Outcome]) -> None:
        """A task finished: its inputs' entries as one fragment (after its files are in place)."""
        entries = []
        for outcome in outcomes:
            entry = self.entry(outcome)
            if entry is None:
                if outcome.size >= 0 or outcome.outputs:  # (not read, nothing written: its older entry still stands)
                    self.entries.pop(self.relative(outcome.path), None)  # nothing recorded for it, not an older run's
                self.unrecorded += len(outcome.outputs) if outcome.failure is None else 0
                continue
            self.entries[entry.input] = entry
            entries.append(entry)
        if not entries:
            return
        name = hashlib.sha256("\0".join(e.input for e in entries).encode()).hexdigest()[:20]
        self.place.write(f"{FRAGMENTS}/{name}{MANIFEST}", self._document(entries))

    def finish(self, paths: list[str], inputs: Iterable[str] = ()) -> str:
        """Every input done (``paths``: those that were, reused or computed, in input order; ``inputs``: every input
        of the run, done or not): sweep files interrupted writers left, remove the outputs of inputs that are gone
        (``stale``), write the manifest, drop the fragments."""
        self.place.sweep()
        entries = [e for e in (self.entries.get(self.relative(p)) for p in paths) if e is not None]
        present = {self.relative(p) for p in [*paths, *inputs]}
        unread = self._unread({e.input for e in entries}, present)
        self.stale = self._remove_stale({out["path"] for e in [*entries, *unread] for out in e.outputs}, present)
        self.totals = _totals(entries)
        self.place.write(MANIFEST, self._document(entries + unread))
        self.place.remove_fragments()
        return self.place.name(MANIFEST)

    def _unread(self, done: set[str], present: set[str]) -> list[Entry]:
        """The recorded entries (of this work) of inputs this run did not read but that are still its inputs: refused (a
        link to nothing: ``record`` kept their entry) or passed over (a file that became a FIFO): their outputs stay,
        and stay recorded, so that they go once the input is gone (``_remove_stale``) rather than stay behind
        unrecorded for ever. A file that is no input of this run (another ``--in``) is none of them: its outputs go."""
        return [entry for name, entry in sorted(self.entries.items()) if name not in done
                and (name in present or _not_a_file(str(under(self.root, Path(name)))))]

    def wrote_any(self) -> bool:
        """(After finish) is there an output of this run's inputs, recorded or not? None: every input was refused."""
        return bool(self.totals.get("outputs") or self.unrecorded)

    def _remove_stale(self, kept: set[str], present: set[str]) -> Stale:
        """The outputs an earlier run of this command recorded (the manifest, a killed run's fragments, whatever
        their work) for an input that is not an input of this run (``present``, relative to the root): deleted or
        renamed since, or under another ``--in`` (the folder follows ``--in`` as it is now). Each goes when it still
        holds what was recorded, and is kept (named in ``Stale.edited``) when it was changed since. The files this run
        wrote (``kept``) stay, as does any path outside the folder (``_inside``): only a file replay wrote is removed.
        No input is looked at (at a URL, each look is a request). What was recorded is what ``load`` read (the
        fragments this run wrote since record only inputs of this run)."""
        stale = Stale()
        seen: set[str] = set()  # the outputs looked at: one recorded by the manifest and a fragment too is looked at once
        here = {self._place(self.root, rel) for rel in present}
        for root, items in self._recorded:
            this_root = root == self._root_text()
            if not this_root and "\ufffd" in root:
                continue  # another root whose name is not UTF-8 (written printably): its inputs cannot be named
            for entry in items:
                if self._place(self.root if this_root else root, entry.input) in here:
                    continue
                for out in entry.outputs:
                    path = str(out["path"])
                    if path in kept or path in seen or not _inside(path):
                        continue
                    seen.add(path)
                    digest = self.place.digest(path)
                    if digest is None:
                        continue
                    if digest != out["sha256"]:
                        stale.edited.append(self.place.name(path))
                        continue
                    try:
                        self.place.remove(path)
                    except OSError:
                        stale.edited.append(self.place.name(path))
                        continue
                    stale.removed.append(self.place.name(path))
        return stale

    @staticmethod
    def _place(root: Path | str, rel: str) -> str:
        """The input ``rel`` under ``root`` as one text, whichever root recorded it (``a/../b`` is ``b``)."""
        place = under(root, Path(rel))
        return os.path.normpath(place) if isinstance(place, Path) else place

    def _root_text(self) -> str:
        """The root as the manifest writes it: printably (JSON cannot hold a name that is not UTF-8)."""
        return str(printable(str(self.root)))

    def _document(self, entries: list[Entry]) -> bytes:
        return orjson.dumps({"version": VERSION, "command": self.command, "key": self.key, "root": self._root_text(),
                             "totals": _totals(entries), "inputs": [e.as_json() for e in entries]},
                            option=orjson.OPT_INDENT_2) + b"\n"


def _totals(entries: list[Entry]) -> dict[str, int]:
    return {"inputs": len(entries), "bytes": sum(e.size for e in entries), "records": sum(e.records for e in entries),
            "diagnostics": sum(e.errors for e in entries), "outputs": sum(len(e.outputs) for e in entries)}


def _local_sha256(path: str) -> str:
    return file_digest(path)[1]


def healed_copies(found: list[str]) -> dict[str, str]:
    """Of a folder walk's local files (``found``), each one that `heal --in DIR --out OUT` healed, and its healed copy,
    both among ``found``, as OUT's manifest (in a folder at or above the copy) records them: the input unchanged since
    (``Manifest._unchanged``) and the copy still the size written. Each named as ``found`` names it. Two runs that only share an
    id (a name) are no such pair, nor is a copy healed from another version of its input."""
    copies = [f for f in found if f.endswith((HEALED, HEALED_JOURNAL)) and not is_url(f)]
    folders: list[str] = []
    seen: set[str] = set()
    for copy in copies:  # (the folders holding a manifest, probed upwards from each copy once)
        folder = os.path.dirname(os.path.abspath(copy))
        while folder not in seen:
            seen.add(folder)
            if os.path.isfile(os.path.join(folder, MANIFEST)):
                folders.append(folder)
            folder = os.path.dirname(folder)
    if not folders:
        return {}
    real_dirs: dict[str, str] = {}

    def real(path: str) -> str:
        head, name = os.path.split(path)
        if head not in real_dirs:
            real_dirs[head] = os.path.realpath(head or ".")
        return os.path.join(real_dirs[head], name)

    walked = {real(f): f for f in found if not is_url(f)}
    pairs: dict[str, str] = {}
    for folder in folders:
        for root, entry in _heal_entries(folder):
            source = walked.get(os.path.join(root, entry.input))
            if source is None:
                continue
            for out in entry.outputs:
                if out.get(EARLIER):  # (healed from another version of the input)
                    continue
                healed = walked.get(os.path.join(os.path.realpath(folder), out["path"]))
                if healed is not None and healed.endswith((HEALED, HEALED_JOURNAL)) and _size(healed) == out["size"] \
                        and Manifest._unchanged(source, entry):
                    pairs[source] = healed
    return pairs


def _heal_entries(folder: str) -> Iterator[tuple[str, Entry]]:
    """The input root and each entry of the finished manifest of `heal --in --out` in ``folder``; none when it cannot
    be read or is not one."""
    try:
        data = orjson.loads(Path(folder, MANIFEST).read_bytes())
        if data.get("version") != VERSION or data.get("command") != "heal" or is_url(str(data["root"])):
            return
        entries = [Entry.from_json(item) for item in data["inputs"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return
    for entry in entries:
        yield str(data["root"]), entry


def _size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None
