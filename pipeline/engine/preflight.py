"""Before a graph runs: every stage may refuse (exit 2, nothing written), and no stage may write over an input.

Stages say which files they read and write (``input_files`` / ``outputs``, ``-`` for stdin and
stdout); the engine knows no stage by name. A graph that writes to stdout is refused when stdout is closed, and when two of its stages would; so is a graph two of
whose stages would write one file, or one of whose stages would write in a folder another writes into. Inputs are never modified: an output that is the same file as an input (same device
and inode, whatever the path says) is refused, stdout redirected into one too; so is an output under a file (``--out afile/x.html``: a folder on its way
is a file), before anything is read. Last, each output file and folder is tried where it will be written
(``probe_output``, ``probe_folder``): one that cannot be written is refused (E_OUTPUT_WRITE_FAILED, exit 2) before any
input is read. Only then may a stage read what can be read once to refuse it (``Stage.preflight_input``: capture's
prompt on stdin), so a run refused for anything else leaves its stdin unread.
"""

from __future__ import annotations

import io
import os
import stat
import sys
from collections.abc import Callable, Iterable
from pathlib import Path, PurePath
from typing import NamedTuple

from replay.pipeline.engine.errors import STDOUT_NAME, ReplayError, stdout_closed
from replay.pipeline.engine.outputs import named_descriptor, probe_folder, probe_output, read_only
from replay.pipeline.engine.share import stdout_capture
from replay.pipeline.engine.stage import Stage

STDIO = "-"
A_FILE = "a file path, or '-' for stdout"  # what an output option takes


def _a_folder(target: str) -> str | None:
    """How the output path ``target`` names a folder, not a file to write (None when it does not): one there, or a path
    that ends in a slash, ``.`` or ``..`` (a folder whether there or not: writing it would fail at the end)."""
    if os.path.isdir(target):
        return "is a directory"
    if os.path.basename(target) in ("", ".", ".."):
        return f"names a directory (it ends in `{'/' if target.endswith('/') else os.path.basename(target)}`)"
    return None


def preflight(stages: Iterable[Stage], read: Iterable[str] = (), probed: set[Path] | None = None) -> None:
    """Run before any task of a graph starts, on the stages that are about to run; ``read``: other files the
    command read (the graph's config), which no stage may write over either; ``probed``: the folders outputs were
    tried in already (by this graph's runs over earlier inputs), not tried again."""
    stages = list(stages)
    _refuse_folders(stages)
    inputs = [source for stage in stages for source in stage.input_files()]
    of_a_command = any(stage.flags for stage in stages)  # (else a config the user wrote: every stage is theirs)
    for stage in stages:
        _refuse_unnameable(stage)  # (first: the stage's own preflight looks at its outputs on disk)
        _refuse_urls(stage)
        try:
            stage.preflight(inputs)
        except ReplayError as exc:  # a refusal of one of its options, named as the user gave it
            raise stage.as_named(exc, of_a_command=of_a_command) from None
        for option, target in stage.outputs():  # (a folder there is found out by the rename, after the whole run)
            if target == "":
                raise stage.refuse_empty(option, names="file", expected=_an_output(_stdout_taken(stage, stages)),
                                         example="out.jsonl")
            if _local(target) and (folder := _a_folder(target)):
                subject, path = stage.named(option)
                taken = _stdout_taken(stage, stages)
                if option in stage.flags:  # as the user typed it
                    message = f"{subject} {target!r} {folder}"
                    fix = (f"Give {subject} a file to write ({'or `-` for stdout' if taken is None else f'not `-`: {taken}'}), "
                           f"e.g. `{subject} out.jsonl`.")
                else:
                    message, fix = f"{subject} has the output {target!r}, which {folder}", (
                        "Name a file to write" + (", or `-` for stdout" if taken is None else f" (not `-`: {taken})")
                        + (f", in its `{option}`." if option is not None else "."))
                raise ReplayError(code_for(stage, option), message, path=path, received=target,
                                  expected=_an_output(taken), howToFix=fix)
    _refuse_two_writers_of_one_target(stages)
    _refuse_outputs_in_folders_written(stages)
    # again: a stage's preflight may find a file it reads (the script stage, the sidecar beside its session)
    inputs = [source for stage in stages for source in stage.input_files()]
    writes_stdout = any(target == STDIO for stage in stages for _, target in stage.outputs())
    # `replay read x >&-` (`--out /dev/stdout` too: descriptor 1): refused before anything runs (no runner, no file); a
    # run that is one share of a bigger command writes its stdout into a buffer, and the command checks its own stdout
    if (writes_stdout or any(_local(target) and named_descriptor(target) == 1 for stage in stages
                             for _, target in stage.outputs())) and stdout_capture() is None:
        refuse_unwritable_stdout()
    identities: dict[tuple[int, int] | None, str] = {}  # (None: no file, never an input's)
    for source in [*inputs, *read]:  # (``read`` is not the stages' business: walk's preflight scans its inputs)
        found = _file_id(0 if source == STDIO else source)
        if found is not None:
            identities[found] = "<stdin>" if source == STDIO else source
    if writes_stdout:
        refuse_stdout_into_an_input([*inputs, *read])
    for stage in stages:
        for option, target in stage.outputs():
            if _local(target):
                refuse_file_in_the_way(target, stage.named(option)[1] if option in stage.flags else None)
            if target == STDIO or not os.path.isfile(target):
                continue
            written_over = identities.get(_file_id(target))
            if written_over is not None:
                subject, path = stage.named(option)
                message = (f"{subject} {target!r} would write over the input {written_over!r}" if option in stage.flags
                           else f"{subject} would write its output {target!r} over its own input {written_over!r}")
                raise ReplayError(
                    code_for(stage, option), message,
                    path=path, received=target, expected="a path that is not one of the inputs",
                    howToFix=(f"Give {subject} another file (e.g. `{subject} out.jsonl`); inputs are never modified."
                              if option in stage.flags else "Write to another file; inputs are never modified."),
                )
    _refuse_outputs_in_folders_read(stages)
    # Last, when nothing else refused the run: each output is tried where it will be written (a temp file made and
    # removed), so one that cannot be written fails before any input is read, not after the whole of it
    probed = set() if probed is None else probed  # (each folder tried once: two outputs of one folder, one try)
    for stage in stages:
        for _, target in stage.outputs():
            if _local(target):
                probe_output(target, probed)
        for _, folder in stage.output_folders():
            if _local(folder):
                probe_folder(folder, probed)
    for stage in stages:  # only now what can be read once (a prompt on stdin): a refused run has consumed nothing
        stage.preflight_input(inputs)


