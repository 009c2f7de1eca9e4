"""Properties of heal over generated broken traces: idempotent, nothing lost unlogged, canonical result."""

from __future__ import annotations

from typing import Any

import orjson
from heal_support import ev, events_of, heal_lines, lines_of
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from replay.pipeline.engine import exactjson
from replay.pipeline.model.events import TERMINAL_TYPES, parse_timestamp
from replay.pipeline.model.healing import BUILTIN_ALIASES
from replay.pipeline.model.records import is_record
from replay.stages.validate import ValidateEvents

TYPES = ["run_started", "user_message", "assistant_message", "tool_called", "tool_completed", "tool_failed",
         "run_completed", "run_failed", "llm_chunk", *sorted(BUILTIN_ALIASES)[:12]]
GOOD_TS = st.sampled_from(["2026-03-01T12:00:00.000Z", "2026-03-01T12:00:01Z", "2026-03-01T11:59:59+00:00"])
BAD_TS = st.one_of(st.just("yesterday"), st.integers(min_value=1_600_000_000, max_value=1_900_000_000),
                   st.just("2026-03-01T12:00:02"), st.none())


@st.composite
def broken_event(draw: Any, run_id: str) -> dict[str, Any]:
    event: dict[str, Any] = {}
    if draw(st.integers(0, 9)):
        event["seq"] = draw(st.one_of(st.integers(-2, 30), st.text(max_size=2), st.booleans()))
    ts = draw(st.one_of(GOOD_TS, GOOD_TS, BAD_TS))
    if ts is not None:
        event["timestamp"] = ts
    event["type"] = draw(st.sampled_from(TYPES))
    if draw(st.integers(0, 5)):
        event["runId"] = run_id
    if draw(st.integers(0, 6)):
        event["payload"] = draw(st.one_of(st.dictionaries(st.sampled_from("abc"), st.integers(0, 3), max_size=2),
                                          st.text(max_size=3), st.integers(-2**63, 2**63 - 1), st.none(), st.lists(st.integers(-1000, 1000), max_size=2)))
    if not draw(st.integers(0, 5)):  # a field that says nothing, as a writer's None or False (drop_empty_fields)
        field = draw(st.sampled_from(["step", "turn", "synthetic"]))
        event[field] = draw(st.sampled_from([None, False] if field == "synthetic" else [None]))
    return event


# reserved records that begin no run: a heal record, a record of a kind replay does not know (a null one too), a dropped one
OTHER_RECORDS = [{"$record": "heal", "runId": "run_0", "repairs": 1}, {"$record": None, "runId": "run_1"},
                 {"$record": "other"}, {"$record": "dropped", "code": "E_JSONL_LINE_INVALID", "message": "m", "line": 1}]


@st.composite
def broken_stream(draw: Any) -> list[dict[str, Any]]:
    """Runs of broken events, some opened by a run record; a run id may come back after another run (``run_0``
    again), and a reserved record that begins no run may stand anywhere."""
    records: list[dict[str, Any]] = []
    for n in range(draw(st.integers(1, 3))):
        run_id = f"run_{n}" if n < 1 or draw(st.integers(0, 2)) else "run_0"
        if draw(st.booleans()):
            record: dict[str, Any] = {"$record": "run", "runId": run_id}
            status = draw(st.sampled_from([None, "ok", "error"]))
            if status:
                record["status"] = status
            if draw(st.booleans()):
                record["response"] = "the answer"
            records.append(record)
        for _ in range(draw(st.integers(0, 8))):
            event = draw(broken_event(run_id))
            records.append(event)
            if draw(st.integers(0, 5)) == 0:
                records.append(dict(event))  # an exact duplicate
            if draw(st.integers(0, 12)) == 0:
                records.append(dict(draw(st.sampled_from(OTHER_RECORDS))))
    return records


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(broken_stream(), st.integers(1, 5))
def test_heal_is_idempotent(records: list[dict[str, Any]], batch_size: int) -> None:
    first = heal_lines(lines_of(records), batch_size=batch_size)
    healed = first.to_jsonl().splitlines()
    second = heal_lines(healed, batch_size=batch_size + 1)
    assert second.to_jsonl().splitlines() == healed
    assert second.side.get("repairs", []) == []  # logs nothing: only notices (observations) recur


