"""A tool result written before its call (a runner writing its events out of order, in the same run): heal's
``pair_tool_calls`` moves it to just after the call, logged as moved, not dropped as an orphan with the call then marked
unanswered; ``report`` and ``export --otlp`` pair it with that call on a journal not healed yet, so the report of the
raw journal and of the healed one count the same calls and errors. A result whose call never comes is the orphan it
was: dropped at the run's end (or when its input pauses, or past the most that may wait)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import run_replay
from heal_support import ev, events_of, heal_lines, heal_records
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_pieces_agree import in_pieces
from test_screen import same

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.inline import run_inline
from replay.stages import pair_tool_calls
from replay.stages.pair_tool_calls import PairToolCalls
from replay.stages.screen import ScreenRuns


def _line(seq: int, second: int, kind: str, **payload: Any) -> dict[str, Any]:
    return {"seq": seq, "timestamp": f"2026-03-01T12:00:{second:02d}Z", "type": kind, "runId": "r1", "payload": payload}


# the hunters' journal: c1's result has the seq before its call's and is written before it
RESULT_FIRST = [_line(1, 0, "run_started"), _line(2, 2, "tool_completed", callId="c1", toolName="t", durationMs=1000),
                _line(3, 1, "tool_called", callId="c1", toolName="t"), _line(4, 3, "run_completed")]


def _jsonl(records: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def _report(path: Path | None = None, data: bytes | None = None) -> dict[str, Any]:
    done = run_replay("report", "--format", "json", *([str(path)] if path else []), input=data)
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)["runs"][0]


def _calls(run: dict[str, Any]) -> list[tuple]:
    """The run's calls as report lists them, in order, but their seq and start (heal renumbers)."""
    return [(c["toolName"], c["status"], c.get("callId"), c["durationMs"]) for c in run["toolCalls"]["calls"]]


def _errors(run: dict[str, Any]) -> list[tuple]:
    """The run's errors, in order: kind and tool (heal's mark of a call never answered says more than report's own
    words)."""
    return [(e["kind"], e.get("toolName") or "") for e in run["errors"]]


def test_heal_moves_a_result_written_before_its_call_to_just_after_it(tmp_path: Path):
    """It was dropped as "an orphaned result" of a call "which no tool_called of the run made", and the call it
    answered then marked tool_unanswered: a call that completed turned into a failed one."""
    path, log = tmp_path / "j.jsonl", tmp_path / "log.jsonl"
    path.write_bytes(_jsonl(RESULT_FIRST))
    healed = run_replay("heal", "--log", str(log), str(path), process=True)
    assert healed.returncode == 0, healed.stderr
    records = [orjson.loads(line) for line in healed.stdout.splitlines()]
    assert [(r.get("type"), r.get("seq")) for r in records if "type" in r] == [
        ("run_started", 1), ("tool_called", 2), ("tool_completed", 3), ("run_completed", 4)]
    entries = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    assert [(e["rule"], e["action"]) for e in entries] == [("pair_tool_calls", "moved"), ("renumber", "renumbered"),
                                                           ("renumber", "renumbered")]
    assert entries[0]["message"] == "tool_completed for call 'c1' came before its tool_called (seq 3); moved to just after it"
    assert (entries[0]["line"], entries[0]["seqBefore"], entries[0]["value"]) == (2, 2, "c1")
    raw, fixed = _report(path), _report(data=healed.stdout)
    assert raw["toolCalls"]["error"] == fixed["toolCalls"]["error"] == 0 and raw["errors"] == fixed["errors"] == []
    assert _calls(raw) == _calls(fixed) == [("t", "ok", "c1", 1000)]
    again = run_replay("heal", "--log", str(log), input=healed.stdout)
    assert again.stdout == healed.stdout and log.read_bytes() == b""


def test_the_fast_lane_sends_a_run_with_a_result_before_its_call_the_slow_way(tmp_path: Path):
    """The screen passes on as its bytes only a run no rule changes: this one goes through the rules (the clean run
    after it does not), and heal writes and logs it the same with the fast lane and without it."""
    clean = [{**e, "runId": "r2"} for e in RESULT_FIRST]
    clean[1:3] = [clean[2], clean[1]]
    clean[1]["seq"], clean[2]["seq"] = 2, 3
    data = _jsonl(RESULT_FIRST) + _jsonl(clean)
    screen = ScreenRuns()
    out = [screen(Batch.from_lines(data.splitlines(), "j.jsonl")), screen.flush()]
    batches = [b for part in out for b in (part if isinstance(part, list) else [part]) if b is not None]
    assert {orjson.loads(raw)["runId"] for b in batches if b.clean for raw in b.raws} == {"r2"}
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    same(tmp_path, b"", str(path))


