"""write_healed.in_line_order: a heal log's notices and notes in one order, however the stages ran."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from replay.stages.write_healed import in_line_order


def merged_by_hand(notices: list[dict[str, Any]], notes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The merge as it was written by hand before ``heapq.merge`` did it: the order it gave is the order kept."""
    out: list[dict[str, Any]] = []
    waiting = iter(notes)
    note = next(waiting, None)
    for notice in notices:
        line = notice.get("line")
        if line.__class__ is int:
            while note is not None and (note["line"] if note.get("line").__class__ is int else float("inf")) < line:
                out.append(note)
                note = next(waiting, None)
        out.append(notice)
    if note is not None:
        out.append(note)
    out.extend(waiting)
    return out


# a line number, or none (absent, null, a bool: no line)
lines = st.one_of(st.integers(min_value=1, max_value=6), st.none(), st.just(True))


def entries(kind: str) -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.lists(lines, max_size=8).map(
        lambda found: [{"kind": kind, "n": i} | ({} if line is None else {"line": line}) for i, line in enumerate(found)])


@given(entries("notice"), entries("note"))
def test_the_order_is_as_it_was_whatever_order_the_lines_came_in(notices, notes):
    assert in_line_order(notices, notes) == merged_by_hand(notices, notes)


def test_a_notice_with_no_line_holds_no_note_back_and_a_note_with_none_comes_last():
    notices = [{"line": 3}, {"rule": "no line"}, {"line": 5}]
    notes = [{"line": 1}, {"line": 4}, {"note": "no line"}]
    assert in_line_order(notices, notes) == [{"line": 1}, {"line": 3}, {"rule": "no line"}, {"line": 4}, {"line": 5},
                                             {"note": "no line"}]