@SETTINGS
@given(broken_stream(), st.integers(1, 5), st.integers(1, 5))
def test_heal_does_not_depend_on_batch_boundaries(records: list[dict[str, Any]], a: int, b: int) -> None:
    """What heal writes, and its log line by line in order: the same however the input is cut into batches (each
    rule logs a run at a time, ``cut_runs``; tests/stages/test_batch_cuts.py cuts the reads of `replay heal` too)."""
    one, other = heal_lines(lines_of(records), batch_size=a), heal_lines(lines_of(records), batch_size=b)
    assert one.to_jsonl() == other.to_jsonl()
    # the same log lines; here, with no screen before the rules to hold a run whole, a run over several batches is
    # logged a batch at a time (rule by rule in each): in another order, which `replay heal` has too for a stream the
    # screen leaves alone (README, Heal)
    assert sorted(map(orjson.dumps, one.side.get("repairs", []))) == sorted(map(orjson.dumps, other.side.get("repairs", [])))


@st.composite
def tool_stream(draw: Any) -> list[dict[str, Any]]:
    """Runs of tool calls and results (call ids from a small pool, used again; with a tool name or without an id),
    terminal events anywhere (a run that goes on after its end, ends twice), a stray run_started, a heal record."""
    records: list[dict[str, Any]] = []
    for run_id in draw(st.sampled_from([["r1"], ["r1", "r2"]])):
        seq = 1
        if draw(st.booleans()):
            records.append(ev(seq, "run_started", run=run_id))
            seq += 1
        for _ in range(draw(st.integers(1, 9))):
            cid = draw(st.sampled_from(["c1", "c2", "c3", None]))
            payload: dict[str, Any] = {"toolName": draw(st.sampled_from(["a", "b"]))}
            if cid is not None:
                payload["callId"] = cid
            kind = draw(st.sampled_from(["call", "call", "result", "result", "end", "start", "record", "message"]))
            if kind == "record":
                records.append({"$record": "heal", "runId": run_id, "repairs": 1})
                continue
            etype, payload = {
                "call": ("tool_called", payload),
                "result": (draw(st.sampled_from(["tool_completed", "tool_failed"])), payload),
                "end": (draw(st.sampled_from(["run_completed", "run_failed"])), {}),
                "start": ("run_started", {}),
                "message": ("user_message", {"text": "x"}),
            }[kind]
            records.append(ev(seq, etype, run=run_id, payload=payload))
            seq += 1
    return records


@SETTINGS
@given(tool_stream(), st.integers(1, 5), st.integers(1, 5))
@example(records=[ev(1, "run_started"), ev(2, "tool_called", payload={"callId": "c1", "toolName": "a"}),
                  ev(3, "run_completed"), ev(4, "tool_called", payload={"callId": "c1", "toolName": "b"})], a=5, b=1)
def test_tool_calls_heal_alike_however_cut_and_healing_again_adds_nothing(records: list[dict[str, Any]], a: int,
                                                                          b: int) -> None:
    """pair_tool_calls' marks, moves and drops over calls whose ids come back, results before or after their call, and
    ends a run goes on after (its terminal event and what follows it wait): the same however the input is cut, and
    healing its output again adds nothing (the example: a call of an id open at the end, made again with another tool
    after it, is a new call, as heal reads its own output; it was taken for the call written again)."""
    one, other = heal_lines(lines_of(records), batch_size=a), heal_lines(lines_of(records), batch_size=b)
    assert one.to_jsonl() == other.to_jsonl()
    healed = one.to_jsonl().splitlines()
    again = heal_lines(healed, batch_size=b)
    assert again.to_jsonl().splitlines() == healed
    assert again.side.get("repairs", []) == []


