"""A run's calls counted by tool (``model._tool_stats``): each tool's totals written as ``number`` writes them, whatever
its calls' lengths are (whole, fractional, unknown, summing past a double), its ok count from the call statuses."""

from __future__ import annotations

import itertools
import random
from array import array
from typing import Any

import pytest

from replay.pipeline.report.model import _sum, _tool_stats, maybe_number

LENGTHS = [0, 1, 400, 12.5, 0.1, 0.2, 1 / 3, 2.0004, 1e308, 1.7e308, None, 10 ** 30, 3.0, 0.0005]


def by_tool_as_specified(tools: list[int], names: list[str], statuses: list[str], lengths: list[Any]) -> dict[str, Any]:
    """Each tool's stats as the report writes them, straight from the definition: calls, ok and error counted, the time
    of the calls whose length is known added up (``_sum``) and their longest, each as ``number`` writes it."""
    out = {}
    for tool in sorted(range(len(names)), key=names.__getitem__):
        rows = [row for row, t in enumerate(tools) if t == tool]
        known = [lengths[row] for row in rows if lengths[row] is not None]
        ok = sum(statuses[row] == "ok" for row in rows)
        out[names[tool]] = {"calls": len(rows), "ok": ok, "error": len(rows) - ok,
                            "durationMs": maybe_number(_sum(known, 0.0)) if known else None,
                            "maxMs": maybe_number(max(0.0, *known)) if known else None}
    return out


def _check(tools: list[int], names: list[str], statuses: list[str], lengths: list[Any]) -> None:
    got = _tool_stats(array("I", tools), names, statuses, lengths)
    want = by_tool_as_specified(tools, names, statuses, lengths)
    assert list(got["byTool"].items()) == list(want.items())
    for tool, stats in got["byTool"].items():  # (types too: 3 and 3.0 are written differently)
        assert [type(value) for value in stats.values()] == [type(value) for value in want[tool].values()]
    assert (got["total"], got["ok"], got["error"]) == (len(tools), statuses.count("ok"), len(tools) - statuses.count("ok"))


@pytest.mark.parametrize("lengths", [[400.0, 12.0], [0.1, 0.2], [1 / 3, 2 / 3], [1e308, 1e308], [10 ** 30, 0.5],
                                     [None, None], [None, 2.0005], [7, 8], [0.0, 0.0]])
def test_by_tool_totals_written_as_number_writes_them(lengths: list[Any]) -> None:
    _check([0, 0], ["bash"], ["ok", "error"], lengths)
    _check([0, 1], ["bash", "read"], ["ok", "ok"], lengths)


def test_by_tool_over_generated_runs() -> None:
    rnd = random.Random(11)
    for _ in range(400):
        names = rnd.sample(["bash", "read", "edit", "grep", "web", "a", "z"], rnd.randint(1, 5))
        n = rnd.randint(1, 12)
        tools = [rnd.randrange(len(names)) for _ in range(n)]
        tools[:len(names)] = range(len(names))[:n]  # (each tool named has a call, as a pairing's names do)
        if len(tools) < len(names):
            names = names[:len(tools)]
        statuses = [rnd.choice(["ok", "ok", "error"]) for _ in range(n)]
        lengths = [rnd.choice(LENGTHS) for _ in range(n)]
        _check(tools, names, statuses, lengths)


def test_a_whole_sum_is_an_int_and_a_fraction_is_rounded() -> None:
    stats = _tool_stats(array("I", [0, 0, 1]), ["b", "a"], ["ok"] * 3, [0.1, 0.2, 5.0])["byTool"]
    assert stats["b"]["durationMs"] == 0.3 and stats["b"]["maxMs"] == 0.2
    assert stats["a"]["durationMs"] == 5 and type(stats["a"]["durationMs"]) is int and list(stats) == ["a", "b"]
    assert list(itertools.chain.from_iterable(s.keys() for s in stats.values())) == \
        ["calls", "ok", "error", "durationMs", "maxMs"] * 2
