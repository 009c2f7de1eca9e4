"""Where one journal file may be cut into pieces that each hold whole runs of replay's own stream (``plan``), for a
command that runs the pieces at once (``engine/forked_pieces.py``, ``cli/pieces.py``).

A piece begins at an event (a JSON object with ``seq`` and a runId that names a run, no ``$record``) whose runId differs from
that of the line before it, an event or the heal record of the run before (heal writes one after each run it
repaired), or at a run record after either (a run record begins a run: heal writes one before each run of another
agent's log), so every run lies whole in one piece and every piece reads as replay's own stream, as the whole file
does (the ``dialect`` stage decides on an input's first record, ``parse`` follows source records only in a stream
that opens with one). Only a regular local file of JSON lines is cut (no stdin, URL, gzip or JSON document:
``line_start.offset_refusal``), whose first line is such an event or a run record.
"""

from __future__ import annotations

import itertools
import os
import re
import stat
from typing import Any

from replay.pipeline.engine.exactjson import loads
from replay.pipeline.engine.knobs import whole_number
from replay.pipeline.io.journals import CHUNK_BYTES
from replay.pipeline.model.records import HEAL_RECORD, RECORD_KEY, is_canonical, is_record, is_run_record
from replay.pipeline.model.runs import names_run

PIECE_BYTES = 16 << 20  # a file has a piece for each this many bytes (smaller, one costs more than it saves)
PIECE_BYTES_VARIABLE = "REPLAY_PIECE_BYTES"  # the environment's say in that (tests cut small journals)
SCAN_BYTES = 4 << 20  # how far past a planned cut a run boundary is looked for
# Where a line's run shows in its bytes, as replay and most writers write it: a line whose matches are the line before's
# is taken for one of the same run (a hint: a line is decoded to tell where they differ, or where there are none; a
# boundary the hint hides, ids whose key is written with escapes, is a cut not made, never a wrong one).
_RUN_KEY = re.compile(rb'"runId":"(?:[^"\\]|\\.)*"|"\$record":"run"')
# A piece that begins at byte s first counts the newlines before s (its lines are numbered as in the whole file), at
# about this share of the cost of reading a byte: a later piece is planned that much shorter, so all end together.
LINE_COUNT_SHARE = 0.1


def plan(path: str, parts: int, limit: int) -> list[int]:
    """The offsets ``[0, c1, ..., size]`` that cut ``path`` into at most ``parts`` pieces of about
    ``piece_bytes()``; ``[]`` when it is not cut (too small, not a file of JSON lines, no run boundary found near the
    planned cuts). ``limit``: the line limit."""
    from replay.pipeline.io.line_start import offset_refusal

    if parts < 2:
        return []
    try:
        st = os.stat(path)
    except OSError:
        return []
    if not stat.S_ISREG(st.st_mode):  # (a folder, a pipe, a device: read as they are, never cut)
        return []
    size = st.st_size
    parts = min(parts, pieces_in(size))
    if parts < 2:
        return []
    cuts = [0]
    with open(path, "rb") as f:
        if not _opens_as_replay(f.read(min(limit, SCAN_BYTES) + 1)):
            return []
        for k in range(1, parts):
            at = _boundary(f, _planned(size, k, parts), limit)
            if at is not None and at > cuts[-1] and at < size:
                cuts.append(at)
    if len(cuts) < 2 or offset_refusal(path, cuts[1], limit) is not None:  # (regular, no gzip, no document: as read reads)
        return []
    return [*cuts, size]


def _opens_as_replay(head: bytes) -> bool:
    """Does the file open with a line the ``dialect`` stage takes for replay's own stream and ``parse`` for no source
    record: an event (``_event``) or a run record, no byte order mark?"""
    end = head.find(b"\n")
    if end < 0:
        return False
    record = _object(head[:end])
    return record is not None and (_event(record) or is_run_record(record))


def _object(line: bytes) -> dict[str, Any] | None:
    if not line.startswith(b"{"):  # (a byte order mark, blanks, anything else: not cut here)
        return None
    try:
        record = loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _event(record: dict[str, Any]) -> bool:
    """An event of replay's own (``is_canonical``, no reserved record) whose runId names a run (``names_run``: an
    empty one is none, the run's before it)."""
    return not is_record(record) and is_canonical(record) and names_run(record["runId"])