@SETTINGS
@given(broken_stream())
@example(records=[{"$record": "run", "runId": "run_0", "response": "the answer"},  # the response's message, then the end
                  {"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started", "runId": "run_0", "payload": {}},
                  {"seq": 2, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_completed", "runId": "run_0", "payload": {}},
                  dict(OTHER_RECORDS[0])])  # (the heal record of an earlier heal)
@example(records=[{"timestamp": "2026-03-01T12:00:00.000Z", "type": "tool_called"},
                  {"timestamp": "2026-03-01T12:00:01.000Z", "type": "run_complete"},
                  {"timestamp": "2026-03-01T12:00:02.000Z", "type": "run_started"}])  # (its call's mark went after the end)
def test_healed_runs_are_canonical(records: list[dict[str, Any]]) -> None:
    result = heal_lines(lines_of(records))
    runs: list[list[dict[str, Any]]] = []  # as the healed stream is read back: cut at a run record or another runId
    for record in result.records:
        if record.get("$record") == "run" or (not is_record(record) and (not runs or not runs[-1]
                                                                        or runs[-1][-1]["runId"] != record["runId"])):
            runs.append([])
        if not is_record(record):
            runs[-1].append(record)
    for events in filter(None, runs):
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert events[0]["type"] == "run_started"
        assert any(e["type"] in TERMINAL_TYPES for e in events)
        for e in events:
            assert parse_timestamp(e["timestamp"]) is not None
            assert isinstance(e["payload"], dict) and isinstance(e["runId"], str) and e["runId"]
            assert e.get("synthetic", True) is True
        # what heal adds at a run's end (unanswered marks, the response's assistant_message) goes before the terminal
        # event that ends it, whatever records follow that event
        last = max(k for k, e in enumerate(events) if not e.get("synthetic")) if any(not e.get("synthetic") for e in events) else -1
        if last >= 0 and events[last]["type"] in TERMINAL_TYPES:
            assert not [e for e in events[last + 1:] if e.get("synthetic")]


@SETTINGS
@given(broken_stream())
def test_nothing_is_lost_without_a_log_entry(records: list[dict[str, Any]]) -> None:
    result = heal_lines(lines_of(records))
    events_in = [r for r in records if not is_record(r)]
    events_out = [e for e in events_of(result) if not e.get("synthetic")]
    dropped = [r for r in result.side.get("repairs", []) if r["action"] == "dropped"]
    inserted = [r for r in result.side.get("repairs", []) if r["action"] == "inserted"]
    assert len(events_in) == len(events_out) + len(dropped)
    assert len([e for e in events_of(result) if e.get("synthetic")]) == len(inserted)
    run_records_in = [r for r in records if r.get("$record") == "run"]
    assert [r for r in result.records if r.get("$record") == "run"] == run_records_in


@st.composite
def repeated_events(draw: Any) -> list[dict[str, Any]]:
    """Events without seq or timestamp (as a streaming runner prints them), each written 1 to 40 times in a row."""
    records: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 6))):
        event = {"type": draw(st.sampled_from(["log", "tool_called", "llm_chunk"])),  # (1, 1.0 and true: three values)
                 "payload": {"msg": draw(st.sampled_from(["same", "other", 1, 1.0, True, exactjson.ExactNumber("1e400"),
                                                          exactjson.ExactNumber("2e400")]))}}
        records.extend(dict(event) for _ in range(draw(st.integers(1, 40))))
    return records


@SETTINGS
@given(repeated_events(), st.integers(1, 50))
def test_dedupe_keeps_one_of_each_row_of_identical_events_however_the_input_is_cut(
        records: list[dict[str, Any]], batch_size: int) -> None:
    """Seed 000's dedupe drops exact adjacent duplicates: a row of identical events leaves one, wherever the batch
    boundaries fall (a row longer than a batch, one cut by the boundary)."""
    rows = [r for k, r in enumerate(records) if k == 0 or not exactjson.typed_equal(r, records[k - 1])]
    result = heal_lines([exactjson.dumps(r) for r in records], batch_size=batch_size)
    kept = [{"type": e["type"], "payload": e["payload"]} for e in events_of(result) if not e.get("synthetic")]
    assert len(kept) == len(rows) and all(map(exactjson.typed_equal, kept, rows))
    dropped = [r for r in result.side.get("repairs", []) if r["rule"] == "dedupe"]
    assert len(dropped) == len(records) - len(rows)


