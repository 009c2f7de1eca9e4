"""Output files and folders: the temp names they are written under, the file a path stands for, and the probe that
tries, before a graph runs, to write where each output will go.

A file is written under a temp name beside its target and renamed into place when complete; a folder is staged
beside its target the same way (``pipeline/io/staging.py``: ``atomic_output``, ``publish_folder``). The engine's
preflight probes every output a stage declares (``Stage.outputs``, ``Stage.output_folders``) before any input
is read, so an output that cannot be written fails before the work is done, as it would fail after it.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

from replay.pipeline.engine.errors import write_failed

# Temp names: what a SIGKILL can leave behind. The names are ``.<target name>.<random>.replay.tmp``; readers skip
# them when they walk a folder. Only a process killed outright (SIGKILL, a power cut) leaves one; every other ending
# removes it.
TEMP_SUFFIX = ".replay.tmp"


def is_temp_name(name: str) -> bool:
    """Is this a temp file or folder replay writes before renaming it into place?"""
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def published_name(path: str) -> str:
    """``path`` as it is named once each folder on its way staged under a temp name (``.NAME.XXXX.replay.tmp``,
    ``.NAME.partial.replay.tmp``) is renamed into place as NAME: what a diagnostic names, as nobody sees those folders."""
    parts = Path(path).parts
    if not any(is_temp_name(part) for part in parts[:-1]):
        return path
    return str(Path(*(part[1: -len(TEMP_SUFFIX)].rpartition(".")[0] if is_temp_name(part) else part for part in parts[:-1]),
                    parts[-1]))


def temp_prefix(target: Path) -> str:
    return f".{target.name}."


def is_special(target: Path) -> bool:
    """An existing device, FIFO or socket (``/dev/null``, ``/dev/stdout``, a named pipe): written in place,
    never renamed over (as root, a rename would replace ``/dev/null`` itself)."""
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


_DESCRIPTOR = re.compile(r"/dev/(?:std(in|out|err)|fd/(\d+))|/proc/(?:self|thread-self|(\d+))/fd/(\d+)")
_STANDARD = {"in": 0, "out": 1, "err": 2}


# The descriptors the process was given (0-2 and those its parent left open), noted by the executable's entry point
# before anything of its own opens one (``cli.entry``); None in a process that did not start there: 0-2.
_given: frozenset[int] | None = None
STANDARD_DESCRIPTORS = frozenset((0, 1, 2))  # stdin, stdout, stderr: every process is given these


def given_descriptors() -> frozenset[int]:
    """The descriptors this process was given (``note_given_descriptors``; not noted: the standard three)."""
    return _given if _given is not None else STANDARD_DESCRIPTORS


def note_given_descriptors(descriptors: frozenset[int]) -> None:
    """Note the descriptors the process started with: the only ones an output path is written through in place."""
    global _given
    _given = descriptors


def note_handed_descriptor(fd: int) -> None:
    """A descriptor the process was handed after it started (a piece of a command's input run in a forked process
    gets its heal log's spool so: ``cli/pieces.py``): an output path that names it is written through it, in place."""
    note_given_descriptors(given_descriptors() | {fd})


def named_descriptor(path: str | os.PathLike[str]) -> int | None:
    """The descriptor of this process ``path`` names (``/dev/stdin``, ``/dev/stdout``, ``/dev/stderr``,
    ``/dev/fd/N``, ``/proc/self/fd/N``, ``/proc/thread-self/fd/N``, ``/proc/<this pid>/fd/N``, or a link to one of
    them), open or not, else None. Another process (a worker) would find another descriptor there, or none."""
    name = os.path.abspath(os.fspath(path))
    for _ in range(40):  # (the kernel's own limit of links followed)
        found = _DESCRIPTOR.fullmatch(name)
        if found is not None:
            std, fd, pid, proc_fd = found.groups()
            if pid is not None and int(pid) != os.getpid():
                return None  # another process's descriptor: a file like any other
            return _STANDARD[std] if std else int(fd or proc_fd)
        try:
            link = os.readlink(name)
        except OSError:
            return None
        name = os.path.normpath(os.path.join(os.path.dirname(name), link))
    return None


def descriptor_of(path: str | os.PathLike[str]) -> int | None:
    """The descriptor the process was given (0-2, or one its parent left open: ``3> res.txt``) that ``path`` names
    (``named_descriptor``), else None. Written through that descriptor, in place: renamed over, the link would be
    followed and the file the shell opened replaced (``> res.txt`` losing what else was written there); opened anew,
    a regular file behind it would be truncated and written from its start. A descriptor replay opened itself (the
    event loop's socket) is not an output: that path is opened as any other, and fails as it did."""
    fd = named_descriptor(path)
    return fd if fd is not None and fd in given_descriptors() else None


def file_target(path: str | os.PathLike[str], overwrite: bool = True) -> Path | None:
    """The file ``atomic_output`` replaces for ``path``: a link's target; None for a device, FIFO or socket, or an
    open descriptor's name (``descriptor_of``): written in place, when ``overwrite``. A path that ends in a separator
    (``out/``) names a folder, not a file: IsADirectoryError (``Path`` drops the separator, and a file ``out`` was
    written)."""
    name = os.fspath(path)
    if name.endswith(("/", os.sep)):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
    target = Path(path)
    if overwrite and (descriptor_of(name) is not None or is_special(target)):
        return None
    return Path(os.path.realpath(target)) if target.is_symlink() else target


def probe_output(path: str | os.PathLike[str], probed: set[Path] | None = None) -> None:
    """Refuse, before anything runs, an output file ``atomic_output`` could not create (E_OUTPUT_WRITE_FAILED, as it
    would say later, but exit 2: a refusal, nothing was run or written): a temp file is made and removed where its temp file would go, or in the nearest folder above
    that exists (``atomic_output`` makes the folders on the way). Nothing is left: a run that fails before it wrote
    anything leaves no file (``Sink.commit_empty``)."""
    _probe_descriptor(path)
    try:
        target = file_target(path)
    except IsADirectoryError as exc:
        raise write_failed(published_name(os.fspath(path)), exc, exit_code=2) from exc
    if target is not None:
        _probe(target.parent, target, path, probed)


def read_only(fd: int) -> bool:
    """Is descriptor ``fd`` open for reading only (``1</dev/null``: every write there fails, EBADF)? False where that
    cannot be told (no ``fcntl``: such an output fails at its first write) or ``fd`` is not open."""
    try:
        import fcntl

        return bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY)
    except (ImportError, OSError):
        return False