# c1's result (failed) and that result written again, both before c1's call; c2's result, whose call never comes;
# c3 as it should be
OUT_OF_ORDER = [ev(1, "run_started"), ev(2, "tool_failed", payload={"callId": "c1", "error": "boom"}),
                ev(3, "user_message"), ev(4, "tool_failed", payload={"callId": "c1", "error": "boom"}),
                ev(5, "tool_completed", payload={"callId": "c2"}),
                ev(6, "tool_called", payload={"callId": "c1", "toolName": "bash"}),
                ev(7, "tool_called", payload={"callId": "c3", "toolName": "bash"}),
                ev(8, "tool_completed", payload={"callId": "c3"}), ev(9, "run_completed")]


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 9])
def test_the_results_of_a_call_wait_for_it_across_batches_and_a_result_with_no_call_is_still_an_orphan(size: int):
    result = heal_records(OUT_OF_ORDER, batch_size=size, summary=False)
    assert [(e["type"], e["payload"].get("callId"), e["seq"]) for e in events_of(result)] == [
        ("run_started", None, 1), ("user_message", None, 2), ("tool_called", "c1", 3), ("tool_failed", "c1", 4),
        ("tool_failed", "c1", 5), ("tool_called", "c3", 6), ("tool_completed", "c3", 7), ("run_completed", None, 8)]
    paired = [(r["action"], r["seqBefore"], r["line"]) for r in result.side["repairs"] if r["rule"] == "pair_tool_calls"]
    assert sorted(paired) == [("dropped", 5, 5), ("moved", 2, 2), ("moved", 4, 4)]
    [orphan] = [r for r in result.side["repairs"] if r["action"] == "dropped"]
    assert orphan["original"] == OUT_OF_ORDER[4] and "an orphaned result" in orphan["message"]
    again = heal_lines(result.to_jsonl().splitlines(), batch_size=size)
    assert again.side.get("repairs", []) == [] and events_of(again) == events_of(result)


