"""The commands agree over journals made to break every rule (run ids that come back, junk lines, records of every
kind, a torn last line): heal twice is heal once, and validate counts the runs and events the report shows."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import run_replay
from hypothesis import HealthCheck, assume, example, given, settings
from test_screen import DECLARED_THEN_CUT, journals, records_in, same

from replay.pipeline.model.repairs import counts_as_repair

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

CUT_BY_A_VANISHING_RUN = (  # r5, then z0's orphaned result (dropped: z0 vanishes), then r5 again
    b'{"seq":8,"timestamp":"2026-03-01T12:00:08.000Z","type":"tool_called","runId":"r5","payload":{"callId":"c2","toolName":"bash"}}\n'
    b'{"seq":9,"timestamp":"2026-03-01T12:00:09.000Z","type":"tool_result","runId":"z0","payload":{"callId":"c2"}}\n'
    b'{"seq":10,"timestamp":"2026-03-01T12:00:10.000Z","type":"run_failed","runId":"r5","payload":{}}\n')


@SETTINGS
@given(journals())
@example(data=b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r0","payload":{}}\n'
              b'{"$record":"run","status":"ok"}\n')
@example(data=CUT_BY_A_VANISHING_RUN)
@example(data=DECLARED_THEN_CUT)
@example(data=b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"tool_called","runId":"r0","payload":{"callId":"c1"}}\n'
              b'{"seq":9,"timestamp":"2026-03-01T12:00:04.000Z","type":"run_failed","runId":"r0","payload":{}}\n'
              b'{"seq":3,"timestamp":"2026-03-01T12:00:03.000Z","type":"run_failed","runId":"r0","payload":{"sidechain":true},'
              b'"parentId":"p"}\n')
def test_healing_a_healed_journal_changes_nothing_and_logs_nothing(tmp_path: Path, data: bytes):
    """Found by this test: a run record without a runId and nothing after it got events invented with
    `"runId": null`, which the second heal then named from the file's name; two runs of one id that came out touching
    (every event of the run between them dropped), which the second heal read as one run; and a terminal event
    with a later one after it (a sidechain's, held to the run's end) that the second heal moved after the
    unanswered mark the first had put after it."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    first = run_replay("heal", str(path))
    assert not adjacent_runs_of_one_id(first.stdout)
    healed, log = tmp_path / "healed.jsonl", tmp_path / "log.jsonl"
    healed.write_bytes(first.stdout)
    again = run_replay("heal", "--log", str(log), str(healed))
    assert again.stdout == first.stdout
    assert log.read_bytes() == b""


@SETTINGS
@given(journals())
@example(data=b'{"$record":"heal","runId":"r0","repairs":1}\n')
def test_validate_counts_the_runs_and_events_the_report_shows(tmp_path: Path, data: bytes):
    """(A heal record before any run of its input, such as heal writes for an input every run of which it dropped, was
    a run of its own in the report, and is in no run for validate: now it is no run in the report either.)"""
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    summaries = [orjson.loads(line) for line in run_replay("validate", "--in", str(path)).stdout.splitlines()]
    report = orjson.loads(run_replay("report", "--format", "json", str(path)).stdout)["aggregate"]
    assert sum(s["runs"] for s in summaries) == report["runs"]["total"]
    assert sum(s["events"] for s in summaries) == report["events"]["total"]


VANISHING_LAST = (  # r0, then v1's orphaned result (dropped: v1 vanishes, its heal record goes at the end), then r2
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r0","payload":{}}\n'
    b'{"seq":1,"timestamp":"2026-03-01T13:00:01.000Z","type":"tool_completed","runId":"v1","payload":{"callId":"g1"}}\n'
    b'{"seq":1,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_started","runId":"r2","payload":{}}\n'
    b'{"seq":2,"timestamp":"2026-03-01T12:00:03.000Z","type":"run_completed","runId":"r2","payload":{}}\n')


