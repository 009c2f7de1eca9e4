"""The report model and the summarize stage, called directly: summaries, aggregates, run boundaries, heal logs."""

from __future__ import annotations

import functools
import itertools
import json
import xml.etree.ElementTree as ET

import pytest
from conftest import FIXTURES as FIXTURES_DIR
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.model.events import UNKNOWN_END
from replay.pipeline.report import model
from replay.pipeline.report.model import (
    MAX_MARKS,
    aggregate,
    count_repairs,
    format_cost,
    format_ms,
    heal_log_path,
    report_document,
    run_label,
    summarize_run,
)
from replay.stages.report import render
from replay.stages.summarize import SummarizeRuns

FIXTURES = FIXTURES_DIR / "report"


def records(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line.strip()]


def ev(seq: int, kind: str, ts: str | None = "2026-01-01T00:00:00.000Z", run: str | None = "r", **payload) -> dict:
    event = {"seq": seq, "type": kind, "payload": payload}
    if ts is not None:
        event["timestamp"] = ts
    if run is not None:
        event["runId"] = run
    return event


def summarize(batches: list[list[dict]], source: str = "<memory>", **options) -> tuple[list[dict], SummarizeRuns]:
    stage = SummarizeRuns(**options)
    out: list[dict] = []
    for part in batches:
        result = stage(Batch.of(part, source))
        out += list(result or [])
    out += list(stage.flush() or [])
    return out, stage


# one run ---------------------------------------------------------------------------------------
def test_summary_counts_status_tools_usage_and_duration():
    recs = records("healed_two_runs.jsonl")
    run_record, events = recs[0], recs[1:11]
    s = summarize_run(run_record, events, repairs=[recs[11]], source="x.jsonl")
    assert s["runId"] == "run_a" and s["artifactId"] == "art_a" and s["status"] == "ok"
    assert s["framework"] == "langchain" and s["prompt"] == "What are my top holdings?"
    assert s["startedAt"] == "2026-03-01T12:00:00.000Z" and s["endedAt"] == "2026-03-01T12:00:02.100Z"
    assert s["durationMs"] == 2100
    assert s["events"] == {"total": 10, "byType": {
        "assistant_message": 1, "run_completed": 1, "run_started": 1, "tool_called": 3, "tool_completed": 2,
        "tool_failed": 1, "user_message": 1}}
    tc = s["toolCalls"]
    assert (tc["total"], tc["ok"], tc["error"]) == (3, 2, 1)
    assert [(c["toolName"], c["status"], c["durationMs"], c["startMs"], c["seq"]) for c in tc["calls"]] == [
        ("get_portfolio", "ok", 300, 100, 3), ("get_prices", "error", 1000, 450, 5), ("get_prices", "ok", 180, 1500, 7)]
    assert tc["byTool"]["get_prices"] == {"calls": 2, "ok": 1, "error": 1, "durationMs": 1180, "maxMs": 1000}
    assert s["errors"] == [{"kind": "tool_failed", "code": "TIMEOUT", "message": "get_prices timed out after 1s",
                            "seq": 6, "toolName": "get_prices"}]
    assert s["usage"] == {"inputTokens": 120, "outputTokens": 45, "costUsd": 0.0021}
    assert s["repairs"] == {"total": 3, "byRule": {"alias": 2, "renumber": 1}}


def test_run_record_error_and_run_failed_with_the_same_message_count_once():
    recs = records("healed_two_runs.jsonl")
    s = summarize_run(recs[12], recs[13:17])
    assert s["status"] == "error"
    assert [(e["kind"], e["code"]) for e in s["errors"]] == [("run", "RUNNER_TOOL_TIMEOUT"), ("tool_failed", None)]


def test_run_failed_event_makes_a_run_without_record_an_error():
    s = summarize_run(None, [ev(1, "run_started"), ev(2, "run_failed", message="boom")])
    assert s["status"] == "error" and s["errors"][0]["message"] == "boom" and s["runId"] == "r"


def test_a_run_that_tells_no_end_is_unknown_raw_or_healed():
    body = [ev(1, "run_started"), ev(2, "user_message", text="hi")]
    heals_end = {**ev(3, "run_failed", **UNKNOWN_END), "synthetic": True}  # what ensure_terminal inserts
    statuses = {
        "raw": summarize_run(None, body),
        "healed": summarize_run(None, [*body, heals_end]),
        "completed": summarize_run(None, [*body, ev(3, "run_completed")]),
        "record ok": summarize_run({"$record": "run", "runId": "r", "status": "ok"}, body),
        "record error": summarize_run({"$record": "run", "runId": "r", "status": "error"}, [*body, heals_end]),
        "written unknown": summarize_run(None, [*body, ev(3, "run_failed", **UNKNOWN_END)]),  # (not heal's: no flag)
        "synthetic failure": summarize_run(None, [*body, {**ev(3, "run_failed", message="boom"), "synthetic": True}]),
    }
    assert {name: s["status"] for name, s in statuses.items()} == {
        "raw": "unknown", "healed": "unknown", "completed": "ok", "record ok": "ok", "record error": "error",
        "written unknown": "error", "synthetic failure": "error"}
    assert statuses["raw"]["errors"] == statuses["healed"]["errors"] == []  # heal's end is no error of the run
    agg = aggregate(list(statuses.values()))
    assert agg["runs"] == {"total": 7, "ok": 2, "error": 3, "unknown": 2} and agg["errors"]["total"] == 3


def test_a_summary_read_back_with_a_status_of_its_own_counts_as_failed():
    """Summaries read from a file (the `summaries` stage) may say anything: what is neither ok nor unknown counts as a
    failure, as every status but ok did before unknown was one (the totals add up to the runs)."""
    base = summarize_run(None, [ev(1, "run_started"), ev(2, "run_completed")])
    agg = aggregate([base, {**base, "status": "failed"}, {**base, "status": "unknown"}])
    assert agg["runs"] == {"total": 3, "ok": 1, "error": 1, "unknown": 1}
    odd = {**base, "status": "failed"}  # every format shows it as the counts take it (markdown raised KeyError)
    assert "❌ error" in render("markdown", [odd]).decode()
    case = ET.fromstring(render("junit", [odd])).find("testsuite/testcase")
    assert case is not None and case.find("failure") is not None  # (the suite counted a failure with none in it)


