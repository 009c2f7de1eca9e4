"""The lines of each input a graph run left out (a line too long, not JSON, cut off; where reading stopped), and the
elements of a JSON document's array left out (no object), as the stages that leave them out say it: for a later stage
of the same run that judges a run by what it read (``pair_tool_calls``: a call with no result read may have had it on
such a line; ``validate``: an element that is no object takes its place in its run).

The stages share one ``DroppedLines`` per graph run (``Stage.shared``, under ``DROPPED_LINES``). A line is noted when
it is reported, before the lines after it go on down the stream, so a stage after sees it noted before it sees the
run it was in end."""

from __future__ import annotations

import bisect
from typing import Any

from replay.pipeline.engine import exactjson

DROPPED_LINES = "dropped_lines"  # its key in ``Stage.shared``
# the code of a record that is JSON but no object (a line, an array's element): left out, it takes its place in its
# run (``validate``: the event after it may have its place's seq, as in an artifact)
NOT_OBJECT = "E_EVENT_NOT_OBJECT"


def not_object_message(line: int | None) -> str:
    """What ``parse`` (and a session's reading for ReplayModel, ``session_lines``) says of a JSON line that is no object."""
    return f"line {line} is JSON but not an object"


NOTED_MOST = 65_536  # lines noted at most (memory stays bounded); past them, what was not noted is not known


class DroppedLines:
    """Per input (``model.runs.Input``: its name and how many of read's marks of that name came before it, so a file
    read twice is two inputs): the numbers of the lines left out, in order, each with the code it was reported as.
    Nothing is forgotten while the run goes on (a stage ahead may have noted the lines of a run after the one judged),
    up to ``NOTED_MOST`` lines: after that, ``complete`` is False."""

    def __init__(self) -> None:
        self._lines: dict[Any, list[int]] = {}
        self._codes: dict[tuple[Any, int], str] = {}
        self.complete = True

    def note(self, source: Any, marks: int, line: Any, code: Any, pointer: Any = None) -> None:
        """Line ``line`` of input ``(source, marks)`` was left out, reported as ``code``; or, in a JSON document (no
        line), its element at ``pointer`` (``$[3]``: ``place``). What has no place or source is not noted."""
        if type(source) is not str:
            return
        if type(line) is not int:
            at = element_place(pointer)
            if at is None:
                return
            source, line = ((source, marks), at[0]), at[1]
        else:
            source = (source, marks)
        if (source, line) in self._codes:
            return
        if len(self._codes) >= NOTED_MOST:
            self.complete = False
            return
        bisect.insort(self._lines.setdefault(source, []), line)
        self._codes[(source, line)] = str(code)

    def first_between(self, source: Any, after: int, upto: int) -> tuple[int, str] | None:
        """The first line left out of input ``source`` (``Input``) after line ``after`` and no later than ``upto``,
        with its code."""
        lines = self._lines.get(source)
        if not lines:
            return None
        k = bisect.bisect_right(lines, after)
        if k < len(lines) and lines[k] <= upto:
            return lines[k], self._codes[(source, lines[k])]
        return None


    def count_between(self, source: Any, after: int, upto: int, code: str) -> int:
        """How many places of ``source`` (an ``Input``, or ``(Input, prefix)`` for a document's elements: ``place``)
        after ``after`` and no later than ``upto`` were left out as ``code``."""
        places = self._lines.get(source)
        if not places or upto <= after:
            return 0
        found = places[bisect.bisect_right(places, after):bisect.bisect_right(places, upto)]
        return sum(self._codes[(source, k)] == code for k in found)


def element_place(pointer: Any) -> tuple[str, int] | None:
    """The array and place (from 1) of a JSON document's element at ``pointer``: ``("$", 4)`` for ``$[3]``,
    ``("$.events", 1)`` for ``$.events[0]``; None for no such pointer."""
    if type(pointer) is not str or not pointer.endswith("]"):
        return None
    cut = pointer.rfind("[")
    index = pointer[cut + 1:-1]
    if cut < 1 or not index.isdigit():
        return None
    return pointer[:cut], int(index) + 1