def refuse_stdout_into_an_input(sources: Iterable[str]) -> None:
    """stdout redirected into one of the inputs ``sources`` (``-``: stdin) of a command that writes stdout (``replay read
    run.jsonl >> run.jsonl``): what is written would change the input, and a reader of a file its own output grows
    never reaches its end (it filled the disk). A regular file only: stdin and stdout may be one socket or terminal,
    read and written both; not a run whose stdout is captured (one share of a command, which checks its own)."""
    st = _stdout_stat()
    if st is None or not stat.S_ISREG(st.st_mode):
        return
    written_over = next((source for source in sources
                         if _file_id(0 if source == STDIO else source) == (st.st_dev, st.st_ino)), None)
    if written_over is not None:
        written_over = "<stdin>" if written_over == STDIO else written_over
        raise ReplayError("E_OUTPUT_UNWRITABLE", f"stdout is the input {written_over!r}: writing there would change it",
                          path=STDOUT_NAME, expected="stdout that is not one of the inputs",
                          received=f"stdout redirected into {written_over!r}",
                          howToFix="Redirect stdout to another file (`> out.jsonl`); inputs are never modified.")


def _local_place(path: str) -> tuple[str, PurePath]:
    return "", Path(path).resolve()


def refuse_overlap(out: str, inputs: Iterable[str], flag: str, *, what: str, how_to_fix: str,
                   place: Callable[[str], tuple[str, PurePath]] = _local_place, code: str = "E_OUTPUT_UNWRITABLE") -> None:
    """Refuse (``code``: E_OUTPUT_UNWRITABLE, exit 2, nothing run) an output folder or file ``out`` (named by ``flag``)
    that is one of the ``inputs`` (folders or files, ``what`` in words), lies inside one, or holds one: written into,
    the inputs' folder would get outputs a later run reads as inputs (or replace files in it); holding them, outputs
    would mix with inputs. Links are resolved: two spellings of one folder overlap. ``place``: where a path is (its
    filesystem and its path there; ``journals.place_of`` for URLs too); by default every path is local. ``code``: a
    config's stage option names the output (``code_for``: E_CONFIG_OPTION_INVALID)."""
    where, target = place(out)
    for given in inputs:
        there, source = place(given)
        if where == there and (target == source or target.is_relative_to(source) or source.is_relative_to(target)):
            raise ReplayError(code, f"{flag} {out!r} and {what} {given!r} overlap: inputs are never "
                              "written into", path=flag, expected=f"a path outside {what}, not holding it",
                              received=out, howToFix=how_to_fix)


