"""The screen (heal's fast lane) only chooses the lane: heal with it writes, logs and reports exactly what heal
without it does, for real logs, generated journals and journals made to break every rule (issue 11)."""

from __future__ import annotations

import json
import random
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from conftest import CORPUS, EXAMPLES, ROOT, diagnostics, run_replay
from heal_support import batches_as_read
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.inline import run_inline
from replay.pipeline.io.journals import CHUNK_BYTES
from replay.pipeline.model.events import is_timestamp, same_shape_utc
from replay.pipeline.model.records import RECORD_KEY, RUN_RECORD
from replay.pipeline.model.runs import Run, name_run, starts_run
from replay.stages.heal import rule_stages
from replay.stages.heal_summary import SummarizeRepairs
from replay.stages.join_split_records import JoinSplitRecords
from replay.stages.parse import ParseLines
from replay.stages.screen import ScreenRuns, _stamps_shape
from replay.stages.validate import ValidateEvents
from replay.stages.validate_summary import ValidateSummary

sys.path.insert(0, str(ROOT / "tests" / "bench"))
from journal_gen import write_broken_journal, write_journal

SPEC = (ROOT / "pipeline" / "specs" / "heal.toml").read_text()


def slow_spec(tmp_path: Path, log: Path, option: str = "fast") -> Path:
    """The heal graph with the fast lane turned off (``fast``: runs still cut; ``enabled``: the screen does
    nothing at all, as heal was before it), and the repairs written to ``log``."""
    text = SPEC.replace('type = "screen"', f'type = "screen"\n{option} = false', 1)
    text += f'\n[stages.log]\ntype = "write"\npath = "{log}"\ninputs = ["heal.repairs"]\n'
    path = tmp_path / "heal-slow.toml"
    path.write_text(text)
    return path


def test_the_screen_changes_no_output_and_no_repair_only_the_order_of_the_log(tmp_path: Path):
    """Against heal as it was (no screen at all): the same stream, heal records and repairs; the log goes run by
    run (before, its order followed where batches of 128 lines happened to be cut)."""
    for path in [*REAL, EXAMPLES / "journals" / "broken.jsonl"]:
        fast_log, slow_log = tmp_path / "fast.jsonl", tmp_path / "slow.jsonl"
        fast = run_replay("heal", "--log", str(fast_log), str(path))
        slow = run_replay("run", str(slow_spec(tmp_path, slow_log, "enabled")), str(path))
        assert fast.stdout == slow.stdout, path
        assert sorted(fast_log.read_bytes().splitlines()) == sorted(slow_log.read_bytes().splitlines()), path


def both(tmp_path: Path, data: bytes, *paths: str) -> tuple:
    fast_log, slow_log = tmp_path / "fast.jsonl", tmp_path / "slow.jsonl"
    fast = run_replay("heal", "--log", str(fast_log), *paths, input=data)
    slow = run_replay("run", str(slow_spec(tmp_path, slow_log)), *paths, input=data)
    return fast, slow, fast_log.read_bytes(), slow_log.read_bytes()


def same(tmp_path: Path, data: bytes = b"", *paths: str) -> None:
    fast, slow, fast_log, slow_log = both(tmp_path, data, *paths)
    assert fast.stdout == slow.stdout
    assert fast_log == slow_log
    # the same diagnostics; their order on stderr between stages that run as different tasks (parse, and the
    # `check` after heal_summary) follows the scheduling, with the screen or without it
    strip = sorted(line for line in slow.stderr.splitlines() if b'"timestamp"' not in line or b'"level"' not in line)
    assert sorted(line for line in fast.stderr.splitlines() if b'"timestamp"' not in line or b'"level"' not in line) == strip
    assert fast.returncode == slow.returncode


REAL = sorted([*CORPUS.rglob("*.jsonl"), *(EXAMPLES / "journals").glob("*.jsonl")])


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name[:40])
def test_heal_of_a_real_log_is_the_same_with_and_without_the_fast_lane(tmp_path: Path, path: Path):
    same(tmp_path, b"", str(path))


def test_heal_of_a_generated_journal_is_the_same_and_mostly_takes_the_fast_lane(tmp_path: Path):
    journal = tmp_path / "gen.jsonl"
    write_journal(journal, 400_000)
    same(tmp_path, b"", str(journal))
    screen = ScreenRuns()
    clean = 0
    lines = journal.read_bytes().split(b"\n")[:-1]
    outs = [screen(Batch.from_lines(lines[i:i + 128], "gen.jsonl")) for i in range(0, len(lines), 128)]
    outs.append(screen.flush())
    for out in outs:
        for batch in out if isinstance(out, list) else [out] if out is not None else []:
            clean += len(batch) if batch.clean else 0
    assert clean > 0.9 * len(lines)


def test_heal_writes_the_same_with_a_log_and_without_one(tmp_path: Path):
    """Without --log the runs the fast lane repairs have their repairs counted, not logged: the same stream, heal
    records included, as with --log (which has every log line made), from a file and a pipe."""
    broken = tmp_path / "broken.jsonl"
    write_broken_journal(broken, 300_000)
    for path in [broken, *REAL]:
        logged = run_replay("heal", "--log", str(tmp_path / "log.jsonl"), str(path))
        counted = run_replay("heal", str(path))
        assert counted.stdout == logged.stdout and counted.returncode == logged.returncode, path
        assert counted.stderr.count(b"\n") == logged.stderr.count(b"\n"), path
    piped = run_replay("heal", input=broken.read_bytes())
    assert piped.stdout == run_replay("heal", "--log", str(tmp_path / "log.jsonl"), input=broken.read_bytes()).stdout
    assert b'"byRule":{"alias"' in piped.stdout and b'"renumber"' in piped.stdout and b'"ensure_terminal"' in piped.stdout


def test_a_config_that_writes_the_heal_log_gets_every_line_of_it(tmp_path: Path):
    """Only `replay heal` without --log counts the screen's repairs without logging them: heal's graph run from a config
    with a log added logs them all, as `replay heal --log` does (the screen logs by default)."""
    broken = tmp_path / "broken.jsonl"
    write_broken_journal(broken, 100_000)
    config = tmp_path / "heal-with-log.toml"
    config.write_text(SPEC + f'\n[stages.log]\ntype = "write"\npath = "{tmp_path / "config.log"}"\ninputs = ["heal.repairs"]\n')
    from_config = run_replay("run", str(config), str(broken))
    healed = run_replay("heal", "--log", str(tmp_path / "heal.log"), str(broken))
    assert from_config.stdout == healed.stdout
    assert (tmp_path / "config.log").read_bytes() == (tmp_path / "heal.log").read_bytes()
    assert (tmp_path / "heal.log").read_bytes().count(b'"rule":"renumber"') > 20


def test_several_files_and_a_pipe_are_the_same(tmp_path: Path):
    journal = tmp_path / "gen.jsonl"
    write_journal(journal, 50_000)
    broken = str(EXAMPLES / "journals" / "broken.jsonl")
    same(tmp_path, b"", str(journal), broken, str(journal))
    same(tmp_path, run_replay("read", str(journal), broken).stdout)


def leap_journal() -> bytes:
    """Clean runs, one of them over a leap second in UTC with milliseconds (one shape with the others), one with a
    leap second in another zone, and one whose leap second goes back (23:59:60.5, then 23:59:60.1)."""
    rng = random.Random(7)
    runs = [clean_run(rng, 6, "before"), over_a_leap_second(random.Random(1), clean_run(rng, 8, "leap"), offsets=False),
            over_a_leap_second(random.Random(2), clean_run(rng, 9, "zoned")), clean_run(rng, 5, "after")]
    runs[2][4]["timestamp"] = "2026-03-01T18:59:60.750-05:00"
    back = over_a_leap_second(random.Random(3), clean_run(rng, 6, "back"), offsets=False)
    back[2]["timestamp"], back[3]["timestamp"] = "2026-03-01T23:59:60.500Z", "2026-03-01T23:59:60.100Z"
    return b"".join(exactjson.dumps(e) + b"\n" for run in [*runs, back] for e in run)


def test_a_run_over_a_leap_second_goes_the_slow_way_and_comes_out_as_both_lanes_write_it(tmp_path: Path):
    """The screen's quick checks take no second 60: such a run goes the slow way, where a leap second is valid; heal
    writes, logs and warns the same with the fast lane and without it, the runs with leap seconds as they came, and
    validate says the same both ways: all valid."""
    data = leap_journal()
    path = tmp_path / "leap.jsonl"
    path.write_bytes(data)
    for where in (str(path), str(after_a_batch(tmp_path, data))):
        same(tmp_path, b"", where)
    same(tmp_path, data)
    fast = run_replay("heal", str(path))
    assert fast.returncode == 0
    assert [line for line in fast.stdout.splitlines(keepends=True) if b'"$record"' not in line] == data.splitlines(keepends=True)
    [notice] = [orjson.loads(line) for line in fast.stderr.splitlines() if b"heal.notice" in line]
    assert notice["value"] == "2026-03-01T23:59:60.100Z" and notice["runId"] == "back"
    screen = ScreenRuns()

    def batches(out: Batch | list[Batch] | None) -> list[Batch]:
        return out if isinstance(out, list) else [out] if out is not None else []

    out = [*batches(screen(Batch.from_lines(data.splitlines(), "leap.jsonl"))), *batches(screen.flush())]
    assert {orjson.loads(raw)["runId"] for batch in out if batch.clean for raw in batch.raws} == {"before", "after"}
    fast_check, slow_check = validate_both_ways(tmp_path, path)
    assert fast_check.stdout == slow_check.stdout and orjson.loads(fast_check.stdout)["valid"] is True
    assert fast_check.returncode == slow_check.returncode == 0
    assert diagnostics(fast_check.stderr) == diagnostics(slow_check.stderr)  # validate warns as heal does, both ways
    [warning] = [orjson.loads(line) for line in fast_check.stderr.splitlines()]
    assert (warning["rule"], warning["value"], warning["runId"]) == ("check_order", "2026-03-01T23:59:60.100Z", "back")


