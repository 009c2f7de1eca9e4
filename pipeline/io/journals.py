"""Journal I/O: find journal files, open them (gzip too), cut them into line batches, write atomically.

Everything here is synchronous and runs in a worker thread; the ``read`` source drives it.
Lines are split on ``\\n`` only, in binary, and each keeps its line number and byte offset.
"""

from __future__ import annotations

import errno
import os
import posixpath
import re
import stat
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, nullcontext, suppress
from itertools import accumulate
from pathlib import Path, PurePath, PurePosixPath
from typing import Any, BinaryIO, Protocol

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import EXIT_REFUSED, ReplayError, diagnostic, exc_reason, input_unreadable, printable
from replay.pipeline.engine.exactjson import UTF8_BOM
from replay.pipeline.engine.outputs import is_temp_name, named_descriptor
from replay.pipeline.engine.share import command_inputs
from replay.pipeline.io.fdio import FdReader, GunzipReader, PrefixedReader, file_type, nonblocking

STDIN = "-"
LINES_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz")  # a journal: JSON lines
DOCUMENT_SUFFIXES = (".json", ".json.gz")  # an artifact: one JSON document
JOURNAL_SUFFIXES = (*LINES_SUFFIXES, *DOCUMENT_SUFFIXES)  # what a folder walk reads, and what --in may name
# What capture writes of one run (``io.run_files`` writes them, and takes their names from here): ``<id>.raw.json``
# (the runner's output as it came), ``<id>.artifact.json`` (the run as the runner reported it), ``<id>.healed.json``
# (healed), ``<id>.heal-log.json`` (its repairs) and ``journal/<id>.jsonl`` (the healed run as a stream).
RAW, ARTIFACT, HEALED, HEAL_LOG = ".raw.json", ".artifact.json", ".healed.json", ".heal-log.json"
JOURNAL, JOURNAL_FOLDER = ".jsonl", "journal"
MANIFEST = ".replay-manifest.json"  # the manifest of a run over many inputs (``io.manifest``)
# Side files that capture writes next to its artifacts, and the manifests of runs over many inputs: not journals.
NOT_JOURNALS = (RAW, HEAL_LOG, MANIFEST)
# replay's own config files, by name: the heal rules (``.replay/heal.rules.json`` by default) and a session's override
# sidecar (``replay.override.json`` beside it). A folder walk passes over them as over the side files above.
HEAL_RULES_NAME, OVERRIDE_NAME = "heal.rules.json", "replay.override.json"
CONFIG_FILES = (HEAL_RULES_NAME, OVERRIDE_NAME)
# A read and a batch: big enough that the per-batch work of the many stages of heal and validate (~170 us a batch, the
# screen's and the rules' own, whatever its size) is spread over ~900 lines, small enough that a chunk is cut, parsed
# and written while it (and its decoded heads) are still in the CPU's L2 cache. Measured (instructions, and time on a
# quiet machine, tests/bench): 256 KiB against 128 KiB, heal of a clean journal ~5% less work, validate ~2%, read and
# report the same; 512 KiB saves a little more in heal and costs read its cache.
CHUNK_BYTES = 256 * 1024
BATCH_EVENTS = 2048  # lines per batch on a channel (a chunk of short lines is cut into batches of at most this many)
DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024

Item = Batch | dict[str, Any]  # a batch or a diagnostic
_PLUS_ONE = (1).__add__  # a line's length plus its newline, without a Python-level lambda


class Reader(Protocol):
    # True where a read may wait for input that is not there yet (a pipe, a socket, a terminal): a short read there
    # can be a pause in a live stream. A file's or a URL's short read is only its end.
    may_wait: bool

    async def read(self, n: int) -> bytes: ...


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+://")
NATS_SCHEME = "nats://"


def is_url(path: str) -> bool:
    """Is ``path`` an fsspec URL (``s3://…``, ``ftp://…``, ``memory://…``, ``file://…``) rather than a local path?
    URLs are read and written through ``io.remote``; local paths never import fsspec."""
    return _URL.match(path) is not None


def place_of(path: str) -> tuple[str, PurePath]:
    """Where ``path`` (a local path or a URL) is, to tell whether two places overlap: ``("", its resolved local path)``
    for a local path and a ``file://`` URL (fsspec's: the rest is the path), else the URL's filesystem
    (``s3://bucket``) and its path there, normalized. Two places of different filesystems never overlap."""
    if not is_url(path):
        return "", Path(path).resolve()
    scheme, rest = path.split("://", 1)
    if scheme.lower() == "file":
        return "", Path(rest or "/").resolve()
    authority, _, inner = rest.partition("/")
    return f"{scheme.lower()}://{authority}", PurePosixPath(posixpath.normpath("/" + inner))


def names_own_descriptor(path: str) -> bool:
    """Does ``path`` name one of this process's descriptors (``/dev/fd/63``, what ``<(zcat run.jsonl.gz)`` passes;
    ``engine.outputs.named_descriptor``)? Another process, a worker, would find another descriptor there, or none."""
    return named_descriptor(path) is not None


def is_nats_url(text: str) -> bool:
    """Is ``text`` a NATS subject's address (``nats://HOST:PORT/SUBJECT``, read and written by ``io.nats_stream``)?"""
    return text.startswith(NATS_SCHEME)