@SETTINGS
@given(journals())
@example(data=VANISHING_LAST)
def test_the_report_counts_each_repair_where_heal_put_it(tmp_path: Path, data: bytes):
    """Heal writes the heal record of a run it dropped whole at the end of the stream, naming that run: the report
    added its repairs to the last run. Per run id, the report's runs of that id and its repairs in no run under that
    id count what heal's records of that id say; in all, what heal logged (and the heal records it was given)."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    log = tmp_path / "log.jsonl"
    healed = run_replay("heal", "--log", str(log), str(path)).stdout
    document = orjson.loads(run_replay("report", "--format", "json", input=healed).stdout)
    runs, totals = document["runs"], document["aggregate"]
    unattributed = totals["unattributedRepairs"]
    logged = sum(map(counts_as_repair, map(orjson.loads, log.read_bytes().splitlines())))
    given_ = sum(r["repairs"] for r in records_in(data.split(b"\n")) if r.get("$record") == "heal")
    assert totals["repairs"]["total"] == logged + given_
    assert totals["repairs"]["total"] == sum(r["repairs"]["total"] for r in runs) + unattributed["total"]
    heal = [r for r in records_in(healed.splitlines()) if r.get("$record") == "heal"]
    for rid in {r.get("runId") for r in heal}:
        assert sum(r["repairs"] for r in heal if r.get("runId") == rid) == (
            sum(r["repairs"]["total"] for r in runs if r["runId"] == rid)
            + sum(u["total"] for u in unattributed["runs"] if u["runId"] == rid)), rid


ONE_EVENT = b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r0","payload":{}}\n'


# Found by this test: the second copy's r1 was kept apart from the first copy's r1 by an invented run record (r0 between
# them dropped whole), as if they were one input's two runs of one id: the inputs bear one name
DROPPED_BEFORE_A_RUN = (
    b'{"seq":1,"timestamp":"2026-03-01T23:59:58.000Z","type":"tool_completed","runId":"r0","payload":{"callId":"orphan"}}\n'
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r1","payload":{}}\n')


@settings(SETTINGS, max_examples=60)
@given(journals(unique=True))
@example(data=VANISHING_LAST)
@example(data=ONE_EVENT)
@example(data=DROPPED_BEFORE_A_RUN)
def test_a_file_read_twice_heals_as_two_copies_of_it(tmp_path: Path, data: bytes):
    """`heal x x` writes what `heal x` writes after each of read's marks, and twice its heal records and log lines:
    the heal records of its runs heal dropped whole were one for both copies (`"repairs": 2`), and a copy's first
    event was dropped as a duplicate of the last of the copy before. A pipe and the slow lane write the same. (A
    source record inside the file, which only a saved `read` of several inputs has, is left out.)"""
    assume(b'"$record":"source"' not in data)
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    once_log, twice_log = tmp_path / "once.jsonl", tmp_path / "twice.jsonl"
    once = run_replay("heal", "--log", str(once_log), str(path))
    twice = run_replay("heal", "--log", str(twice_log), str(path), str(path))

    def split(out: bytes) -> tuple[list[bytes], list[bytes]]:
        lines = out.splitlines()
        return [x for x in lines if b'"$record":"heal"' not in x], sorted(x for x in lines if b'"$record":"heal"' in x)

    (events, heal), (both_events, both_heal) = split(once.stdout), split(twice.stdout)
    mark = both_events[0]
    assert orjson.loads(mark) == {"$record": "source", "source": str(path)}
    assert both_events == [mark, *events, mark, *events]
    assert both_heal == sorted(heal * 2)
    assert sorted(twice_log.read_bytes().splitlines()) == sorted(once_log.read_bytes().splitlines() * 2)
    assert twice.returncode == once.returncode
    assert run_replay("heal", input=run_replay("read", str(path), str(path)).stdout).stdout == twice.stdout
    same(tmp_path, b"", str(path), str(path))


TORN_AFTER_TWO_RUNS = (  # the torn line is the second run's (r9's); a pipe counted it with the first
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r0","payload":{}}\n'
    b'{"seq":1,"runId":"r9","type":"run_started","timestamp":"2026-03-01T12:00:00.000Z","payload":{},"payload":{"a":1}}\n'
    b'{"seq":99,"ty')


RECORD_THEN_TORN = (  # (with TORN_AFTER_A_BLANK_LINE: as the property test found it)
    b'{"seq":1,"timestamp":"2026-03-01T23:59:60.000Z","type":"run_started","runId":"r0","payload":{}}\n'
    b'{"$record":"run","runId":"rr","status":"ok","response":"hello"}\n'
    b'{"seq":99,"ty')


# r1 with calls left open, a dropped record in it, its id again (seq from 1), a blank line, then its torn last line:
# the line is r1's (the input's last run's) however many blank lines come before it, and the marks of r1's open calls
# say their result may have been on it; `heal b` said the run had none (the line right after r1's last was blank)
TORN_AFTER_A_BLANK_LINE = (
    b'{"seq":1,"timestamp":"2026-03-01T23:59:58.000Z","type":"run_started","runId":"r1","payload":{}}\n'
    b'{"$record":"dropped","code":"E_JSONL_LINE_INVALID","message":"m","line":3,"offset":9}\n'
    b'{"seq":2,"timestamp":"2026-03-01T23:59:58.000Z","type":"tool_called","runId":"r1","payload":{"callId":"c1","toolName":"bash"}}\n'
    b'{"seq":3,"timestamp":"2026-03-01T23:59:58.000Z","type":"tool_called","runId":"r1","payload":{"callId":"open"}}\n'
    b'{"seq":4,"timestamp":"2026-03-01T23:59:59.000Z","type":"tool_called","runId":"r1","payload":{"callId":"c2","toolName":"bash"}}\n'
    b'{"seq":5,"timestamp":"2026-03-01T23:59:60.500Z","type":"tool_completed","runId":"r1","payload":{"callId":"c2"}}\n'
    b'{"seq":6,"timestamp":"2026-03-01T23:59:60.500Z","type":"tool_called","runId":"r1","payload":{"callId":"c3","toolName":"bash"}}\n'
    b'{"seq":7,"timestamp":"2026-03-01T23:59:60.500Z","type":"tool_failed","payload":{"callId":"c3"}}\n'
    b'{"seq":8,"timestamp":"2026-03-01T23:59:60.999Z","type":"user_message","runId":"r1","payload":{"text":"xxxxx"}}\n'
    b'{"seq":9,"timestamp":"2026-03-02T00:00:00.000Z","type":"user_message","runId":"r1","payload":{"text":"xxxxxx"}}\n'
    b'{"seq":1,"timestamp":"2026-03-01T13:00:01.000Z","type":"tool_completed","runId":"r1","payload":{"callId":"gone0.9837578585892198"}}\n'
    b'{"seq":2,"timestamp":"2026-03-01T13:00:02.000Z","type":"tool_failed","runId":"r1","payload":{"callId":"gone0.930176011393805"}}\n'
    b'{"seq":3,"timestamp":"2026-03-01T13:00:03.000Z","type":"tool_failed","runId":"r1","payload":{"callId":"gone0.7770102495090497"}}\n'
    b'\n'
    b'{"seq":99,"ty')


@settings(SETTINGS, max_examples=100)
@given(journals(), journals())
@example(a=TORN_AFTER_TWO_RUNS, b=b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r0","payload":{}}\n')
@example(a=RECORD_THEN_TORN, b=TORN_AFTER_A_BLANK_LINE)
def test_two_inputs_read_one_way_or_another_give_the_same_answers(tmp_path: Path, a: bytes, b: bytes):
    """`heal a b` writes what `read a b | heal` writes; report and validate say the same with one worker or two.
    (A source record inside a file, which only a saved `read` of several inputs has, is left out.) Run ids that come
    back within one input too: after a source record heal goes the slow way, batches of several runs, which
    ``cut_runs`` cuts where each run begins (the repairs of two runs of one id in one batch were counted by id)."""
    assume(b'"$record":"source"' not in a + b)
    (tmp_path / "a.jsonl").write_bytes(a)
    (tmp_path / "b.jsonl").write_bytes(b)
    paths = [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]
    piped = run_replay("heal", input=run_replay("read", *paths).stdout)
    assert run_replay("heal", *paths).stdout == piped.stdout
    for command in (["report", "--format", "json"], ["validate"]):
        one, two = (run_replay(*command, "--workers", n, *paths) for n in ("1", "2"))
        assert (one.stdout, one.returncode) == (two.stdout, two.returncode)


@settings(SETTINGS, max_examples=150)
@given(journals())
def test_a_walk_up_to_a_step_is_the_whole_walk_cut_after_that_step(tmp_path: Path, data: bytes):
    """`walk --at STEP` prints the first records of the whole walk, as they are there, and stops at a record of
    STEP's: its terminal record, or its last one when it never ends (unless a bad line stops the walk first:
    walk reads a journal strictly, and exits 1 there)."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    whole = run_replay("walk", "--json", str(path))
    assume(whole.returncode != 2)  # a journal walk refuses (its first record unreadable)
    records = whole.stdout.splitlines()
    steps = list(dict.fromkeys(s for s in (orjson.loads(r).get("step_id") for r in records) if s))
    for step in steps[:3]:
        part = run_replay("walk", "--json", "--at", step, str(path))
        shown = part.stdout.splitlines()
        assert part.returncode in (0, 1) and shown == records[: len(shown)], (step, part.stderr)
        assert part.returncode == 1 or orjson.loads(shown[-1]).get("step_id") == step