def _boundary(f: Any, near: int, limit: int) -> int | None:
    """The offset of the first line from ``near`` on (within ``SCAN_BYTES``) that begins another run (``_begins``),
    it and the two lines before it no longer than ``limit``. A line is decoded only where its run keys (``_RUN_KEY``:
    every ``"runId":"..."`` and ``"$record":"run"`` written in it) are not the line before's: within a run, they mostly
    are."""
    f.seek(near)
    window = f.read(SCAN_BYTES)
    first = window.find(b"\n")
    if first < 0:
        return None
    earlier: bytes | None = None  # the line before ``before``
    before: bytes | None = None
    before_key: list[bytes] = []
    start = first + 1
    while (end := window.find(b"\n", start)) >= 0:  # (whole lines only, one at a time: nothing held but three)
        line, at, start = window[start:end], near + start, end + 1
        key = _RUN_KEY.findall(line)
        if before is not None and (not key or key != before_key) and len(line) <= limit >= len(before):
            previous, record = _object(before), _object(line)
            if previous is not None and record is not None and _begins(earlier, previous, record, limit):
                return at
        earlier, before, before_key = before, line, key
    return None


def _begins(earlier: bytes | None, before: dict[str, Any], record: dict[str, Any], limit: int) -> bool:
    """Does ``record`` begin a run that ``before`` (the line before it) is not of: an event whose runId differs from
    that of the event before it, or of the heal record before it that closes its run (right after an event of that
    run, ``earlier``: one in the middle of another run closes none); or a run record after either?"""
    if _event(before):
        after_run = True
    else:
        last = _object(earlier) if earlier is not None and len(earlier) <= limit else None
        after_run = (before.get(RECORD_KEY) == HEAL_RECORD and last is not None and _event(last)
                     and last["runId"] == before.get("runId"))
    if _event(record):
        return after_run and record["runId"] != before["runId"]
    return is_run_record(record) and after_run


def long_line_near(path: str, cuts: list[int]) -> bool:
    """Is a line longer than a read's block (``CHUNK_BYTES``) within a block of one of the inner ``cuts`` of ``path``?
    One run reads the runs beside a cut in blocks that hold such a line too, and counts its bytes as theirs (what the
    screen holds of a run: the blocks its lines came in), where a piece, reading from the cut, does not: a run that needs
    repairs may then go the slow way in parts over the whole file and whole in its piece (heal logs it otherwise).
    Within a block of the cut, lines no longer than one keep the two counts within two blocks of each other."""
    block = CHUNK_BYTES
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        for cut in cuts[1:-1]:
            lo, hi = max(0, cut - 2 * block), min(size, cut + 2 * block)
            f.seek(lo)
            data = f.read(hi - lo)
            ends: list[int | None] = [lo - 1 if lo == 0 else None]  # (where each line ends; None: beyond what was read)
            ends += [lo + m.start() for m in re.finditer(b"\n", data)]
            ends.append(hi - 1 if hi == size else None)
            for before, end in itertools.pairwise(ends):
                first = None if before is None else before + 1
                if (first is None or first < cut + block) and (end is None or end >= cut - block) and (
                        first is None or end is None or end - first > block):
                    return True
    return False


def pieces_in(size: int) -> int:
    """How many pieces a file of ``size`` bytes may be cut into: one for each ``piece_bytes()`` (a piece is about that
    long: later ones a little shorter, ``_planned``, and a cut moves on to where a run begins)."""
    return size // piece_bytes()


def piece_bytes() -> int:
    """The bytes a file has a piece for: ``PIECE_BYTES``, or the number ``REPLAY_PIECE_BYTES`` gives."""
    count = whole_number(PIECE_BYTES_VARIABLE, "bytes", f"a piece for each {PIECE_BYTES >> 20} MiB", 64 << 20)
    return PIECE_BYTES if count is None else count


def _planned(size: int, k: int, parts: int) -> int:
    """Where the ``k``-th cut of ``parts`` pieces is planned: each piece as long as the one before less what counting
    the lines before it costs (``LINE_COUNT_SHARE``): the pieces' lengths L_k = T - share * s_k add up to ``size``."""
    keep = 1 - LINE_COUNT_SHARE
    return round(size * (1 - keep ** k) / (1 - keep ** parts))