def path_kind(path: str | Path) -> str | None:
    """What is at ``path``: ``file``, ``directory``, ``other`` (a pipe, a device, a socket) or None (nothing).
    A ``str`` URL is asked of its filesystem (``io.remote``; anything there but a folder is a file), a path of the OS."""
    if isinstance(path, str) and is_url(path):
        from replay.pipeline.io.remote import kind

        return kind(path)
    if path == "":
        return None  # (Path("") is the current folder: an empty path names nothing)
    local = Path(path)
    return "directory" if local.is_dir() else "file" if local.is_file() else "other" if local.exists() else None


_KIND_NOUNS = {"file": "file", "directory": "folder", "other": "pipe, a device or a socket"}


def describe_kind(kind: str | None, article: str = "a") -> str:
    """What ``path_kind`` found, in words: ``a file``, ``a folder``, ``a pipe, a device or a socket``, or ``nothing``
    (``article``: the words before the noun, e.g. ``an existing``)."""
    return "nothing" if kind is None else f"{article} {_KIND_NOUNS[kind]}"


def is_journal_name(name: str) -> bool:
    """Is a file of this name a journal or an artifact (what a folder walk reads, and what --in may name)? Not capture's
    side files, heal's manifest, nor replay's config files (``CONFIG_FILES``, by their whole name)."""
    return name.endswith(JOURNAL_SUFFIXES) and not name.endswith(NOT_JOURNALS) and base_name(name) not in CONFIG_FILES


def not_a_journal_name(path: str, name: str, subject: str = "--in file", **fields: Any) -> ReplayError:
    """E_INPUT_FILE_NOT_JSON (exit 2) for a file ``path`` (``name``: its name) whose name says it is no journal nor
    artifact, where it must say so (`validate --in`, `heal --in`, `report --in`): one wording, one ``expected``,
    from the suffixes themselves; a name with such a suffix is one of capture's side files or a config file
    (``is_journal_name``). ``subject`` names what gave it, ``fields`` add to it."""
    lines = ", ".join(s for s in LINES_SUFFIXES if not s.endswith(".gz"))
    documents = ", ".join(s for s in DOCUMENT_SUFFIXES if not s.endswith(".gz"))
    why = (f": capture's side files ({', '.join(NOT_JOURNALS[:2])}) and config files ({', '.join(CONFIG_FILES)}) are "
           "neither" if name.endswith(JOURNAL_SUFFIXES) else "")
    return ReplayError("E_INPUT_FILE_NOT_JSON", f"{subject} {path!r} is not a journal or an artifact by its name{why}",
                       path=path, received=name, expected=f"a journal ({lines}) or an artifact ({documents}), optionally .gz",
                       **fields)


def stdin_is_terminal() -> bool:
    """True when stdin is a terminal (nobody piped anything in); a closed stdin is not one."""
    return sys.stdin is not None and sys.stdin.isatty()


def source_name(path: str) -> str:
    """The name an input's records carry (``source``): its path as printable text, or ``<stdin>``."""
    return "<stdin>" if path == STDIN else printable(path)


def require_stdin() -> None:
    """Refuse, before anything runs, a stdin that cannot be read: closed, or a directory (`replay read < somedir`)."""
    if sys.stdin is None:
        raise ReplayError("E_INPUT_UNREADABLE", "stdin is closed: there is nothing to read", path=STDIN,
                          howToFix="Pipe a journal in, or pass file paths.")
    with suppress(OSError, ValueError):  # (a stdin that cannot be asked is read as it is, and fails where it fails)
        if stat.S_ISDIR(os.fstat(sys.stdin.fileno()).st_mode):
            raise ReplayError("E_INPUT_UNREADABLE", "stdin is a directory: there is nothing to read", path=STDIN,
                              expected="a file or a pipe on stdin", received="a directory",
                              howToFix="Redirect a file, not a directory, into stdin; to read the journals in a "
                                       "directory, pass it as a path (`replay read DIR`).")


def _walkable(entry: os.DirEntry[str]) -> bool:
    """A folder's entry worth reading: a regular file, or a broken link (reported as unreadable, not
    skipped in silence); never a FIFO, socket or device, which could block the walk forever. (A plain file
    is known from the folder listing: no stat.) A link in a loop is a broken link too."""
    try:
        if entry.is_file():
            return True
    except OSError:  # (ELOOP)
        pass
    return entry.is_symlink() and not os.path.exists(entry.path)


_SPECIAL_FILES = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
                  stat.S_IFBLK: "a block device"}


def _say_not_read(entry: os.DirEntry[str]) -> None:
    """A warning on stderr for an entry with a journal's name that the walk does not read because it is a FIFO, socket or
    device (reading one could block the walk forever; named as a PATH it is read): left out in silence, the user was
    not told that a journal of theirs was not read. (A link to a folder is not followed, and is not a journal.)"""
    try:
        kind = _SPECIAL_FILES.get(stat.S_IFMT(os.stat(entry.path).st_mode))
    except OSError:
        return
    if kind is not None:
        from replay.pipeline.engine.log import session_logger

        session_logger().warning("read.not_a_file", code="E_INPUT_NOT_FILE_OR_DIR", path=printable(entry.path), received=kind,
                                 message=f"{printable(entry.path)!r} is {kind}, not a file: a folder's walk does not read "
                                         "it (reading it could wait for a writer forever)",
                                 howToFix="Name it as a PATH to read it, or move it out of the folder.")


