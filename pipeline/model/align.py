"""Alignment of two sequences with a cost limit: difflib's longest matching blocks while they stay cheap, then anchors.

``difflib.SequenceMatcher`` finds the longest matching blocks; its cost grows with the number of blocks times the
length of the stretches it searches, and with how often a value repeats (the same record kind thousands of times):
quadratic on two runs that differ throughout. ``Aligner`` counts what difflib looks at (each value of A in a stretch
searched and every place of B it is found at) and gives up on it past ``LIMIT``, as git's and Myers' implementations
bound their search with a cost limit. The sequences are then aligned the cheap way, patience-style: on values that
occur once in each side of a stretch (unique matches), the longest run of them in order on both sides (a longest
increasing subsequence), extended over the equal values around them, then again within each stretch between two
anchors; a stretch with no unique match is left unmatched (its values face each other by place). That alignment is
a correct one (what it pairs is equal, in order on both sides), only not always the longest. Inputs small enough for
difflib within the limit (every run of the tests and the README) are aligned exactly as before.

Both ways count their steps (``steps``) and call ``check`` now and then (as does the caller's own work, ``tick``): a
long alignment lets an interrupt in.
"""

from __future__ import annotations

import bisect
import difflib
import itertools
from collections.abc import Callable, Hashable, Sequence
from typing import Any

LIMIT = 2_000_000  # steps difflib may take in one diff (all its alignments together) before anchors take over
ANCHORS = 4 * LIMIT  # steps after which the anchors leave the stretches left unmatched
CHECK_EVERY = 20_000  # steps between two calls of ``check``
Opcode = tuple[str, int, int, int, int]


class _OverBudget(Exception):
    """difflib would go past the limit."""


class Aligner:
    """Aligns sequences of hashable values, counting steps against one limit shared by all its alignments."""

    def __init__(self, limit: int = LIMIT, check: Callable[[], None] | None = None, anchors: int = ANCHORS) -> None:
        self.limit = limit
        self.anchor_limit = anchors
        self.check = check or _nothing
        self.steps = 0  # what difflib looked at, and what the anchors looked at: what the limits bound
        self.anchored = 0  # alignments made with anchors (difflib past the limit)
        self._work = 0  # those steps and the caller's own (``tick``): what ``check`` is called by
        self._next_check = CHECK_EVERY

    def spend(self, steps: int) -> None:
        """``steps`` of alignment: counted against the limits, and towards the next ``check``."""
        self.steps += steps
        self.tick(steps)

    def tick(self, steps: int) -> None:
        """``steps`` of the caller's own work beside the alignments (records compared): towards the next ``check``
        only, so that however much it does, difflib keeps its whole limit (its alignments stay what they were)."""
        self._work += steps
        if self._work >= self._next_check:
            self._next_check = self._work + CHECK_EVERY
            self.check()

    def opcodes(self, a: Sequence[Hashable], b: Sequence[Hashable]) -> list[Opcode]:
        """How to turn ``a`` into ``b``, as ``SequenceMatcher.get_opcodes`` says it."""
        if self.steps < self.limit:
            try:
                return [(tag, i1, i2, j1, j2) for tag, i1, i2, j1, j2 in _Bounded(self, a, b).get_opcodes()]
            except _OverBudget:
                pass
        self.anchored += 1
        return _opcodes(self._anchors(a, b), len(a), len(b))

    def _anchors(self, a: Sequence[Hashable], b: Sequence[Hashable]) -> list[tuple[int, int]]:
        """Pairs (i, j) with ``a[i] == b[j]``, increasing on both sides: patience-style, as the module says. Past
        ``anchor_limit`` steps in all, the stretches left are left unmatched (the work stays bounded)."""
        pairs: list[tuple[int, int]] = []
        todo = [(0, len(a), 0, len(b))]
        while todo and self.steps < self.anchor_limit:
            alo, ahi, blo, bhi = todo.pop()
            start = len(pairs)
            while alo < ahi and blo < bhi and a[alo] == b[blo]:  # the equal values around the anchors
                pairs.append((alo, blo))
                alo, blo = alo + 1, blo + 1
            while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
                ahi, bhi = ahi - 1, bhi - 1
                pairs.append((ahi, bhi))
            self.spend(len(pairs) - start + ahi - alo + bhi - blo)
            if alo == ahi or blo == bhi:
                continue
            anchors = _unique_in_order(a, b, alo, ahi, blo, bhi)
            pairs += anchors
            bounds = [(alo - 1, blo - 1), *anchors, (ahi, bhi)] if anchors else []
            for (i0, j0), (i1, j1) in itertools.pairwise(bounds):
                if i0 + 1 < i1 and j0 + 1 < j1:  # a stretch between two anchors: aligned on what is unique in it
                    todo.append((i0 + 1, i1, j0 + 1, j1))
        pairs.sort()
        return pairs