def _refuse_outputs_in_folders_read(stages: list[Stage]) -> None:
    """An output (file or folder) of the graph inside a folder one of its stages reads, or holding one
    (``refuse_overlap``, as `heal --in runs --out runs/x` is refused): the next run would read it as an input. Local
    places only (a URL's folder is the command's to check: ``journals.place_of``)."""
    folders = [folder for stage in stages for folder in stage.input_folders() if _local(folder)]
    if not folders:
        return
    for stage in stages:
        for option, target in _named_outputs(stage):
            if target and _local(target):
                _, path = stage.named(option)
                refuse_overlap(target, folders, path, what="the folder read", code=code_for(stage, option),
                               how_to_fix="Write outside the folders the graph reads (e.g. beside them), or read "
                                          "the files themselves instead of their folder.")


def _named_outputs(stage: Stage) -> list[tuple[str | None, str]]:
    """``stage``'s output files and folders, each with the option that names it."""
    return [*stage.outputs(), *stage.output_folders()]


def _refuse_unnameable(stage: Stage) -> None:
    """An output file or folder of ``stage`` that no file can be called (os calls on it raise ValueError or
    UnicodeEncodeError): E_CONFIG_OPTION_INVALID at its option."""
    files = stage.outputs()
    for option, target in [*files, *stage.output_folders()]:
        if target and _local(target) and not _nameable(target):
            subject, path = stage.named(option)
            raise ReplayError(code_for(stage, option), f"{subject} has the output {target!r}, which no file can "
                              "be called", path=path, received=target,
                              expected=A_FILE if (option, target) in files else "a folder",
                              howToFix="Name a file without a NUL character or half of a surrogate pair.")


def _nameable(target: str) -> bool:
    """Can a file be called ``target``? (Not with a NUL in it, nor a character the file system's encoding has not.)"""
    try:
        return b"\0" not in os.fsencode(target)
    except UnicodeEncodeError:
        return False


def _local(target: str) -> bool:
    """Is the output ``target`` a file of this machine (not stdout, not a URL)?"""
    return target != STDIO and "://" not in target


class _Writer(NamedTuple):
    """A stage writing one of its outputs: the option that names it (None: no option does)."""

    stage: Stage
    option: str | None
    target: str  # as the stage names it (`-`, `/dev/stdout`)


def _refuse_folders(stages: list[Stage]) -> None:
    """A folder among the graph's inputs, when a stage of it takes one file (``Stage.takes_one_file``): refused as that
    stage refuses it, whatever the folder holds (the folders are looked for only then)."""
    one_file = [stage for stage in stages if stage.takes_one_file]
    if one_file:
        folders = [folder for stage in stages for folder in stage.input_folders()]
        if folders:
            raise one_file[0].folder_refused(folders[0])


def _refuse_urls(stage: Stage) -> None:
    """An output (a file or a folder) that is a URL where the stage writes local paths only (``Stage.url_outputs``):
    refused, not written into a local folder named ``s3:`` (as the URL would be taken for a path)."""
    for option, target in [*stage.outputs(), *stage.output_folders()]:
        if "://" in target and option not in stage.url_outputs:  # (as ``_local`` tells a URL)
            subject, path = stage.named(option)
            raise ReplayError(
                code_for(stage, option), f"{subject} {target!r} is a URL, and {subject} writes local paths only",
                path=path, received=target, expected="a local path",
                howToFix=f"Give {subject} a path on this machine (the README's \"Inputs and outputs at URLs\" lists the "
                         "outputs written through fsspec).")