def _journals_below(top: str) -> Iterator[str]:
    """The journals in a folder and the folders below it, as ``os.walk`` finds them (a link to a folder is not
    followed), not descending into a folder an interrupted write left half-staged. A folder that cannot be listed (no
    permission, a disk's error) is refused before anything is read (E_INPUT_UNREADABLE, exit 2): skipped in silence,
    its journals would count as gone (``heal --in/--out`` removed what it had healed of them); one gone meanwhile has
    nothing to read."""
    try:
        entries = list(os.scandir(top))
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        raise input_unreadable(top, exc, what="folder", exit_code=EXIT_REFUSED) from exc
    for entry in entries:
        name = entry.name
        if is_temp_name(name):
            continue
        if entry.is_dir(follow_symlinks=False):
            yield from _journals_below(entry.path)
        elif is_journal_name(name):
            if _walkable(entry):
                yield entry.path
            else:
                _say_not_read(entry)


def journals_in(top: str) -> list[str]:
    """The journals in the local folder ``top`` and the folders below it, in sorted path order (``_journals_below``)."""
    return sorted(_journals_below(top), key=lambda s: s.encode("utf-8", "surrogateescape"))


HEALED_COPY, ORIGINAL = HEALED, ARTIFACT  # ``captured_once``'s choices of which file of a run wins


def captured_once(found: list[str], keep: str = HEALED_COPY) -> list[str]:
    """A folder walk's files (``found``, in order) with each run capture wrote counted once, whichever of its files the
    walk met: of ``<id>.artifact.json`` and ``<id>.healed.json`` side by side, ``keep`` (the healed copy, as report and
    read count a run; heal's directory mode heals the original); and capture's stream copy, ``journal/<id>.jsonl``,
    only when the walk found no artifact of that id (``.replay`` holds both ``artifacts/`` and ``journal/``). A file
    `heal --in DIR --out OUT` healed and its copy in OUT (``manifest.healed_copies``: OUT's manifest says so), both
    walked, are one run too: the copy is kept (``keep`` the healed copy: the file it was healed from, and that file's
    capture copy ``<id>.healed.json``, are not) or the file healed (``keep`` the original). Every other file stays,
    in its place."""
    found = _heal_once(found, keep)
    drop = ARTIFACT if keep == HEALED_COPY else HEALED
    stems = {f[: -len(keep)] for f in found if f.endswith(keep)}
    files = [f for f in found if not (f.endswith(drop) and f[: -len(drop)] in stems)]
    ids = {base_name(f)[: -len(suffix)] for f in files for suffix in (ARTIFACT, HEALED) if f.endswith(suffix)}
    if not ids:
        return files
    return [f for f in files if not (base_name(f).endswith(JOURNAL) and base_name(f)[: -len(JOURNAL)] in ids
                                     and base_name(_parent(f)) == JOURNAL_FOLDER)]


def _heal_once(found: list[str], keep: str) -> list[str]:
    """``found`` without one of each pair of a file `heal --in --out` healed and its copy in OUT (``captured_once``)."""
    from replay.pipeline.io.manifest import healed_copies  # (it reads the manifests; manifest imports this module)

    pairs = healed_copies(found)
    if not pairs:
        return found
    gone = set(pairs.values()) if keep == ORIGINAL else \
        {*pairs, *(f[: -len(ARTIFACT)] + HEALED for f in pairs if f.endswith(ARTIFACT))}
    return [f for f in found if f not in gone]


def _parent(path: str) -> str:
    """A walked file's folder (a local path or a URL: cut at its last slash)."""
    return path.rstrip("/").rpartition("/")[0]


def base_name(path: str) -> str:
    """The last part of a local path or a URL (cut at its last slash, a trailing one left out)."""
    return path.rstrip("/").rpartition("/")[2]


def warn_inputs_not_found(log: Any, event: str, inputs: list[str], done: str) -> None:
    """The one E_INPUTS_NOT_FOUND warning (on ``log``, as ``event``): the ``inputs`` given (files and folders) held no
    journal or artifact, so nothing was ``done`` (read, validated, healed, reported); its hint names what a folder walk
    reads (``JOURNAL_SUFFIXES``). Said by the commands that walk their inputs first, and by the read stage."""
    walked = ", ".join(f"*{suffix}" for suffix in JOURNAL_SUFFIXES)
    log.warning(event, code="E_INPUTS_NOT_FOUND", inputs=list(inputs),
                message=f"no journal or artifact found in {', '.join(map(repr, inputs))}: nothing was {done}",
                hint=f"folders are searched for journals and artifacts named {walked}")