def _unique_in_order(a: Sequence[Hashable], b: Sequence[Hashable], alo: int, ahi: int, blo: int,
                     bhi: int) -> list[tuple[int, int]]:
    """The values occurring once in ``a[alo:ahi]`` and once in ``b[blo:bhi]``, as (i, j) pairs: the longest run of
    them in order on both sides (a longest increasing subsequence of their places in B, taken in A's order)."""
    seen_a: dict[Hashable, int] = {}
    for i in range(alo, ahi):
        seen_a[a[i]] = -1 if a[i] in seen_a else i
    seen_b: dict[Hashable, int] = {}
    for j in range(blo, bhi):
        value = b[j]
        if seen_a.get(value, -1) >= 0:
            seen_b[value] = -1 if value in seen_b else j
    common = [(i, seen_b[a[i]]) for i in range(alo, ahi) if seen_b.get(a[i], -1) >= 0 and seen_a[a[i]] == i]
    tails: list[int] = []  # tails[k]: the smallest last place in B of an increasing run of k + 1 (its index in common)
    tail_js: list[int] = []
    back: list[int] = []
    for k, (_i, j) in enumerate(common):
        at = bisect.bisect_left(tail_js, j)
        back.append(tails[at - 1] if at else -1)
        if at == len(tails):
            tails.append(k)
            tail_js.append(j)
        else:
            tails[at] = k
            tail_js[at] = j
    out: list[tuple[int, int]] = []
    k = tails[-1] if tails else -1
    while k >= 0:
        out.append(common[k])
        k = back[k]
    out.reverse()
    return out


def _opcodes(pairs: list[tuple[int, int]], la: int, lb: int) -> list[Opcode]:
    """The opcodes of an alignment given as matched pairs, increasing on both sides (as difflib makes them from its
    matching blocks)."""
    blocks: list[list[int]] = []
    for i, j in pairs:
        if blocks and blocks[-1][0] + blocks[-1][2] == i and blocks[-1][1] + blocks[-1][2] == j:
            blocks[-1][2] += 1
        else:
            blocks.append([i, j, 1])
    out: list[Opcode] = []
    i = j = 0
    for ai, bj, size in [*blocks, [la, lb, 0]]:
        tag = "replace" if i < ai and j < bj else "delete" if i < ai else "insert" if j < bj else ""
        if tag:
            out.append((tag, i, ai, j, bj))
        i, j = ai + size, bj + size
        if size:
            out.append(("equal", ai, i, bj, j))
    return out


class _Bounded(difflib.SequenceMatcher):  # type: ignore[type-arg]
    """difflib's matcher, counting what each search looks at before it searches: past the limit, it gives up."""

    def __init__(self, aligner: Aligner, a: Sequence[Hashable], b: Sequence[Hashable]) -> None:
        self.aligner = aligner
        self.found: list[int] = [0]  # found[i]: how many places of B hold a[0..i-1]'s values, summed
        super().__init__(None, a, b, autojunk=False)  # type: ignore[arg-type]
        aligner.spend(len(b))
        found = self.found
        places: dict[Hashable, list[int]] = self.b2j  # type: ignore[attr-defined]
        for value in a:
            found.append(found[-1] + 1 + len(places.get(value, ())))
        aligner.spend(len(a))

    def find_longest_match(self, alo: int = 0, ahi: Any = None, blo: int = 0, bhi: Any = None) -> Any:
        ahi = len(self.found) - 1 if ahi is None else ahi
        cost = self.found[ahi] - self.found[alo]
        if self.aligner.steps + cost > self.aligner.limit:
            raise _OverBudget
        self.aligner.spend(cost)
        return super().find_longest_match(alo, ahi, blo, bhi)


def _nothing() -> None:
    pass