# journals made to break each rule, mixed with clean runs ------------------------------------------------
def clean_run(rng: random.Random, n: int, rid: str, calls_named: str = "c", second: int = 0) -> list[dict]:
    events = [{"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started", "runId": rid, "payload": {}}]
    calls = 0
    for k in range(2, n):
        if rng.random() < 0.4:
            calls += 1
            events.append({"type": "tool_called", "payload": {"callId": f"{calls_named}{calls}", "toolName": "bash"}})
            events.append({"type": rng.choice(["tool_completed", "tool_failed"]), "payload": {"callId": f"{calls_named}{calls}"}})
        else:
            events.append({"type": rng.choice(["user_message", "assistant_message"]), "payload": {"text": "x" * k}})
    events.append({"type": rng.choice(["run_completed", "run_failed"]), "payload": {}})
    for seq, event in enumerate(events, start=1):
        at = second + seq
        event.update(seq=seq, runId=rid, timestamp=f"2026-03-01T{12 + at // 3600:02d}:{at // 60 % 60:02d}:{at % 60:02d}.000Z")
    return [{k: e[k] for k in ("seq", "timestamp", "type", "runId", "payload")} for e in events]


# in order over a leap second (23:59:60 UTC: a timestamp the fast lane leaves to the slow one), one with an offset
LEAP_STAMPS = ["2026-03-01T23:59:58.000Z", "2026-03-01T23:59:59.000Z", "2026-03-01T23:59:59.999Z",
               "2026-03-01T23:59:60.000Z", "2026-03-01T23:59:60.500Z", "2026-03-01T18:59:60.750-05:00",
               "2026-03-01T23:59:60.999Z", "2026-03-02T00:00:00.000Z", "2026-03-02T00:00:01.000Z"]


def over_a_leap_second(rng: random.Random, events: list[dict], offsets: bool = True) -> list[dict]:
    """``events`` stamped in order across a leap second (``offsets``: one stamp may have an offset; else all in UTC
    with milliseconds: one shape, so text order is time order for the quick checks after the screen)."""
    stamps = LEAP_STAMPS if offsets else [t for t in LEAP_STAMPS if t.endswith("Z")]
    for event, k in zip(events, sorted(rng.choices(range(len(stamps)), k=len(events))), strict=True):
        event["timestamp"] = stamps[k]
    return events


BREAKS = [
    lambda r, ev: ev.update(type="tool_end"),
    lambda r, ev: ev.update(type={"tool_called": "tool_call", "tool_completed": "tool_result", "run_started": "start",
                                  "assistant_message": "llm_message"}.get(str(ev["type"]), "user")),
    lambda r, ev: ev.update(seq=ev["seq"] + 1000) if isinstance(ev.get("seq"), int) else None,
    lambda r, ev: ev.pop("runId", None),
    lambda r, ev: ev.update(payload="text"),
    lambda r, ev: ev.pop("payload", None),
    lambda r, ev: ev.update(timestamp=1767225600),
    lambda r, ev: ev.update(timestamp="2026-03-01T11:00:00.000Z"),
    lambda r, ev: ev.update(seq=ev["seq"] + 5),
    lambda r, ev: ev.update(seq=True),
    lambda r, ev: ev.update(id="same-id"),
    lambda r, ev: ev.update(parentId="p", payload={"sidechain": True}),
    lambda r, ev: ev.update(type="tool_completed", payload={"callId": "orphan"}),
    lambda r, ev: ev.update(type="tool_called", payload={"callId": "open"}),
    lambda r, ev: ev.update(type="run_completed"),
    lambda r, ev: ev.update(type=""),
    lambda r, ev: ev.update(type={"a": 1}),
    lambda r, ev: ev.update(synthetic=False),
    lambda r, ev: ev.update(turn=True),
    lambda r, ev: ev.update(step=1.5),
    lambda r, ev: ev.update(big=2**70),
    lambda r, ev: ev.update(timestamp="2026-02-30T12:00:00.000Z"),
    lambda r, ev: ev.update(timestamp="2026-03-01T12:00:00Z"),
    lambda r, ev: ev.update(**{"$origin": {"x": 1}}),
    lambda r, ev: ev.update(timestamp="2026-03-01T23:59:60.500Z"),  # a leap second
    lambda r, ev: ev.update(timestamp="2026-03-01T12:00:60.000Z"),  # second 60 that is none
]
def result_before_call(rng: random.Random, events: list[dict]) -> None:
    """A call's result written before it (a runner writing them out of order): pair_tool_calls moves it after it. Its
    record put first, seq and time too; or only its type and payload, the seq and times in order."""
    def cid(event: dict) -> object:
        return event["payload"].get("callId") if isinstance(event.get("payload"), dict) else None

    calls = [k for k, e in enumerate(events[:-1]) if e.get("type") == "tool_called" and cid(e) is not None
             and cid(events[k + 1]) == cid(e)]
    if not calls:
        return
    k = rng.choice(calls)
    if rng.random() < 0.5:
        events[k], events[k + 1] = events[k + 1], events[k]
    else:
        for key in ("type", "payload"):
            events[k][key], events[k + 1][key] = events[k + 1][key], events[k][key]


# an event of another run in the middle of this one: it cuts the run in two runs of the same id
CUT = [lambda r, ev: ev.update(runId=f"z{r.random()}")]
JUNK = [b"", b"   ", b"not json", b"[1,2]", b'{"$record":"heal","runId":"r0","repairs":1}', b'{"a":"\xff"}',
        b'{"$record":"source","source":"x.jsonl"}', b'{"$record":"dropped","code":"E_JSONL_LINE_INVALID","message":"m","line":3,"offset":9}',
        b'{"$record":"run","runId":"rr","status":"ok","response":"hello"}', b'{"$record":"run","status":7}',
        b'{"seq":1,"runId":"r9","type":"run_started","timestamp":"2026-03-01T12:00:00.000Z","payload":{},"payload":{"a":1}}',
        b'{"seq":1,"runId":"r0","type":"user_message","timestamp":"2026-03-01T12:00:00.000Z","payload":{}} {"seq":2}']  # two on a line
# "$record": null: a record of a kind replay does not know (``records.is_record``), which cuts no run (starts_run took it
# for an event of r1 once, and cut the run it is in, while the other stages took it for a record)
NULL_RECORD = b'{"$record":null,"runId":"r1"}'
DROPPED = JUNK[7]  # a dropped record: it names no run, and parse takes it out of the stream


def pretty(line: bytes) -> bytes:
    """``line`` as a writer that pretty-prints records writes it: a newline after each comma between members (whitespace
    between tokens: ``join_split_records`` puts the record back on one line, a space for each newline)."""
    return line.replace(b',"', b',\n  "')


