"""Per-run files: how they are named and how a set of them is written (capture's emit, heal --in).

One place decides file names from run ids, so two ids never share a file: ``file_stem`` keeps
letters, digits, ``_``, ``-`` and inner dots, and writes anything else as ``%XX`` (its UTF-8 bytes),
``%`` included, so ``x/y`` and ``x_y`` stay apart and no id climbs out of its folder. Every file is
written atomically; a new output folder is filled beside its final place and renamed into it, so it
appears whole or not at all (``io.staging``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.preflight import refuse_file_in_the_way
from replay.pipeline.engine.text import utf8
from replay.pipeline.io.journals import ARTIFACT as ARTIFACT
from replay.pipeline.io.journals import DOCUMENT_SUFFIXES, LINES_SUFFIXES, describe_kind, is_url, path_kind
from replay.pipeline.io.journals import HEAL_LOG as HEAL_LOG
from replay.pipeline.io.journals import HEALED as HEALED
from replay.pipeline.io.journals import JOURNAL as JOURNAL
from replay.pipeline.io.journals import JOURNAL_FOLDER as JOURNAL_FOLDER
from replay.pipeline.io.journals import RAW as RAW
from replay.pipeline.io.staging import write_atomic

Place = Path | str  # a local folder, or a folder's fsspec URL (``io.remote``)

# (RAW, ARTIFACT, HEALED, HEAL_LOG, JOURNAL and JOURNAL_FOLDER, the names of capture's files, are ``io.journals'``: its
# folder walk tells them apart)
RAW_CAPTURE = "raw-capture"  # the artifactType of capture's raw side file (RAW)
HEAL_LOG_TYPE = "heal-log"  # the artifactType of a heal log (HEAL_LOG: capture's, `replay heal --in DIR --out DIR`'s)
HEALED_JOURNAL = ".healed" + JOURNAL
_SAFE = re.compile(r"[A-Za-z0-9_-]")


def file_stem(name: Any) -> str:
    """A file name part from an id, one to one: unsafe characters as ``%XX``; never empty, never hidden."""
    text = str(name) if name not in (None, "") else "run"
    out = []
    for k, ch in enumerate(text):
        if _SAFE.match(ch) or (ch == "." and 0 < k < len(text) - 1):
            out.append(ch)
        else:
            out.append("".join(f"%{b:02X}" for b in utf8(ch)))  # (a byte of a name not in UTF-8 as itself)
    return "".join(out)


def is_raw_capture(name: str, value: Any = None) -> bool:
    """Is a file capture's raw side file (its runner's output, no journal): named ``<id>.raw.json`` (``name``, a path
    or a URL), or a document (``value``, parsed) whose ``artifactType`` is ``raw-capture``?"""
    return name.endswith(RAW) or (isinstance(value, dict) and value.get("artifactType") == RAW_CAPTURE)


def is_heal_log(name: str, value: Any = None) -> bool:
    """Is a file a heal log replay wrote (what heal repaired, no journal): named ``<id>.heal-log.json`` (``name``, a
    path or a URL), or a document (``value``, parsed) whose ``artifactType`` is ``heal-log``?"""
    return name.endswith(HEAL_LOG) or (isinstance(value, dict) and value.get("artifactType") == HEAL_LOG_TYPE)


def document_bytes(value: Any) -> bytes:
    """A JSON document as replay writes one to a file: indented, newline at the end."""
    return exactjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n"


def healed_names(path: str) -> tuple[str, str]:
    """The healed copy and heal log of an input: <id>.artifact.json / <id>.json -> <id>.healed.json;
    journals keep JSONL (<id>.healed.jsonl)."""
    name = Path(path).name
    for suffix in (ARTIFACT, HEALED, *DOCUMENT_SUFFIXES):
        if name.endswith(suffix):
            stem = name[: -len(suffix)]
            return stem + HEALED, stem + HEAL_LOG
    for suffix in LINES_SUFFIXES:
        if name.endswith(suffix):
            stem = name[: -len(suffix)]
            return stem + HEALED_JOURNAL, stem + HEAL_LOG
    return name + HEALED, name + HEAL_LOG


def common_root(files: list[str]) -> Place:
    """The folder the inputs' relative paths are kept from: their deepest common folder."""
    if files and is_url(files[0]):
        from replay.pipeline.io.remote import common_root as common_url

        return common_url(files)
    folders = [os.path.dirname(os.path.abspath(f)) for f in files]  # (a link's folder, not its target's)
    return Path(os.path.commonpath(folders)) if folders else Path(".")


