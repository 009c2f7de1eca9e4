"""The one rule of where a run begins (``runs.starts_run``), read with the canonical ``runId`` or with ``run_id_named``
(walk's and diff's runs: a flows journal's ``run_id`` too), and the walk's spend ledger that keeps its run by it."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.model.runs import Run, name_run, names_run, run_id_named, starts_run
from replay.pipeline.model.walk import SpendLedger


def test_a_flows_run_id_begins_a_run_only_when_read_by_run_id_named():
    run = Run("r1", None, "a.jsonl")
    flows = {"kind": "step.started", "run_id": "r2"}
    assert starts_run(flows, run, "a.jsonl", run_id_named)
    assert not starts_run(flows, run, "a.jsonl")  # (canonical: no runId, the run it sits in)
    assert not starts_run({"kind": "step.started", "run_id": "r1"}, run, "a.jsonl", run_id_named)
    # a canonical runId comes first: run_id beside it says nothing
    assert not starts_run({"type": "x", "runId": "r1", "run_id": "r2"}, run, "a.jsonl", run_id_named)
    assert starts_run({"type": "x", "runId": 5, "run_id": "r2"}, run, "a.jsonl", run_id_named)


def test_a_run_naming_no_id_takes_its_first_events_as_read():
    run = Run(None, {"$record": "run"}, "a.jsonl")
    name_run(run, {"kind": "x", "run_id": "r2"})
    assert run.run_id is None  # (canonical: no runId)
    name_run(run, {"kind": "x", "run_id": "r2"}, run_id_named)
    assert run.run_id == "r2"
    assert not starts_run({"kind": "x", "run_id": "r2"}, run, "a.jsonl", run_id_named)
    assert starts_run({"kind": "x", "run_id": "r3"}, run, "a.jsonl", run_id_named)


def test_any_input_mark_ends_the_ledgers_run():
    """walk reads a saved stream's lines as they are: a mark naming another input than the file's ends the run."""
    ledger = SpendLedger()

    def spend(record: dict[str, Any]) -> Any:
        ledger.begin(record, "saved.jsonl")
        return ledger.add("s", record.get("usd"))

    assert spend({"kind": "spend", "run_id": "r1", "usd": 1}) == 1
    assert spend({"$record": "source", "source": "b.jsonl"}) is None  # (the run ended: nothing so far)
    assert spend({"kind": "spend", "run_id": "r1", "usd": 1}) == 1  # the same id: another run all the same
    assert spend({"$record": None}) == 1  # (a record of no known kind is no run's)
    assert spend({"kind": "spend", "usd": 1}) == 2


# canonical journals: the rule reads them alike either way ------------------------------------------
_RUN_IDS = st.one_of(st.sampled_from(["r1", "r2", "", None]), st.integers(0, 2))
_EVENTS = st.builds(lambda rid, has: {"type": "x", "runId": rid} if has else {"type": "x"}, _RUN_IDS, st.booleans())
_RECORDS = st.one_of(
    _EVENTS, _EVENTS,
    st.builds(lambda rid: {"$record": "run", "runId": rid}, _RUN_IDS),
    st.builds(lambda name: {"$record": "source", "source": name}, st.sampled_from(["a", "b"])),
    st.just({"$record": "heal"}),
)
_STREAMS = st.lists(st.tuples(_RECORDS, st.sampled_from(["a", "b"])), max_size=30)


def _runs(stream: list[tuple[dict[str, Any], str]], run_id: Any) -> list[tuple[int, Any]]:
    """Where runs begin in ``stream`` and the id each ends up with, as a tracker reading runs by ``run_id``."""
    read = run_id or (lambda record: record.get("runId"))
    runs: list[tuple[int, Run]] = []
    run: Run | None = None
    for i, (record, source) in enumerate(stream):
        if starts_run(record, run, source, run_id):
            rid = read(record)
            run = Run(rid if names_run(rid) else None, None, source)
            runs.append((i, run))
        elif run is not None and "$record" not in record:
            name_run(run, record, run_id)
    return [(i, r.run_id) for i, r in runs]


@settings(max_examples=300, deadline=None)
@given(_STREAMS)
def test_canonical_journals_read_alike_by_runid_and_run_id_named(stream):
    """With no flows ``run_id``, walk's and diff's reading (``run_id_named``) and the default agree on every run."""
    assert _runs(stream, run_id_named) == _runs(stream, None)


_MARKED = st.lists(st.one_of(  # (no heal records: the ledger takes them for no run's; marks name their own input)
    st.tuples(st.one_of(_EVENTS, st.builds(lambda rid: {"$record": "run", "runId": rid}, _RUN_IDS)),
              st.sampled_from(["a", "b"])),
    st.sampled_from(["a", "b"]).map(lambda name: ({"$record": "source", "source": name}, name))), max_size=30)


@settings(max_examples=300, deadline=None)
@given(_MARKED)
def test_the_walks_ledger_keeps_the_default_runs_of_a_canonical_journal(stream):
    """The walk's spend ledger (runs read by ``run_id_named``) counts a step's spend from where the default rule begins
    its run."""
    starts = {i for i, _ in _runs(stream, None)}
    ledger = SpendLedger()
    seen = 0
    for i, (record, source) in enumerate(stream):
        ledger.begin(record, source)
        seen = 0 if i in starts else seen
        if "$record" not in record:
            seen += 1
            assert ledger.add("s", {"n": 1}) == {"n": seen}
