"""SummarizeRepairs: after each run that heal repaired, adds a heal record counting its repairs by rule."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch, first_line
from replay.pipeline.engine.registry import register
from replay.pipeline.model.records import HEAL_RECORD, RECORD_KEY, RUN_DROPPED, RUN_RECORD, RUNS_DROPPED
from replay.pipeline.model.repairs import DROP_TORN_LINE, counts_as_repair
from replay.pipeline.model.runs import Input, Run, RunScoped, lane_runs, repaired_together
from replay.stages.join_split_records import RULE as JOIN

_INPUT_END = object()  # the key of an input's cut-off last line among the repairs left at the end
Held = list[tuple[Any, str, int]]  # repairs logged and not yet counted: (line, rule, count) each


@register("heal_summary")
class SummarizeRepairs(RunScoped):
    summary = "Take the heal rules' repairs ports and the healed stream; add {\"$record\": \"heal\"} after each repaired run."
    ports = ("errors",)

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # The repairs logged and not yet counted, by input and run id; an input's cut-off last line by its name.
        self.pending: dict[tuple[Input, Any], Held] = {}
        self._torn: dict[Any, Held] = {}  # per input name, oldest first (``end_run``)
        self._torn_counted: set[Input] = set()  # the inputs whose last run counted its cut-off last line
        self._last: dict[Input, Any] = {}  # per input: the last line of the last run that passed here (None: not known)
        # Per input: the last line the rules are known to have passed (a line of a batch that came here, or of a rule's
        # repair); a run that ends with its batch ends there (``_passed``). A join's repair is of a line still to come:
        # cut_runs logs it just before the line's run goes on (parse, when it leaves the line out), before the rules.
        self._seen: dict[Input, int] = {}
        self._with_batch = False  # while a run ends with its batch (``closes_run``, the screen's repaired run)
        self._order: dict[Input, int] = {}  # the inputs, in the order their lines came here
        self._vanished: list[tuple[tuple[Input, Any], Held]] = []  # runs dropped whole, each with its repairs (``_seal``)

    def __call__(self, batch: Batch) -> Batch | list[Batch] | None:  # type: ignore[override]
        if batch.port is None and batch.lane is not None and "runs" in batch.lane:
            return self._together(batch)
        if batch.port is None:
            self._passed(batch)
            self._with_batch = batch.closes_run
            try:
                out = super().__call__(batch)
            finally:
                self._with_batch = False
            source = self.inputs.at(batch.source)
            self._order.setdefault(source, len(self._order))
            if batch.lane is not None:  # a run the screen repaired (its lines as columns): its repairs came in before it
                lines = batch.lines
                run = Run(batch.lane["run"], None, batch.source, input=source)
                if batch.lane["counts"]:  # its repairs, counted (no heal log is written): of its lines, whichever
                    self.pending.setdefault((source, run.run_id), []).extend(
                        (None, rule, n) for rule, n in batch.lane["counts"].items())
                self.begin_run(run)
                self._place(run, first_line(lines, 0), None, batch, 0)
                self._with_batch = True
                try:
                    ended = self.end_run(run)
                finally:
                    self._with_batch = False
                for record in ended:
                    batch.append_line(exactjson.dumps(record))
                self._last[source] = next(filter(None, reversed(lines)), None)  # (its end may be invented)
            elif batch.clean is not None and len(batch):  # whole runs, passed as they came
                first = batch.at("lines", 0)
                last = self._last.get(source, 0)  # (0: no run of the input came yet, its first line is 1)
                if self.pending and last is not None and first is not None and first > last + 1:
                    self._seal(source, last, first, None, batch, 0)
                self._last[source] = batch.at("lines", -1)
            return out
        for entry in batch.events or ():
            n = counts_as_repair(entry)
            if n:
                # A run is known by its input and its id: two files may well use the same runId. A cut-off last
                # line names no run: it is its input's last run's, however many runs of that input this batch holds.
                repair = (line := entry.get("line"), rule := str(entry.get("rule")), n)
                if entry.get("rule") == DROP_TORN_LINE:
                    self._torn.setdefault(entry.get("source"), []).append(repair)
                    continue
                # A rule's repairs of a batch come here just before it, after the mark that went on alone before
                # the input's first batch, and before the next input's: a repair is of the input its source is in now.
                key = (self.inputs.at(entry.get("source")), entry.get("runId"))
                if rule != JOIN and line.__class__ is int and line > self._seen.get(key[0], 0):
                    self._seen[key[0]] = line  # (a rule's repairs of a batch come just before it)
                held = self.pending.get(key)
                if held is None:
                    held = self.pending[key] = []
                held.append(repair)
        return None

    def _together(self, batch: Batch) -> Batch | list[Batch]:
        """Runs the screen repaired, sent on as one batch (``repaired_together``): each taken as it would be alone (where
        it lies, its heal record after it), then one batch again, after the end of the run in progress before them."""
        before: list[Batch] = []
        runs = lane_runs(batch)
        for run in runs:
            out = self(run)
            if isinstance(out, list):  # (what the end of the run in progress adds, before the first)
                *ended, last = out
                assert last is run
                before += ended
        together = repaired_together(runs)
        return [*before, together] if before else together

    # where a run lies in its input: its repairs are those logged there ----------------------------------------
    def _passed(self, batch: Batch) -> None:
        """The lines of ``batch`` passed the rules (``_seen``)."""
        if not len(batch):
            return
        if batch.clean is not None and batch.lane is None:  # (lines as they came: the last is the highest)
            top = batch.at("lines", -1)
        else:
            top = max(filter(None, batch.lines), default=None)
        if top is not None:
            source = self.inputs.at(batch.source)
            if top > self._seen.get(source, 0):
                self._seen[source] = top

    def _new_run(self, batch: Batch, i: int, record: dict[str, Any], rid: Any, source: str) -> int:
        # (the run in progress ends here, ``Run.ends_before``: at the first line from the input from here on; a rule may
        # have put an event of its own first, such as a run_started)
        first = first_line(batch.lines, i)
        after = super()._new_run(batch, i, record, rid, source)
        if self.run is not None:
            declared_at = batch.lines[i] if record.get(RECORD_KEY) == RUN_RECORD else None
            self._place(self.run, first, declared_at, batch, i)
        return after

    def _place(self, run: Run, first: Any, declared_at: Any, batch: Batch, i: int) -> None:
        """Where ``run`` begins in its input: at its run record (``declared_at``: a run record keeps what came before
        it apart; but a repair that names no run, logged at a line no run before it is in, is its: ``unnamed_from``),
        else right after the last line of the run before it (an event dropped at its start is its; lines
        that go back are another input of the same name), or of a run dropped whole between them (``_seal``); it
        begins at column ``i`` of ``batch``."""
        source = _input(run)
        last = self._last.get(source, 0)  # (0: no run of the input came yet, its first line is 1; None: not known)
        start = None if last is None else last + 1
        if self.pending and last is not None and first is not None and first > last + 1:
            start = self._seal(source, last, first if declared_at is None else declared_at,
                               run.run_id if declared_at is None else None, batch, i)
        if declared_at is not None:
            run.state["from"] = declared_at
            if start is not None and start < declared_at:  # (lines that no run before it took: ``end_run``)
                run.state["unnamed_from"] = start
        elif start is not None and first is not None and first >= start:
            run.state["from"] = start
        run.state["top"] = first

    def _seal(self, source: Input, last: int, begins: int, own: Any, batch: Batch, i: int) -> int:
        """Between line ``last`` (of the run before) and line ``begins`` (where a run begins) lie lines that came to no
        run here: the repairs logged there for runs of another id than ``own`` (the run that begins, whose events
        dropped at its start are its) are of runs a rule dropped whole, which no later run takes. Each is put aside
        with its repairs (``_vanished``): a stretch of lines logged for one run id (the runs of an input are cut where
        the run id changes). Lines still to come in ``batch`` (from column ``i``) are no such run's: a run may come
        again out of its place (a NATS message delivered again). Returns the line the run that begins begins at."""
        lined = sorted(((line, rid, repair) for (at, rid), held in self.pending.items() if at == source
                        for repair in held if (line := repair[0]) is not None and last < line < begins), key=_line)
        if not lined:
            return last + 1
        ahead = set(batch.lines[i:])
        kept = [entry for entry in lined if entry[0] not in ahead]
        gap = [(line, owner, repair, rid) for (line, rid, repair), owner in zip(kept, _owners([rid for _, rid, _ in kept]),
                                                                             strict=True) if owner is not None]
        cut = len(gap)
        while cut and own is not None and gap[cut - 1][1] == own:
            cut -= 1  # the run's own, dropped at its start
        runs = [((source, rid), held) for rid, held in _stretches(gap[:cut])]
        taken: dict[Any, Counter[tuple[Any, str, int]]] = {}  # per run id logged: the repairs put aside
        for _, _, repair, rid in gap[:cut]:
            taken.setdefault(rid, Counter())[repair] += 1
        for rid, counts in taken.items():  # each leaves its run's pending repairs once, in one pass (not a remove each)
            held = self.pending[(source, rid)]
            held[:] = [repair for repair in held if not _take(counts, repair)]
            if not held:
                del self.pending[(source, rid)]
        self._vanished += runs
        return gap[cut][0] if cut < len(gap) else (gap[cut - 1][0] + 1 if cut else last + 1)

    def on_events(self, batch: Batch, start: int, end: int) -> None:
        """Events pass through untouched; only where a run lies in its input matters here (its last line so far)."""
        run = self.run
        top = max(filter(None, batch.lines[start:end]), default=None)  # (line numbers start at 1)
        if top is not None and run is not None and (run.state.get("top") is None or top > run.state["top"]):
            run.state["top"] = top

    def flush(self) -> Batch | None:
        """The last run's heal record, then one for each run whose repairs no run here took: a run all of whose events
        a rule dropped (an orphaned result after another run's event cut its run in two) never reaches this stage,
        and no run of its id holds the lines it was logged at. Its repairs are logged; they are counted at the end,
        rather than lost or put with another run (``_count``), one heal record for each such run (``_seal``, ``_apart``),
        in the order of their inputs and lines (not the order the rules' logs happened to come in)."""
        tail = super().flush()
        left = []
        names = []  # the input each of them is of, by name
        pending = [*self._vanished, *_apart(self.pending), *self._torn_left()]
        for (source, run_id), held in sorted(pending, key=self._input_order):
            counts: Counter[str] = Counter()
            for _line, rule, n in held:
                counts[rule] += n
            if counts:
                left.append(self._record(None if run_id is _INPUT_END else run_id, counts) | {RUN_DROPPED: True})
                names.append(source[0])
        self.pending, self._vanished, self._torn = {}, [], {}
        self.publish(RUNS_DROPPED, len(left))  # (one run over a file in pieces writes these at its end: ``cli/pieces.py``)
        if not left:
            return tail
        if tail is None:  # no run ended here (every run of the input was dropped, or there was none): under the name of
            return Batch.of(left, names[0])  # the input of the first (heal --in/--out, an input a graph, writes them in its file)
        for record in left:
            tail.insert(len(tail), record)
        return tail

    def end_run(self, run: Run) -> list[dict[str, Any]]:
        counts: Counter[str] = Counter()
        source = _input(run)
        top, after = run.state.get("top"), run.ends_before  # (the next run's line, when the input goes on)
        if after is None and self._with_batch and source in self._seen:
            after = self._seen[source] + 1  # it ends with its batch: the next run begins after the lines passed so far
        end = after if after is not None and top is not None and after > top else None
        self._last[source] = top
        # its repairs: those of its id, and those that name no run (a record written across lines that names none,
        # joined before its line reached the rules), logged at a line of its stretch of the input; for those, its
        # stretch begins before its run record where no run took the lines before it (no run of the input came before
        # them: the run before takes those up to the next run's first line): a run record keeps earlier runs of its id
        # apart, but such a line is in no other run (it was counted at the end as a dropped run's, "runId": null)
        first = run.state.get("from")
        self._count((source, run.run_id), counts, first, end)
        self._count((source, None), counts, run.state.get("unnamed_from", first), end)
        torn = self._torn.get(run.source)
        # (another run of this input begins here, or where its batch ends, ``ends_before``: its cut-off last line is a
        # later run's)
        if torn and not self.run_follows and not (self._with_batch and run.ends_before is not None):
            # The input ends: its cut-off last line is logged by now, maybe before its mark (a pipe's batch of several
            # inputs logs the cut-off lines of all but its last first). An input has one: the oldest of its name.
            _, rule, n = torn.pop(0)
            counts[rule] += n
            self._torn_counted.add(source)
        if not counts:
            return []
        return [self._record(run.run_id, counts)]

    def _count(self, key: tuple[Input, Any], counts: Counter[str], first: Any, end: Any) -> None:
        """Take into ``counts`` the repairs of ``key`` logged at a line from ``first`` (where the run begins, ``_place``)
        to before ``end`` (where the next run begins), or at no line; a bound None is none. What lies outside belongs
        to another run of that id: one whose every event a rule dropped, which never comes here; it is counted at the
        end (``flush``), whichever way the input was cut."""
        held = self.pending.pop(key, None)
        if not held:
            return
        kept = []
        for line, rule, n in held:
            if line is None or ((first is None or line >= first) and (end is None or line < end)):
                counts[rule] += n
            else:
                kept.append((line, rule, n))
        if kept:
            self.pending[key] = kept

    def _torn_left(self) -> list[tuple[tuple[Input, Any], Held]]:
        """The cut-off last lines no run counted (every run of their input was dropped), each its input's: the inputs
        of that name whose last run counted none, in turn."""
        left: list[tuple[tuple[Input, Any], Held]] = []
        for name, held in self._torn.items():
            free = [source for source in self._order if source[0] == name and source not in self._torn_counted]
            for k, repair in enumerate(held):
                left.append(((free[k] if k < len(free) else self.inputs.at(name), _INPUT_END), [repair]))
        return left

    def _input_order(self, item: tuple[tuple[Input, Any], Held]) -> tuple[int, str, int, float]:
        """Where the repairs of ``item`` lie: their input's place (an input none of whose lines came here goes last,
        by name), then their first line."""
        (source, _), held = item
        rank = self._order.get(source)
        first = min((line for line, _, _ in held if line is not None), default=math.inf)
        return (len(self._order), str(source[0]), source[1], first) if rank is None else (rank, "", 0, first)

    @staticmethod
    def _record(run_id: Any, counts: Counter[str]) -> dict[str, Any]:
        return {"$record": HEAL_RECORD, "runId": run_id, "repairs": sum(counts.values()), "byRule": dict(sorted(counts.items()))}


def _input(run: Run) -> Input:
    """The input ``run`` is of, to its end (a run ends at the next input's mark as its own input's)."""
    assert run.input is not None  # (this stage's runs are told their input: ``RunScoped``'s, and its own)
    return run.input


def _take(counts: Counter[tuple[Any, str, int]], repair: tuple[Any, str, int]) -> bool:
    """Is ``repair`` one of ``counts`` still to take? Then it is taken (one fewer of it left)."""
    if counts[repair] > 0:
        counts[repair] -= 1
        return True
    return False


def _line(entry: tuple[Any, ...]) -> Any:
    return entry[0]


def _apart(pending: dict[tuple[Input, Any], Held]) -> list[tuple[tuple[Input, Any], Held]]:
    """The runs of the repairs no run took by the end (``flush``), each with its repairs: in its input, a stretch of
    lines logged for one run id (runs are cut where the run id changes; ``_seal`` put aside those a run came after).
    Repairs at no line go with the first run of their id."""
    keys = list(pending)
    lined: dict[Input, list[tuple[Any, int, tuple[Any, str, int]]]] = {}
    for k, key in enumerate(keys):
        for repair in pending[key]:
            if repair[0] is not None:
                lined.setdefault(key[0], []).append((repair[0], k, repair))
    runs: list[tuple[tuple[Input, Any], Held]] = []
    first: dict[int, Held] = {}  # the repairs of the first run of each key
    for entries in lined.values():
        entries.sort(key=lambda entry: (entry[0], entry[1]))
        owners = _owners([None if keys[k][1] is None else k for _, k, _ in entries])  # (the keys of a run id, by index)
        owned = [(line, k if owner is None else owner, repair) for (line, k, repair), owner in zip(entries, owners, strict=True)]
        for k, held in _stretches(owned):
            runs.append((keys[k], held))
            first.setdefault(k, held)
    for k, key in enumerate(keys):
        unlined = [repair for repair in pending[key] if repair[0] is None]
        if unlined:
            if k in first:
                first[k].extend(unlined)
            else:
                runs.append((key, unlined))
    return runs


def _owners(runs: list[Any]) -> list[Any]:
    """For repairs in line order, each logged for ``runs[k]`` (None: for no run, a record written across lines that names
    none, joined before the rules saw its line), the run each is of: its own; for one that names none, the run whose
    repair came last before it (the run its line lies in), or before any, the first named after it (the run it comes
    before); None when none names a run."""
    owner = next((run for run in runs if run is not None), None)
    owners = []
    for run in runs:
        if run is not None:
            owner = run
        owners.append(owner)
    return owners


def _stretches(entries: list[tuple[Any, ...]]) -> list[tuple[Any, Held]]:
    """``entries`` (line, run, repair), in line order, cut where the run changes (the runs of an input are cut where
    the run id changes): (the run, its repairs) for each stretch of lines logged for one run."""
    stretches: list[tuple[Any, Held]] = []
    for _, run, repair, *_ in entries:
        if not stretches or stretches[-1][0] != run:
            stretches.append((run, []))
        stretches[-1][1].append(repair)
    return stretches
