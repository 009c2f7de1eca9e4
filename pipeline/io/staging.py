"""Staged outputs: every file and folder replay writes appears whole, or not at all.

A file is written under a temp name beside its target and renamed onto it when complete (``atomic_output``). A
folder is filled under a temp name beside its target and renamed into place when complete (``temp_folder``,
``staged_folder``, ``publish_folder``); an existing empty one is filled in place (its mode, owner and inode kept: a
shell in it, ``--out .``, still sees it), under a temp name inside it whose files are moved in when complete; a command over many inputs fills a new folder as its partial sibling, the
same name every run so that a killed run is resumed (``partial_sibling``, ``finish_partial``). The temp names
(``engine.outputs``: ``.NAME.XXXX.replay.tmp``) are skipped by readers, removed by every ending but a process killed
outright (an interrupt's last resort too: ``engine.interrupts``), and what a killed writer left in a folder of many is
swept before its manifest is written (``sweep_leftovers``). What is on disk is durable before it takes its name.

Not here, being otherwise: a URL's files (``io.remote.write_atomic``: fsspec's moves, and an object store cannot
rename a folder), and the probe that tries, before a graph runs, where each output will go (``engine.outputs``).
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO

from replay.pipeline.engine import interrupts
from replay.pipeline.engine.outputs import TEMP_SUFFIX, descriptor_of, file_target, is_temp_name, published_name, temp_prefix
from replay.pipeline.engine.preflight import file_in_the_way
from replay.pipeline.io.fdio import write_failed


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


UMASK = _current_umask()


def make_folder(folder: Path) -> list[Path]:
    """``folder`` and its missing parents made; a file where one of them must be is ENOTDIR (NotADirectoryError
    naming the file), not the EEXIST ``mkdir`` says. Returns the folders it made, deepest first (``unmake_folders``
    removes them again when the output they were made for does not appear)."""
    made = []
    missing = folder
    while not (missing.exists() or missing.is_symlink()) and missing != missing.parent:
        made.append(missing)
        missing = missing.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), file_in_the_way(folder) or str(folder)) from exc
    return made


def unmake_folders(made: list[Path]) -> None:
    """The folders ``make_folder`` made for an output that did not appear removed, deepest first, each only while it
    is empty (what else was put there meanwhile stays): a run that fails leaves no folder on the way to it either."""
    for folder in made:
        try:
            folder.rmdir()
        except OSError:
            return


def _unpublished(target: Path) -> bool:
    """Is ``target`` inside a folder staged under a temp name? Nothing there is seen under its final name before
    ``publish_folder`` renames that folder into place, and that makes the whole folder durable at once."""
    return any(is_temp_name(part) for part in target.parent.parts)


@cache
def _libc_syncfs() -> Any:
    """The C library's ``syncfs`` (None where it has none), looked up once: an import of many publishes many folders."""
    import ctypes  # here: only publishing a staged folder needs it

    return getattr(ctypes.CDLL(None, use_errno=True), "syncfs", None)


def _syncfs(fd: int) -> bool:
    """Everything written to the filesystem holding ``fd`` on disk (Linux ``syncfs``, one call for any number of
    files); False where the C library has no ``syncfs`` (then each file is synced on its own)."""
    call = _libc_syncfs()
    if call is None:
        return False
    if call(fd) != 0:
        import ctypes  # (loaded already, by _libc_syncfs)

        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return True


def publish_folder(staging: Path, target: Path, *, replace: bool = False, last: str = "") -> None:
    """Rename the staged folder ``staging`` onto ``target`` after making what is in it durable: one ``syncfs`` of its
    filesystem (else an fsync of each file and folder in it), then an fsync of the folder. Files written inside a
    staged folder (``atomic_output``) skip their own fsync: the folder appears whole at once, or not at all. No sync
    when ``target`` is itself inside a folder staged under a temp name: the one sync of that folder's publishing covers
    everything in it.

    ``staging`` made inside ``target`` (``temp_folder(target, inside=True)``: an existing empty folder, filled in
    place) is moved in instead (``_move_in``); ``replace``: a folder at ``target``, full or not, is moved aside under a
    temp name first and removed after, so a reader finds the old folder whole, the new one whole, or none."""
    if not _unpublished(target):
        fd = os.open(staging, os.O_RDONLY)
        try:
            if not _syncfs(fd):
                sync_each(staging)
            os.fsync(fd)
        finally:
            os.close(fd)
    if staging.parent == target:
        _move_in(staging, target, last)
        return
    if not (replace and (target.exists() or target.is_symlink())):
        os.replace(staging, target)
        return
    with temp_folder(target) as old:
        os.replace(target, old)  # an empty temp folder is replaced by the old one (a file: onto a folder fails)
        os.replace(staging, target)


