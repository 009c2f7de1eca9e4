"""Journals and output folders at fsspec URLs (s3://, gcs://, ftp://, sftp://, memory://, file://): list, read, write.

A path that starts with a scheme (``PROTO://``) is a URL; any other path is local and takes the code
paths in ``journals`` without importing fsspec (it is imported here, on the first URL). A URL's
filesystem comes from fsspec's registry and its configuration (``FSSPEC_<PROTOCOL>_<OPTION>``
environment variables, ``~/.config/fsspec``), so credentials need not sit in the URL, where every
line that names a file would print them. A protocol whose package is not installed is refused
(E_FILESYSTEM_NOT_INSTALLED, exit 2) with the package to install.

Names: the files found under a folder URL are that URL joined with their path relative to it, so the
user's spelling (host, port, bucket) is kept in every name printed and every task that reopens one.
A folder is listed once per command (``expand``) and what the listing said (size, modification time)
is kept in this process for the manifest, so a run over thousands of objects makes one listing, not
one request per object.

Reading streams: a file is read in blocks of ``READ_BYTES`` in a worker thread (a slow network never
stalls the event loop), never loaded whole; gzip is undone after, as for local files.

Writing (``write_atomic``): the bytes go to ``.<name>.<random>.replay.tmp`` beside the target (the
temp names readers skip and the manifest's sweep removes), and that file is then moved onto the
target. What the move guarantees depends on the filesystem:

| filesystem | the move | a reader of the target sees | a writer killed mid-way leaves |
| --- | --- | --- | --- |
| local paths, ``file://`` | ``rename(2)``: atomic, replaces the old file | the old file or the new one, whole | its temp file |
| ``sftp://`` | ``posix-rename``: atomic on the server | the old file or the new one, whole | its temp file |
| ``ftp://`` | ``RNFR``/``RNTO``: the server's rename (atomic where it renames on a POSIX filesystem: pyftpdlib, vsftpd, ProFTPD) | the old file or the new one, whole | its temp file |
| ``s3://``, ``gcs://``, ``az://`` | no rename: a server-side copy of the temp object, then its deletion | the old object or the new one, whole (a PUT or a copy is atomic per object) | its temp object, or none (an unfinished multipart upload is never visible) |
| ``memory://`` | a copy under the target's key (one dict assignment), then deletion | the old file or the new one, whole | nothing that outlives the process |

So on every kind no target is ever partial; what a killed writer may leave is a temp name, which the
next manifest sweep removes. A folder at a URL is written in place (an object store cannot rename a
folder), and its manifest, written last, says it is complete.
"""

from __future__ import annotations

import posixpath
import re
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from datetime import datetime
from typing import Any

from anyio import to_thread

from replay.pipeline.engine.errors import EXIT_FAILED, ReplayError, exc_reason, input_unreadable, optional_module
from replay.pipeline.engine.outputs import TEMP_SUFFIX, is_temp_name
from replay.pipeline.engine.parallel import file_digest, input_digest
from replay.pipeline.io.journals import base_name, is_journal_name, is_url, journals_in

READ_BYTES = 1 << 20  # one thread hop per MiB read, then served in the reader's chunks from memory
BLOCK_BYTES = 4 << 20  # read-ahead of a remote file (FTP: one RETR per block)
IN_PROCESS = ("memory",)  # filesystems that live in one process: not shared with worker processes


# filesystems ---------------------------------------------------------------------------------------
def _fsspec() -> Any:
    return optional_module("fsspec", "paths given as URLs are read and written through fsspec",
                           "the `dask` extra (it brings fsspec)",
                           "pip install fsspec where replay is installed (the dask extra brings it), or give local paths.")


def protocol_of(url: str) -> str:
    return url.split("://", 1)[0].lower()


def in_this_process(url: str) -> bool:
    """Does this URL name a filesystem that exists only in this process (``memory://``)?"""
    return is_url(url) and protocol_of(url) in IN_PROCESS


