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


class DroppedLines:
    """Per input (source name): the numbers of the lines left out, in order, each with the code it was reported as."""

    def __init__(self) -> None:
        self._lines: dict[str, list[int]] = {}
        self._codes: dict[tuple[str, int], str] = {}

    def note(self, source: Any, line: Any, code: Any) -> None:
        """Line ``line`` of ``source`` was left out, reported as ``code`` (what has no line or source is not noted)."""
        if type(source) is not str or type(line) is not int:
            return
        lines = self._lines.setdefault(source, [])
        if (source, line) not in self._codes:
            bisect.insort(lines, line)
        self._codes[(source, line)] = str(code)

    def first_between(self, source: str, after: int, upto: int) -> tuple[int, str] | None:
        """The first line left out of ``source`` after line ``after`` and no later than ``upto``, with its code."""
        lines = self._lines.get(source)
        if not lines:
            return None
        k = bisect.bisect_right(lines, after)
        if k < len(lines) and lines[k] <= upto:
            return lines[k], self._codes[(source, lines[k])]
        return None

    def forget_upto(self, source: str, upto: int) -> None:
        """Lines of ``source`` up to ``upto`` are of runs judged already: no longer kept (memory stays bounded)."""
        lines = self._lines.get(source)
        if not lines:
            return
        k = bisect.bisect_right(lines, upto)
        for line in lines[:k]:
            del self._codes[(source, line)]
        del lines[:k]


def dropped_lines(shared: dict[str, Any]) -> DroppedLines:
    """The run's ``DroppedLines`` (made on first use)."""
    found = shared.get(DROPPED_LINES)
    if found is None:
        found = shared[DROPPED_LINES] = DroppedLines()
    return found  # type: ignore[no-any-return]