def _refuse_two_writers_of_one_target(stages: list[Stage]) -> None:
    """Two stages writing one target: stdout (``heal --log -``: two streams of lines mixed into one would be neither),
    or one file (by its path, links resolved: the last to finish would replace the other's output). Each is named as
    the user gave its output (``_as_given``); the one whose path the refusal gives is the one to change: a flag's,
    when only one of them was set by a flag."""
    of_a_command = any(stage.flags for stage in stages)  # (else a config the user wrote: every stage is theirs)
    stdout = _stdout_file()
    first_writers: dict[str, _Writer] = {}
    for stage in stages:
        for option, target in stage.outputs():
            writer = _Writer(stage, option, target)
            # (`/dev/stdout`, or the file stdout is redirected to, is stdout)
            stdout_too = _local(target) and stdout is not None and _file_id(target) == stdout
            key = STDIO if stdout_too else os.path.realpath(target) if _local(target) else target
            earlier = first_writers.setdefault(key, writer)
            if earlier.stage is stage:
                continue
            kept, changed = (writer, earlier) if earlier.stage.flags and not stage.flags else (earlier, writer)
            first, _ = _as_given(kept, of_a_command)
            second, path = _as_given(changed, of_a_command)
            both = (f"stages {first.removeprefix('stage ')} and {second.removeprefix('stage ')}"
                    if first.startswith("stage ") and second.startswith("stage ") else f"{first} and {second}")
            code = code_for(changed.stage, changed.option)
            by_flag = changed.option in changed.stage.flags  # (the one to change is a flag the user typed)
            if key == STDIO:
                raise ReplayError(
                    code, f"{both} would both write to stdout, mixing their lines", path=path, received=changed.target,
                    expected=f"a file path (not '-': {first} {'goes to' if first.startswith('the ') else 'writes'} stdout)"
                    if by_flag else "one stage writing stdout; the others to files",
                    howToFix=f"Give {second} the path of a file to write, not `-`." if by_flag
                    else "Write one of them to a file (its `path`).",
                )
            raise ReplayError(
                code, f"{both} would both write {target!r}: one "
                "would replace what the other wrote", path=path, received=target,
                expected="a file of its own for each output",
                howToFix=f"Give {second} a file of its own." if by_flag else "Give each output a path of its own.",
            )


def _refuse_outputs_in_folders_written(stages: list[Stage]) -> None:
    """An output (file or folder) of one stage in a folder another stage writes into (``output_folders``: `write_healed`'s
    ``out_dir``, `emit`'s, `write_incident`'s), that folder itself, or holding it: what is in the folder is its stage's
    (named after the inputs or runs, found only as the run goes), so either may replace what the other wrote. Refused
    at the option of the one inside (a file before a folder; of two folders that are one, the later stage's), as two
    writers of one file are. Local places, links resolved (a URL's folder is written in place, left to its stage)."""
    folders = [(_Writer(stage, option, folder), Path(folder).resolve())
               for stage in stages for option, folder in stage.output_folders() if folder and _local(folder)]
    if not folders:
        return
    outputs = [*(_Writer(stage, option, target) for stage in stages for option, target in stage.outputs()),
               *(_Writer(stage, option, target) for stage in reversed(stages) for option, target in stage.output_folders())]
    places = [(writer, Path(writer.target).resolve()) for writer in outputs if writer.target and _local(writer.target)]
    of_a_command = any(stage.flags for stage in stages)
    for holding in (False, True):  # (the one inside first: a file holding a folder is found only from its side)
        for writer, place in places:
            for owner, folder in folders:
                if owner.stage is writer.stage:
                    continue  # (a stage's own outputs are its business: emit's journals beside its artifacts)
                relation = (("which holds" if folder.is_relative_to(place) else None) if holding
                            else "which is" if place == folder else "inside" if place.is_relative_to(folder) else None)
                if relation is None:
                    continue
                subject, path = _as_given(writer, of_a_command)
                other, _ = _as_given(owner, of_a_command)
                raise ReplayError(
                    code_for(writer.stage, writer.option), f"{subject} writes {writer.target!r}, {relation} the folder "
                    f"{owner.target!r} that {other} writes into, where one may replace what the other wrote", path=path,
                    received=writer.target, expected="a path outside the folders other stages write into",
                    howToFix=f"Give {subject} a place of its own, outside {owner.target!r} (e.g. beside it): "
                             "a stage's folder holds what that stage writes.")


def code_for(stage: Stage, option: str | None) -> str:
    """The code of a refused output: a flag the user typed (``--out DIR``, ``--to -``) names an output that cannot be
    written (E_OUTPUT_UNWRITABLE); a config's stage option has a wrong value (E_CONFIG_OPTION_INVALID)."""
    return "E_OUTPUT_UNWRITABLE" if option is not None and option in stage.flags else "E_CONFIG_OPTION_INVALID"


def _an_output(taken: str | None) -> str:
    """What an output option left empty, or naming a folder, may name: a file, or `-` for stdout unless another stage
    writes stdout already (``taken``: ``_stdout_taken``; `replay heal x --log ''`: the healed stream is on stdout, and
    `--log -` is refused as mixing the two into one, so the hint offers no `-`)."""
    return A_FILE if taken is None else f"a file path (not '-': {taken})"