def indented(line: bytes) -> bytes:
    """``line`` as `jq .` writes it (``json.dumps(indent=2)``), an event's payload given an array of scalars: its last
    element (``{}`` too) a line that is JSON alone, which join_split_records takes as a piece of the record. A line
    that is no JSON object is pretty()'s."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return pretty(line)
    if not isinstance(record, dict):
        return pretty(line)
    if isinstance(record.get("payload"), dict):
        record["payload"] = {**record["payload"], "tags": ["x", 2, None, [], {}]}
    return json.dumps(record, indent=2).encode()


@st.composite
def journals(draw: st.DrawFn, unique: bool = False, split: bool = False, more_junk: tuple[bytes, ...] = ()) -> bytes:
    rng = random.Random(draw(st.integers(0, 2**32)))
    lines: list[bytes] = []
    # with unique ids, no junk line may cut a run in two (two runs of one id: heal before the screen counted
    # their repairs by where batches happened to be cut)
    junk = [j for j in (*JUNK, *more_junk) if not unique or not (j.startswith(b'{"seq"') or b'"$record":"run"' in j
                                                                   or b'"$record":null' in j)]
    runs = draw(st.integers(1, 8))
    vanished: list[str] = []  # the ids of the runs heal drops whole so far: another may have one of them again
    for k in range(runs):
        rid = f"r{k}" if unique else draw(st.sampled_from([f"r{k}", "r0", "r1"]))
        events = clean_run(rng, draw(st.integers(2, 12)), rid)
        if draw(st.integers(0, 4)) == 0:
            over_a_leap_second(rng, events, offsets=draw(st.booleans()))
        if draw(st.booleans()):
            lines.append(exactjson.dumps({"$record": "run", "runId": rid, "status": "ok",
                                       **({"response": "done"} if draw(st.booleans()) else {})}))
        for _ in range(draw(st.integers(0, 2))):
            rng.choice(BREAKS if unique else BREAKS + CUT)(rng, rng.choice(events))
        if draw(st.integers(0, 4)) == 0:
            result_before_call(rng, events)
        if draw(st.booleans()) and len(events) > 2:
            events.insert(2, dict(events[1]))  # an exact duplicate
        if draw(st.integers(0, 3)) == 0:
            events.pop()  # no terminal event
        lines += [exactjson.dumps(e) for e in events]
        if split and draw(st.integers(0, 3)) == 0:  # a dropped record (parse takes it out of the stream) after its end
            lines.append(pretty(DROPPED))
        if draw(st.integers(0, 4)) == 0 and junk:
            lines.insert(rng.randrange(len(lines) + 1), junk.pop(rng.randrange(len(junk))))
        if draw(st.integers(0, 3)) == 0:  # a run heal drops whole (orphaned results), often with a record after it
            # (with unique ids, only a run heal drops whole has the id of another: one of those before it)
            vanished.append(draw(st.sampled_from([f"v{k}", *vanished] if unique else [f"v{k}", "r0", "r1", *vanished])))
            lines += vanishing_run(rng, vanished[-1])
            if draw(st.booleans()) and junk:
                lines.append(junk.pop(rng.randrange(len(junk))))
    if split:  # a few records written across lines: events, of a run id that comes back or of none, other records
        for k in draw(st.sets(st.integers(0, len(lines) - 1), min_size=1, max_size=3)):
            if lines[k].startswith(b"{"):
                lines[k] = indented(lines[k]) if draw(st.booleans()) else pretty(lines[k])
    data = b"\n".join(lines) + b"\n"
    if not unique and draw(st.integers(0, 5)) == 0:
        # a torn tail (before the screen, which heal record counted it could depend on a held sidechain)
        data += b'{"seq":99,"ty'
    return data


def records_in(lines: list[bytes]) -> Iterator[dict]:
    """The lines that are JSON objects, decoded (the others a parse drops)."""
    for line in lines:
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if type(record) is dict:
            yield record


def vanishing_run(rng: random.Random, rid: str) -> list[bytes]:
    """One to three results of calls never made: pair_tool_calls drops each, so heal writes nothing of the run."""
    return [exactjson.dumps({"seq": n, "timestamp": f"2026-03-01T13:00:0{n}.000Z", "type": rng.choice(["tool_completed", "tool_failed"]),
                             "runId": rid, "payload": {"callId": f"gone{rng.random()}"}}) for n in range(1, rng.randint(1, 3) + 1)]


# orphaned results of r1 and r0 (dropped), r1 named by a run record's first event, r0 clean (the fast lane's), v6
# dropped: the heal records of r1's and r0's vanished results come at the end, in the order of their lines
VANISHED_COUNTED_AT_THE_END = (
    b'{"seq":2,"timestamp":"2026-03-01T13:00:02.000Z","type":"tool_completed","runId":"r1","payload":{"callId":"g1"}}\n'
    b'{"seq":2,"timestamp":"2026-03-01T13:00:02.000Z","type":"tool_failed","runId":"r0","payload":{"callId":"g2"}}\n'
    b'{"$record":"run","status":7}\n'
    b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"tool_called","runId":"r1","payload":{"callId":"c1","toolName":"bash"}}\n'
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r0","payload":{}}\n'
    b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_failed","runId":"r0","payload":{}}\n'
    b'{"seq":2,"timestamp":"2026-03-01T13:00:02.000Z","type":"tool_completed","runId":"v6","payload":{"callId":"g3"}}\n')


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(journals(more_junk=(NULL_RECORD,)))
@example(data=VANISHED_COUNTED_AT_THE_END)
def test_heal_is_the_same_with_and_without_the_fast_lane_whatever_breaks(tmp_path: Path, data: bytes):
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    same(tmp_path, b"", str(path))
    same(tmp_path, data)


# r0, r1 and r2, clean once the event of r1 written across lines is one line again
SPLIT_IN_A_CLEAN_RUN = b"".join(
    pretty(line) + b"\n" if rid == "r1" and k == 1 else line + b"\n"
    for rid in ("r0", "r1", "r2") for k, line in enumerate(map(exactjson.dumps, clean_run(random.Random(0), 3, rid))))
# a clean, then r0's run_started and a dropped record (it names no run) written across lines: r0's repair
SPLIT_RECORD_OF_NO_RUN = (
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"a","payload":{}}\n'
    b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_completed","runId":"a","payload":{}}\n'
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r0","payload":{}}\n'
    + pretty(DROPPED) + b"\n")
# r1 (an aliased end), r2, then r1 again with its first event written across lines: the second r1's repair
SPLIT_WHEN_ITS_ID_COMES_BACK = (
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r1","payload":{}}\n'
    b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_complete","runId":"r1","payload":{}}\n'
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r2","payload":{}}\n'
    b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_completed","runId":"r2","payload":{}}\n'
    + pretty(b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r1","payload":{}}') + b"\n"
    b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_completed","runId":"r1","payload":{}}\n')
# r1 (no end), a dropped record written across lines after its last event, then r2: r1's repair, though parse takes the
# record out of the stream and r1 ends with its batch (the join went to r2 without the fast lane, to no run with it)
SPLIT_DROPPED_AFTER_A_RUN = (
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r1","payload":{}}\n'
    b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"assistant_message","runId":"r1","payload":{}}\n'
    + pretty(DROPPED) + b"\n"
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r2","payload":{}}\n'
    b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_completed","runId":"r2","payload":{}}\n')

# a dropped record written across lines opens the input, then r1 with its run record (clean on its own), which heal
# keeps: the join is r1's repair, the run the record comes before (no run came before it in its input)
SPLIT_BEFORE_A_RUN_RECORD_LINES = [
    *pretty(DROPPED).split(b"\n"),
    b'{"$record":"run","runId":"r1","status":"ok"}',
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r1","payload":{}}',
    b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_completed","runId":"r1","payload":{}}',
]
SPLIT_BEFORE_A_RUN_RECORD = b"".join(line + b"\n" for line in SPLIT_BEFORE_A_RUN_RECORD_LINES)


# (found by this property: a source record split across lines, then a dropped record split too: the join of a line the
# stream gives no number was taken for a run record's, and dialect failed with a KeyError)
SPLIT_SOURCE_THEN_DROPPED = (
    b'{"$record":"source",\n  "source":"x.jsonl"}\n'
    b'{"seq":1,"timestamp":"2026-03-01T23:59:59.999Z","type":"run_started","runId":"r0","payload":{}}\n'
    b'{"$record":"dropped",\n  "code":"E_JSONL_LINE_INVALID",\n  "message":"m",\n  "line":3,\n  "offset":9}\n'
    b'{"seq":1,"timestamp":"2026-03-01T13:00:01.000Z","type":"tool_failed","runId":"v0","payload":{"callId":"gone0.3255269245215048"}}\n'
    b'{"seq":99,"ty')


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(journals(split=True))
@example(data=SPLIT_IN_A_CLEAN_RUN)
@example(data=SPLIT_RECORD_OF_NO_RUN)
@example(data=SPLIT_WHEN_ITS_ID_COMES_BACK)
@example(data=SPLIT_DROPPED_AFTER_A_RUN)
@example(data=SPLIT_BEFORE_A_RUN_RECORD)
@example(data=SPLIT_SOURCE_THEN_DROPPED)
def test_heal_is_the_same_with_and_without_the_fast_lane_when_records_are_split_across_lines(tmp_path: Path, data: bytes):
    """A record written across lines (pretty-printed), which join_split_records puts back on one line, is a repair of
    the run its line is in, counted in that run's heal record: the same stream, log and diagnostics with the fast lane
    and without it, from a file, a pipe and a later batch. (The fast lane took a run clean once joined on as its bytes:
    no run came to heal_summary to count the join, so it was counted at the end as a run's that heal dropped whole.
    A join is logged before its line reaches the rules: one that names no run went to whichever run ended next, and
    one of a run id that comes back to the earlier run of that id when it ended with its batch; a dropped record after
    a run's last event, which parse takes out of the stream, went with the next run.)"""
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    same(tmp_path, b"", str(path))
    same(tmp_path, data)
    same(tmp_path, b"", str(after_a_batch(tmp_path, data)))


@pytest.mark.parametrize("size", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("fast", [True, False])
def test_a_join_before_the_run_record_of_the_first_run_is_counted_with_that_run(size: int, fast: bool):
    """r1 is declared by its run record and stays: the join before it is its repair, in its heal record, in both lanes
    and however the input is cut. (It was counted at the end, in a heal record of no run, "runDropped": true, though no
    run was dropped: a run record kept what came before it out of its run, and no run before it took it; the fast lane
    passed r1 as its bytes.)"""
    out, side = healed_with_joins(SPLIT_BEFORE_A_RUN_RECORD_LINES, size, fast=fast)
    records = [orjson.loads(line) for line in out.splitlines()]
    assert records == [*map(orjson.loads, SPLIT_BEFORE_A_RUN_RECORD_LINES[-3:]),
                       {"$record": "heal", "runId": "r1", "repairs": 1, "byRule": {"join_split_records": 1}}]
    assert [entry["rule"] for entry in map(orjson.loads, side) if "rule" in entry] == ["join_split_records"]  # (and parse's error)


# v1 vanishes twice (a lone orphaned result each time), r0 between: each is its own run, with its own heal record
VANISHED_TWICE = (
    b'{"seq":1,"timestamp":"2026-03-01T13:00:01.000Z","type":"tool_completed","runId":"v1","payload":{"callId":"g1"}}\n'
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r0","payload":{}}\n'
    b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_completed","runId":"r0","payload":{}}\n'
    b'{"seq":1,"timestamp":"2026-03-01T13:00:01.000Z","type":"tool_failed","runId":"v1","payload":{"callId":"g2"}}\n'
    b'{"seq":2,"timestamp":"2026-03-01T13:00:02.000Z","type":"tool_failed","runId":"v1","payload":{"callId":"g3"}}\n')


def each_vanishing_run_its_own_id(data: bytes) -> tuple[bytes, dict[str, str]] | None:
    """``data`` (a journal ``journals(unique=True)`` made) with each run of orphaned results only (``vanishing_run``:
    runs cut as ``starts_run`` cuts them) named ``u0``, ``u1``, ... in turn, and what each was named; None when such
    a result shares its run with anything else (an event with no runId after it, say): renamed, it would be cut off."""
    out, names, run = [], {}, None
    for line in data.split(b"\n"):
        record = next(records_in([line]), None)
        if record is not None:
            if starts_run(record, run, "j"):
                rid = record.get("runId")
                facts = record if record.get(RECORD_KEY) == RUN_RECORD else None
                run = Run(rid if isinstance(rid, str) and rid else None, facts, "j")
            elif run is None:  # (a record before any run)
                out.append(line)
                continue
            elif RECORD_KEY not in record:
                name_run(run, record)
            gone = RECORD_KEY not in record and b'"callId":"gone' in line
            run.state.setdefault("kinds", set()).add("gone" if gone else "other" if RECORD_KEY not in record or run.declared else "record")
            if run.state["kinds"] >= {"gone", "other"}:
                return None
            if gone:
                name = run.state.setdefault("name", f"u{len(names)}")
                names[name] = record["runId"]
                line = line.replace(b'"runId":"%s"' % record["runId"].encode(), b'"runId":"%s"' % name.encode())
        out.append(line)
    return b"\n".join(out), names


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(journals(unique=True))
@example(data=VANISHED_TWICE)
@example(data=b'{"$record":"heal","runId":"r0","repairs":1}\n' + VANISHED_TWICE)
def test_heal_writes_what_it_wrote_before_the_screen_whatever_breaks(tmp_path: Path, data: bytes):
    """With one run per run id, heal before the screen counted each repair in the right heal record too. And the runs
    heal drops whole get a heal record each, counting their own repairs, as when each has an id of its own: two runs
    of one id with a run between them got one record for both (their repairs waited by id)."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    fast_log, slow_log = tmp_path / "fast.jsonl", tmp_path / "slow.jsonl"
    fast = run_replay("heal", "--log", str(fast_log), str(path))
    slow = run_replay("run", str(slow_spec(tmp_path, slow_log, "enabled")), str(path))
    assert fast.stdout == slow.stdout
    assert sorted(fast_log.read_bytes().splitlines()) == sorted(slow_log.read_bytes().splitlines())
    assert fast.returncode == slow.returncode
    apart = each_vanishing_run_its_own_id(data)
    if apart is not None:
        path.write_bytes(apart[0])
        own = run_replay("heal", str(path))
        heal = [r for r in records_in(fast.stdout.splitlines()) if r.get(RECORD_KEY) == "heal"]
        assert heal == [{**r, "runId": apart[1].get(r["runId"], r["runId"])}
                        for r in records_in(own.stdout.splitlines()) if r.get(RECORD_KEY) == "heal"]


# a run record of r5 and nothing else, z0's orphaned result (dropped), then r5 again: three runs, the last two touch
DECLARED_THEN_CUT = (
    b'{"$record":"run","runId":"r5","status":"ok"}\n'
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"tool_completed","runId":"z0","payload":{"callId":"c9"}}\n'
    b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_failed","runId":"r5","payload":{}}\n')
# r1 without its end, then v1's orphaned results (dropped) and a record: r1's end goes before the record
VANISHED_THEN_RECORD = (
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r1","payload":{}}\n'
    b'{"seq":1,"timestamp":"2026-03-01T13:00:01.000Z","type":"tool_failed","runId":"v1","payload":{"callId":"g1"}}\n'
    b'{"$record":"source","source":"x.jsonl"}\n')
# a run record that names no run, whose only event (v1's orphaned result) is dropped: r1's events after it are not its
UNNAMED_THEN_VANISHED = (
    b'{"$record":"run","status":"ok"}\n'
    b'{"seq":1,"timestamp":"2026-03-01T13:00:01.000Z","type":"tool_completed","runId":"v1","payload":{"callId":"g1"}}\n'
    b'{"seq":1,"timestamp":"2026-03-01T13:00:02.000Z","type":"run_started","runId":"r1","payload":{}}\n')


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(journals())
@example(data=DECLARED_THEN_CUT)
@example(data=VANISHED_THEN_RECORD)
@example(data=UNNAMED_THEN_VANISHED)
def test_heal_writes_the_events_it_wrote_before_the_screen_whatever_the_run_ids(tmp_path: Path, data: bytes):
    """Run ids that come back, runs cut in two by another run's event, runs of which heal drops every event: the same
    events and repairs as heal before the screen (which heal record counts a repair may differ when a run id comes
    back: before the screen they were counted by id, a batch at a time). Found by this test before it was one: when
    every event of the run that cut another in two was dropped, the two pieces came out touching here and as one run
    before the screen; a run record now keeps them apart in both. And when every event of a run was dropped, a record
    after it (a source record, say) went after the end of the run before it without the screen (the stages after the
    drop never saw that run begin), and before it with the screen: a rule that drops a run's first event, or all of a
    run, now cuts its batch there, so the stages after it close the run before in the same place."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    fast_log, slow_log = tmp_path / "fast.jsonl", tmp_path / "slow.jsonl"
    fast = run_replay("heal", "--log", str(fast_log), str(path))
    slow = run_replay("run", str(slow_spec(tmp_path, slow_log, "enabled")), str(path))

    def events(out: bytes) -> list[bytes]:
        return [line for line in out.splitlines() if b'"$record":"heal"' not in line]

    assert events(fast.stdout) == events(slow.stdout)
    assert sorted(fast_log.read_bytes().splitlines()) == sorted(slow_log.read_bytes().splitlines())
    assert fast.returncode == slow.returncode


# the screen's quick checks against the definitions they stand for -------------------------------------------
def stamp_of(digits: str, shape: str) -> str:
    """``shape`` with its zeros replaced by ``digits`` in turn (cycled)."""
    out, k = [], 0
    for ch in shape:
        if ch == "0":
            out.append(digits[k % len(digits)])
            k += 1
        else:
            out.append(ch)
    return "".join(out)


SHAPES = ["0000-00-00T00:00:00.000Z", "0000-00-00T00:00:00Z", "0000-00-00T00:00:00.000000Z", "0000-00-00t00:00:00.000z",
          "0000-00-00T00:00:00.000+00:00", "0000-00-00 00:00:00.000Z", "0000-00-00T00:00:00.Z", "0000-00-00T00:00Z"]
stamps = (
    st.builds(stamp_of, st.text("0123456789", min_size=1, max_size=30), st.sampled_from(SHAPES))
    | st.sampled_from(["2026-02-28T23:59:59.999Z", "2026-02-29T00:00:00.000Z", "2024-02-29T00:00:00.000Z",
                       "2026-03-01T24:00:00.000Z", "2026-03-01T19:60:00.000Z", "2026-13-01T00:00:00.000Z",
                       "2026-03-01T23:59:60.000Z", "2026-03-01T23:59:60Z", "2026-03-01T18:59:60.5-05:00",
                       "2026-03-01T12:00:60.000Z", "2026-03-01T23:58:60Z",
                       "2026-03-01T12:00:00.000Z\n2026-03-01T12:00:00.000Z", "2026-03-01T12:00:00.000Z ", "",
                       "٢٠٢٦-03-01T12:00:00.000Z"])
)


@settings(max_examples=500, deadline=None)
@given(st.lists(stamps, min_size=1, max_size=12), st.data())
def test_the_quick_timestamp_check_is_is_timestamp_for_each(values: list[str], data: st.DataObject):
    if data.draw(st.booleans()):  # runs of one day, most of them valid: the quick path's usual case
        day = data.draw(st.sampled_from(["2026-03-01", "2026-02-29", "2024-02-29", "2026-03-00"]))
        values = [day + v[10:] if len(v) >= 10 else v for v in values]
    shape = _stamps_shape("\n".join(values), values)
    # a leap second (23:59:60 UTC) is a timestamp the quick check leaves to the slow way: None, as for none
    assert (shape is not None) == all(is_timestamp(v) and v[17:19] != "60" for v in values)
    if shape:  # one shape for all: then text order is time order, as heal's check of the run's order takes it
        assert same_shape_utc(values) and {v.translate(str.maketrans("123456789", "000000000")) for v in values} == {shape}


def test_a_newline_inside_a_timestamp_makes_no_two_timestamps():
    values = ["2026-03-01T12:00:00.000Z\n2026-03-01T12:00:01.000Z", "2026-03-01T12:00:02.000Z"]
    assert _stamps_shape("\n".join(values), values) is None
    values = ["2026-03-01T12:00:00Z\n2026-03-01T12:00:01.000Z", "2026-03-01T12:00:02.000Z"]
    assert _stamps_shape("\n".join(values), values) is None


VALIDATE_SPEC = (ROOT / "pipeline" / "specs" / "validate.toml").read_text()


_FILLER: list[bytes] = []


def after_a_batch(tmp_path: Path, data: bytes) -> Path:
    """``data`` after clean runs that fill the first read (``CHUNK_BYTES``): its runs come in later batches, which the
    screen cuts into runs a slice at a time (the first batch of an input goes line by line)."""
    if not _FILLER:
        filler = tmp_path / "filler.jsonl"
        write_journal(filler, CHUNK_BYTES + 16_000)
        _FILLER.append(filler.read_bytes())
    path = tmp_path / "j.jsonl"
    path.write_bytes(_FILLER[0] + data)
    return path


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(journals(more_junk=(NULL_RECORD,)))
def test_heal_is_the_same_with_and_without_the_fast_lane_in_a_later_batch(tmp_path: Path, data: bytes):
    """Run ids that come back, junk between a run's lines, run records without a runId, in a later batch: the same
    stream, log and diagnostics with the fast lane and with it off (4,000 examples passed once when this was
    widened from one run per run id)."""
    same(tmp_path, b"", str(after_a_batch(tmp_path, data)))


def validate_both_ways(tmp_path: Path, path: Path) -> tuple:
    """validate with the fast lane, and with it off (runs still cut as with it)."""
    spec = tmp_path / "validate-slow.toml"
    spec.write_text(VALIDATE_SPEC.replace('mode = "validate"', 'mode = "validate"\nfast = false', 1))
    return run_replay("validate", "--in", str(path)), run_replay("run", str(spec), str(path))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(journals(more_junk=(NULL_RECORD,)))
def test_validate_is_the_same_with_and_without_the_fast_lane_in_a_later_batch(tmp_path: Path, data: bytes):
    """Run ids that come back, junk between a run's lines, run records without a runId: the same summary and
    the same errors either way."""
    fast, slow = validate_both_ways(tmp_path, after_a_batch(tmp_path, data))
    assert fast.stdout == slow.stdout
    assert diagnostics(fast.stderr) == diagnostics(slow.stderr)
    assert fast.returncode == slow.returncode


@pytest.mark.parametrize("later", [False, True])
def test_a_run_its_record_left_unnamed_is_named_by_its_first_event_in_every_count(tmp_path: Path, later: bool):
    """Found by the test above: a run record without a runId, then events of r0, r1 and r2 is three runs (the first
    named r0 by its event), as the fast lane, the heal rules and the report count it; validate's summary with
    the fast lane off said one."""
    lines = [b'{"$record":"run","status":"ok"}',
             b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r0","payload":{}}',
             b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r1","payload":{}}',
             b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r2","payload":{}}']
    data = b"\n".join(lines) + b"\n"
    fillers = 0
    if later:  # the runs of the clean journal in front of it
        fillers = orjson.loads(run_replay("validate", "--in", str(after_a_batch(tmp_path, b""))).stdout)["runs"]
        path = after_a_batch(tmp_path, data)
    else:
        path = tmp_path / "j.jsonl"
        path.write_bytes(data)
    fast, slow = validate_both_ways(tmp_path, path)
    assert orjson.loads(fast.stdout)["runs"] == orjson.loads(slow.stdout)["runs"] == fillers + 3
    report = run_replay("report", "--format", "json", str(path))
    assert orjson.loads(report.stdout)["aggregate"]["runs"]["total"] == fillers + 3


# r0, then a line whose "$record" is null (written twice, the last one null) naming r1, then r1's first event
RECORD_NULL = (
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r0","payload":{}}\n'
    b'{"$record":"run","runId":"r1","$record":null}\n'
    b'{"seq":1,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_started","runId":"r1","payload":{}}\n')


@pytest.mark.parametrize("later", [False, True])
def test_a_line_whose_record_kind_is_null_is_a_record_in_both_lanes(tmp_path: Path, later: bool):
    """Found by differential fuzzing: the screen and ``starts_run`` read ``"$record": null`` two ways (validate counted 3
    runs with the fast lane, 2 without). It is a record (``records.is_record``, in every stage): a line naming r1 after
    r0's events is a record of r0's run, and r1's event begins r1's."""
    fillers = orjson.loads(run_replay("validate", "--in", str(after_a_batch(tmp_path, b""))).stdout)["runs"] if later else 0
    path = after_a_batch(tmp_path, RECORD_NULL) if later else tmp_path / "j.jsonl"
    if not later:
        path.write_bytes(RECORD_NULL)
    fast, slow = validate_both_ways(tmp_path, path)
    assert (fast.stdout, fast.returncode) == (slow.stdout, slow.returncode)
    assert diagnostics(fast.stderr) == diagnostics(slow.stderr)
    assert orjson.loads(fast.stdout)["runs"] == fillers + 2
    same(tmp_path, b"", str(path))
    same(tmp_path, RECORD_NULL)


# a clean run whose first event's payload holds an integer of 5,000 digits (more than Python turns into an int)
HUGE_INTEGER = (
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r0","payload":{"n":' + b"9" * 5000
    + b'}}\n{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_completed","runId":"r0","payload":{}}\n')


@pytest.mark.parametrize("data", [HUGE_INTEGER, HUGE_INTEGER.replace(b"run_started", b"start", 1)], ids=["clean", "alias"])
def test_an_integer_of_thousands_of_digits_is_valid_json_in_both_lanes(tmp_path: Path, data: bytes):
    """Found by differential fuzzing: the fast lane passed the clean run as its bytes (valid: msgspec skips the number),
    while the slow way refused its line as invalid JSON ("number is infinity when parsed as double"): the standard
    library, which reads what orjson does not, refuses an integer of more than 4,300 digits. It is an ExactNumber now,
    as 1e400 is, and written back as it was read."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    same(tmp_path, b"", str(path))
    healed = run_replay("heal", str(path))
    assert healed.returncode == 0 and healed.stderr == b""
    assert b'"n":' + b"9" * 5000 + b"}" in healed.stdout
    fast, slow = validate_both_ways(tmp_path, path)
    assert (fast.stdout, fast.returncode, diagnostics(fast.stderr)) == (slow.stdout, slow.returncode, diagnostics(slow.stderr))


HEAL_DIR_SPEC = (ROOT / "pipeline" / "specs" / "heal-dir.toml").read_text()
# r1's first event has its timestamp written twice, the last null (fix_timestamp writes it anew: a note on its batch);
# later r3's and an unnamed run's times go back (check_order: a notice on heal's notices port)
NOTE_AND_NOTICE = (
    b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"assistant_message","runId":"r0","payload":{"sidechain":true},"parentId":"p"}\n'
    b'{"seq":1,"timestamp":"2026-03-01T12:00:06.000Z","type":"run_started","runId":"r1","payload":{}} \n'
    b'{"$record":"run","runId":"r1","response":"done"}\n'
    b'{"seq":1,"timestamp":"2026-03-01T12:00:06.000Z","type":"run_started","runId":"r1","payload":{},"timestamp":null}\n'
    b' {"seq":7,"timestamp":"2026-03-01T12:00:29.000Z","type":"assistant_message","runId":"r1","payload":{}}\n'
    b'{"seq":9,"timestamp":"2026-03-01T12:00:31.000Z","type":"run_failed","runId":"r1","payload":{}}\n'
    b'{"seq":8,"timestamp":"2026-03-01T12:00:50.000Z","type":"run_failed","runId":"r3","payload":{}}\n'
    b'{"seq":1,"timestamp":"2026-03-01T12:00:49.000Z","type":"run_started","runId":"","payload":{}}\n')


# a clean run, then a run record naming no run and a torn last line: the torn line's repair is of r0 (the last run an event
# named), also when the screen passed r0 on as a clean batch parse never parsed (found by a fresh seed of the test below)
TORN_AFTER_CLEAN = (
    b'{"$record":"run","runId":"r0","status":"ok"}\n'
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r0","payload":{}}\n'
    b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_completed","runId":"r0","payload":{}}\n'
    b'{"$record":"run","status":7}\n{"seq":99,"ty')


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(journals())
@example(data=NOTE_AND_NOTICE)
@example(data=TORN_AFTER_CLEAN)
def test_heal_into_a_folder_writes_the_same_files_with_and_without_the_fast_lane(tmp_path: Path, data: bytes):
    """`heal --in DIR --out DIR` writes the same healed journal and heal-log.json with the fast lane and without it.
    Found by differential fuzzing: heal-log.json's notices took the notes the stream's batches carried (a key written
    twice in an event written anew) and the notices of the stages' ports in the order they came, which followed how the
    graph's stages were split into tasks, and the fast lane splits them otherwise: the same notices in another order."""
    (tmp_path / "in").mkdir(exist_ok=True)
    (tmp_path / "in" / "j.jsonl").write_bytes(data)
    spec = tmp_path / "heal-dir-slow.toml"
    spec.write_text(HEAL_DIR_SPEC.replace('type = "screen"', 'type = "screen"\nfast = false', 1)
                    .replace('out_dir = "healed"', f'out_dir = "{tmp_path / "slow"}"', 1))
    fast = run_replay("heal", "--in", str(tmp_path / "in"), "--out", str(tmp_path / "fast"))
    slow = run_replay("run", str(spec), str(tmp_path / "in" / "j.jsonl"))
    assert fast.returncode == slow.returncode
    for name in ("j.healed.jsonl", "j.heal-log.json"):
        assert (tmp_path / "fast" / name).read_bytes() == (tmp_path / "slow" / name).read_bytes(), name
    if b'"$record":"source"' not in data:  # (a folder's input is its own source: read marks no other inside it)
        assert (tmp_path / "fast" / "j.healed.jsonl").read_bytes() == run_replay("heal", str(tmp_path / "in" / "j.jsonl")).stdout
    for folder in ("fast", "slow"):
        shutil.rmtree(tmp_path / folder)


# in process, cut into batches of any size: runs judged a batch slice at a time ---------------------------------
ONE_LINE_BREAKS = [
    lambda ev: ev.update(timestamp="2026-02-30T12:00:00.000Z"),
    lambda ev: ev.update(timestamp="2026-03-01T11:00:00.000Z"),
    lambda ev: ev.update(timestamp="2026-03-01T12:00:00Z"),
    lambda ev: ev.update(timestamp="2026-03-01T25:00:00.000Z"),
    lambda ev: ev.update(timestamp="2026-03-01t12:00:00.000Z"),
    lambda ev: ev.update(timestamp="2026-03-01T11:00:00.000+01:00"),
    lambda ev: ev.update(timestamp="2026-03-01T23:59:60.000Z"),
    lambda ev: ev.update(timestamp="2026-03-01T12:00:60.000Z"),
    lambda ev: ev.update(synthetic=False),
    lambda ev: ev.update(synthetic=True),
    lambda ev: ev.update(id="same-id"),
    lambda ev: ev.update(**{"$origin": {"x": 1}}),
    lambda ev: ev.update(parentId="p", payload={"sidechain": True}),
    lambda ev: ev.update(type=""),
    lambda ev: ev.update(type="tool_result"),
    lambda ev: ev.pop("payload", None),
    lambda ev: ev.pop("timestamp", None),
    lambda ev: ev.update(seq=ev["seq"] + 1),
    # what the screen repairs itself (aliases, seq numbers), for runs broken in that way and another
    lambda ev: ev.update(seq=ev["seq"] + 1000),
    lambda ev: ev.update(type={"tool_called": "tool_call", "tool_completed": "tool_result", "run_started": "start",
                               "assistant_message": "llm_message"}.get(ev["type"], "user")),
]


@st.composite
def plain_journals(draw: st.DrawFn) -> list[bytes]:
    """Runs of plain events (every line an event of a named run), a few of them broken line by line."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    lines: list[bytes] = []
    # as agents write journals: call ids unique in the journal, each run later than the one before (the screen then
    # judges a batch's whole runs at once); or c1, c2, ... and the same times in each run
    unique = draw(st.booleans())
    for k in range(draw(st.integers(1, 10))):
        events = clean_run(rng, draw(st.integers(2, 9)), f"r{k}", f"r{k}-c" if unique else "c", 20 * k if unique else 0)
        if draw(st.integers(0, 5)) == 0:
            over_a_leap_second(rng, events, offsets=draw(st.booleans()))
        for _ in range(draw(st.sampled_from([0, 0, 1, 2, 3]))):
            rng.choice(ONE_LINE_BREAKS)(rng.choice(events))
        if draw(st.integers(0, 4)) == 0:
            events.pop()
        lines += [exactjson.dumps(e) for e in events]
    return lines


def screened(stages: list, lines: list[bytes], size: int, feeds: dict | None = None) -> tuple[bytes, list]:
    result = run_inline(stages, batches_as_read(lines, size), feed_side=feeds)
    side = sorted(orjson.dumps(r, option=orjson.OPT_SORT_KEYS) for records in result.side.values() for r in records)
    return result.to_jsonl(), side


def healed_with_joins(lines: list[bytes], size: int, *, fast: bool, repair_log: bool = True) -> tuple[bytes, list]:
    """``screened`` through what `replay heal` runs from join_split_records on, the fast lane on or off (``repair_log``
    False: the runs it repairs have their repairs counted, not logged, as `replay heal` without --log has them)."""
    stages = [JoinSplitRecords(), ScreenRuns(fast=fast, repair_log=repair_log), ParseLines(torn_tail="repair"),
              *rule_stages(None), SummarizeRepairs()]
    return screened(stages, lines, size, {len(stages) - 1: ("repairs",)})


def same_counted_or_logged(lines: list[bytes], size: int, slow: tuple[bytes, list]) -> None:
    """With the screen's repairs counted only, heal writes what it writes without the fast lane (``slow``), heal
    records included; the log it still makes is part of the full one."""
    out, side = healed_with_joins(lines, size, fast=True, repair_log=False)
    assert out == slow[0]
    assert set(side) <= set(slow[1])


@settings(max_examples=300, deadline=None)
@given(plain_journals(), st.integers(1, 40))
def test_validate_counts_and_reports_the_same_with_and_without_the_fast_lane_in_batches_of_any_size(lines, size):
    def chain(fast: bool) -> tuple[bytes, list]:
        # the summary counts events and runs (its count of errors is of the errors wired in: none here)
        return screened([ScreenRuns(mode="validate", fast=fast), ParseLines(), ValidateEvents(), ValidateSummary()], lines, size)

    assert chain(True) == chain(False)


@pytest.mark.parametrize("size", [2, 4, 7])
def test_a_validate_lane_after_join_split_records_judges_runs_over_batches_it_did_and_did_not_decode(size: int):
    """join_split_records hands on the heads it decoded (heal's) with a batch of JSON lines only; a batch with a line
    that is not JSON it hands on without. A validate-mode screen after it (a config's) decodes its own lines: a run
    over both kinds of batch held heads of two kinds, and judging it failed (ValueError in the screen)."""
    rng = random.Random(5)
    lines = [*map(exactjson.dumps, clean_run(rng, 3, "r1")), b"this is not json", *map(exactjson.dumps, clean_run(rng, 9, "r2"))]

    def chain(fast: bool) -> tuple[bytes, list]:
        return screened([JoinSplitRecords(), ScreenRuns(mode="validate", fast=fast), ParseLines(), ValidateEvents(),
                         ValidateSummary()], lines, size)

    assert chain(True) == chain(False)


def repaired_runs(count: int) -> list[bytes]:
    """``count`` runs of the screen's repair lane: each with a type alias, a wrong seq number and no terminal event."""
    rng = random.Random(11)
    lines = []
    for k in range(count):
        events = clean_run(rng, 8, f"r{k}", calls_named=f"r{k}c")[:-1]  # (no terminal event)
        events[1] = {**events[1], "seq": 40}
        events[0] = {**events[0], "type": "start"}
        lines += map(exactjson.dumps, events)
    return lines


def test_runs_repaired_with_their_repairs_counted_go_on_as_one_batch_and_heal_writes_the_same():
    """Without a heal log the runs the screen repairs in a batch go on together, one batch for the stages after to pass
    (each rule logs nothing for them); heal_summary still puts each one's heal record after it. With the log, each run
    goes alone: the rules log its lines as it passes, run by run."""
    def lanes(screen: ScreenRuns) -> list[dict]:
        out = [screen(batches_as_read(lines, len(lines))[0]), screen.flush()]
        batches = [b for part in out for b in (part if isinstance(part, list) else [part]) if b is not None]
        return [b.lane for b in batches if b.lane is not None]

    lines = repaired_runs(4)
    # (the last run ends with the input: the rules repair it)
    assert [[run.lane["run"] for run in lane["runs"]] for lane in lanes(ScreenRuns(repair_log=False))] == [["r0", "r1", "r2"]]
    assert [lane["run"] for lane in lanes(ScreenRuns())] == ["r0", "r1", "r2"]
    slow = healed_with_joins(lines, len(lines), fast=False)
    assert slow[0].count(b'"$record":"heal"') == 4
    assert healed_with_joins(lines, len(lines), fast=True) == slow
    same_counted_or_logged(lines, len(lines), slow)


# What the repair lane changes in a line (its seq, its type) it writes anew: orjson's reading, written back, is checked
# against the line; one written back otherwise (a number orjson rounds, spaces, a key written twice) is read again
# exactly. Each pair: a payload as written, and whether heal writes it as it is.
CHANGED_PAYLOADS = [
    (b'{"n":123456789012345678901234}', True),  # an integer beyond 64 bits: orjson reads a double
    (b'{"x":0.1000000000000000055511151231257827}', True),  # a decimal a double does not hold
    (b'{"x":1e-400}', True),  # below a double's range: orjson reads 0.0
    (b'{"x":0.30000000000000004,"n":18446744073709551615}', True),  # what orjson writes back as it is
    (b'{ "x" : 1.0 }', False),  # spaces: written anew
    (b'{"x":1,"x":2}', False),  # a key written twice: the slow lane's notice
]


@pytest.mark.parametrize(("payload", "kept"), CHANGED_PAYLOADS, ids=lambda v: str(v)[:24])
@pytest.mark.parametrize(("seq", "kind"), [(30, "assistant_message"), (3, "llm_message"), (30, "llm_message")],
                         ids=["seq", "type", "both"])
def test_a_line_the_repair_lane_changes_is_written_as_heal_writes_it_whatever_its_numbers(payload: bytes, kept: bool,
                                                                                         seq: int, kind: str):
    def event(n: int, kind: str, text: bytes = b"{}", at: int = 0) -> bytes:
        return (b'{"seq":%d,"timestamp":"2026-03-01T12:00:%02d.000Z","type":"%s","runId":"r0","payload":'
                % (n, at or n, kind.encode()) + text + b"}")

    # r0: its third line changed (seq, type or both) and its fourth (seq), no terminal event (the repair lane's); r1
    # after it, clean
    lines = [event(1, "run_started"), event(2, "user_message"), event(seq, kind, payload, 3), event(40, "user_message", at=4),
             *map(exactjson.dumps, clean_run(random.Random(6), 5, "r1", second=10))]
    screen = ScreenRuns()
    out = [screen(batches_as_read(lines, len(lines))[0]), screen.flush()]
    repaired = [b for part in out for b in (part if isinstance(part, list) else [part]) if b is not None and b.lane]
    slow = healed_with_joins(lines, len(lines), fast=False)
    assert healed_with_joins(lines, len(lines), fast=True) == slow
    same_counted_or_logged(lines, len(lines), slow)
    if payload == b'{"x":1,"x":2}':
        assert not repaired  # (the slow lane's: its notice)
        return
    assert [b.lane["run"] for b in repaired] == ["r0"]  # (the repair lane's)
    healed = slow[0].splitlines()[2]
    assert healed.startswith(b'{"seq":3,') and b'"type":"assistant_message"' in healed
    assert (payload in healed) is kept, healed


@settings(max_examples=300, deadline=None)
@given(plain_journals(), st.integers(1, 40))
def test_heal_writes_and_logs_the_same_with_and_without_the_fast_lane_in_batches_of_any_size(lines, size):
    def chain(fast: bool, repair_log: bool = True) -> tuple[bytes, list]:
        stages = [ScreenRuns(fast=fast, repair_log=repair_log), ParseLines(torn_tail="repair"), *rule_stages(None),
                  SummarizeRepairs()]
        return screened(stages, lines, size, {len(stages) - 1: ("repairs",)})

    slow = chain(False)
    assert chain(True) == slow
    out, side = chain(True, repair_log=False)  # (`replay heal` without --log: the fast lane's repairs counted only)
    assert out == slow[0] and set(side) <= set(slow[1])


@settings(max_examples=300, deadline=None)
@given(plain_journals(), st.integers(1, 40), st.data())
def test_heal_is_the_same_with_and_without_the_fast_lane_when_records_are_split_in_batches_of_any_size(lines, size, data):
    """Records written across lines, rejoined by join_split_records before the screen: each join is the repair of the
    run its line is in (the run goes the slow way), however the pieces fall into batches: also when a run id comes back
    (a run takes the id of one before it), when the record names no run (an event without a runId, a dropped record,
    which parse takes out of the stream) and when it is a record that names another run (an old heal record)."""
    for k, j in data.draw(st.dictionaries(st.integers(1, 9), st.integers(0, 8), max_size=3)).items():
        if j < k:  # run rk takes the id of run rj before it
            lines = [line.replace(b'"runId":"r%d"' % k, b'"runId":"r%d"' % j) for line in lines]
    split = data.draw(st.sets(st.integers(0, len(lines) - 1), min_size=1, max_size=3))
    unnamed = False
    for k in split:  # an event, the event without its runId, or a record that names another run or none instead
        lines[k] = data.draw(st.sampled_from([lines[k], lines[k].replace(b',"runId":', b',"run":'), JUNK[4], DROPPED]))
        unnamed |= b'"run":' in lines[k]
    lines = [piece for k, line in enumerate(lines) for piece in (pretty(line).split(b"\n") if k in split else [line])]

    slow = healed_with_joins(lines, size, fast=False)
    assert healed_with_joins(lines, size, fast=True) == slow
    same_counted_or_logged(lines, size, slow)


# r0, then an r1 that heal drops whole (its run_started lost its runId and joins r0; its orphaned result is dropped) with a
# dropped record written across lines in it (joined by join_split_records: a repair that names no run), then r2.
VANISHED_WITH_A_JOIN = [
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r0","payload":{}}',
    b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_completed","runId":"r0","payload":{}}',
    b'{"seq":1,"timestamp":"2026-03-01T12:00:03.000Z","type":"run_started","run":"r1","payload":{}}',
    b'{"seq":2,"timestamp":"2026-03-01T12:00:04.000Z","type":"tool_completed","runId":"r1","payload":{"callId":"o"}}',
    *pretty(DROPPED).split(b"\n"),
    b'{"seq":1,"timestamp":"2026-03-01T12:00:05.000Z","type":"run_started","runId":"r2","payload":{}}',
    b'{"seq":2,"timestamp":"2026-03-01T12:00:06.000Z","type":"run_completed","runId":"r2","payload":{}}',
]


@pytest.mark.parametrize("size", [1, 4, 11, 20])
@pytest.mark.parametrize("fast", [True, False])
def test_a_join_inside_a_run_heal_drops_whole_is_counted_with_that_run(size: int, fast: bool):
    """The joined record lies in r1's stretch of the input: r1's heal record (run dropped) counts it, in both lanes and
    however the input is cut. (It was counted by r2 in the slow lane, and alone, as a run of no id, in the fast one.)"""
    out, _ = healed_with_joins(VANISHED_WITH_A_JOIN, size, fast=fast)
    records = [orjson.loads(line) for line in out.splitlines() if b'"$record":"heal"' in line]
    assert records == [
        {"$record": "heal", "runId": "r0", "repairs": 2, "byRule": {"fill_run_id": 1, "renumber": 1}},
        {"$record": "heal", "runId": "r1", "repairs": 2, "byRule": {"join_split_records": 1, "pair_tool_calls": 1},
         "runDropped": True}]


# A dropped record written across lines opens the input, then an r1 heal drops whole (an orphaned result, its seq 2),
# then r2, clean (the fast lane passes it as bytes): the join's repair lies before any run that stays.
JOIN_BEFORE_A_VANISHED_FIRST_RUN = [
    *pretty(DROPPED).split(b"\n"),
    b'{"seq":2,"timestamp":"2026-03-01T12:00:01.000Z","type":"tool_completed","runId":"r1","payload":{"callId":"o"}}',
    b'{"seq":1,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_started","runId":"r2","payload":{}}',
    b'{"seq":2,"timestamp":"2026-03-01T12:00:03.000Z","type":"run_completed","runId":"r2","payload":{}}',
]


@pytest.mark.parametrize("size", [1, 3, 6, 9])
@pytest.mark.parametrize("fast", [True, False])
def test_a_join_before_the_first_run_heal_drops_whole_is_counted_with_that_run(size: int, fast: bool):
    """It is the run's the record comes before (no run came before it), in both lanes. (The slow lane gave it to r2,
    the first run that stayed; the fast lane, where r2 passes as bytes, to no run.)"""
    out, _ = healed_with_joins(JOIN_BEFORE_A_VANISHED_FIRST_RUN, size, fast=fast)
    records = [orjson.loads(line) for line in out.splitlines() if b'"$record":"heal"' in line]
    assert records == [{"$record": "heal", "runId": "r1", "repairs": 2,
                        "byRule": {"join_split_records": 1, "pair_tool_calls": 1}, "runDropped": True}]


SMALL_KINDS = [("run_started", {}), ("user_message", {"text": "x"}), ("assistant_message", {"text": "y"}),
               ("tool_called", {"callId": "c", "toolName": "b"}), ("tool_completed", {"callId": "c"}),
               ("tool_completed", {"callId": "o"}), ("tool_end", {"callId": "c"}), ("run_completed", {})]


@st.composite
def runs_that_vanish(draw: st.DrawFn) -> list[bytes]:
    """A few short runs of a few ids (one may come back, or be cut by another), some opened by a run record, some
    clean (the fast lane's), any other broken so that heal drops it whole or repairs it, an event without its runId
    now and then, and dropped records written across lines anywhere, the input's first line too."""
    lines: list[bytes] = []
    for _ in range(draw(st.integers(1, 5))):
        rid = draw(st.sampled_from(["r1", "r2", "r3"]))
        if draw(st.integers(0, 3)) == 0:
            lines.append(orjson.dumps({"$record": "run", "runId": rid, "status": "ok"}))
        clean = draw(st.integers(0, 2)) == 0  # a run that needs nothing: the fast lane passes it as bytes
        kinds = [SMALL_KINDS[0], SMALL_KINDS[-1]] if clean else draw(st.lists(st.sampled_from(SMALL_KINDS), min_size=1, max_size=4))
        for seq, (kind, payload) in enumerate(kinds, 1):
            key = "runId" if clean else draw(st.sampled_from(["runId", "runId", "runId", "run"]))
            lines.append(orjson.dumps({"seq": seq, "timestamp": f"2026-03-01T12:00:{seq:02d}.000Z", "type": kind, key: rid,
                                       "payload": payload}))
        if draw(st.booleans()):
            lines.insert(draw(st.integers(0, len(lines))), DROPPED)
    return [piece for line in lines for piece in (pretty(line).split(b"\n") if line is DROPPED else [line])]


@settings(max_examples=200, deadline=None)
@given(runs_that_vanish(), st.integers(1, 12))
@example(JOIN_BEFORE_A_VANISHED_FIRST_RUN, 9)  # (found by this test's generator, 1 draw in ~3,000)
@example(VANISHED_WITH_A_JOIN, 11)
def test_heal_counts_the_same_with_and_without_the_fast_lane_when_runs_vanish_around_joined_records(lines, size):
    """Where a repair that names no run (a joined record) is counted, next to runs heal drops whole, does not depend on
    the lane or on where batches were cut."""
    slow = healed_with_joins(lines, size, fast=False)
    assert healed_with_joins(lines, size, fast=True) == slow
    same_counted_or_logged(lines, size, slow)


# r5 (no end, a call without its result), z0 (only an orphaned result: dropped whole), then r5 again, clean on its own.
KEPT_APART = [
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r5","payload":{}}',
    b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"tool_called","runId":"r5","payload":{"callId":"c2","toolName":"bash"}}',
    b'{"seq":9,"timestamp":"2026-03-01T12:00:09.000Z","type":"tool_completed","runId":"z0","payload":{"callId":"c2"}}',
    b'{"seq":1,"timestamp":"2026-03-01T12:00:10.000Z","type":"run_started","runId":"r5","payload":{}}',
    b'{"seq":2,"timestamp":"2026-03-01T12:00:11.000Z","type":"run_completed","runId":"r5","payload":{}}',
]


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_a_run_that_would_touch_an_earlier_run_of_its_id_goes_the_slow_way_and_is_kept_apart(size: int):
    """The last r5 needs nothing, but once z0 is dropped it follows the first r5: it must not pass as bytes (the rules
    would not see it to put a run record before it)."""
    def chain(**screen: bool) -> tuple[bytes, list]:
        stages = [ScreenRuns(**screen), ParseLines(torn_tail="repair"), *rule_stages(None), SummarizeRepairs()]
        return screened(stages, KEPT_APART, size, {len(stages) - 1: ("repairs",)})

    out, side = chain()
    records = [orjson.loads(line) for line in out.splitlines()]
    assert [(r.get("$record"), r.get("runId")) for r in records if r.get("$record") != "heal"] == [
        (None, "r5"), (None, "r5"), (None, "r5"), (None, "r5"), ("run", "r5"), (None, "r5"), (None, "r5")]
    assert (out, side) == chain(fast=False)
    without = chain(enabled=False)
    assert [line for line in out.splitlines() if b'"$record":"heal"' not in line] == [
        line for line in without[0].splitlines() if b'"$record":"heal"' not in line]
    assert side == without[1]


# A run id that comes back (r0, cut by another run's event, then declared again by a run record), whose middle part
# is one orphaned result: pair_tool_calls drops it, so that part never reaches heal_summary.
COMES_BACK = [
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r0","payload":{}}',
    b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"tool_called","runId":"z0","payload":{"callId":"c1","toolName":"bash"}}',
    b'{"seq":3,"timestamp":"2026-03-01T12:00:03.000Z","type":"tool_completed","runId":"r0","payload":{"callId":"c1"}}',
    b'{"$record":"run","runId":"r0","status":"ok"}',
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r0","payload":{}}',
    b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_failed","runId":"r0","payload":{}}',
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r3","payload":{}}',
]


def heal_three_ways(tmp_path: Path) -> list[tuple[bytes, bytes]]:
    """(stdout, log) of heal with the fast lane, with it off, and without the screen."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(b"\n".join(COMES_BACK) + b"\n")
    out = []
    for option in (None, "fast", "enabled"):
        log = tmp_path / f"log-{option}.jsonl"
        if option is None:
            done = run_replay("heal", "--log", str(log), str(path))
        else:
            done = run_replay("run", str(slow_spec(tmp_path, log, option)), str(path))
        out.append((done.stdout, log.read_bytes()))
    return out


def test_a_repair_of_a_run_that_never_reaches_heal_summary_is_still_counted(tmp_path: Path):
    """Every way, the heal records count every line of the heal log (the fast lane lost the dropped result's
    repair: the later r0 passes the screen unparsed, and no end of an r0 run came to heal_summary after it)."""
    outputs = heal_three_ways(tmp_path)
    for stdout, log in outputs:
        records = [orjson.loads(line) for line in stdout.splitlines() if b'"$record":"heal"' in line]
        assert sum(r["repairs"] for r in records) == len(log.splitlines()) == 6
    events = [[line for line in stdout.splitlines() if b'"$record":"heal"' not in line] for stdout, _ in outputs]
    assert events[0] == events[1] == events[2]


def test_a_repair_in_a_run_whose_id_comes_back_is_counted_in_one_place_however_the_input_was_cut(tmp_path: Path):
    """The middle r0 vanishes. Its repair is not the first r0's (it was logged after that run ended in the input), nor
    the declared r0's (a run record keeps what came before it apart): it is counted at the end, every way. (It was
    counted with the first r0 without the screen, after the declared r0 with the fast lane off, and at the end with
    it: repairs were matched to runs by id alone, so the place depended on where batches were cut.)"""
    outputs = heal_three_ways(tmp_path)
    assert outputs[0][0] == outputs[1][0] == outputs[2][0]
    records = [orjson.loads(line) for line in outputs[0][0].splitlines() if b'"$record":"heal"' in line]
    assert records[-1] == {"$record": "heal", "runId": "r0", "repairs": 1, "byRule": {"pair_tool_calls": 1}, "runDropped": True}


@pytest.mark.parametrize("mode", ["heal", "validate"])
def test_the_inputs_of_a_run_over_several_take_the_fast_lane(mode: str):
    """`read` sends a source record before each input when it reads several (a folder, `heal a b`): it names the input
    the lines come from and relabels nothing, so the input's clean runs still pass as bytes. (They used to go the
    slow way, every event of every input checked one by one: the fast lane was off for folders.)"""
    screen = ScreenRuns(mode=mode)
    out = []
    for source in ("a.jsonl", "b.jsonl"):
        lines = [line.replace(b"r5", source[:1].encode()) for line in KEPT_APART[3:]]  # one clean run (of its own id)
        for batch in (Batch.of([{RECORD_KEY: "source", "source": source}], source), Batch.from_lines(lines, source)):
            result = screen(batch)
            out += result if isinstance(result, list) else [result] if result is not None else []
    result = screen.flush()
    out += result if isinstance(result, list) else [result] if result is not None else []
    assert [(b.source, b.events is not None, b.clean) for b in out] == [
        ("a.jsonl", True, None), ("a.jsonl", False, (1, 2, ("a",))), ("b.jsonl", True, None), ("b.jsonl", False, (1, 2, ("b",)))]


def whole_run(rid: str, second: int, *middle: tuple[str, dict], stamps: list[int] | None = None) -> list[bytes]:
    """A run that begins and ends well, with ``middle`` events (type, payload) between, one second apart."""
    kinds = [("run_started", {}), *middle, ("run_completed", {})]
    at = stamps or [second + k for k in range(len(kinds))]
    return [exactjson.dumps({"seq": k, "timestamp": f"2026-03-01T12:{t // 60:02d}:{t % 60:02d}.000Z", "type": kind,
                             "runId": rid, "payload": payload})
            for k, ((kind, payload), t) in enumerate(zip(kinds, at, strict=True), start=1)]


def called(cid: str) -> tuple[str, dict]:
    return "tool_called", {"callId": cid, "toolName": "bash"}


def answered(cid: str) -> tuple[str, dict]:
    return "tool_completed", {"callId": cid}


# Traps for the screen's judging of a batch's whole runs at once, among clean runs that it takes that way: a call
# answered in the next run, a run whose times go back, runs one event long, with two ends and none, one that does not
# begin with run_started, and a run that comes back (KEPT_APART).
TRAPS = [
    *whole_run("a1", 0, called("x1"), answered("x1")),
    *whole_run("a2", 10, called("x2")),
    *whole_run("a3", 20, answered("x2")),
    *whole_run("a4", 30, called("x4"), answered("x4")),
    *whole_run("a5", 40, ("user_message", {}), stamps=[40, 39, 41]),
    *whole_run("a6", 50),
    whole_run("a7", 60)[0],
    *whole_run("a8", 62, called("x8"), answered("x8")),
    *whole_run("c1", 66, ("run_completed", {})),
    *whole_run("c2", 70, ("user_message", {}))[:-1],
    *whole_run("c3", 74, called("x9"), answered("x9")),
    *whole_run("c4", 78, ("run_completed", {})),
    *whole_run("c5", 82, ("user_message", {})),
    *[line.replace(b'"run_started"', b'"user_message"') for line in whole_run("c6", 86, ("user_message", {}))],
    *whole_run("c7", 90, ("user_message", {})),
    *[line.replace(b"T12:00:", b"T12:01:") for line in KEPT_APART],
    *whole_run("a9", 130, called("y9"), answered("y9")),
    *whole_run("b1", 140),
]


@pytest.mark.parametrize("size", range(1, len(TRAPS) + 1))
def test_whole_runs_judged_at_once_are_judged_as_run_by_run(size: int):
    """Every way the traps fall into batches of ``size`` lines (after a first batch: an input's first batch is judged
    line by line), heal writes and logs what it writes and logs with the fast lane off."""
    lines = [*whole_run("f0", 0, *[("user_message", {})] * size)[:size], *TRAPS]

    def chain(fast: bool, repair_log: bool = True) -> tuple[bytes, list]:
        stages = [ScreenRuns(fast=fast, repair_log=repair_log), ParseLines(torn_tail="repair"), *rule_stages(None),
                  SummarizeRepairs()]
        return screened(stages, lines, size, {len(stages) - 1: ("repairs",)})

    slow = chain(False)
    assert chain(True) == slow
    out, side = chain(True, repair_log=False)  # (`replay heal` without --log: the fast lane's repairs counted only)
    assert out == slow[0] and set(side) <= set(slow[1])


@pytest.mark.parametrize("size", range(1, 6))
def test_a_record_after_a_vanished_run_stays_out_of_the_run_before_it_without_the_screen(size: int):
    """Without the screen (another dialect), however the lines fall into batches: c1's end goes before the record
    that followed v1, whose every event pair_tool_calls drops (the rule cuts its batch where v1 began, and an empty
    part that only closes c1 still goes on)."""
    lines = [*whole_run("c1", 0, ("user_message", {}))[:-1], *VANISHED_THEN_RECORD.splitlines()]

    def chain(screen: bool) -> tuple[bytes, list]:
        stages = [*([ScreenRuns()] if screen else []), ParseLines(torn_tail="repair"), *rule_stages(None), SummarizeRepairs()]
        return screened(stages, lines, size, {len(stages) - 1: ("repairs",)})

    out = chain(False)
    assert out == chain(True)
    records = [orjson.loads(line) for line in out[0].splitlines()]
    assert records.index({"$record": "source", "source": "x.jsonl"}) > max(
        k for k, r in enumerate(records) if r.get("runId") == "c1" and r.get("type") == "run_failed")


def _long_run(n: int, payload: object = None) -> list[bytes]:
    """One run of ``n`` (even) events: a call and its result, over and over; the middle event's payload ``payload`` if
    given."""
    events = [{"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started", "runId": "r1", "payload": {}}]
    for seq in range(2, n):
        called = seq % 2 == 0
        events.append({"seq": seq, "timestamp": f"2026-03-01T{12 + seq // 3600:02d}:{seq // 60 % 60:02d}:{seq % 60:02d}.000Z",
                       "type": "tool_called" if called else "tool_completed", "runId": "r1",
                       "payload": {"callId": f"c{seq if called else seq - 1}", "toolName": "bash"}})
    events.append({"seq": n, "timestamp": "2026-03-02T12:00:00.000Z", "type": "run_completed", "runId": "r1", "payload": {}})
    if payload is not None:
        events[n // 2]["payload"] = payload
    return [orjson.dumps(event) for event in events]


def sent(out: object) -> list[Batch]:
    """The batches a screen's call (or flush) gives back: a batch, a list of batches and iterators of them (lines read
    back from a spool), or None."""
    if out is None:
        return []
    if isinstance(out, Batch):
        return [out]
    return [batch for part in out for batch in ([part] if isinstance(part, Batch) else list(part))]  # type: ignore[attr-defined]


def _lanes(lines: list[bytes]) -> list[tuple[bool, int]]:
    """(clean, lines) of each batch the screen sends on, fed 1,024 lines at a time."""
    screen, out = ScreenRuns(), []
    for i in range(0, len(lines), 1024):
        out += sent(screen(Batch.from_lines(lines[i:i + 1024], "long.jsonl")))
    out += sent(screen.flush())
    return [(bool(b.clean), len(b)) for b in out]


def test_a_long_run_that_needs_nothing_takes_the_fast_lane_and_one_that_does_goes_in_pieces(tmp_path: Path):
    """A clean run of 10,000 lines went the slow way (every rule over every event: ~10x the time) when the screen held
    runs of up to 4,096 lines only; it holds up to 16,384 now (and 4 MiB), and a run that goes the slow way goes in
    batches of at most 4,096 lines, as before: the same output, and a heal log in the same order. A clean run longer
    than that is judged as it is held and spooled: it takes the fast lane too, in clean batches of about the size the
    line cutter sends."""
    clean = _long_run(10_000)
    assert _lanes(clean) == [(True, 10_000)]
    dirty = _long_run(10_000, payload="a string")
    lanes = _lanes(dirty)
    assert not any(fast for fast, _ in lanes) and sum(n for _, n in lanes) == 10_000
    assert max(n for _, n in lanes) <= 4096
    same(tmp_path, b"\n".join(dirty) + b"\n")
    too_long = _long_run(20_000)  # past what is held: spooled, and clean
    lanes = _lanes(too_long)
    assert all(fast for fast, _ in lanes) and max(n for _, n in lanes) <= 4096 and sum(n for _, n in lanes) == 20_000
    lanes = _lanes(_long_run(20_000, payload="a string"))  # past what is held and not clean: the slow way, in pieces
    assert not any(fast for fast, _ in lanes) and max(n for _, n in lanes) <= 4096 and sum(n for _, n in lanes) == 20_000


def test_a_long_run_the_screen_could_repair_logs_as_the_slow_lane_logs_it(tmp_path: Path):
    """A run of 10,000 lines whose only faults are a seq stretch near its start and an aliased type near its end: the
    repair lane, which holds runs of up to 16,384 lines now, logged alias's line (line 9,000) before renumber's
    stretch (line 5), where the rules, taking the run 4,096 lines at a time, log the stretch with the first piece
    and the alias with the third: the same repairs in another order with the fast lane than without it. Such a run
    goes the slow way."""
    events = []
    for k in range(1, 10_001):
        kind = "run_started" if k == 1 else "run_completed" if k == 10_000 else "llm_message" if k == 9000 else "user_message"
        events.append({"seq": k + 100 if 5 <= k <= 9 else k, "timestamp": f"2026-03-01T{12 + k // 3600:02d}:{k // 60 % 60:02d}:{k % 60:02d}.000Z",
                       "type": kind, "runId": "r1", "payload": {}})
    events += [{"seq": 1, "timestamp": "2026-03-02T12:00:00.000Z", "type": "run_started", "runId": "r2", "payload": {}},
               {"seq": 2, "timestamp": "2026-03-02T12:00:01.000Z", "type": "run_completed", "runId": "r2", "payload": {}}]
    data = b"".join(orjson.dumps(event) + b"\n" for event in events)
    fast, _, fast_log, _ = both(tmp_path, data)
    assert fast.returncode == 0, fast.stderr
    assert [orjson.loads(line)["rule"] for line in fast_log.splitlines()] == ["renumber", "alias"]
    same(tmp_path, data)


def _event(seq: int, kind: str, rid: str = "r1") -> bytes:
    return orjson.dumps({"seq": seq, "timestamp": f"2026-03-01T12:00:0{seq}.000Z", "type": kind, "runId": rid, "payload": {}})


# A line holding two events, then a line that holds none: as many JSON values as lines, but not one per line.
# (msgspec's decode of the lines joined reads values separated by any whitespace, so it took the two for lines 2
# and 3, and the fast lanes of validate, heal and report passed the line; read, then the slow lanes, report it.)
TWO_THEN_BLANK = [_event(1, "run_started"), _event(2, "user_message") + b" " + _event(3, "assistant_message"), b"",
                  _event(4, "run_completed")]
# The same with no space between the two, and an event written across two lines (its newline between tokens) after
# them: again as many values as lines.
TWO_THEN_SPLIT = [_event(1, "run_started"), _event(2, "user_message") + _event(3, "assistant_message"),
                  _event(4, "run_completed").replace(b',"payload"', b',\n"payload"')]


@pytest.mark.parametrize("later", [False, True], ids=["first-batch", "later-batch"])
@pytest.mark.parametrize("lines", [TWO_THEN_BLANK, TWO_THEN_SPLIT], ids=["blank", "split"])
def test_a_line_holding_two_events_is_invalid_in_every_lane(tmp_path: Path, lines: list[bytes], later: bool):
    """Validate, heal, report and read each report the line holding two events as not JSON, at its line, as their
    slow lanes do; validate and heal say the same as with the fast lane off."""
    data = b"\n".join(lines) + b"\n"
    path = after_a_batch(tmp_path, data) if later else tmp_path / "j.jsonl"
    if not later:
        path.write_bytes(data)
    line = path.read_bytes()[:-len(data)].count(b"\n") + 2  # the line of the two events
    for command in (["validate", "--in"], ["heal"], ["report"], ["read"]):
        done = run_replay(*command, str(path))
        errors = [orjson.loads(x)["error"] for x in done.stderr.splitlines() if x.startswith(b'{"error"')]
        assert done.returncode == 1, (command, done.stderr)
        assert {"code": "E_JSONL_LINE_INVALID", "line": line} in [{k: e.get(k) for k in ("code", "line")} for e in errors], command
    fast, slow = validate_both_ways(tmp_path, path)
    assert fast.stdout == slow.stdout and diagnostics(fast.stderr) == diagnostics(slow.stderr)
    same(tmp_path, b"", str(path))


def test_a_record_left_out_before_a_clean_run_takes_its_place_there_not_in_the_run_after(tmp_path: Path):
    """Found by a fresh seed of the property above: a line that is no object, then a run the screen passed clean, then a
    run opening with seq 2. validate's fast lane did not move its place past the clean run, so the line left out
    took its place in the run after it and that run's seq 2 passed; the slow lane reports it."""
    run = [f'{{"seq":{n},"timestamp":"2026-03-01T12:00:0{n}.000Z","type":"{kind}","runId":"r5","payload":{{}}}}'
           for n, kind in enumerate(["run_started", "user_message", "assistant_message", "run_completed"], 1)]
    data = "\n".join(["[1,2]", *run, '{"seq":2,"timestamp":"2026-03-01T12:00:09.000Z","type":"user_message","runId":"r6",'
                      '"payload":{}}']).encode() + b"\n"
    fast, slow = validate_both_ways(tmp_path, after_a_batch(tmp_path, data))
    assert fast.stdout == slow.stdout and diagnostics(fast.stderr) == diagnostics(slow.stderr)
    assert fast.stderr.count(b"E_ARTIFACT_EVENT_SEQ_INVALID") == 1
