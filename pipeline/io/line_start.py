"""Reading a journal from a byte offset on (``read.start_offset``): is the offset a line's start, which line it is."""

from __future__ import annotations

import os
import stat

import anyio.lowlevel

from replay.pipeline.engine.errors import excerpt
from replay.pipeline.engine.exactjson import loads, skip_bom
from replay.pipeline.io.journals import (
    DOCUMENT,
    DOCUMENT_SUFFIXES,
    STDIN,
    HeadFormat,
    is_gzip,
    is_url,
)

PREFIX_CHUNK = 4 << 20  # the bytes before the offset are read in chunks this large, their newlines counted in C


def offset_refusal(path: str, offset: int, limit: int) -> tuple[str, str] | None:
    """Why ``path`` cannot be read from byte ``offset`` > 0 on, as (what is wrong, what is there), or None: only JSON
    lines of a regular local file can (no stdin, URL, gzip, nor a file read whole as one JSON document, whose head is
    judged from its start), and only from a line's first byte (0, or the byte after a newline). ``limit``: the line
    limit, as far as a head is read to tell a document. A file not there is not judged here: reading it reports it."""
    if path == STDIN:
        return "stdin cannot be read from an offset (a pipe has no bytes before it)", "stdin"
    if is_url(path):
        return "a URL is not read from an offset", "a URL"
    if path.endswith(DOCUMENT_SUFFIXES):
        return "a .json file is one JSON document, read whole, not from an offset", "a .json file"
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "only a regular file is read from an offset", "no regular file"
        size = st.st_size
        if is_gzip(path, os.pread(fd, 2, 0)) or path.endswith(".gz"):  # (read gunzipped; an empty .gz too)
            return "a gzip file is not read from an offset (its offsets are not the journal's)", "gzip"
        if offset > size:
            return f"the file is only {size} bytes long", f"{size} bytes"
        before = os.pread(fd, 1, offset - 1)
        if before != b"\n":
            before_text, there = excerpt(before), excerpt(os.pread(fd, 16, offset))
            return (f"byte {offset} is inside a line (the byte before it is {before_text!r}, not a newline; from it on: "
                    f"{there!r})", f"mid-line: {before_text!r} before, {there!r} after")
        if _is_document(fd, limit):
            return "the file reads as one JSON document (an array, an artifact, pretty-printed JSON), read whole from " \
                   "its start, not as lines", "a JSON document"
    finally:
        os.close(fd)
    return None


def _is_document(fd: int, limit: int) -> bool:
    """Would a read of the whole file take it as one JSON document (as ``read``'s head tells it: ``HeadFormat``; a whole
    input that is one array or object, doubtfully so)? Undecided heads are read on, up to ``limit`` + 1 bytes."""
    judge = HeadFormat()
    while judge.size <= limit:
        data = os.pread(fd, PREFIX_CHUNK, judge.size)
        if not data:
            try:
                return isinstance(loads(skip_bom(judge.head())[0]), (dict, list))
            except ValueError:
                return False
        if judge.feed(data) is not None:
            return judge.kind == DOCUMENT
    return False


async def lines_before(fd: int, offset: int) -> int:
    """The newlines in the first ``offset`` bytes of ``fd``, counted in C a large chunk at a time, the event loop let
    run between chunks."""
    at = count = 0
    while at < offset:
        data = os.pread(fd, min(PREFIX_CHUNK, offset - at), at)
        if not data:
            break
        count += data.count(b"\n")
        at += len(data)
        await anyio.lowlevel.checkpoint()
    return count
