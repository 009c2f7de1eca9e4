"""``UsageSum``, the one rule a usage's counts and costs are added up by (a run's, all runs', a model call's span, the
run's span): ints stay exact ints however large, and a float sum, number by number or a column at a time, is settled to
the exactly rounded sum of its numbers' doubles (``math.fsum``) but for at most its last bit, which ``count_shown``
drops."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.report.model import UsageSum

# counts and costs (>= 0) whose sum a double holds the whole part of (``exact_plus`` is no plain add past 2**53)
costs = st.lists(st.floats(min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False), min_size=1, max_size=200)


@settings(max_examples=300, deadline=None)
@given(costs, st.integers(1, 5), st.sampled_from([0, None]))
def test_the_settled_sum_of_floats_is_their_fsum_but_for_its_last_bit(values: list[float], parts: int,
                                                                       start: int | None) -> None:
    exact = math.fsum(values)
    one_by_one, by_columns = UsageSum(start), UsageSum(start)
    for value in values:
        one_by_one.add("costUsd", value)
    size = -(-len(values) // parts)
    for i in range(0, len(values), size):  # (a batch's column at a time)
        by_columns.add_column("costUsd", values[i:i + size])
    for sums in (one_by_one, by_columns):
        settled = sums.settled()["costUsd"]
        assert abs(settled - exact) <= math.ulp(exact), (settled, exact)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 10 ** 30), min_size=1, max_size=50), st.sampled_from([0, None]))
def test_a_sum_of_ints_is_their_exact_int(values: list[int], start: int | None) -> None:
    one_by_one, by_column = UsageSum(start), UsageSum(start)
    for value in values:
        one_by_one.add("inputTokens", value)
    by_column.add_column("inputTokens", values)
    for sums in (one_by_one, by_column):
        settled = sums.settled()["inputTokens"]
        assert settled.__class__ is int and settled == sum(values)


def test_a_key_is_held_once_something_is_added() -> None:
    sums = UsageSum()
    assert sums.settled() == {}
    sums.add("costUsd", 0.1)
    sums.add_column("inputTokens", [1, 2])
    assert sums.settled() == {"costUsd": 0.1, "inputTokens": 3}