def _probe_descriptor(path: str | os.PathLike[str]) -> None:
    """An output naming one of the process's standard descriptors that was closed when it started (``--out /dev/stdin
    <&-``: the descriptor replay opens next, its own interrupt pipe, would take that number and the output), or a
    descriptor it was given that is open for reading only (``--out /dev/stdin < /dev/null``: every write there would
    fail, EBADF): refused now, not after the input was read. Stdout has its own refusal
    (``preflight.refuse_unwritable_stdout``)."""
    fd = named_descriptor(path)
    if fd is None or fd == 1:
        return
    if fd not in given_descriptors():
        if fd in STANDARD_DESCRIPTORS:
            raise write_failed(published_name(os.fspath(path)), OSError(errno.EBADF, f"descriptor {fd} was closed when "
                                                                        "replay started"), exit_code=2)
        return  # (a descriptor replay opened itself: a path like any other)
    if read_only(fd):
        raise write_failed(published_name(os.fspath(path)), OSError(errno.EBADF, "the descriptor is open for reading "
                                                                    f"only (descriptor {fd}), not for writing"),
                           exit_code=2)


def probe_folder(path: str | os.PathLike[str], probed: set[Path] | None = None) -> None:
    """``probe_output`` for a folder files are written into: a temp file is made and removed in it, or, when it is
    missing, where it would be staged (the nearest folder above it that exists)."""
    _probe(Path(path), Path(path), path, probed)


def _probe(folder: Path, target: Path, path: str | os.PathLike[str], probed: set[Path] | None) -> None:
    """``probed``: the folders tried already (a command's other outputs, its earlier inputs'): each is tried once
    (``heal --in DIR --out OUT`` writes two files an input, 1,500 inputs into a handful of folders)."""
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    if probed is not None:
        if folder in probed:
            return
        probed.add(folder)
    import tempfile  # here: most commands write no file (its import costs every command ~3 ms of start-up)

    try:
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(target), suffix=TEMP_SUFFIX, dir=folder)
    except OSError as exc:
        raise write_failed(published_name(os.fspath(path)), exc, exit_code=2) from exc
    os.close(fd)
    os.unlink(tmp)