def expand_paths(paths: list[str], once: bool = True, listed: bool = False) -> list[str]:
    """Files as given; directories walked recursively for journals, in sorted path order, each captured run once
    (``captured_once``; ``once=False``: every file the walk found).

    Raises E_INPUT_PATH_NOT_FOUND / E_INPUT_NOT_FILE_OR_DIR before anything is read (a link to nothing named too; one a
    walk found is that walk's input, reported unreadable as it is read, the others read on). Not for ``listed`` paths,
    which a command found itself (its folder walk's files, handed on to a graph: ``read.listed``), nor in a run that is
    one input of a command over many (``engine.share``): the command found its inputs first, so one not there now is a
    link to nothing its walk met or was removed meanwhile, and reading it reports it unreadable (E_INPUT_UNREADABLE,
    exit 1; the other inputs go on), as one run over them all reports it. (It was a refusal: exit 2, and no input after
    it was read.)
    """
    files: list[str] = []
    listed = listed or command_inputs() > 0
    for raw in paths or [STDIN]:
        if raw == STDIN:
            require_stdin()
            files.append(STDIN)
            continue
        if is_url(raw):
            from replay.pipeline.io.remote import expand

            try:
                walked = expand(raw)
                files.extend(captured_once(walked) if once and walked != [raw] else walked)
            except ReplayError as exc:
                if not (listed and exc.code in ("E_INPUT_PATH_NOT_FOUND", "E_INPUT_UNREADABLE")):
                    raise
                files.append(raw)
            continue
        if raw == "":  # (Path("") is the current folder: `replay read "$UNSET"` read all of it)
            raise ReplayError("E_INPUT_PATH_NOT_FOUND", "an input path is empty", path=raw,
                              howToFix="Name the file or folder to read (a variable that held it may be unset); pass `-` "
                                       "(or nothing) to read stdin.")
        p = Path(raw)
        if not p.exists() and listed:
            files.append(raw)  # removed meanwhile, or a walk's link to nothing: reading it reports it unreadable
            continue
        if not p.exists():
            raise input_not_found(raw, "input path", "Check the path; pass `-` (or nothing) to read stdin.")
        if p.is_dir():
            walked = journals_in(str(p))
            files.extend(captured_once(walked) if once else walked)
        elif p.is_file() or p.is_fifo() or raw.startswith("/dev/"):
            files.append(raw)
        else:
            raise not_file_or_dir(raw, "input", "Pass a regular file, a directory or `-`.")
    return files


def input_not_found(path: str, subject: str, how_to_fix: str, expected: str = "an existing file or folder") -> ReplayError:
    """E_INPUT_PATH_NOT_FOUND (exit 2) for an input ``path`` that is not there (``subject`` names what gave it: ``input
    path``, ``--in target``), with the fields every command gives it: what was expected, and what was found (a link to
    nothing is named as one, with where it points: a folder's walk reports such a link and reads on instead)."""
    if os.path.islink(path):
        to = os.readlink(path)
        what = f"a link in a loop ({to!r})" if _loops(path) else f"a link to nothing ({to!r})"
        return ReplayError("E_INPUT_PATH_NOT_FOUND", f"{subject} {path!r} is {what}: there is no file behind it",
                           path=path, expected=expected, received=what,
                           howToFix="Point the link at an existing file or folder, or name that file itself.")
    return ReplayError("E_INPUT_PATH_NOT_FOUND", f"{subject} {path!r} does not exist", path=path,
                       expected=expected, received=describe_kind(None), howToFix=how_to_fix)


def _loops(path: str) -> bool:
    """Does the link ``path`` lead round in a loop (ELOOP), rather than to nothing?"""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def not_file_or_dir(path: str, subject: str, how_to_fix: str,
                    expected: str = "a regular file or a directory", also: str = "") -> ReplayError:
    """E_INPUT_NOT_FILE_OR_DIR (exit 2) for an input ``path`` that is there but neither a file nor a folder (a FIFO, a
    socket, a device), with what it is (``received``), as ``input_not_found`` says what it found (``expected``: what
    the command reads there, when a folder is not; ``also``: more the message says)."""
    received = file_type(Path(path))
    return ReplayError("E_INPUT_NOT_FILE_OR_DIR", f"{subject} {path!r} is neither a regular file nor a directory{also}",
                       path=path, expected=expected, received=received, howToFix=how_to_fix)


GZIP_MAGIC = b"\x1f\x8b"


def gunzipped(raw: BinaryIO) -> BinaryIO:
    """A local journal file opened for sync code (``open(path, "rb")``), gunzipped when its bytes start as gzip does
    (as ``open_journal`` reads them); a pipe too (its first bytes are peeked, not taken). A gzip stream that is corrupt
    raises ``zlib.error`` or ``gzip.BadGzipFile``, one cut off ``EOFError``, as it is read."""
    import gzip

    peek = getattr(raw, "peek", None)
    head = peek(2)[:2] if peek is not None else b""
    name = getattr(raw, "name", "")
    return gzip.GzipFile(fileobj=raw) if is_gzip(name if isinstance(name, str) else "", head) else raw  # type: ignore[return-value]


def is_gzip(name: str, head: bytes) -> bool:
    """Are the bytes of file ``name``, which start with ``head``, read gunzipped: they start as gzip does, or a local
    file's name ends in ``.gz`` (bytes that are not gzip are then refused, E_GZIP_INVALID, not read as plain text; a
    URL's server may have unzipped them on the way)?"""
    return head == GZIP_MAGIC or (bool(head) and name.endswith(".gz") and not is_url(name))


class GzipUnreadable(Exception):
    """A gzip stream that is corrupt or cut off (``truncated``), read as far as its ``line`` (1-based), which starts
    ``offset`` bytes into the gunzipped text (``Gunzipping``)."""

    def __init__(self, line: int, offset: int, exc: BaseException) -> None:
        super().__init__(exc_reason(exc))
        self.line, self.offset, self.truncated = line, offset, isinstance(exc, EOFError)


class Gunzipping:
    """The pieces ``take`` reads off a local file opened for sync code, ``gunzipped``, up to the first empty one, and
    where reading is: the ``line`` (1-based) after the last piece read and the ``offset`` where it starts, as an error
    names the place reading stopped. A gzip stream that is corrupt or cut off raises ``GzipUnreadable`` there."""

    def __init__(self, raw: BinaryIO, take: Callable[[Any], bytes]) -> None:
        self.raw, self.take = raw, take
        self.line, self.offset = 1, 0

    def __iter__(self) -> Iterator[bytes]:
        import gzip
        import zlib

        stream, read = gunzipped(self.raw), 0
        while True:
            try:
                data = self.take(stream)
            except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
                raise GzipUnreadable(self.line, self.offset, exc) from exc
            if not data:
                return
            yield data
            if (last := data.rfind(b"\n")) >= 0:
                self.line, self.offset = self.line + data.count(b"\n"), read + last + 1
            read += len(data)