def _identity(path: str | Path) -> str | Path:
    """What names one file, whatever the spelling: a local path resolved, a URL as it is."""
    return str(path) if is_url(str(path)) else Path(os.path.realpath(path))  # (a link in a loop as it is: no RuntimeError)


def under(folder: Place, rel: Path) -> Place:
    """``rel`` (relative) inside a local folder or a folder URL."""
    if isinstance(folder, str) and is_url(folder):
        from replay.pipeline.io.remote import join

        return join(folder, rel.as_posix())
    return Path(folder) / rel


def _relative_folder(path: str, root: Place) -> Path:
    if isinstance(root, str) and is_url(root):
        from replay.pipeline.io.remote import relative

        return Path(relative(path, root)).parent
    return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).parent  # (a link is mirrored where it is)


def plan_healed(files: list[str], root: Place, target: Place, *, inputs_path: str | None = None,
                target_path: str | None = None) -> dict[str, tuple[Path, Path]]:
    """Each input's (healed, log) paths relative to ``target``; refused (exit 2) when two inputs would
    write the same file or an output would land on an input. ``root`` and ``target`` may be URLs. The refusals'
    ``path``: what gave the inputs (``inputs_path``: ``--in``, a config's stage), or ``target`` (``target_path``:
    ``--out``, a config's key such as ``stages.write.out_dir``)."""
    plan: dict[str, tuple[Path, Path]] = {}
    claimed: dict[Path, str] = {}
    inputs = {_identity(f) for f in files}
    for path in files:
        rel = _relative_folder(path, root)
        healed, log = (rel / name for name in healed_names(path))
        for out in (healed, log):
            if out in claimed:
                raise ReplayError("E_USAGE_INVALID", f"{claimed[out]!r} and {path!r} would both be healed into {str(out)!r}",
                                  path=inputs_path, received=[claimed[out], path],
                                  howToFix="Heal one of them on its own, or rename it.")
            if _identity(under(target, out)) in inputs:
                raise ReplayError("E_USAGE_INVALID", f"healing {path!r} would overwrite the input {str(under(target, out))!r}",
                                  path=target_path, received=str(target),
                                  howToFix="Choose an --out folder that holds none of the inputs.")
            claimed[out] = path
        plan[path] = (healed, log)
    return plan


def refuse_non_folder(folder: Place, how_to_fix: str, example: str | None = None, *, flag: str | None = None) -> None:
    """Refuse (E_OUTPUT_UNWRITABLE, exit 2, before anything runs) a folder to write into that exists and is not a
    folder (``--out FILE`` is never written over; ``--out /dev/full``), or is under a file; ``path`` names the flag
    that gave it (``flag``), else the folder. A missing folder is fine. ``folder`` may be a URL (a ``str``;
    ``path_kind``)."""
    kind = path_kind(folder)
    where = folder if isinstance(folder, str) and is_url(folder) else str(Path(folder))
    if kind in ("file", "other"):
        raise ReplayError("E_OUTPUT_UNWRITABLE", f"the output folder {where!r} exists and is not a folder",
                          path=flag or where, expected="a folder (new or existing)", received=describe_kind(kind),
                          howToFix=how_to_fix, example=example)
    if not (isinstance(folder, str) and is_url(folder)):
        refuse_file_in_the_way(where, flag)


def write_file(path: Place, data: bytes) -> str:
    """``data`` at a local path or a URL, whole or not at all; returns where."""
    if isinstance(path, str) and is_url(path):
        from replay.pipeline.io.remote import write_atomic as write_at_url

        write_at_url(path, data)
        return path
    write_atomic(path, data)
    return str(path)