def test_the_report_of_the_raw_journal_counts_the_calls_and_errors_of_the_healed_one(tmp_path: Path):
    """A failed result before its call: one failed call of its tool, one error naming that tool; the result written
    again is no second error; the orphan is a call of its own in the raw journal's report (heal drops it)."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(_jsonl(OUT_OF_ORDER))
    raw = _report(path)
    healed = run_replay("heal", str(path))
    fixed = _report(data=healed.stdout)
    assert _calls(raw) == [("bash", "error", "c1", 0), ("bash", "ok", "c3", 0), ("unknown", "ok", None, 0)]
    assert _calls(fixed) == [("bash", "error", "c1", 0), ("bash", "ok", "c3", 0)]
    assert _errors(raw) == _errors(fixed) == [("tool_failed", "bash")]
    assert raw["toolCalls"]["byTool"] == {
        "bash": {"calls": 2, "ok": 1, "error": 1, "durationMs": 0, "maxMs": 0},
        "unknown": {"calls": 1, "ok": 1, "error": 0, "durationMs": 0, "maxMs": 0}}
    done = run_replay("export", "--otlp", str(path))
    spans = [s for line in done.stdout.splitlines() for rs in orjson.loads(line)["resourceSpans"]
             for ss in rs["scopeSpans"] for s in ss["spans"] if s["name"].startswith("execute_tool")]
    assert sorted((s["name"], s["status"].get("code", 0)) for s in spans) == [
        ("execute_tool bash", 0), ("execute_tool bash", 2), ("execute_tool unknown", 0)]


@pytest.mark.parametrize("after", [[], [{"$record": "heal", "runId": "r1", "repairs": 1}]])
def test_a_result_moved_after_the_runs_last_event_comes_right_after_it_however_the_batches_are_cut(after: list):
    """The call is the run's last event (no terminal event): its result goes right after it, before the marks of the
    calls still open, whether or not the call ends its batch (a record after it, or none)."""
    records = [ev(1, "run_started"), ev(2, "tool_completed", payload={"callId": "c1"}),
               ev(3, "tool_called", payload={"callId": "c2", "toolName": "t"}),
               ev(4, "tool_called", payload={"callId": "c1", "toolName": "t"}), *after]
    outs = {size: heal_records(records, batch_size=size).to_jsonl() for size in range(1, 6)}
    assert len(set(outs.values())) == 1
    healed = [orjson.loads(line) for line in outs[1].splitlines()]
    assert [(r.get("type") or r["$record"], r.get("payload", {}).get("callId")) for r in healed][:5 + len(after)] == [
        ("run_started", None), ("tool_called", "c2"), ("tool_called", "c1"), ("tool_completed", "c1"),
        *([("heal", None)] if after else []), ("tool_unanswered", "c2")]
    again = heal_lines(outs[1].splitlines())
    assert again.to_jsonl() == outs[1] and again.side.get("repairs", []) == []


def test_results_wait_within_bounds_the_oldest_is_an_orphan_past_them(monkeypatch: pytest.MonkeyPatch):
    """Results held for a call are bounded: past ``MAX_WAITING`` of them those of the id that waited longest are
    orphans (dropped, logged whole), and the call that comes later is a call with no result."""
    monkeypatch.setattr(pair_tool_calls, "MAX_WAITING", 2)
    records = [ev(1, "run_started"), *[ev(k + 1, "tool_completed", payload={"callId": f"c{k}"}) for k in (1, 2, 3)],
               *[ev(k + 4, "tool_called", payload={"callId": f"c{k}", "toolName": "t"}) for k in (1, 2, 3)],
               ev(8, "run_completed")]
    result = heal_records(records, summary=False)
    assert [(e["type"], e["payload"].get("callId")) for e in events_of(result)] == [
        ("run_started", None), ("tool_called", "c1"), ("tool_called", "c2"), ("tool_completed", "c2"),
        ("tool_called", "c3"), ("tool_completed", "c3"), ("tool_unanswered", "c1"), ("run_completed", None)]
    assert [(r["action"], r["value"]) for r in result.side["repairs"] if r["rule"] == "pair_tool_calls"] == [
        ("dropped", "c1"), ("moved", "c2"), ("moved", "c3"), ("inserted", "tool_unanswered")]


def test_results_waiting_when_the_input_pauses_are_orphans():
    """A live input that waits is not held back for a call that may come much later (README, Heal): the results that
    wait are decided then, as at the run's end."""
    first = Batch.of([ev(1, "run_started"), ev(2, "tool_completed", payload={"callId": "c1"})], "<stdin>")
    first.pause = True
    later = Batch.of([ev(3, "tool_called", payload={"callId": "c1", "toolName": "t"}), ev(4, "run_completed")], "<stdin>")
    result = run_inline([PairToolCalls()], [first, later])
    assert [(e["type"], e["payload"].get("callId")) for e in result.records] == [
        ("run_started", None), ("tool_called", "c1"), ("tool_unanswered", "c1"), ("run_completed", None)]
    assert [r["action"] for r in result.side["repairs"]] == ["dropped", "inserted"]


def test_a_result_moved_after_a_call_that_ends_its_batch_goes_at_the_batch_end_when_the_input_pauses():
    first = Batch.of([ev(1, "run_started"), ev(2, "tool_completed", payload={"callId": "c1"}),
                      ev(3, "tool_called", payload={"callId": "c1", "toolName": "t"})], "<stdin>")
    first.pause = True
    result = run_inline([PairToolCalls()], [first, Batch.of([ev(4, "run_completed")], "<stdin>")])
    assert [(e["type"], e["payload"].get("callId")) for e in result.batches[0].events] == [
        ("run_started", None), ("tool_called", "c1"), ("tool_completed", "c1")]
    assert [r["action"] for r in result.side["repairs"]] == ["moved"]