def test_heals_end_is_no_failure_mark_on_the_timeline():
    s = summarize_run(None, [ev(1, "run_started"), {**ev(2, "run_failed", **UNKNOWN_END), "synthetic": True}])
    assert [m.get("failed", False) for m in s["timeline"]["marks"]] == [False, False]


def test_an_integer_error_code_is_reported_as_its_digits():
    """An HTTP status or an errno as a tool's error code (``"code": 500``) is the error's code, as its digits; any other
    value as its JSON."""
    s = summarize_run(None, [ev(1, "run_started"), ev(2, "tool_called", callId="c", toolName="get"),
                             ev(3, "tool_failed", callId="c", error={"code": 500, "message": "server error"}),
                             ev(4, "tool_called", callId="d", toolName="get"),
                             ev(5, "tool_failed", callId="d", code=2, message="no such file"),
                             ev(6, "run_failed", code=True, message="gave up"), ev(7, "user_message", code=1.5)])
    assert [(e["kind"], e["code"]) for e in s["errors"]] == [("tool_failed", "500"), ("tool_failed", "2"), ("run_failed", "true")]
    assert aggregate([s])["errors"]["byCode"] == {"500": 1, "2": 1, "true": 1}


def test_a_run_records_error_written_as_a_message_is_its_message():
    """A run record's ``error`` as a bare message (the contract's is an object) is the run's error, its message shown;
    with an integer code, that code."""
    s = summarize_run({"$record": "run", "runId": "r", "status": "error", "error": "database connection refused"},
                      [ev(1, "run_started")])
    assert [(e["kind"], e["code"], e["message"]) for e in s["errors"]] == [("run", None, "database connection refused")]
    s = summarize_run({"$record": "run", "runId": "r", "status": "error", "error": {"code": 503}}, [ev(1, "run_started")])
    assert [(e["kind"], e["code"], e["message"]) for e in s["errors"]] == [("run", "503", "run reported status error")]
    s = summarize_run({"$record": "run", "runId": "r", "status": "ok", "error": ""}, [ev(1, "run_started")])
    assert (s["status"], s["errors"]) == ("ok", [])  # an empty message is no error


def test_usage_falls_back_to_event_payloads_in_either_spelling():
    s = summarize_run(None, [ev(1, "assistant_message", usage={"inputTokens": 10, "outputTokens": 5, "costUsd": 0.1}),
                             ev(2, "assistant_message", usage={"input_tokens": 7, "output_tokens": 3, "cost_usd": 0.2})])
    assert s["usage"] == {"inputTokens": 17, "outputTokens": 8, "costUsd": 0.3}


def test_usage_of_the_run_record_wins_over_event_payloads():
    s = summarize_run({"$record": "run", "runId": "r", "usage": {"inputTokens": 1}},
                      [ev(1, "assistant_message", usage={"inputTokens": 99})])
    assert s["usage"] == {"inputTokens": 1, "outputTokens": None, "costUsd": None}


def test_a_cost_nobody_recorded_is_null_not_zero_and_a_recorded_zero_stays_zero():
    """Claude Code and OpenHands record tokens, never a cost: their runs showed $0.00, a cost nobody recorded."""
    tokens_only = summarize_run(None, [ev(1, "assistant_message", usage={"input_tokens": 7, "output_tokens": 3})])
    assert tokens_only["usage"] == {"inputTokens": 7, "outputTokens": 3, "costUsd": None}
    record_only = summarize_run({"$record": "run", "runId": "r", "usage": {"inputTokens": 10, "outputTokens": 5}}, [])
    assert record_only["usage"] == {"inputTokens": 10, "outputTokens": 5, "costUsd": None}
    free = summarize_run(None, [ev(1, "assistant_message", usage={"inputTokens": 7, "costUsd": 0})])
    assert free["usage"]["costUsd"] == 0
    # the run record gives tokens but no cost: the cost its events recorded is the run's (none was claimed 0)
    priced = summarize_run({"$record": "run", "runId": "r", "usage": {"inputTokens": 1}},
                           [ev(1, "assistant_message", usage={"inputTokens": 99, "costUsd": 0.25})])
    assert priced["usage"] == {"inputTokens": 1, "outputTokens": None, "costUsd": 0.25}
    totals = aggregate([tokens_only, record_only])["usage"]
    assert totals == {"inputTokens": 17, "outputTokens": 8, "costUsd": None, "runsWithUsage": 2}
    totals = aggregate([tokens_only, free, priced])["usage"]
    assert totals["costUsd"] == 0.25 and totals["runsWithUsage"] == 3  # the sum over the runs that recorded one
    assert aggregate([])["usage"]["costUsd"] is None