def twice(line: bytes, value: bytes) -> bytes:
    """``line`` (an object) with its payload written again, last, as ``value``: a key written twice."""
    return line[:-1] + b',"payload":' + value + b"}"


@st.composite
def streams_with_keys_written_twice(draw: Any) -> list[bytes]:
    """``broken_stream``'s lines, a few with their payload written twice (the last value wins: a rule that changes the
    event writes it anew, and the check after heal notices the key written twice), and before them orphaned results
    of calls never made (dropped) and sidechain events whose parent never comes (held to the run's end)."""
    lines: list[bytes] = []
    for line in lines_of(draw(broken_stream())):
        if draw(st.integers(0, 5)) == 0 and b'"runId":"run_' in line:
            rid = orjson.loads(line)["runId"]
            lines.append(orjson.dumps({"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "tool_completed",
                                       "runId": rid, "payload": {"callId": "never"}}))
        if draw(st.integers(0, 5)) == 0 and b'"runId":"run_' in line:
            rid = orjson.loads(line)["runId"]
            lines.append(orjson.dumps({"seq": 2, "timestamp": "2026-03-01T12:00:00.000Z", "type": "assistant_message",
                                       "runId": rid, "payload": {"sidechain": True}, "parentId": "never"}))
        if draw(st.integers(0, 3)) == 0 and not line.startswith(b'{"$record"'):
            line = twice(line, draw(st.sampled_from([b"null", b"{}", b'"text"'])))
        lines.append(line)
    return lines


def noticed(lines: list[bytes], batch_size: int) -> list[Any]:
    """What heal's check after the rules notices of keys written twice in events written anew (sorted: they come in the
    order the rules changed the events, batch by batch). Each line a rule changed (not dropped) with a key written
    twice is among them."""
    result = heal_lines(lines, batch_size=batch_size, then=(ValidateEvents(report_as="E_HEALED_ARTIFACT_INVALID"),))
    notes = sorted((n["line"], n["keys"]) for n in result.side.get("notices", []) if n.get("code") == "E_JSON_DUPLICATE_KEY")
    repairs = result.side.get("repairs", [])
    dropped = {r.get("line") for r in repairs if r["action"] == "dropped"}
    twice = {k + 1 for k, line in enumerate(lines) if exactjson.duplicate_keys(line, orjson.loads(line))}
    changed = {r.get("line") for r in repairs if r["action"] == "changed"} & twice - dropped
    assert changed <= {line for line, _ in notes}, "changed, written anew, and no notice"
    return notes


@SETTINGS
@given(streams_with_keys_written_twice(), st.integers(1, 5), st.integers(6, 40))
@example(lines=[  # run_0 begins with an orphaned result (dropped), then an event whose payload is null (written anew)
    b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"tool_failed","runId":"run_0","payload":{"callId":"c1"}}',
    b'{"seq":2,"timestamp":"2026-03-01T12:00:01.000Z","type":"llm_chunk","runId":"run_0","payload":{},"payload":null}',
    b'{"seq":3,"timestamp":"2026-03-01T12:00:02.000Z","type":"user_message","runId":"run_1","payload":{}}'], a=3, b=40)
@example(lines=[  # a sidechain event whose parent never comes (held), then an event whose payload is 7 (written anew)
    b'{"seq":3,"timestamp":"2026-03-01T12:01:25.000Z","type":"tool_called","runId":"r3","payload":{"callId":"c1",'
    b'"toolName":"bash","sidechain":true},"parentId":"p"}',
    b'{"seq":127,"timestamp":"2026-03-01T12:05:02.000Z","type":"user_message","runId":"r24","payload":{},"payload":7}'],
    a=1, b=6)
def test_what_heal_notices_does_not_depend_on_batch_boundaries(lines: list[bytes], a: int, b: int) -> None:
    """Found by differential fuzzing (a file and a pipe that paused): when pair_tool_calls dropped the first event of a
    run that began a batch, the part of the batch before the run's beginning was empty but held the batch's notes (a
    key written twice in an event written anew), and an empty batch was dropped with them: the notice was missing,
    or not, by where the input was cut into batches. And order_sidechains, holding a sidechain event back, rebuilt
    its batch without them."""
    assert noticed(lines, a) == noticed(lines, b)
