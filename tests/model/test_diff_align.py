"""The bounded alignment: difflib's while cheap, anchors past the cost limit; a correct alignment either way."""

from __future__ import annotations

import difflib
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.model.align import LIMIT, Aligner
from replay.pipeline.model.diff import Ignore, diff_runs, entry

IGNORE = Ignore.of()


def valid(ops: list, a: list, b: list) -> bool:
    """Opcodes that cover both sequences in order, their equal stretches equal."""
    i = j = 0
    for tag, i1, i2, j1, j2 in ops:
        if (i1, j1) != (i, j) or (tag == "equal" and a[i1:i2] != b[j1:j2]):
            return False
        i, j = i2, j2
    return (i, j) == (len(a), len(b))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=40), st.lists(st.integers(0, 6), max_size=40), st.integers(0, 60))
def test_past_the_limit_the_alignment_is_still_a_correct_one(a: list, b: list, limit: int):
    ops = Aligner(limit=limit).opcodes(a, b)
    assert valid(ops, a, b)


def test_below_the_limit_the_alignment_is_difflib_s():
    rng = random.Random(7)
    for _ in range(50):
        a = [rng.randrange(8) for _ in range(rng.randrange(60))]
        b = [rng.randrange(8) for _ in range(rng.randrange(60))]
        assert Aligner().opcodes(a, b) == difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()


def test_anchors_find_what_is_unique_to_both_sides():
    a = ["x", "u1", "y", "u2", "z", "x"]
    b = ["y", "u1", "x", "x", "u2", "z"]
    ops = Aligner(limit=0).opcodes(a, b)
    assert valid(ops, a, b)
    assert ("equal", 3, 5, 4, 6) in ops  # u2 (unique to both), and z after it
    assert sum(i2 - i1 for tag, i1, i2, _j1, _j2 in ops if tag == "equal") == 3  # and y or u1 (not both: out of order)
    assert Aligner(limit=0).opcodes(a, a) == [("equal", 0, 6, 0, 6)]


def records(rng: random.Random, n: int) -> list:
    out = [{"$record": "run", "runId": "r", "prompt": "p", "status": "ok"}]
    out += [{"seq": k + 1, "type": rng.choice("abcd"), "runId": "r", "payload": {"v": rng.randrange(10**9)}}
            for k in range(n)]
    return [entry(r, k, IGNORE, line=k) for k, r in enumerate(out, start=1)]


def test_two_runs_that_differ_throughout_are_compared_with_bounded_work():
    # 20,000 records a side, of four kinds, none alike: difflib's kind alignment alone was quadratic (minutes)
    rng = random.Random(1)
    a, b = records(rng, 20_000), records(rng, 20_000)
    aligner = Aligner()
    result = diff_runs(a, b, aligner)
    assert aligner.anchored >= 1  # difflib gave up at the limit
    assert aligner.steps < 5 * LIMIT
    assert result.equal == 1 and len(result.differences) == 20_000
    assert result.first is not None and result.first["a"]["index"] == 2


def test_an_alignment_lets_an_interrupt_in():
    calls = []
    rng = random.Random(2)
    a, b = records(rng, 5_000), records(rng, 5_000)
    diff_runs(a, b, Aligner(check=lambda: calls.append(1)))
    assert calls


def test_records_compared_beside_the_alignments_leave_difflib_its_whole_limit():
    """The records a diff compares field by field let an interrupt in (``tick``) but spend none of difflib's limit: a
    diff with many changed fields went on to align its kinds with anchors, not as difflib does, under the limit."""
    calls = []
    aligner = Aligner(limit=1_000, check=lambda: calls.append(1))
    aligner.tick(10_000_000)
    a, b = list("abcabdab"), list("abdcabab")
    assert aligner.opcodes(a, b) == difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    assert (aligner.anchored, aligner.steps < 1_000, calls) == (0, True, [1])