def test_the_prompt_cache_s_input_tokens_are_counted_beside_an_input_count_that_leaves_them_out():
    """Anthropic's ``input_tokens`` leave out the cache's (``cache_read_input_tokens``, ``cache_creation_input_tokens``):
    a Claude Code session, mostly cache reads, showed a small fraction of its input tokens."""
    claude = {"input_tokens": 20, "cache_creation_input_tokens": 1000, "cache_read_input_tokens": 50000, "output_tokens": 35}
    s = summarize_run(None, [ev(1, "assistant_message", usage=claude),
                             ev(2, "assistant_message", usage={"inputTokens": 5, "cacheReadInputTokens": 2**70})])
    assert s["usage"] == {"inputTokens": 51025 + 2**70, "outputTokens": 35, "costUsd": None,
                          "cacheReadTokens": 50000 + 2**70, "cacheCreationTokens": 1000}
    assert model.format_tokens_in(s["usage"]) == f"{51025 + 2**70:,} tokens in ({50000 + 2**70:,} cache read, 1,000 cache write)"
    # Codex's cached_input_tokens are a part of its input_tokens (its cache read, not added again), and LiteLLM's
    # prompt_tokens (OpenHands) count the cache's in (the counts beside it not read)
    codex = summarize_run(None, [ev(1, "event_msg.token_count",
                                    usage={"input_tokens": 900, "cached_input_tokens": 800, "output_tokens": 9})])
    litellm = summarize_run(None, [ev(1, "assistant_message", usage={
        "prompt_tokens": 4646, "completion_tokens": 177, "cache_creation_input_tokens": 1158,
        "cache_read_input_tokens": 3482, "prompt_tokens_details": {"cached_tokens": 3482}})])
    assert codex["usage"] == {"inputTokens": 900, "outputTokens": 9, "costUsd": None, "cacheReadTokens": 800}
    assert litellm["usage"] == {"inputTokens": 4646, "outputTokens": 177, "costUsd": None}
    assert model.format_tokens_in(codex["usage"]) == "900 tokens in (800 cache read)"
    totals = aggregate([s, codex, litellm])["usage"]
    assert list(totals) == ["inputTokens", "outputTokens", "costUsd", "cacheReadTokens", "cacheCreationTokens",
                            "runsWithUsage"]
    assert (totals["cacheReadTokens"], totals["cacheCreationTokens"]) == (50800 + 2**70, 1000)
    assert list(aggregate([litellm])["usage"]) == ["inputTokens", "outputTokens", "costUsd", "runsWithUsage"]
    # counted in a run when one of its usage objects gave them (0 too); a value that is no count is left out (a notice)
    zero = summarize_run(None, [ev(1, "assistant_message", usage={"input_tokens": 3, "cache_read_input_tokens": 0}),
                                ev(2, "assistant_message", usage={"input_tokens": 4, "cache_creation_input_tokens": "9"})])
    assert zero["usage"] == {"inputTokens": 7, "outputTokens": None, "costUsd": None, "cacheReadTokens": 0}
    assert model.format_tokens_in(zero["usage"]) == "7 tokens in"
    skipped: list[str] = []
    assert model.usage_of({"input_tokens": 4, "cache_creation_input_tokens": "9"}, [], skipped) == {"inputTokens": 4}
    assert skipped == ['cache_creation_input_tokens "9"']


def test_no_usage_is_null_not_zero():
    assert summarize_run(None, [ev(1, "run_started")])["usage"] is None


def test_events_without_timestamps_have_no_duration_and_an_order_axis():
    s = summarize_run(None, [ev(1, "run_started", ts=None), ev(2, "tool_called", ts="not a time", toolName="t")])
    assert s["durationMs"] is None and s["startedAt"] is None
    assert s["timeline"]["axis"] == "order"
    assert s["toolCalls"]["calls"][0]["startMs"] is None


def test_unfinished_tool_call_lasts_until_the_last_event_and_counts_as_failed():
    s = summarize_run(None, [ev(1, "tool_called", ts="2026-01-01T00:00:00Z", toolName="slow"),
                             ev(2, "run_failed", ts="2026-01-01T00:00:02Z")])
    call = s["toolCalls"]["calls"][0]
    assert call["status"] == "error" and call["unfinished"] is True and call["durationMs"] == 2000


def test_a_call_never_answered_is_among_the_runs_errors_after_its_other_failures():
    """A call never answered counted as failed among the tool calls, and was missing from the errors (and so from the
    aggregate's errors by code): now each is listed, kind tool_unanswered, at the call's seq, after the failures."""
    s = summarize_run(None, [ev(1, "run_started", ts="2026-01-01T00:00:00Z"),
                             ev(2, "tool_called", ts="2026-01-01T00:00:01Z", toolName="fetch", callId="a"),
                             ev(3, "tool_called", ts="2026-01-01T00:00:02Z", toolName="fetch", callId="b"),
                             ev(4, "tool_failed", ts="2026-01-01T00:00:03Z", callId="b", error={"code": "T", "message": "timeout"}),
                             ev(5, "tool_called", ts="2026-01-01T00:00:03Z", toolName="grep"),
                             ev(6, "run_completed", ts="2026-01-01T00:00:04Z")])
    assert s["toolCalls"]["error"] == 3 == len(s["errors"])
    assert [(e["kind"], e["code"], e["seq"], e["toolName"]) for e in s["errors"]] == [
        ("tool_failed", "T", 4, "fetch"), ("tool_unanswered", None, 2, "fetch"), ("tool_unanswered", None, 5, "grep")]
    assert aggregate([s])["errors"] == {"total": 3, "byCode": {"T": 1, "tool_unanswered": 2}}


@pytest.mark.parametrize("timeline", [True, False])
def test_unfinished_tool_call_lasts_until_the_runs_latest_timestamp_not_its_last_in_stream_order(timeline):
    """The run's latest instant (as its endedAt), wherever it stands: a terminal event stamped before the run's latest
    event ended the open call there (1 s, not 9 s). With and without a timeline (the timestamps folded in bulk)."""
    events = [ev(1, "tool_called", ts="2026-01-01T00:00:01.000Z", toolName="slow"),
              ev(2, "assistant_message", ts="2026-01-01T00:00:10.000Z"),
              ev(3, "run_failed", ts="2026-01-01T00:00:02.000Z")]
    tally = model.RunTally(None, timeline=timeline)
    tally.add_events(events)
    s = tally.summary()
    [call] = s["toolCalls"]["calls"]
    assert call["unfinished"] is True and call["durationMs"] == 9000 and s["endedAt"] == "2026-01-01T00:00:10.000Z"


