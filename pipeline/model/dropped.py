"""The lines of each input a graph run left out (a line too long, not JSON, cut off; where reading stopped), as the
stages that leave them out say it: for a later stage of the same run that judges a run by what it read
(``pair_tool_calls``: a call with no result read may have had it on such a line).

The stages share one ``DroppedLines`` per graph run (``Stage.shared``, under ``DROPPED_LINES``). A line is noted when
it is reported, before the lines after it go on down the stream, so a stage after sees it noted before it sees the
run it was in end."""

from __future__ import annotations

import bisect
from typing import Any

DROPPED_LINES = "dropped_lines"  # its key in ``Stage.shared``


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

    def note(self, source: Any, marks: int, line: Any, code: Any) -> None:
        """Line ``line`` of input ``(source, marks)`` was left out, reported as ``code`` (what has no line or source
        is not noted)."""
        if type(source) is not str or type(line) is not int:
            return
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


def dropped_lines(shared: dict[str, Any]) -> DroppedLines:
    """The run's ``DroppedLines`` (made on first use)."""
    found = shared.get(DROPPED_LINES)
    if found is None:
        found = shared[DROPPED_LINES] = DroppedLines()
    return found  # type: ignore[no-any-return]