def _move_in(staging: Path, target: Path, last: str) -> None:
    """What ``staging`` (a temp folder inside ``target``) holds renamed into ``target``, ``last`` (a manifest) after
    the rest; then ``staging`` is removed. ``target`` keeps its inode, mode, owner and mount: a shell in it still sees
    it, and its parent need not be writable. Its files appear one rename each, once everything is on disk; a rename
    that fails (``target`` filled meanwhile: ENOTEMPTY before any; a name taken as they go: EEXIST) or an interrupt
    sends those moved already back, so nothing appears. Temp names in ``target`` (another writer's) are left alone."""
    if any(name != staging.name and not is_temp_name(name) for name in os.listdir(target)):
        raise OSError(errno.ENOTEMPTY, os.strerror(errno.ENOTEMPTY), str(target))
    names = sorted(os.listdir(staging), key=lambda name: (name == last, name))
    moved: list[str] = []
    try:
        for name in names:
            if os.path.lexists(target / name):
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(target / name))
            os.rename(staging / name, target / name)
            moved.append(name)
    except BaseException:
        for name in reversed(moved):
            with suppress(OSError):
                os.rename(target / name, staging / name)
        raise
    os.rmdir(staging)
    if not _unpublished(target):
        fd = os.open(target, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def sync_each(top: Path) -> None:
    """An fsync of every file and folder in ``top`` (``publish_folder`` where there is no ``syncfs``)."""
    for folder, _, names in os.walk(top):
        for name in [*names, "."]:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


@contextmanager
def atomic_output(path: str | os.PathLike[str], *, overwrite: bool = True) -> Iterator[BinaryIO]:
    """A file that appears at ``path`` whole, or not at all (temp file + rename); an existing file there
    stays as it was until the new one replaces it. A system error (disk full, I/O error, no
    permission) is E_OUTPUT_WRITE_FAILED with the path; nothing partial is left at the path. Its data is
    on disk before it takes its name (fsync), or, inside a folder staged under a temp name, before that
    folder takes its own (``publish_folder``: one sync for all its files).

    A device, FIFO or socket at ``path`` (``/dev/null``, a named pipe) is written in place; so is an open descriptor's
    name (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``), through that descriptor whatever is behind it (a file
    the shell opened is written on from where it is, never replaced nor truncated); a symbolic link is followed, so the file it points at is replaced and the link stays. With
    ``overwrite=False`` the file is linked into place instead, which fails with ``FileExistsError``
    (the temp file gone, nothing changed) when something took the name meanwhile. An error names ``path`` as it
    is once the staged folders on its way are in place (``published_name``)."""
    name = published_name(os.fspath(path))
    try:
        target = file_target(path, overwrite)
    except OSError as exc:
        raise write_failed(name, exc) from exc
    if target is None:
        try:
            with _in_place(path) as handle:
                yield handle
        except OSError as exc:
            raise write_failed(name, exc) from exc
        return
    made: list[Path] = []
    try:
        made = make_folder(target.parent)
        import tempfile  # here: most commands write no file (its import costs every command ~3 ms of start-up)

        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(target), suffix=TEMP_SUFFIX, dir=target.parent)
    except OSError as exc:
        unmake_folders(made)
        raise write_failed(name, exc) from exc
    interrupts.stage_output(tmp)  # a stage that outlives an interrupt's grace: the process ends, and this goes first
    try:
        os.fchmod(fd, 0o666 & ~UMASK)  # mkstemp makes 0600; outputs get the usual permissions
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            if not _unpublished(target):
                os.fsync(handle.fileno())
        if overwrite:
            os.replace(tmp, target)
        else:
            os.link(tmp, target)  # fails, rather than replaces, when the name is taken
            os.unlink(tmp)
    except BaseException as exc:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        unmake_folders(made)
        if isinstance(exc, OSError) and not (isinstance(exc, FileExistsError) and not overwrite):
            raise write_failed(name, exc) from exc
        raise
    finally:
        interrupts.drop_output(tmp)