@pytest.mark.parametrize("timeline", [True, False])
def test_a_run_over_a_leap_second_starts_or_ends_at_it_and_counts_it_as_the_last_microsecond_of_its_day(timeline):
    """A leap second as the run's earliest or latest instant is written as second 60 (the latest of several by its
    fraction, wherever it stands in the stream); durations count it as 23:59:59.999999."""
    events = [ev(1, "tool_called", ts="2016-12-31T23:59:60.250Z", toolName="t", callId="a"),
              ev(2, "tool_called", ts="2016-12-31T23:59:59.500Z", toolName="t", callId="b"),
              ev(3, "tool_completed", ts="2017-01-01T00:00:00.500Z", toolName="t", callId="a"),
              ev(4, "tool_completed", ts="2016-12-31T23:59:60.750Z", toolName="t", callId="b")]
    tally = model.RunTally(None, timeline=timeline)
    tally.add_events(events)
    s = tally.summary()
    assert (s["startedAt"], s["endedAt"], s["durationMs"]) == ("2016-12-31T23:59:59.500Z", "2017-01-01T00:00:00.500Z", 1000)
    assert [c["durationMs"] for c in s["toolCalls"]["calls"]] == [500.001, 499.999]

    late = [ev(1, "run_started", ts="2016-12-31T23:59:60.250Z"), ev(2, "tool_called", ts="2016-12-31T18:59:60.750-05:00",
                                                                     toolName="t"),
            ev(3, "assistant_message", ts="2016-12-31T23:59:59.999999Z"), ev(4, "run_completed", ts="2016-12-31T23:59:60.5Z")]
    tally = model.RunTally(None, timeline=timeline)
    tally.add_events(late)
    s = tally.summary()
    assert (s["startedAt"], s["endedAt"], s["durationMs"]) == ("2016-12-31T23:59:59.999Z", "2016-12-31T23:59:60.750Z", 0)
    [call] = s["toolCalls"]["calls"]
    assert call["unfinished"] is True and call["durationMs"] == 0
    tally = model.RunTally(None, timeline=timeline)
    tally.add_events(late[:2])
    s = tally.summary()
    assert (s["startedAt"], s["endedAt"]) == ("2016-12-31T23:59:60.250Z", "2016-12-31T23:59:60.750Z")
    agg = aggregate([s, summarize_run(None, [ev(1, "run_started", ts="2016-12-31T23:59:60.5Z")])])
    assert (agg["startedAt"], agg["endedAt"]) == ("2016-12-31T23:59:60.250Z", "2016-12-31T23:59:60.750Z")


def test_a_measured_duration_a_double_cannot_hold_gives_way_to_the_timestamps():
    """``durationMs`` 1e400 (read as infinity) was written as null, and 10**400 was an OverflowError: neither is a
    duration, so the call lasts from its call to its result, as without one. Long measured ones add up whole."""
    from replay.pipeline.engine import exactjson

    for text in ("1e400", "1" + "0" * 400, "-5"):
        result = exactjson.loads('{"callId": "c", "durationMs": ' + text + '}')
        s = summarize_run(None, [ev(1, "tool_called", ts="2026-01-01T00:00:00Z", toolName="t", callId="c"),
                                 ev(2, "tool_completed", ts="2026-01-01T00:00:01.500Z", **result)])
        assert s["toolCalls"]["calls"][0]["durationMs"] == 1500, text
    s = summarize_run(None, [ev(k, kind, toolName="t", durationMs=1e308) for k, kind in
                             enumerate(("tool_called", "tool_completed", "tool_called", "tool_completed"), 1)])
    assert s["toolCalls"]["byTool"]["t"]["durationMs"] == 2 * int(1e308)


def test_a_call_no_time_tells_the_length_of_is_of_unknown_length_not_0ms():
    """A call whose events carry no timestamp (or heal's 1970 stand-in for none) and no measured ``durationMs`` lasted
    an unknown time: ``durationMs`` None, and its tool's time is that of its calls whose length is known (None when
    none is), in the run and in the aggregate; a measured one still counts."""
    from replay.pipeline.model.events import EPOCH

    for ts in (None, EPOCH):
        s = summarize_run(None, [ev(1, "tool_called", ts=ts, toolName="t", callId="a"),
                                 ev(2, "tool_completed", ts=ts, callId="a"),
                                 ev(3, "tool_called", ts=ts, toolName="t", callId="open")])
        assert [call["durationMs"] for call in s["toolCalls"]["calls"]] == [None, None], ts
        assert s["toolCalls"]["byTool"]["t"] == {"calls": 2, "ok": 1, "error": 1, "durationMs": None, "maxMs": None}
    timed = summarize_run(None, [ev(1, "tool_called", ts="2026-01-01T00:00:00Z", toolName="t", callId="b"),
                                 ev(2, "tool_completed", ts="2026-01-01T00:00:02Z", callId="b"),
                                 ev(3, "tool_called", ts=None, toolName="t", callId="c"),
                                 ev(4, "tool_completed", ts=None, callId="c", durationMs=500),
                                 ev(5, "tool_called", ts=None, toolName="t", callId="d"),
                                 ev(6, "tool_completed", ts=None, callId="d")])
    assert [call["durationMs"] for call in timed["toolCalls"]["calls"]] == [2000, 500, None]
    assert timed["toolCalls"]["byTool"]["t"]["durationMs"] == 2500 and timed["toolCalls"]["byTool"]["t"]["maxMs"] == 2000
    agg = aggregate([s, timed])
    assert agg["toolCalls"]["byTool"]["t"] == {"calls": 5, "ok": 4, "error": 1, "durationMs": 2500, "maxMs": 2000}
    assert aggregate([s])["toolCalls"]["byTool"]["t"]["durationMs"] is None
    text = render("text", [s]).decode()
    assert "0ms" not in text and "    t         2   1       1           -        -" in text
    assert "| 3 | t | ok | - | - | 5 |" in render("markdown", [s, timed]).decode()
    assert [c["durationMs"] for c in json.loads(render("json", [timed]))["runs"][0]["toolCalls"]["calls"]] == [2000, 500, None]
    for fmt in ("junit", "html"):  # (each writes an unknown length: none fails on it)
        assert render(fmt, [s, timed])


def test_usage_beyond_a_double_counts_as_its_whole_number_or_is_named_as_held_by_no_count():
    from replay.pipeline.engine import exactjson

    def usage(text: str) -> tuple[object, list[str]]:
        unheld: list[str] = []
        return model.usage_of(exactjson.loads('{"inputTokens": ' + text + ', "outputTokens": 3}'), unheld), unheld

    assert usage("1e400") == ({"inputTokens": 10**400, "outputTokens": 3}, [])
    assert usage("1.5E+400") == ({"inputTokens": 15 * 10**399, "outputTokens": 3}, [])
    assert usage("-1e400") == ({"outputTokens": 3}, [])  # (negative: no count, as -5 is none; ``skipped`` names it)
    skipped: list[str] = []
    assert model.usage_of(exactjson.loads('{"inputTokens": -1e400, "outputTokens": "3"}'), [], skipped) is None
    assert skipped == ["inputTokens -1e400", 'outputTokens "3"']
    assert usage("1e5000") == (None, ["inputTokens 1e5000"])  # (more digits than a JSON integer replay reads)
    fraction = "1." + "0" * 400 + "1e400"
    assert usage(fraction) == (None, [f"inputTokens {fraction[:24]}...{fraction[-12:]}"])
    s = summarize_run(None, [ev(1, "assistant_message", usage=exactjson.loads('{"inputTokens": 1e400}'))])
    assert s["usage"] == {"inputTokens": 10**400, "outputTokens": None, "costUsd": None}