def test_a_run_cut_in_two_by_a_run_that_vanishes_heals_once(tmp_path: Path):
    """z0 cuts r5 in two and its only event is dropped: a run record keeps the two r5 runs apart (they used to touch,
    each numbered from 1, and a second heal read them as one run and renumbered it)."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(CUT_BY_A_VANISHING_RUN)
    log = tmp_path / "log.jsonl"
    first = run_replay("heal", "--log", str(log), str(path))
    assert first.returncode == 0, first.stderr  # heal's own check of its output passes (it said E_HEALED_ARTIFACT_INVALID)
    records = [orjson.loads(line) for line in first.stdout.splitlines()]
    assert [(r.get("$record"), r.get("type")) for r in records if r.get("$record") != "heal"] == [
        (None, "run_started"), (None, "tool_called"), (None, "tool_unanswered"), (None, "run_failed"),
        ("run", None), (None, "run_started"), (None, "run_failed")]
    assert not adjacent_runs_of_one_id(first.stdout)
    kept_apart = [e for e in map(orjson.loads, log.read_bytes().splitlines()) if e.get("field") == "$record"]
    assert [(e["rule"], e["action"], e["runId"], e["line"]) for e in kept_apart] == [("pair_tool_calls", "inserted", "r5", 3)]
    healed = tmp_path / "healed.jsonl"
    healed.write_bytes(first.stdout)
    again = run_replay("heal", "--log", str(log), str(healed))
    assert again.stdout == first.stdout
    assert log.read_bytes() == b""


def adjacent_runs_of_one_id(healed: bytes) -> bool:
    """Does heal's output hold two runs of one runId next to each other (the second begins at seq 1, with no run
    record between)? Read again, they are one run."""
    previous: dict | None = None
    for record in records_in(healed.splitlines()):
        if record.get("$record") == "run":
            previous = None
        elif "$record" not in record:
            if previous is not None and record.get("runId") == previous.get("runId") and record.get("seq") == 1:
                return True
            previous = record
    return False
