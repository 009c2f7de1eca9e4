"""`--in PATH`: what every command's --in may name, one check for all (spec: E_INPUT_NOT_FILE_OR_DIR, --in target not file/dir)."""

from __future__ import annotations

import stat
from pathlib import Path

from replay.pipeline.io.journals import STDIN, is_url, not_file_or_dir


def refuse_not_file_or_dir(raw: str, stdin: bool = True) -> None:
    """Refuse ``--in raw`` when it names something on this machine that is neither a regular file nor a folder (a
    pipe, ``<(...)``'s /dev/fd/N, a device, a socket: E_INPUT_NOT_FILE_OR_DIR, exit 2): --in names artifacts and
    journals on disk, as validate, report and heal all read it; a stream comes on stdin or as a PATH. ``-`` (when
    ``stdin``: the command reads it), a URL and a path where nothing is are left to the command to judge."""
    if (stdin and raw == STDIN) or raw == "" or is_url(raw):
        return
    path = Path(raw)
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # (nothing there, or a broken link: the command says so in its own words)
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    fix = ("Point --in at an artifact, a journal or a folder of them; pipe a stream on stdin"
           + (" (`--in -`)" if stdin else "") + ", or name a pipe (`<(zcat run.jsonl.gz)`) as a PATH, without --in.")
    raise not_file_or_dir(raw, "--in", fix)