def test_a_record_that_is_no_event_is_left_out_of_the_run():
    """No `type`, an empty one or one that is no string: no event (``is_no_event``), as `summarize` leaves it out."""
    s = summarize_run(None, [{"seq": 1, "runId": "r", "payload": {}}, {"seq": 2, "type": 7}, {"type": ""},
                             {"type": None}, ev(3, "assistant_message")])
    assert s["events"] == {"total": 1, "byType": {"assistant_message": 1}}


def test_timeline_marks_are_capped_spread_over_the_run_and_keep_failures():
    count = 3 * MAX_MARKS + 7
    events = [ev(i, "assistant_message", ts=f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z") for i in range(1, count)]
    events.append(ev(count, "run_failed", ts="2026-01-01T01:00:00Z"))
    tl = summarize_run(None, events)["timeline"]
    plain = [m for m in tl["marks"] if not m.get("failed")]
    assert MAX_MARKS // 2 <= len(plain) <= MAX_MARKS
    assert plain[0]["index"] == 0 and plain[-1]["index"] >= count - 1 - 8  # the end of the run is covered too
    gaps = {b["index"] - a["index"] for a, b in itertools.pairwise(plain)}
    assert len(gaps) == 1  # evenly spaced
    assert tl["marks"][-1]["type"] == "run_failed" and tl["marks"][-1]["failed"] is True
    assert tl["omittedMarks"] == count - len(tl["marks"])


# repairs and heal logs -----------------------------------------------------------------------------
def test_count_repairs_reads_heal_records_and_heal_log_documents():
    assert count_repairs({"$record": "heal", "runId": "r", "repairs": 3, "byRule": {"a": 2, "b": 1}}) == (3, {"a": 2, "b": 1})
    assert count_repairs({"summary": {"total": 2, "byRule": {"x": 2}}, "repairs": []}) == (2, {"x": 2})
    assert count_repairs({"repairs": [{"rule": "x"}, {"rule": "y"}, {"rule": "x"}]}) == (3, {"x": 2, "y": 1})
    assert count_repairs({"repairs": []}) is None
    assert count_repairs("nonsense") is None


def test_heal_log_path_finds_the_sibling_of_a_healed_artifact(tmp_path):
    (tmp_path / "a.healed.json").write_text("{}")
    (tmp_path / "a.heal-log.json").write_text("{}")
    assert heal_log_path(str(tmp_path / "a.healed.json")) == tmp_path / "a.heal-log.json"
    assert heal_log_path(str(tmp_path / "other.json"), "a") == tmp_path / "a.heal-log.json"
    assert heal_log_path(str(tmp_path / "other.json")) is None
    assert heal_log_path("<stdin>", "a") is None
    assert heal_log_path(str(tmp_path / "other.json"), "../a") is None


# aggregate -------------------------------------------------------------------------------------
def test_aggregate_sums_counts_tokens_cost_durations_and_repairs():
    recs = records("healed_two_runs.jsonl")
    summaries, _ = summarize([recs])
    agg = aggregate(summaries)
    assert agg["runs"] == {"total": 2, "ok": 1, "error": 1, "unknown": 0}
    assert agg["events"]["total"] == 14 and agg["events"]["byType"]["tool_called"] == 4
    assert (agg["toolCalls"]["total"], agg["toolCalls"]["ok"], agg["toolCalls"]["error"]) == (4, 2, 2)
    assert agg["toolCalls"]["byTool"]["search"] == {"calls": 1, "ok": 0, "error": 1, "durationMs": 3000, "maxMs": 3000}
    assert agg["usage"] == {"inputTokens": 200, "outputTokens": 45, "costUsd": 0.003, "runsWithUsage": 2}
    assert agg["repairs"] == {"total": 4, "byRule": {"alias": 2, "ensure_terminal": 1, "renumber": 1}}
    assert agg["durationMs"] == 5400
    assert agg["startedAt"] == "2026-03-01T12:00:00.000Z" and agg["endedAt"] == "2026-03-01T12:05:03.300Z"
    assert agg["errors"] == {"total": 3, "byCode": {"RUNNER_TOOL_TIMEOUT": 1, "TIMEOUT": 1, "tool_failed": 1}}
    assert agg["diagnostics"] == {"total": 0, "byCode": {}, "first": []}


def test_aggregate_of_nothing():
    agg = aggregate([])
    assert agg["runs"] == {"total": 0, "ok": 0, "error": 0, "unknown": 0} and agg["durationMs"] is None and agg["startedAt"] is None


def test_report_document_has_a_fixed_key_order_and_no_drawing_data():
    summaries, _ = summarize([records("healed_two_runs.jsonl")])
    doc = report_document(summaries)
    assert list(doc) == ["runs", "aggregate"]
    assert list(doc["runs"][0]) == ["runId", "artifactId", "source", "status", "framework", "prompt", "startedAt",
                                    "endedAt", "durationMs", "events", "toolCalls", "errors", "usage", "repairs"]
    assert list(doc["aggregate"]) == ["runs", "events", "toolCalls", "errors", "usage", "repairs", "unattributedRepairs",
                                      "durationMs", "startedAt", "endedAt", "diagnostics"]
    assert doc["aggregate"]["unattributedRepairs"] == {"total": 0, "byRule": {}, "runs": []}


# the stage: run boundaries -----------------------------------------------------------------------
def test_stage_emits_one_summary_per_run_record():
    out, _ = summarize([records("healed_two_runs.jsonl")])
    assert [s["runId"] for s in out] == ["run_a", "run_b"]
    assert all(s["$record"] == "summary" for s in out)


def test_stage_splits_runs_without_run_records_where_run_id_changes():
    out, _ = summarize([records("no_run_records.jsonl")])
    assert [(s["runId"], s["events"]["total"], s["status"]) for s in out] == [("r1", 6, "ok"), ("r2", 3, "error")]


def test_stage_starts_a_new_run_at_each_source():
    stage = SummarizeRuns()
    first = stage(Batch.of([ev(1, "run_started", run=None)], "a.jsonl"))
    second = stage(Batch.of([ev(1, "run_started", run=None)], "b.jsonl"))
    tail = stage.flush()
    assert first is None and [s["source"] for s in second] == ["a.jsonl"] and [s["source"] for s in tail] == ["b.jsonl"]


def test_heal_record_counts_toward_the_run_it_follows():
    recs = [{"$record": "run", "runId": "a"}, ev(1, "run_started", run="a"),
            {"$record": "heal", "runId": "a", "repairs": 2, "byRule": {"x": 2}},
            {"$record": "run", "runId": "b"}, ev(1, "run_started", run="b")]
    out, _ = summarize([recs])
    assert [s["repairs"]["total"] for s in out] == [2, 0]


def test_a_heal_record_of_a_run_that_is_not_there_is_no_runs_repairs():
    """Heal writes the repairs of a run it dropped whole at the end of the stream, naming that run: they were counted
    with the last run. Now summarize passes them on (with their source), and the report counts them apart; a heal
    record before any run (every run of the input dropped) is no run of its own either."""
    recs = [ev(1, "run_started", run="a"), ev(1, "run_started", run="c"),
            {"$record": "heal", "runId": "c", "repairs": 1, "byRule": {"alias": 1}},
            {"$record": "heal", "runId": "b", "repairs": 2, "byRule": {"pair_tool_calls": 2}},
            {"$record": "heal", "runId": None, "repairs": 1, "byRule": {"drop_torn_line": 1}}]
    out, _ = summarize([recs], source="h.jsonl")
    summaries = [s for s in out if s["$record"] == "summary"]
    assert [(s["runId"], s["repairs"]["total"]) for s in summaries] == [("a", 0), ("c", 1)]
    passed = [{"$record": "heal", "runId": "b", "source": "h.jsonl", "repairs": 2, "byRule": {"pair_tool_calls": 2}},
              {"$record": "heal", "runId": None, "source": "h.jsonl", "repairs": 1, "byRule": {"drop_torn_line": 1}}]
    assert [s for s in out if s["$record"] == "heal"] == passed
    agg = aggregate(summaries, None, passed)
    assert agg["repairs"] == {"total": 4, "byRule": {"alias": 1, "drop_torn_line": 1, "pair_tool_calls": 2}}
    assert agg["unattributedRepairs"] == {
        "total": 3, "byRule": {"drop_torn_line": 1, "pair_tool_calls": 2},
        "runs": [{"runId": "b", "source": "h.jsonl", "total": 2, "byRule": {"pair_tool_calls": 2}},
                 {"runId": None, "source": "h.jsonl", "total": 1, "byRule": {"drop_torn_line": 1}}]}
    only, _ = summarize([[{"$record": "heal", "runId": "z", "repairs": 1}]])
    assert [s["$record"] for s in only] == ["heal"]


def test_other_reserved_records_are_ignored():
    out, _ = summarize([[{"$record": "summary", "runId": "x"}, ev(1, "run_started")]])
    assert len(out) == 1 and out[0]["events"]["total"] == 1


def test_stage_counts_diagnostics_and_passes_them_on():
    stage = SummarizeRuns()
    diag = {"code": "E_JSONL_LINE_INVALID", "message": "bad"}
    assert stage(Batch.side([diag, diag], "errors", "<parse.errors>")) is None
    assert stage.take("errors") == [diag, diag]
    tail = list(stage.flush())
    assert tail == [{"$record": "diagnostics", "total": 2, "byCode": {"E_JSONL_LINE_INVALID": 2},
                     "first": [{"code": "E_JSONL_LINE_INVALID", "message": "bad"}] * 2}]


def test_stage_reads_the_heal_log_beside_an_artifact(tmp_path):
    (tmp_path / "a.heal-log.json").write_text(json.dumps({"runId": "r", "summary": {"total": 2, "byRule": {"alias": 2}}}))
    source = str(tmp_path / "a.healed.json")
    out, _ = summarize([[{"$record": "run", "runId": "r"}, ev(1, "run_started")]], source=source)
    assert out[0]["repairs"] == {"total": 2, "byRule": {"alias": 2}}
    out, _ = summarize([[{"$record": "run", "runId": "r"}, ev(1, "run_started")]], source=source, heal_logs=False)
    assert out[0]["repairs"]["total"] == 0


def test_heal_record_in_the_stream_wins_over_the_heal_log(tmp_path):
    (tmp_path / "a.heal-log.json").write_text(json.dumps({"summary": {"total": 5, "byRule": {"alias": 5}}}))
    recs = [{"$record": "run", "runId": "r"}, ev(1, "run_started"), {"$record": "heal", "runId": "r", "repairs": 1,
                                                                       "byRule": {"renumber": 1}}]
    out, _ = summarize([recs], source=str(tmp_path / "a.healed.json"))
    assert out[0]["repairs"] == {"total": 1, "byRule": {"renumber": 1}}


def test_heal_log_of_another_run_is_not_counted(tmp_path):
    (tmp_path / "a.heal-log.json").write_text(json.dumps({"runId": "other", "summary": {"total": 5, "byRule": {"x": 5}}}))
    out, _ = summarize([[ev(1, "run_started")]], source=str(tmp_path / "a.healed.json"))
    assert out[0]["repairs"]["total"] == 0


def test_broken_heal_log_is_a_diagnostic(tmp_path):
    (tmp_path / "a.heal-log.json").write_text("{not json")
    out, stage = summarize([[ev(1, "run_started")]], source=str(tmp_path / "a.healed.json"))
    errors = stage.take("errors")
    assert len(out) == 1 and [e["code"] for e in errors] == ["E_ARTIFACT_JSON_INVALID"]
    assert errors[0]["source"].endswith("a.heal-log.json")


# properties ------------------------------------------------------------------------------------
RUN_IDS = st.sampled_from(["a", "b", "c"])
TYPES = st.sampled_from(["run_started", "tool_called", "tool_completed", "tool_failed", "assistant_message",
                         "run_failed", "run_completed", "custom"])


@st.composite
def streams(draw):
    records = []
    for run in draw(st.lists(RUN_IDS, min_size=0, max_size=5)):
        if draw(st.booleans()):
            records.append({"$record": "run", "runId": run, "status": draw(st.sampled_from(["ok", "error"]))})
        for k in range(draw(st.integers(0, 12))):
            records.append(ev(k + 1, draw(TYPES), ts=f"2026-01-01T00:00:{draw(st.integers(0, 59)):02d}Z", run=run,
                              toolName=draw(st.sampled_from(["x", "y"]))))
        if draw(st.booleans()):
            records.append({"$record": "heal", "runId": run, "repairs": 1, "byRule": {"r": 1}})
    return records


def cuts(records, points):
    bounds = sorted({p % (len(records) + 1) for p in points} | {0, len(records)})
    return [records[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=150, deadline=None)
@given(streams(), st.lists(st.integers(0, 200), max_size=6))
def test_summaries_do_not_depend_on_how_the_stream_is_cut_into_batches(records, points):
    whole, _ = summarize([records])
    parts, _ = summarize(cuts(records, points))
    assert parts == whole


@settings(max_examples=150, deadline=None)
@given(streams())
def test_every_event_is_counted_once_and_aggregates_add_up(records):
    out, _ = summarize([records])
    summaries = [s for s in out if s["$record"] == "summary"]
    unattributed = [s for s in out if s["$record"] == "heal"]
    assert len(summaries) + len(unattributed) == len(out)
    agg = aggregate(summaries, None, unattributed)
    events = [r for r in records if "$record" not in r]
    assert agg["events"]["total"] == len(events) == sum(s["events"]["total"] for s in summaries)
    assert sum(agg["events"]["byType"].values()) == len(events)
    assert agg["runs"]["ok"] + agg["runs"]["error"] + agg["runs"]["unknown"] == agg["runs"]["total"] == len(summaries)
    assert agg["toolCalls"]["ok"] + agg["toolCalls"]["error"] == agg["toolCalls"]["total"]
    assert sum(t["calls"] for t in agg["toolCalls"]["byTool"].values()) == agg["toolCalls"]["total"]
    assert agg["repairs"]["total"] == sum(1 for r in records if r.get("$record") == "heal")
    assert agg["repairs"]["total"] == sum(s["repairs"]["total"] for s in summaries) + agg["unattributedRepairs"]["total"]
    # a heal record's repairs are the run's it names, or no run's: never those of a run of another id
    for rid in ("a", "b", "c"):
        named = sum(1 for r in records if r.get("$record") == "heal" and r["runId"] == rid)
        assert named == (sum(s["repairs"]["total"] for s in summaries if s["runId"] == rid)
                         + sum(u["total"] for u in agg["unattributedRepairs"]["runs"] if u["runId"] == rid))
    for s in summaries:
        assert s["durationMs"] is None or s["durationMs"] >= 0
        assert all(c["durationMs"] >= 0 for c in s["toolCalls"]["calls"])


# formatting helpers ------------------------------------------------------------------------------
@pytest.mark.parametrize(("ms", "text"), [(None, "-"), (0, "0ms"), (5.5, "5.5ms"), (850, "850ms"), (1000, "1s"),
                                          (1250, "1.25s"), (125_000, "2m 05s"), (3_720_000, "1h 02m")])
def test_format_ms(ms, text):
    assert format_ms(ms) == text


def test_format_cost_and_run_label():
    assert format_cost(0.0021) == "$0.0021" and format_cost(3) == "$3.00" and format_cost(None) == "-"
    assert run_label({"runId": None, "artifactId": None, "source": "dir/x.jsonl"}, 4) == "x.jsonl"
    assert run_label({"runId": None, "artifactId": None, "source": "<stdin>"}, 4) == "run #4"


CANONICAL_STAMPS = st.builds(lambda s, ms: f"2026-01-01T00:{s // 60:02d}:{s % 60:02d}.{ms:03d}Z", st.integers(0, 3599),
                             st.integers(0, 999))
STAMPS = st.one_of(
    CANONICAL_STAMPS,
    st.sampled_from(["2026-01-01T00:00:05Z", "2026-13-01T00:00:00.000Z", "2026-02-30T00:00:00.000Z",
                     "2026-01-01T00:00:00.000+02:00", "2025-12-31 23:59:59.999Z", "not a time", "", None, 1767225600,
                     # leap seconds (one instant, 23:59:59.999999, told apart by their fractions), and a second 60 that
                     # is none
                     "2025-12-31T23:59:60.500Z", "2025-12-31T23:59:60Z", "2025-12-31T18:59:60.250-05:00",
                     "2026-01-01T23:59:60.100Z", "2026-01-01T23:59:60.900Z", "2026-01-01T23:59:59.999999Z",
                     "2026-01-01T00:00:60.000Z"]),
)
PAYLOADS = st.one_of(
    st.fixed_dictionaries({}, optional={
        "callId": st.sampled_from(["c1", "c2", "c3", "", 7]), "toolName": st.sampled_from(["x", "y", "", None]),
        "name": st.sampled_from(["n"]), "durationMs": st.one_of(st.integers(-5, 5000), st.floats(0, 1e4), st.just(True)),
        "usage": st.one_of(st.fixed_dictionaries({}, optional={
            "inputTokens": st.integers(0, 2**70), "output_tokens": st.integers(0, 10_000),
            "costUsd": st.floats(0, 1, allow_nan=False)}), st.just("lots")),
        "error": st.one_of(st.fixed_dictionaries({"code": st.just("E1"), "message": st.text(max_size=5)}), st.text(max_size=5)),
        "message": st.text(max_size=5)}),
    st.sampled_from(["text", 3, None, [1]]),
)


@st.composite
def odd_streams(draw):
    """Runs of events with every oddity a summary must take: types that are no string, runIds missing or empty,
    timestamps of every shape or none, payloads that are no object, calls without results, usage and errors.
    Half the streams are plain (events only, each with a runId: the stage adds them a run at a time), and most
    timestamps have the one shape whose text order is time order."""
    plain = draw(st.booleans())
    records = []
    for _ in range(draw(st.integers(0, 4))):
        run = draw(st.sampled_from(["a", "b"] if plain else ["a", "b", "", None, 5]))
        if not plain and draw(st.booleans()):
            records.append({"$record": "run", "runId": run, "status": draw(st.sampled_from(["ok", "error"]))})
        for k in range(draw(st.integers(0, 15))):
            odd = draw(st.integers(0, 5)) == 0
            event = {"seq": draw(st.one_of(st.just(k + 1), st.integers(-3, 2**66))),
                     "type": draw(st.sampled_from(["", None, 3, "user_message"]) if odd else TYPES),
                     "payload": draw(PAYLOADS)}
            stamp = draw(STAMPS if draw(st.integers(0, 5)) == 0 else CANONICAL_STAMPS)
            if stamp is not None:
                event["timestamp"] = stamp
            if plain or draw(st.integers(0, 9)):  # mostly the run's own id
                event["runId"] = run
            records.append(event)
        if not plain and draw(st.booleans()):
            records.append({"$record": "heal", "runId": run, "repairs": 2, "byRule": {"r": 2}})
    return records


@settings(max_examples=300, deadline=None)
@given(odd_streams(), st.lists(st.integers(0, 200), max_size=6))
def test_summaries_without_a_timeline_are_the_summaries_with_one_less_it(records, points):
    """Without a timeline a run's events are added a column at a time and its timestamps looked at a few thousand
    at a time; with one, event by event: both must say the same of every run, however the stream is cut."""
    with_timeline, _ = summarize([records])
    columns, _ = summarize(cuts(records, points), timeline=False)
    assert columns == [{k: v for k, v in s.items() if k != "timeline"} for s in with_timeline]


def test_a_run_longer_than_the_held_timestamps_is_summarized_the_same(monkeypatch):
    from replay.pipeline.report import model

    monkeypatch.setattr(model, "STAMPS_HELD", 3)
    events = [ev(k, "tool_called" if k % 2 else "tool_completed", ts=f"2026-01-01T00:00:{59 - k:02d}.000Z", callId=f"c{k // 2}")
              for k in range(1, 20)]
    events[7]["timestamp"] = "2026-01-01T00:00:99.000Z"  # no instant, in the middle of a held piece
    with_timeline, _ = summarize([events])
    columns, _ = summarize([events], timeline=False)
    assert columns == [{k: v for k, v in s.items() if k != "timeline"} for s in with_timeline]
    assert columns[0]["startedAt"] == "2026-01-01T00:00:40.000Z" and columns[0]["endedAt"] == "2026-01-01T00:00:58.000Z"


@settings(max_examples=300)
@given(st.integers(-10**6, 10**12))
def test_a_whole_number_of_milliseconds_reads_the_same_from_the_memo(ms):
    """format_ms remembers the text of whole milliseconds: a second call, and a call after the memo was emptied,
    give what the first gave, which is what the float of the same value gives."""
    first = format_ms(ms)
    assert format_ms(ms) == first == format_ms(float(ms))
    model.MS_TEXTS.clear()
    assert format_ms(ms) == first


@pytest.mark.parametrize("values", [[], [1, 2, 3], [0.1, 0.2, 0.3], [1.5, 2], [1.7e308, 1.7e308, 1.0],
                                    [1.7e308, 0.5, 1.7e308, 10**400], [10**400, 0.5], [2**53, 1.0, 1.0]], ids=[f"values{i}" for i in range(8)])
@pytest.mark.parametrize("start", [0, 0.0, 10**400], ids=["0", "0.0", "10**400"])
def test_a_sum_by_c_level_adds_is_the_sum_of_plus_in_turn(values, start):
    """``_sum`` adds by C-level adds while the sum is a finite number, and as ``exact_plus`` does (exactly, in whole
    numbers) past a double: the same value, of the same type, as ``exact_plus`` one value at a time."""
    expected = functools.reduce(model.exact_plus, values, start)
    got = model._sum(values, start)
    assert (type(got), got) == (type(expected), expected)


def test_format_counts_lists_the_largest_first_and_equal_counts_by_name():
    assert model.format_counts({"b": 2, "a": 2, "c": 5, "d": 1}) == "c 5, a 2, b 2, d 1"
    assert model.format_counts({"b": 2, "a": 2, "c": 5}, limit=2) == "c 5, a 2, … 1 more"
    assert model.format_counts({}) == "-"


USAGE_VALUES = st.one_of(st.integers(0, 10_000), st.integers(-3, 2**70), st.floats(allow_nan=True), st.just(True),
                         st.just("7"), st.none(), st.just(exactjson.loads("1e400")), st.just(exactjson.loads("1.5")))
USAGE_NAMES = ["inputTokens", "input_tokens", "prompt_tokens", "outputTokens", "completionTokens", "costUsd", "cost_usd",
               "cache_read_input_tokens", "cacheReadInputTokens", "cached_input_tokens", "cache_creation_input_tokens",
               "other"]


@settings(max_examples=500)
@given(st.lists(st.one_of(
    st.fixed_dictionaries({"inputTokens": st.integers(0, 10_000), "outputTokens": st.integers(0, 10_000)}),
    st.fixed_dictionaries({"inputTokens": st.integers(0, 10_000), "cache_read_input_tokens": st.integers(0, 10_000)}),
    st.dictionaries(st.sampled_from(USAGE_NAMES), USAGE_VALUES, max_size=5),
    st.sampled_from([None, "lots", [1]])), min_size=1, max_size=6))
def test_usage_read_a_column_at_a_time_is_what_usage_of_reads_of_each(objects):
    """``usage_columns`` (the usual usage objects at once) reads what ``usage_of`` reads of each object, or leaves
    them to it (None)."""
    columns = model.usage_columns(objects)
    if columns is None:
        return
    usages = [model.usage_of(value) for value in objects]
    assert None not in usages
    assert columns == {key: [usage[key] for usage in usages if key in usage] for key in model.USAGE_KEYS
                       if any(key in usage for usage in usages)}


@given(st.lists(st.one_of(st.integers(-10**20, 10**20), st.booleans(), st.none(),
                          st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([0, -0.0, 1, 1.0, 1000])),
                max_size=20))
def test_a_count_written_from_its_kept_text_is_written_as_it_is_made(values: list):
    # format_count keeps the texts of ints (the usual counts): a count met again, or a float or a bool equal to a kept
    # int, is written as it is when first met. -0.0 after 0 is the case that tells: a cache keyed by value alone would
    # write it "0" (1.0 and True are written "1" either way, as 1 is)
    for value in values + values:
        made = "-" if value is None else f"{value:,}" if isinstance(value, int) else \
            f"{value:,.3f}".rstrip("0").rstrip(".")
        assert model.format_count(value) == made