def place(source: Any, line: Any, pointer: Any) -> tuple[Any, int] | None:
    """Where a record of input ``source`` (an ``Input``) stands, as ``DroppedLines`` notes the places left out: its
    line, under ``source``; else its element's place, under ``(source, array)``; None when neither is known."""
    if type(line) is int:
        return source, line
    at = element_place(pointer)
    return None if at is None else ((source, at[0]), at[1])


def fitted(mark: dict[str, Any], limit: int) -> dict[str, Any]:
    """The dropped record ``mark`` cut to a line of at most ``limit`` bytes (the limit its input was read under, so a
    read of the stream under the same limit takes it): its ``original`` (the line left out, escaped in it, which can
    make the record longer than the line was) is cut at the end, and ``originalBytes`` says how long it was in UTF-8.
    Its code, message, place and ``received`` stay: all a parse down the pipe reports, and all heal's ``drop_torn_line``
    logs (with the ``original`` cut). A record too long with ``original`` empty is left so: that much it needs. Its
    ``blankBefore`` goes before any of ``original`` is cut (a join down the pipe then spans no blank line it held)."""
    if len(exactjson.dumps(mark)) <= limit:
        return mark
    if BLANK_BEFORE in mark:  # (the blank lines before the line go first: without them it is a piece still)
        return fitted({k: v for k, v in mark.items() if k != BLANK_BEFORE}, limit)
    original = mark.get("original")
    if type(original) is not str:
        return mark
    whole = len(original.encode("utf-8", "surrogatepass"))
    low, high = 0, len(original) - 1  # (the longest head that fits: a character can take up to 6 bytes escaped)
    while low < high:
        mid = (low + high + 1) // 2
        if len(exactjson.dumps({**mark, "original": original[:mid], ORIGINAL_BYTES: whole})) <= limit:
            low = mid
        else:
            high = mid - 1
    return {**mark, "original": original[:low], ORIGINAL_BYTES: whole}


ORIGINAL_BYTES = "originalBytes"  # a cut dropped record's field: how long its ``original`` was (``fitted``)
# a dropped record's field: the blank lines read left out just before its line, as they were, one after another with a
# newline between (only when one held blanks, spaces, tabs or carriage returns: the empty ones its line and offset
# tell), so join_split_records down the pipe joins a record over them as from the file (``MarkedLines``)
BLANK_BEFORE = "blankBefore"


class BlankLines:
    """Blank lines one after another in an input, as a parse that marks the lines it leaves out reads them: the
    ``blankBefore`` of the dropped record of the line after them (``text``)."""

    __slots__ = ("count", "limit", "lines", "size")

    def __init__(self, limit: int) -> None:
        self.limit = limit  # the longest a dropped record may be: blank lines longer together go in none (``fitted``)
        self.count = 0
        self.size = 0  # their bytes, each newline too
        self.lines: list[bytes] = []

    def add(self, raw: bytes) -> None:
        self.count += 1
        self.size += len(raw) + 1
        if self.size <= self.limit:  # (past it they are only counted: nothing of them is held)
            self.lines.append(raw)

    def text(self) -> str | None:
        """The lines as ``blankBefore`` holds them; None when none holds a blank (empty lines: a dropped record's
        line and offset tell them) or they are too long for one."""
        if self.size > self.limit or not any(self.lines):
            return None
        return b"\n".join(self.lines).decode("ascii")


def dropped_lines(shared: dict[str, Any]) -> DroppedLines:
    """The run's ``DroppedLines`` (made on first use)."""
    found = shared.get(DROPPED_LINES)
    if found is None:
        found = shared[DROPPED_LINES] = DroppedLines()
    return found  # type: ignore[no-any-return]
