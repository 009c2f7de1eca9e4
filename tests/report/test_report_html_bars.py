"""The html timeline's bars are chosen in one pass (``render_html._drawn_calls``): the calls a list of every pair
chose (all up to MAX_BARS, else the failed first, in call order), over lists and over spooled calls."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.report import render_html, spool
from replay.pipeline.report.spool import SpooledSummaries


def _chosen_whole(calls: list[dict[str, Any]], where: list[dict[str, Any]], most: int) -> list[tuple[Any, Any]]:
    pairs = list(zip(calls, where, strict=True))  # (as it was chosen: every pair held)
    if len(pairs) <= most:
        return pairs
    failed = [k for k, (c, _) in enumerate(pairs) if c["status"] != "ok"][:most]
    rest = [k for k, (c, _) in enumerate(pairs) if c["status"] == "ok"][: most - len(failed)]
    return [pairs[k] for k in sorted(failed + rest)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["ok", "error"])), st.integers(min_value=0, max_value=6))
def test_the_bars_are_those_every_pair_chose(statuses: list[str], most: int) -> None:
    calls = [{"status": status, "seq": k} for k, status in enumerate(statuses)]
    where = [{"index": k} for k in range(len(calls))]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(render_html, "MAX_BARS", most)
        assert render_html._drawn_calls(calls, where) == _chosen_whole(calls, where, most)


def test_the_bars_of_spooled_calls_are_those_of_the_list() -> None:
    n = 3 * spool.CALLS_A_PIECE
    calls = [{"status": "error" if k % 5 == 0 else "ok", "seq": k} for k in range(n)]
    where = [{"index": k} for k in range(n)]
    spooled = SpooledSummaries()
    try:
        spooled.append({"toolCalls": {"calls": calls}, "timeline": {"calls": where}})
        back = spooled[0]
        assert isinstance(back["toolCalls"]["calls"], spool.SpooledCalls)
        drawn = render_html._drawn_calls(back["toolCalls"]["calls"], back["timeline"]["calls"])
    finally:
        spooled.close()
    assert drawn == _chosen_whole(calls, where, render_html.MAX_BARS)
    with pytest.raises(ValueError):  # (the timeline has a place for each call)
        render_html._drawn_calls(calls, where[:-1])