def _in_place(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for writing in place: an open descriptor it names (``descriptor_of``) through a copy of that
    descriptor, after what Python holds for it is flushed (the writes keep their order); else the device or FIFO."""
    fd = descriptor_of(path)
    if fd is None:
        return open(path, "wb")
    for stream in (sys.stdout, sys.stderr):
        with suppress(AttributeError, ValueError, OSError):
            if stream is not None and stream.fileno() == fd:
                stream.flush()
    return os.fdopen(os.dup(fd), "wb")


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_output(path) as handle:
        handle.write(data)


@contextmanager
def temp_folder(target: Path, *, inside: bool = False) -> Iterator[Path]:
    """A new, empty folder under a temp name beside ``target`` (``.NAME.XXXX.replay.tmp``, with the usual permissions:
    its parents are made), removed again when the block ends, however it ends (renamed away, it is gone already).
    ``inside``: in the existing folder ``target`` instead (``..XXXX.replay.tmp``: no NAME, as ``published_name`` drops
    it), for ``publish_folder`` to move its files into ``target``. An interrupt's last resort removes it too. System
    errors are the caller's to name."""
    import shutil  # here, as tempfile: only a new output folder needs them (~3 ms of heal's start-up)
    import tempfile

    where = target if inside else target.parent
    made = make_folder(where)
    failed = True  # (the folders made on the way go again unless the block ended well)
    try:
        folder = Path(tempfile.mkdtemp(prefix=temp_prefix(Path("") if inside else target), suffix=TEMP_SUFFIX, dir=where))
        interrupts.stage_output(folder, folder=True)  # removed by an interrupt's last resort (interrupts.py)
        try:
            os.chmod(folder, 0o777 & ~UMASK)  # mkdtemp makes 0700; the folder gets the usual permissions
            yield folder
            failed = False
        finally:
            shutil.rmtree(folder, ignore_errors=True)
            interrupts.drop_output(folder)
    finally:
        if failed:
            unmake_folders(made)


@contextmanager
def staged_folder(target: Path) -> Iterator[Path]:
    """Where to write the files of ``target``: a sibling temp folder renamed into place at the end when
    ``target`` is new (it appears whole or not at all), else ``target`` itself (files still atomic)."""
    try:
        exists = target.exists()
    except OSError as exc:
        raise write_failed(str(target), exc) from exc
    if exists:
        yield target
        return
    try:
        with temp_folder(target) as staging:
            yield staging
            publish_folder(staging, target)
    except OSError as exc:
        raise write_failed(str(target), exc) from exc


PARTIAL = f".partial{TEMP_SUFFIX}"  # how a partial sibling's name ends: kept by a sweep, as its run resumes from it


def partial_sibling(target: Path, *, inside: bool = False) -> Path:
    """The hidden folder a new ``target`` of a command over many inputs is filled as, renamed into place when every
    input is done: a temp name readers skip, the same every run, so the next run resumes from what a killed one left.
    ``inside``: ``target`` is an existing (empty) folder, filled in place: the partial folder is in it
    (``..partial.replay.tmp``), and its files are moved into it at the end (``publish_folder``)."""
    return target / f".{PARTIAL}" if inside else target.parent / f".{target.name}{PARTIAL}"


def finish_partial(work_dir: Path, target: Path, *, publish: bool, last: str = "") -> None:
    """The end of a command over many inputs that wrote into ``work_dir``: its partial sibling renamed onto ``target``
    or moved into it (``publish``: it appears whole, ``last`` after the rest; a folder made there meanwhile, not empty,
    is E_OUTPUT_WRITE_FAILED naming it), else removed (nothing appears). ``target`` itself (an existing folder, written
    in place) stays as it is."""
    if work_dir == target:
        return
    if not publish:
        import shutil  # (only a run that wrote nothing removes its folder)

        shutil.rmtree(work_dir, ignore_errors=True)
        return
    try:
        publish_folder(work_dir, target, last=last)
    except OSError as exc:
        raise write_failed(str(target), exc) from exc


def sweep_leftovers(folder: Path) -> list[str]:
    """Remove what writers that died (a killed worker) left under ``folder``: temp files of ``atomic_output``, temp
    folders of ``temp_folder`` (an incident's, staged inside a folder of many); returns what went. A partial sibling
    (``partial_sibling``: another command's run to resume) stays, its leftovers swept."""
    import shutil  # (a sweep runs once, at the end of a command over many inputs)

    removed = []
    for base, folders, names in os.walk(folder):
        for name in [name for name in folders if is_temp_name(name) and not name.endswith(PARTIAL)]:
            folders.remove(name)  # (not walked into: it goes whole)
            path = os.path.join(base, name)
            if os.path.islink(path):
                names.append(name)  # (a link is removed as a file is, never followed)
                continue
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        for name in names:
            if is_temp_name(name):
                path = os.path.join(base, name)
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    continue
                removed.append(path)
    return removed