def _stdout_taken(stage: Stage, stages: list[Stage]) -> str | None:
    """Which other stage writes stdout, in words (``the command's own output goes to stdout``), or None: then an output
    of ``stage`` may be `-`."""
    for other in stages:
        if other is not stage:
            for option, target in other.outputs():
                if target == STDIO:
                    writer, _ = _as_given(_Writer(other, option, target), any(s.flags for s in stages))
                    return f"{writer} goes to stdout" if writer.startswith("the ") else f"{writer} writes stdout"
    return None


def _file_id(place: str | int) -> tuple[int, int] | None:
    """(device, inode) of the file at path ``place``, or open as descriptor ``place``; None when there is none."""
    try:
        st = os.fstat(place) if isinstance(place, int) else os.stat(place)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _stdout_file() -> tuple[int, int] | None:
    """What fd 1 is, when another output that names it would fight the stdout writer over it: a file (renamed over,
    it replaces what stdout wrote) or a pipe (their lines mixed); not a device (``/dev/null``, a terminal: written in
    place, nothing is lost), nor a run's stdout captured in a buffer."""
    st = _stdout_stat()
    return None if st is None or stat.S_ISCHR(st.st_mode) else (st.st_dev, st.st_ino)


def _stdout_stat() -> os.stat_result | None:
    """What fd 1 is; None when it is closed, or when this run's stdout is captured in a buffer (one share of a
    command's inputs: the command checks its own stdout)."""
    if stdout_capture() is not None:
        return None
    try:
        return os.fstat(1)
    except OSError:
        return None


def _as_given(writer: _Writer, of_a_command: bool) -> tuple[str, str]:
    """How a refusal names ``writer`` as the user gave its output, ``(subject, path)``: the flag that set it
    (``--log``), or the stage of a config the user wrote (``Stage.named``); a stage of a command's graph that no flag
    set writes unasked: "the command's own output"."""
    subject, path = writer.stage.named(writer.option)
    if writer.option in writer.stage.flags or not of_a_command:
        return subject, path
    return "the command's own output", path


def file_in_the_way(folder: str | os.PathLike[str]) -> str | None:
    """What stands where a folder must be for ``folder`` to be written into: ``folder`` itself, else its nearest
    parent that exists, when that is not a folder (a file); None when there is nothing (missing folders are made)."""
    path = Path(folder)
    for place in (path, *path.parents):
        try:
            mode = os.stat(place).st_mode
        except (FileNotFoundError, NotADirectoryError):
            continue  # missing (it is made), or under a file further up
        except OSError:
            return None  # (no permission, ...: left to the write, which says why)
        return None if stat.S_ISDIR(mode) else str(place)
    return None


def refuse_file_in_the_way(target: str, flag: str | None = None) -> None:
    """Refuse (E_OUTPUT_UNWRITABLE, exit 2, before anything runs) the output ``target`` (a file or a folder) when a
    file stands where one of the folders on its way must be: no write could make it (ENOTDIR). ``flag``: the
    command-line flag that named it (``--log``), which the refusal names as its path."""
    blocker = file_in_the_way(Path(target).parent)
    if blocker is not None:
        raise ReplayError("E_OUTPUT_UNWRITABLE", f"{target!r} cannot be written: {blocker!r} is a file, not a folder",
                          path=flag or target, expected="folders on the output's path (missing ones are made)",
                          received=f"ENOTDIR: {blocker!r} is not a directory",
                          howToFix=f"Write the output somewhere else, or move {blocker!r} out of the way.")


def refuse_unwritable_stdout() -> None:
    """Refuse (E_OUTPUT_UNWRITABLE, exit 2, before anything is written) a stdout that cannot take replay's output:
    closed (``>&-``), or open for reading only (``1</dev/null``: every write would fail, EBADF)."""
    if not stdout_is_open():
        raise stdout_closed()
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return
    if read_only(fd):
        raise ReplayError("E_OUTPUT_UNWRITABLE", "stdout is open for reading only: replay writes its results there",
                          path=STDOUT_NAME, expected="stdout open for writing (a terminal, a pipe or a file)",
                          received="open read-only (O_RDONLY)",
                          howToFix="Give the command somewhere to write: `> out.jsonl`, `| next-command`, or `> /dev/null`.")


def stdout_is_open() -> bool:
    """Is fd 1 open? (``replay read x >&-`` starts the interpreter with it closed: ``sys.stdout`` is None.)"""
    if sys.stdout is None:
        return False
    try:
        fd = sys.stdout.fileno()
    except io.UnsupportedOperation:
        return True  # a stream with no descriptor behind it (an in-memory capture): writable as it is
    except (OSError, ValueError, AttributeError):
        return False
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True