def _missing_package(protocol: str, known: dict[str, Any], exc: Exception) -> str:
    """The package to install for ``protocol``: the module of its class, else the name its error gives."""
    entry = known.get(protocol) or {}
    module = str(entry.get("class", "")).split(".")[0]
    if module and module != "fsspec":
        return module
    quoted = re.search(r"""["']([A-Za-z0-9_.-]+)["']""", str(entry.get("err", "")))
    if quoted:
        return quoted.group(1)
    return getattr(exc, "name", None) or "the package that provides it"


def _filesystem_class(url: str) -> Any:
    """fsspec's class for the URL's protocol; refused (exit 2) when it is unknown or its package is missing."""
    fsspec = _fsspec()
    protocol = protocol_of(url)
    try:
        return fsspec.get_filesystem_class(protocol)
    except ImportError as exc:
        from fsspec.registry import known_implementations

        package = _missing_package(protocol, known_implementations, exc)
        raise ReplayError("E_FILESYSTEM_NOT_INSTALLED", f"no filesystem for {protocol}:// URLs is installed: {exc}",
                          path=url, received=str(exc), expected=f"the package {package!r}",
                          howToFix=f"pip install {package} (into the environment replay runs in, and on every Dask "
                                   "worker), or give a local path.") from exc
    except ValueError as exc:
        fix = ("A NATS subject is no file: `replay read nats://HOST:PORT/SUBJECT` reads it (pipe it on: `replay read "
               "nats://... | replay heal`), as does a read_nats stage of a `replay run` config." if protocol == "nats" else
               "Check the URL's scheme, or install the package that registers that protocol with fsspec.")
        raise ReplayError("E_FILESYSTEM_NOT_INSTALLED", f"fsspec knows no filesystem for {protocol}:// URLs", path=url,
                          received=protocol, expected="a protocol fsspec knows (file, memory, ftp, sftp, s3, gcs, az, ...)",
                          howToFix=fix) from exc


class _Filesystem:
    """One fsspec filesystem of this thread, with a lock: a file being read in a worker thread and a
    file being written from the event loop never share a connection at the same moment (ftplib's is
    not thread-safe)."""

    def __init__(self, fs: Any) -> None:
        self.fs = fs
        self.lock = threading.RLock()


_THREAD = threading.local()