@asynccontextmanager
async def open_journal(path: str, follow: bool = False) -> AsyncIterator[Reader]:
    """An async reader over the bytes of ``path`` (``-`` = stdin, or an fsspec URL), gunzipped when they are gzip
    (``follow``: a file still being written, whose gzip stream may end for now mid-member; see ``GunzipReader``)."""
    if is_url(path):
        from replay.pipeline.io.remote import open_url

        async with open_url(path) as remote:
            yield await _decoded(remote, path)
        return
    with nullcontext(sys.stdin.fileno()) if path == STDIN else opened(path) as fd:  # (stdin: not closed after)
        raw = FdReader(fd, follow=follow)
        async with nonblocking(fd, raw.kind):
            yield await _decoded(raw, "<stdin>" if path == STDIN else path, follow)


@contextmanager
def opened(path: str) -> Iterator[int]:
    """A descriptor of the input file ``path`` for the block, closed after it; one that cannot be opened is
    E_INPUT_UNREADABLE (``input_unreadable``), as every read of an input says it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise input_unreadable(path, exc) from exc
    try:
        yield fd
    finally:
        os.close(fd)


async def _decoded(raw: Reader, name: str, follow: bool = False) -> Reader:
    """``raw`` as it reads, or gunzipped when it starts as gzip does (with ``follow``, a file still empty is told once
    it has its first two bytes). An input that ended before its first byte is not read again: on a terminal that
    would wait for a second Ctrl-D."""
    first = await raw.read(2)
    while 0 < len(first) < 2:
        more = await raw.read(1)
        if not more:
            break
        first += more
    if not first:
        return _Undecided(raw, name) if follow else _AtEnd(raw.may_wait)
    return _decoder(raw, name, first, follow)


class _AtEnd:
    """An input that ended before its first byte (one Ctrl-D on a terminal): every read is its end."""

    def __init__(self, may_wait: bool) -> None:
        self.may_wait = may_wait

    async def read(self, n: int) -> bytes:
        return b""


def _decoder(raw: Reader, name: str, first: bytes, follow: bool) -> Reader:
    """The reader of ``raw``, whose ``first`` bytes were read off it already: gunzipped when ``is_gzip``."""
    if is_gzip(name, first):
        if not GZIP_MAGIC.startswith(first):
            raise ReplayError("E_GZIP_INVALID", f"{name}: not a gzip stream: its name ends in .gz, but it starts with "
                              f"bytes {first.hex(' ')}, not gzip's 1f 8b", source=name, exit_code=1,
                              howToFix="Rename the file without .gz if it is plain text, else recompress it.")
        return PrefixedReader(b"", GunzipReader(PrefixedReader(first, raw), name, follow))  # type: ignore[arg-type]
    return PrefixedReader(first, raw)  # type: ignore[arg-type]


class _Undecided:
    """A followed file that was empty when it was opened (its writer had not flushed yet): whether it is gzip is told
    when its first two bytes come; until then it has nothing to read (read as text at once, a .gz that started empty
    came out as its compressed bytes)."""

    def __init__(self, raw: Reader, name: str) -> None:
        self.raw = raw
        self.name = name
        self.first = b""
        self.inner: Reader | None = None
        self.may_wait = raw.may_wait

    async def read(self, n: int) -> bytes:
        if self.inner is None:
            while len(self.first) < 2:
                more = await self.raw.read(2 - len(self.first))
                if not more:
                    return b""  # not yet: the next read looks again
                self.first += more
            self.inner = _decoder(self.raw, self.name, self.first, follow=True)
        return await self.inner.read(n)

    def rewind_if_truncated(self) -> bool:
        rewind = getattr(self.inner if self.inner is not None else self.raw, "rewind_if_truncated", None)
        if rewind is None or not rewind():
            return False
        if self.inner is None:
            self.first = b""
        return True


def decode_each_line(decoder: Any, batch: Batch) -> list[Any] | None:
    """A msgspec JSON ``decoder`` over each raw line of ``batch`` alone: the values, one per line; None when it refuses
    a line (a blank one too), or when the text is not UTF-8 (msgspec does not check what it skips). Each line alone,
    never the lines joined (``decode_lines``): that reads whitespace-separated values, so a line holding two objects
    and a blank line (or an object written across two lines) would give as many values as lines, not one per line."""
    import msgspec  # here: only the commands that screen or check lines load it

    text = batch.text()
    if not text.isascii():
        try:
            text.decode("utf-8")
        except UnicodeDecodeError:
            return None
    try:
        return nested_no_deeper_than_orjson(lambda raws: list(map(decoder.decode, raws)), batch.raws)  # type: ignore[no-any-return]
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


ORJSON_DEPTH = exactjson.MAX_DEPTH  # the deepest nesting orjson (and so parse) reads: a deeper line is invalid JSON to replay


def nested_no_deeper_than_orjson(decode: Any, text: Any) -> Any:
    """``decode(text)`` refusing (RecursionError) any line nested deeper than ``ORJSON_DEPTH``, as parse does: a fast
    lane must not take a line the slow one reports. msgspec nests as deep as the interpreter's recursion limit leaves
    room for (Python 3.11): at the default limit (1000) that is less; when the limit was raised (hypothesis raises it
    to 2048), the limit is lowered to leave that room for the call. (On 3.12 and later msgspec's depth follows the C
    stack instead, ~1,500 or more levels, and this cannot bound it.)"""
    limit = sys.getrecursionlimit()
    if limit <= ORJSON_DEPTH:
        return decode(text)
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1  # type: ignore[assignment]
    sys.setrecursionlimit(depth + ORJSON_DEPTH - 8)  # (a few levels short of orjson's: refused lines go the slow way)
    try:
        return decode(text)
    finally:
        sys.setrecursionlimit(limit)


def without_mark(line: bytes) -> tuple[bytes, int]:
    """The rule of every reader of journal lines (``LineCutter``, so ``replay read``; ``golden check``; a session's
    reading; a NATS message's lines): a UTF-8 byte order mark at the start of a line is left out of it, as at the start
    of a file (files that each begin with one, joined: `cat a.jsonl b.jsonl | replay read`). The line, and how many
    bytes went: its offset is the byte after them. (One mark: a second is the line's, and no JSON.)"""
    return exactjson.skip_bom(line)


def torn_at_end(raw: bytes) -> bool:
    """The rule for an input's last line with no newline after it (``raw``): is it torn, no JSON on its own as parse
    reads it (``exactjson``: a lone surrogate's escape, a number beyond 64 bits are JSON), most likely cut off
    mid-write? A torn one comes in a batch of its own, so what is said of it (``parse``: torn) comes after what is said
    of the lines before it; a whole one in the batch a newline after it would have put it in (``LineCutter.finish``;
    ``join_split_records``, which cuts its lines into batches again, keeps to it)."""
    try:
        exactjson.loads(raw)
    except orjson.JSONDecodeError:
        return True
    return False


class LineCutter:
    """Cuts a byte stream into batches of whole lines, keeping line numbers and byte offsets.

    A UTF-8 byte order mark at the start of a line is left out of it (``without_mark``); the line's offset is then the
    byte after it."""

    def __init__(self, source: str, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, batch_events: int = BATCH_EVENTS) -> None:
        self.source = source
        self.batch_events = batch_events
        self.max_line_bytes = max_line_bytes
        # The unfinished last line, as the chunks it arrived in: joined once its newline comes, so a
        # long line fed in many chunks costs linear time, not quadratic.
        self._pieces: list[bytes] = []
        self._pending_bytes = 0
        self.offset = 0  # byte offset of the pending line
        self.line = 1  # line number of the pending line
        self.skipping = False  # inside a line that is already too long
        # The last batch the last cut gave, while a line more with it would have joined it (fewer than
        # ``batch_events`` lines cut there): the input's last line, with no newline, joins it (``finish``)
        self._open_part: Batch | None = None
        # What the last ``feed`` cut, held back (``may_end``) while it leaves a line open: it comes with what the next
        # call gives (``feed``, ``release``), or at the end with that line in its last batch (``finish``)
        self._held: list[Item] = []

    @property
    def pending(self) -> bytes:
        """The unfinished last line so far."""
        return b"".join(self._pieces)

    def feed(self, data: bytes, may_end: bool = False) -> list[Item]:
        """Batches (and diagnostics) for the complete lines now available (what an earlier call held first).

        ``may_end``: the input may end right after ``data`` (a read that did not fill its chunk: a newline after a line
        it leaves open would have come in it). Where it leaves a line open, what it cut is then held back (``holding``)
        until the next call: ``feed`` (the input went on) or ``finish`` (that line is the input's last, with no newline:
        it comes in the batch of the lines before it, as a newline after it would have cut them). So the batches are
        the same whether an input ends with a newline or not, however its reads cut it (a rule logs a batch at a time).
        Only where waiting for the next read holds back nothing a live writer has written: ``release`` gives what is
        held before a read that may wait (``read``)."""
        held = self._held
        if held:
            self._held = []
        out = self._cut(data)
        if may_end and self._pieces:
            self._held = out
            return held
        return [*held, *out] if held else out

    @property
    def holding(self) -> bool:
        """Is what the last ``feed`` cut held back (it left a line open, and the input may end there)?"""
        return bool(self._held)

    def release(self) -> list[Item]:
        """What ``feed`` holds back, now (the input may wait before its next bytes, or its read failed)."""
        held, self._held = self._held, []
        return held

    def _cut(self, data: bytes) -> list[Item]:
        """Batches (and diagnostics) for the complete lines ``data`` completes."""
        out: list[Item] = []
        self._open_part = None
        if self.skipping:
            nl = data.find(b"\n")
            if nl < 0:
                self.offset += len(data)
                return out
            self.skipping = False
            self.offset += nl + 1
            self.line += 1
            data = data[nl + 1:]
        if b"\n" not in data:
            if data:
                self._pieces.append(data)
                self._pending_bytes += len(data)
                if self._pending_bytes > self.max_line_bytes:
                    self._skip_pending(out)
            return out
        cut = data.rfind(b"\n")
        last = data[cut + 1:]
        # the complete lines, as one block: the pending line's pieces and this chunk up to its last newline, joined
        # once (a view of the chunk: no copy of it before the join)
        data = b"".join([*self._pieces, memoryview(data)[:cut]]) if self._pieces else data[:cut]
        end = len(data)  # (where the last newline was: ``data`` holds what came before it)
        total = end + 1 + len(last)  # the bytes this call had
        self._pieces = [last] if last else []
        self._pending_bytes = len(last)
        # the lines, cut once here: every stage that reads them one by one takes these (a decoder decodes each alone:
        # a line is one JSON value, never two, nor half of one across a newline)
        raws = data.split(b"\n")
        count = len(raws)
        limit = self.max_line_bytes
        # a line of the block begins with a byte order mark? (its first byte looked for first: memchr's speed, where the
        # mark itself is looked for at a sixth of it, a tenth of the cut's time)
        marked = _BOM_FIRST in data and (_BOM_LINE in data or data.startswith(UTF8_BOM))
        if count <= self.batch_events and total <= limit and not marked:
            # the usual chunk: one batch, its lines as cut above and as one block (a writer of the lines as they came
            # writes the block)
            whole = Batch.folded(self.source, count, data, self.line, self.offset, raws=raws)  # type: ignore[arg-type]
            out.append(whole)
            self._open_part = whole if count < self.batch_events else None
            self.line += count
            self.offset += end + 1
            return out
        start = self.offset
        bounds = list(accumulate(map(_PLUS_ONE, map(len, raws)), initial=start))  # each line's offset, then the end
        if marked:
            # (not a line too long: the limit is of a line as read, its mark too, as a line longer than a read is judged)
            for k in [k for k, raw in enumerate(raws) if raw.startswith(UTF8_BOM) and len(raw) <= limit]:
                raws[k], skipped = without_mark(raws[k])
                bounds[k] += skipped  # (bounds[k + 1], where the next line starts, stays)
        first = self.line
        self.line += len(raws)
        size = self.batch_events
        for s in range(0, len(raws), size):
            part = raws[s:s + size]
            e = s + len(part)
            batch = Batch(self.source, None, part, list(range(first + s, first + e)), bounds[s:e])  # type: ignore[arg-type]
            # the part's lines as one block (a slice of what was split): the screen decodes it without joining them
            if not marked:  # (else joined from the lines when asked: the block still holds the marks)
                batch.joined = data[bounds[s] - start:bounds[e] - start - 1]
            if total > limit and max(map(len, part)) > limit:  # (no line is longer than the chunk it came in)
                batch = self._drop_long(batch, out)
            out.append(batch)
            self._open_part = batch if len(part) < size else None
        self.offset = bounds[-1]
        if self._pending_bytes > limit:
            self._skip_pending(out)
        return out

    def _skip_pending(self, out: list[Item]) -> None:
        """The pending line is already too long: report it and skip to its end."""
        out.append(self._too_long(self.line, self.offset))
        self.offset += self._pending_bytes
        self._pieces = []
        self._pending_bytes = 0
        self.skipping = True

    def finish(self) -> list[Item]:
        """At end of input: what is held (``feed``), and the last line if it had no newline (marked as possibly torn).
        That line, when it is whole (JSON), comes in the last batch held, as a newline after it would have cut them
        (unless that batch was full: ``batch_events``); so whether an input ends with a newline changes no batch the
        stages after see, nor so the order heal logs its repairs in. One that is no JSON (cut off mid-write, most
        likely) comes alone: what is said of it (``parse``: torn) comes after what is said of the lines before it."""
        held, part = self.release(), self._open_part
        tail = self._last_line()
        if not tail or part is None or not held or held[-1] is not part:
            return [*held, *tail]
        last = tail[0]
        assert isinstance(last, Batch)
        if torn_at_end(last.raws[0]):  # type: ignore[arg-type]
            return [*held, *tail]
        joined = last.joined  # (the lines as one block, when both are one)
        if len(part):
            joined = part.joined + b"\n" + joined if part.joined is not None and joined is not None else None
        batch = Batch.folded(self.source, len(part) + 1, joined, pieces=[(part, 0, len(part)), (last, 0, 1)],
                             tail_open=True, raws=[*part.raws, *last.raws])
        return [*held[:-1], batch]

    def _last_line(self) -> list[Item]:
        """The input's last line, with no newline, as a batch of its own (none when there is none, or it was too long)."""
        self._open_part = None
        if self.skipping:
            self.skipping = False
            self.line += 1
            return []
        if not self._pieces:
            return []
        pending = self.pending
        self.offset += len(pending)
        pending = without_mark(pending)[0]
        batch = Batch(self.source, None, [pending], [self.line], [self.offset - len(pending)], tail_open=True)
        batch.joined = pending
        self._pieces = []
        self._pending_bytes = 0
        self.line += 1
        return [batch]

    def _drop_long(self, batch: Batch, out: list[Item]) -> Batch:
        keep = []
        for i, raw in enumerate(batch.raws):
            if len(raw) > self.max_line_bytes:  # type: ignore[arg-type]
                out.append(self._too_long(batch.lines[i], batch.offsets[i]))
            else:
                keep.append(i)
        return batch.select(keep)

    def _too_long(self, line: int | None, offset: int | None) -> dict[str, Any]:
        return diagnostic(
            "E_JSONL_LINE_TOO_LONG", line_too_long(line, self.max_line_bytes) + SKIPPED,
            source=self.source, line=line, offset=offset, expected=f"at most {self.max_line_bytes} bytes",
        )


_BOM_LINE, _BOM_FIRST = b"\n" + UTF8_BOM, UTF8_BOM[:1]  # a line that begins with a byte order mark; its first byte
SKIPPED = "; skipped"  # what a read does with a line too long, after ``line_too_long``: it goes on past it


def line_too_long(line: int | None, limit: int) -> str:
    """What is wrong with line ``line`` (of a journal, or a message of a stream) longer than ``limit`` bytes
    (E_JSONL_LINE_TOO_LONG); what became of it follows (``SKIPPED``: a read skips it; the walk ends there)."""
    return f"line {line} is longer than {limit} bytes"


BLANK = b" \t\r"  # what a blank line holds besides its newline (what strip() of it leaves nothing of)
JSON_SPACE = BLANK + b"\n"  # what JSON takes for blank between values (``head_format`` skips it, so does the rest)
LINES, DOCUMENT = "lines", "document"


def is_record_array(value: Any) -> bool:
    """A journal written as one JSON array of its records (replay's, or another agent's event list): read as the
    records it holds (``document_items``), each at its JSON path (``$[3]``), whatever they are; an element that is no
    record is reported as such where it sits."""
    return isinstance(value, list)


def is_document(value: Any) -> bool:
    """An array of records, or an artifact: an object with an ``events`` array (not a reserved record)."""
    return is_record_array(value) or (
        isinstance(value, dict) and isinstance(value.get("events"), list) and "$record" not in value
    )


def _parses_as_object(line: bytes) -> bool:
    try:
        return type(exactjson.loads(line)) is dict
    except orjson.JSONDecodeError:
        return False


def head_format(head: bytes) -> str | None:
    """How to read an input, judged from its first bytes: ``LINES`` (a JSONL journal), ``DOCUMENT``
    (maybe one JSON document: read it whole, up to the line limit, then decide), or None while the
    head is too short to tell.

    A first line that is a whole array or artifact, or that does not parse on its own but is followed
    by a line that is not a JSON object, points at a document (pretty-printed or on one line).
    """
    body = head.removeprefix(UTF8_BOM).lstrip(JSON_SPACE)
    if not body or UTF8_BOM.startswith(body):  # nothing yet, or only part of a byte order mark
        return None
    if body[:1] not in (b"{", b"["):
        return LINES
    nl = body.find(b"\n")
    if nl < 0:
        return None
    first = body[:nl]
    try:
        value = exactjson.loads(first)
    except orjson.JSONDecodeError:
        if first.strip(JSON_SPACE) in (b"{", b"["):
            return DOCUMENT
        nl2 = body.find(b"\n", nl + 1)
        if nl2 < 0:
            return None
        # A broken first line followed by an object line is a journal with a bad line; a document's
        # second line (`"key": value,` or `{...},`) never parses as an object on its own.
        return LINES if _parses_as_object(body[nl + 1:nl2]) else DOCUMENT
    return DOCUMENT if is_document(value) else LINES


_OPENS = re.compile(rb"(?:\xef\xbb\xbf)?[ \t\r\n]*[\[{]")  # (a byte order mark, blanks, then an array or object)


class HeadFormat:
    """``head_format`` of an input's first chunks as they come (read, walk and an offset's check judge a head so),
    each byte looked at a bounded number of times (a head of megabytes of blank lines is no slower to judge than its
    size): the chunks are joined and judged again only when what came may change the answer (bytes not blank, after
    blanks; a newline, while the head opens an array or object). ``parts``: the list the chunks are kept in (the
    caller's, to hold what was read where reading stops)."""

    def __init__(self, parts: list[bytes] | None = None) -> None:
        self.parts = parts if parts is not None else []
        self.size = sum(map(len, self.parts))
        self.kind: str | None = None  # LINES or DOCUMENT once told
        self._blank = True  # all fed so far is blank (past a byte order mark): nothing to tell yet
        self._opened = False  # the head opens an array or object: only a newline more may tell

    def feed(self, data: bytes, judge: bool = True) -> str | None:
        """Keep ``data``; the head's format once it can be told (not ``judge``d: only kept)."""
        self.parts.append(data)
        self.size += len(data)
        if judge and self.kind is None:
            if self._blank:
                self._blank = not (exactjson.skip_bom(data)[0] if len(self.parts) == 1 else data).strip(JSON_SPACE)
            if not self._blank and (not self._opened or b"\n" in data):
                head = self.head()
                self.kind = head_format(head)
                self._opened = _OPENS.match(head) is not None
        return self.kind

    def head(self) -> bytes:
        """Every chunk fed, joined (and kept joined)."""
        if len(self.parts) != 1:
            self.parts[:] = [b"".join(self.parts)]
        return self.parts[0]


def document_too_long(limit: int) -> dict[str, str]:
    """What is wrong with an input that is one JSON document (read whole) longer than ``limit`` (--max-line-bytes):
    ``what`` it is (said after "SOURCE is" or "it is"), and the diagnostic's ``expected``, ``received`` and
    ``howToFix``; read, validate and walk say it alike (E_JSONL_LINE_TOO_LONG)."""
    return {"what": f"one JSON document (an artifact or an array) longer than {limit} bytes, the most "
                    "--max-line-bytes lets replay read whole",
            "expected": f"a document of at most {limit} bytes", "received": f"more than {limit} bytes",
            "howToFix": "Raise --max-line-bytes above the document's size in bytes."}


def as_document(data: bytes) -> Any:
    """The input as one JSON document when it is an artifact or an array, else None."""
    try:
        document = exactjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return document if is_document(document) else None