@st.composite
def out_of_order_journals(draw: st.DrawFn) -> bytes:
    """Runs of calls and their results (some failed, some written again), some results written before their call,
    anywhere earlier in the run; results whose call never comes; sometimes no terminal event."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    records: list[dict[str, Any]] = []
    for r in range(draw(st.integers(1, 3))):
        events: list[dict[str, Any]] = [{"type": "run_started", "payload": {}}]
        for k in range(draw(st.integers(1, 5))):
            events.append({"type": "tool_called", "payload": {"callId": f"c{k}", "toolName": f"t{k % 2}"}})
            if rng.random() < 0.85:
                events.append({"type": rng.choice(["tool_completed", "tool_failed"]), "payload": {"callId": f"c{k}"}})
            if rng.random() < 0.3:
                events.append({"type": "user_message", "payload": {"text": "x"}})
        for second, event in enumerate(events):  # times in the order they were made
            event["timestamp"] = f"2026-03-01T12:{second // 60:02d}:{second % 60:02d}Z"
        for k in [k for k, e in enumerate(events) if e["type"] != "tool_called" and "callId" in e["payload"]][::-1]:
            if rng.random() < 0.2:
                events.insert(k + 1, dict(events[k]))  # that result written again (dedupe drops it, unless it moves)
        for _ in range(draw(st.integers(0, 3))):  # a result written before its call, anywhere earlier in the run
            results = [k for k, e in enumerate(events) if e["type"] != "tool_called" and "callId" in e["payload"]]
            if results:
                event = events.pop(rng.choice(results))
                call = next(k for k, e in enumerate(events) if e["type"] == "tool_called" and e["payload"] == {
                    **event["payload"], "toolName": e["payload"]["toolName"]})
                events.insert(rng.randint(1, call), event)
        if rng.random() < 0.3:
            events.insert(rng.randint(1, len(events)), {"type": "tool_failed", "payload": {"callId": f"gone{r}"},
                                                        "timestamp": "2026-03-01T12:00:00Z"})
        if rng.random() < 0.8:
            events.append({"type": "run_completed", "payload": {}, "timestamp": "2026-03-01T13:00:00Z"})
        records += [{"seq": seq, "timestamp": e["timestamp"], "type": e["type"], "runId": f"r{r}", "payload": e["payload"]}
                    for seq, e in enumerate(events, 1)]  # (the canonical order of keys: a file is cut where runs begin)
    return _jsonl(records)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(out_of_order_journals())
def test_results_before_their_calls_heal_once_alike_and_report_alike(tmp_path: Path, data: bytes):
    """Healing twice adds nothing; a file, a pipe and a file in pieces heal alike (the log too); the report of the
    raw journal counts what the report of the healed one does, but the orphans heal drops."""
    path, log = tmp_path / "j.jsonl", tmp_path / "log.jsonl"
    path.write_bytes(data)
    healed = run_replay("heal", "--log", str(log), str(path))
    entries = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    piped = run_replay("heal", "--log", str(tmp_path / "piped.jsonl"), input=data)
    assert piped.stdout == healed.stdout
    assert [{k: v for k, v in e.items() if k != "source"} for e in map(orjson.loads, (tmp_path / "piped.jsonl").read_bytes().splitlines())] \
        == [{k: v for k, v in e.items() if k != "source"} for e in entries]
    in_pieces("heal --log", path, 300)
    again = run_replay("heal", "--log", str(log), input=healed.stdout)
    assert again.stdout == healed.stdout and log.read_bytes() == b""
    dropped = [e["original"] for e in entries if e["rule"] == "pair_tool_calls" and e["action"] == "dropped"]
    marked = [e["runId"] for e in entries if e["rule"] == "pair_tool_calls" and e["action"] == "inserted"]
    raw = orjson.loads(run_replay("report", "--format", "json", str(path)).stdout)["runs"]
    fixed = orjson.loads(run_replay("report", "--format", "json", input=healed.stdout).stdout)["runs"]
    assert len(raw) == len(fixed)
    for one, other in zip(raw, fixed, strict=True):
        gone = [e for e in dropped if e["runId"] == one["runId"]]
        assert [c for c in _calls(one) if c[2] is not None] == _calls(other)
        # a call is marked unanswered when, and only when, the raw journal's report leaves it so
        assert len([c for c in one["toolCalls"]["calls"] if c.get("unfinished")]) == marked.count(one["runId"])
        assert one["toolCalls"]["total"] - len(gone) == other["toolCalls"]["total"]
        assert one["toolCalls"]["error"] - len(gone) == other["toolCalls"]["error"]  # (each orphan failed)
        assert len(one["errors"]) - len(gone) == len(other["errors"])
        assert [e for e in _errors(one) if e[1]] == _errors(other)