def _authority(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return scheme.lower() + "://" + rest.split("/", 1)[0]


def _filesystem(url: str, code: str = "E_INPUT_UNREADABLE", exit_code: int = 2) -> tuple[_Filesystem, str]:
    """The filesystem for ``url`` (one per thread and authority, kept: an FTP login costs a round trip)
    and the path within it; ``code`` when it cannot be reached."""
    cls = _filesystem_class(url)
    cache: dict[str, _Filesystem] = _THREAD.__dict__.setdefault("filesystems", {})
    key = _authority(url)
    found = cache.get(key)
    if found is None:
        try:
            fs, _ = _fsspec().core.url_to_fs(url)
        except ReplayError:
            raise
        except Exception as exc:  # a server that does not answer, a login refused, ...
            raise ReplayError(code, f"cannot reach {key!r}: {exc_reason(exc)}", path=url, received=type(exc).__name__,
                              exit_code=exit_code, howToFix="Check the URL, the server and your credentials (fsspec's "
                              "configuration, e.g. FSSPEC_FTP_USERNAME / FSSPEC_FTP_PASSWORD).") from exc
        found = cache[key] = _Filesystem(fs)
    return found, cls._strip_protocol(url)


def _forget(url: str) -> None:
    """Drop this thread's filesystem for ``url`` (its connection broke; the next use opens a new one)."""
    cache: dict[str, _Filesystem] = _THREAD.__dict__.get("filesystems", {})
    cache.pop(_authority(url), None)


@contextmanager
def _failing(url: str, code: str, verb: str, *, exit_code: int = EXIT_FAILED) -> Iterator[None]:
    """Whatever the filesystem raises (OSError, ftplib's errors, a cloud SDK's) as one catalogue error."""
    try:
        yield
    except ReplayError:
        raise
    except Exception as exc:
        if not isinstance(exc, FileNotFoundError):
            _forget(url)
        raise ReplayError(code, f"cannot {verb} {url!r}: {exc_reason(exc)}", path=url, received=type(exc).__name__,
                          exit_code=exit_code) from exc


# names ---------------------------------------------------------------------------------------------
def join(url: str, relative: str) -> str:
    """``relative`` (a posix path) under the folder URL ``url``, keeping the URL's spelling."""
    base = url if url.endswith("/") else url + "/"
    return base + relative.lstrip("/")


def relative(url: str, root: str) -> str:
    """``url``'s path relative to the folder URL ``root`` (both of one filesystem)."""
    prefix = root if root.endswith("/") else root + "/"
    if url.startswith(prefix):
        return url[len(prefix):]
    cls = _filesystem_class(root)
    return posixpath.relpath(cls._strip_protocol(url), cls._strip_protocol(root))


def parent(url: str) -> str:
    """The folder URL holding ``url``."""
    scheme, rest = url.split("://", 1)
    head, _, _tail = rest.rstrip("/").rpartition("/")
    return f"{scheme}://{head}" if head else f"{scheme}://"


name = base_name  # a URL's last part, as ``io.journals`` cuts a path's or a URL's


def common_root(urls: list[str]) -> str:
    """The deepest folder URL holding every URL in ``urls`` (all of one filesystem)."""
    folders = [parent(u) for u in urls]
    root = folders[0]
    for folder in folders[1:]:
        while not (folder == root or folder.startswith(root.rstrip("/") + "/")):
            root = parent(root)
    return root


# what the listing said -----------------------------------------------------------------------------
# url -> (size, mtime_ns) as this process last listed it; a folder's expand refreshes its entries.
_KNOWN: dict[str, tuple[int, int]] = {}


def _mtime_ns(info: dict[str, Any]) -> int:
    """A listing entry's modification time in ns; 0 when the filesystem gives none (the content decides)."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "modify", "created"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, datetime):
            return int(value.timestamp() * 1e9)
        if isinstance(value, int | float):
            return int(value * 1e9)
        text = str(value)
        if key == "modify" and re.fullmatch(r"\d{14}(\.\d+)?", text):  # FTP MLSD: YYYYMMDDHHMMSS[.sss], UTC
            whole, _, fraction = text.partition(".")
            stamp = datetime.strptime(whole + "+0000", "%Y%m%d%H%M%S%z").timestamp()
            return int((stamp + float("0." + (fraction or "0"))) * 1e9)
        try:
            return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1e9)
        except ValueError:
            continue
    return 0


def _info(url: str) -> dict[str, Any] | None:
    """What the filesystem says of ``url`` now (None: nothing there); refreshes what this process knows."""
    handle, path = _filesystem(url)
    with _failing(url, "E_INPUT_UNREADABLE", "look at", exit_code=2), handle.lock:
        try:
            info = handle.fs.info(path)
        except FileNotFoundError:
            _KNOWN.pop(url, None)
            return None
    if info.get("type") == "file":
        _KNOWN[url] = (int(info.get("size") or 0), _mtime_ns(info))
    return dict(info)


def kind(url: str) -> str | None:
    """``file``, ``directory`` or None (nothing there)."""
    info = _info(url)
    if info is None:
        return None
    return "directory" if info.get("type") == "directory" else "file"


def _listing(url: str) -> dict[str, dict[str, Any]]:
    """Every file under the folder URL ``url``, by its path relative to it (fresh: caches are dropped first)."""
    handle, path = _filesystem(url)
    with _failing(url, "E_INPUT_UNREADABLE", "list", exit_code=2), handle.lock:
        handle.fs.invalidate_cache()
        found = handle.fs.find(path, withdirs=False, detail=True)
    root = path.rstrip("/")
    listed = {}
    for full, info in found.items():
        rel = posixpath.relpath(full, root) if root else full.lstrip("/")
        if info.get("type", "file") == "file" and rel not in (".", ""):
            listed[rel] = info
    return listed


def expand(url: str) -> list[str]:
    """``expand_paths`` for a URL: a file as given; a folder walked for journals (sorted, temp names and
    side files skipped, as for local folders). Raises E_INPUT_PATH_NOT_FOUND before anything is read."""
    if url in _KNOWN:
        return [url]
    info = _info(url)
    if info is None:
        raise ReplayError("E_INPUT_PATH_NOT_FOUND", f"input {url!r} does not exist", path=url,
                          howToFix="Check the URL (its bucket, host and path).")
    if info.get("type") != "directory":
        return [url]
    handle, path = _filesystem(url)
    if _on_this_machine(handle.fs):
        return _walked_here(url, handle, path)
    found = []
    for rel, entry in _listing(url).items():
        parts = rel.split("/")
        if any(is_temp_name(part) for part in parts) or not is_journal_name(parts[-1]):
            continue
        full = join(url, rel)
        _KNOWN[full] = (int(entry.get("size") or 0), _mtime_ns(entry))
        found.append(full)
    return sorted(found, key=lambda s: s.encode("utf-8", "surrogateescape"))


def _on_this_machine(fs: Any) -> bool:
    """fsspec's local filesystem (``file://``)."""
    protocol = fs.protocol
    return "file" in (protocol if isinstance(protocol, tuple | list) else (protocol,))


def _walked_here(url: str, handle: _Filesystem, path: str) -> list[str]:
    """``expand`` for a ``file://`` folder: walked as a local folder is (``journals_in``), not by fsspec's walk, which
    leaves out in silence a folder it cannot list (its journals then counted as gone), each file's entry as fsspec
    lists it."""
    import os

    try:
        files = journals_in(path)
    except ReplayError as exc:  # a folder that cannot be listed: named by its URL
        folder = exc.body.get("path")
        if exc.code != "E_INPUT_UNREADABLE" or not isinstance(exc.__cause__, OSError) or not isinstance(folder, str):
            raise
        rel = os.path.relpath(folder, path)
        raise input_unreadable(url if rel == "." else join(url, rel), exc.__cause__, what="folder",
                               exit_code=exc.exit_code) from exc.__cause__
    found = []
    for full in files:
        target = join(url, os.path.relpath(full, path))
        try:
            with handle.lock:
                entry = handle.fs.info(full)
            _KNOWN[target] = (int(entry.get("size") or 0), _mtime_ns(entry))
        except OSError:  # (a link in a loop: reading it reports it)
            _KNOWN[target] = (0, 0)
        found.append(target)
    return found


def total_bytes(urls: list[str]) -> int:
    """The inputs' sizes as listed (URLs not listed count 0; local paths are stat'ed)."""
    from replay.pipeline.engine.parallel import total_bytes as local_bytes

    return sum(_KNOWN.get(u, (0, 0))[0] for u in urls if is_url(u)) + local_bytes(u for u in urls if not is_url(u))


def stat(url: str) -> tuple[int, int] | None:
    """(size, mtime_ns) as listed in this command, else as the filesystem says now; None when missing."""
    known = _KNOWN.get(url)
    if known is not None:
        return known
    info = _info(url)
    if info is None or info.get("type") == "directory":
        return None
    return int(info.get("size") or 0), _mtime_ns(info)


def forget_listings() -> None:
    """A new task on a worker: what this process listed, and the listings this thread's filesystems
    cached, may be old (another run wrote since; a worker lives longer than a command)."""
    _KNOWN.clear()
    for handle in _THREAD.__dict__.get("filesystems", {}).values():
        with handle.lock:
            handle.fs.invalidate_cache()


# reading -------------------------------------------------------------------------------------------
class UrlReader:
    """``await read(n)`` over a remote file: a MiB at a time in a worker thread, served in pieces from memory."""

    def __init__(self, handle: _Filesystem, file: Any, url: str) -> None:
        self.handle = handle
        self.file = file
        self.url = url
        self.block = b""
        self.at = 0
        self.may_wait = False  # a remote file is read to its end: a short read is the end, never a pause

    def _fetch(self) -> bytes:
        with self.handle.lock:
            try:
                return bytes(self.file.read(READ_BYTES))
            except OSError:
                raise
            except Exception as exc:  # ftplib's own errors are not OSErrors: a read that failed is one
                _forget(self.url)
                raise OSError(f"{type(exc).__name__}: {exc}") from exc

    async def read(self, n: int) -> bytes:
        if self.at >= len(self.block):
            self.block = await to_thread.run_sync(self._fetch)
            self.at = 0
            if not self.block:
                return b""
        data = self.block[self.at:self.at + n]
        self.at += len(data)
        return data


@asynccontextmanager
async def open_url(url: str) -> AsyncIterator[UrlReader]:
    """The raw bytes of the file at ``url`` (E_INPUT_UNREADABLE, exit 1, when it cannot be opened)."""
    handle, path = _filesystem(url)

    def opened() -> Any:
        with _failing(url, "E_INPUT_UNREADABLE", "open"), handle.lock:
            try:
                return handle.fs.open(path, "rb", block_size=BLOCK_BYTES)
            except OSError as exc:  # said as a local file's is (``input_unreadable``: its reason, and what to do)
                if not isinstance(exc, FileNotFoundError):
                    _forget(url)
                raise input_unreadable(url, exc) from exc

    file = await to_thread.run_sync(opened)
    try:
        yield UrlReader(handle, file, url)
    finally:
        with handle.lock:
            try:
                file.close()
            except Exception:  # closing a read-only file that broke mid-read: nothing to keep
                _forget(url)


def read_bytes(url: str) -> bytes:
    """A small file whole (manifests, heal logs); FileNotFoundError when there is none."""
    handle, path = _filesystem(url)
    with handle.lock:
        try:
            return bytes(handle.fs.cat_file(path))
        except FileNotFoundError:
            raise
        except Exception as exc:
            _forget(url)
            raise OSError(f"cannot read {url!r}: {exc_reason(exc)}") from exc


def is_file(url: str) -> bool:
    try:
        return kind(url) == "file"
    except ReplayError:
        return False


def _sha256(url: str) -> tuple[int, str]:
    """Size and SHA-256 of a remote file's bytes, streamed."""
    import hashlib  # here: only remote inputs are hashed (its import costs every command ~3 ms of start-up)

    handle, path = _filesystem(url)
    digest = hashlib.sha256()
    size = 0
    with _failing(url, "E_INPUT_UNREADABLE", "read"), handle.lock, handle.fs.open(path, "rb", block_size=BLOCK_BYTES) as file:
        while block := file.read(READ_BYTES):
            digest.update(block)
            size += len(block)
    return size, digest.hexdigest()


def sha256(url: str) -> str:
    return _sha256(url)[1]


# writing -------------------------------------------------------------------------------------------
def _makedirs(handle: _Filesystem, path: str) -> None:
    """The folder ``path`` exists afterwards. A listing this process cached may miss a folder another
    worker created meanwhile (FTP then answers 550 to the MKD): try again with fresh listings."""
    if not path or path == "/":
        return
    try:
        handle.fs.makedirs(path, exist_ok=True)
    except Exception:
        handle.fs.invalidate_cache()
        handle.fs.makedirs(path, exist_ok=True)


def temp_name_for(path: str) -> str:
    folder, _, base = path.rpartition("/")
    return f"{folder}/.{base}.{uuid.uuid4().hex[:8]}{TEMP_SUFFIX}"  # the names staging.atomic_output gives


# outputs this process wrote and no digest has asked for yet, with their size and SHA-256 (from the bytes
# written: a task's manifest entry needs no download of what it just uploaded)
_WRITTEN: dict[str, tuple[int, str]] = {}


def write_atomic(url: str, data: bytes) -> None:
    """``data`` at ``url``, whole or not at all: written under a temp name beside it, then moved onto it
    (see the module's table for what the move guarantees on each filesystem). E_OUTPUT_WRITE_FAILED
    (exit 1) when the filesystem refuses; the temp file is removed where it can be."""
    handle, path = _filesystem(url, "E_OUTPUT_WRITE_FAILED", EXIT_FAILED)
    temp = temp_name_for(path)
    with _failing(url, "E_OUTPUT_WRITE_FAILED", "write"), handle.lock:
        _makedirs(handle, path.rpartition("/")[0])
        try:
            handle.fs.pipe_file(temp, data)
            handle.fs.mv(temp, path)
        except BaseException:
            with suppress(Exception):  # never written, or the connection is gone: the sweep removes it
                handle.fs.rm_file(temp)
            raise
    import hashlib  # (see _sha256)

    _WRITTEN[url] = (len(data), hashlib.sha256(data).hexdigest())


def sizes_under(url: str) -> dict[str, int]:
    """Every file under the folder URL by relative path, with its size (empty when there is no folder)."""
    try:
        return {rel: int(info.get("size") or 0) for rel, info in _listing(url).items()}
    except ReplayError:
        return {}


def sweep_temp_files(url: str) -> list[str]:
    """Remove the temp files of writes whose writer died under the folder URL; returns what went."""
    handle, path = _filesystem(url, "E_OUTPUT_WRITE_FAILED", EXIT_FAILED)
    removed = []
    for rel in sizes_under(url):
        if is_temp_name(rel.rpartition("/")[2]):
            target = join(url, rel)
            with handle.lock:
                try:
                    handle.fs.rm_file(join(path, rel) if path else rel)
                except Exception:
                    continue
            removed.append(target)
    return removed


def remove_file(url: str) -> None:
    """The file at ``url``, gone (OSError when it cannot be removed)."""
    handle, path = _filesystem(url, "E_OUTPUT_WRITE_FAILED", EXIT_FAILED)
    with handle.lock:
        try:
            handle.fs.rm_file(path)
        except Exception as exc:
            raise OSError(f"cannot remove {url!r}: {exc_reason(exc)}") from exc
    _KNOWN.pop(url, None)
    _WRITTEN.pop(url, None)


def remove_tree(url: str) -> None:
    """The folder URL and everything under it, gone (quietly: what cannot be removed stays)."""
    handle, path = _filesystem(url, "E_OUTPUT_WRITE_FAILED", EXIT_FAILED)
    with handle.lock:
        try:
            handle.fs.invalidate_cache()
            handle.fs.rm(path, recursive=True)
        except Exception:
            pass


# the engine's seam ---------------------------------------------------------------------------------
class UrlFiles:
    """``parallel.Files`` for work that reads or writes URLs: local paths keep the local functions."""

    def start_task(self, paths: list[str]) -> None:
        forget_listings()

    def input_digest(self, path: str) -> tuple[int, int, str]:
        if not is_url(path):
            return input_digest(path)
        try:
            info = _info(path)
            if info is None:
                raise FileNotFoundError(path)
            size, digest = _sha256(path)
        except ReplayError as exc:  # the filesystem's error is this input's, as a local file's is (the others go on)
            if exc.code != "E_INPUT_UNREADABLE":
                raise
            cause = exc.__cause__
            raise (cause if isinstance(cause, OSError) else OSError(exc_reason(cause) if cause else str(exc))) from exc
        return size, _mtime_ns(info), digest

    def output_digest(self, path: str) -> tuple[int, str]:
        if not is_url(path):
            return file_digest(path)
        written = _WRITTEN.pop(path, None)
        return written if written is not None else _sha256(path)


URL_FILES = UrlFiles()
