"""A token count or cost is shown as written, a fraction too (``count_shown``: ``123.456789`` tokens are 123.456789,
a cost of ``4e-11`` is 4e-11), in a run's usage, in all runs', and in the OTLP trace; a float sum shows the sum of
the numbers as written (0.1 + 0.2 is 0.3), however many were added, event by event or a batch at a time."""

from __future__ import annotations

from decimal import Decimal, localcontext
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine import exactjson
from replay.pipeline.report.model import RunTally, aggregate, summarize_run
from replay.pipeline.report.otlp import TraceBuilder, token_count


def _events(usages: list[str]) -> list[dict[str, Any]]:
    """Assistant messages whose usage objects are written as given (read as report reads them)."""
    objects = exactjson.loads("[" + ",".join(usages) + "]")
    return [{"seq": n, "type": "assistant_message", "runId": "r", "payload": {"model": "m", "usage": u}}
            for n, u in enumerate(objects, 1)]


def _shown(total: Decimal) -> Decimal:
    """The exact sum to 15 significant digits."""
    with localcontext() as context:
        context.prec = 15
        return +total


def test_a_fraction_is_shown_as_written_in_the_run_all_runs_and_the_trace() -> None:
    """It was cut to 3 decimals (a token count: 123.457, 0) or 10 (a cost: 0)."""
    events = _events(['{"inputTokens":123.456789,"outputTokens":0.0001,"costUsd":4e-11}'])
    usage = summarize_run(None, events)["usage"]
    assert (usage["inputTokens"], usage["outputTokens"], usage["costUsd"]) == (123.456789, 0.0001, 4e-11)
    total = aggregate([summarize_run(None, events)])["usage"]
    assert (total["inputTokens"], total["outputTokens"], total["costUsd"]) == (123.456789, 0.0001, 4e-11)
    assert (token_count(123.456789), token_count(0.0001)) == ("123.456789", "0.0001")
    assert (token_count(0.1 + 0.2), token_count(99.99999999999999)) == ("0.3", 100)  # (100: an intValue)


def test_a_float_sum_drops_its_binary_noise_however_many_numbers_it_adds() -> None:
    events = _events(['{"inputTokens":0.1,"outputTokens":0.2,"costUsd":0.1}'] * 1000)  # (one by one: 99.9999999999986)
    usage = summarize_run(None, events)["usage"]
    assert (usage["inputTokens"], usage["outputTokens"], usage["costUsd"]) == (100, 200, 100)
    tally = RunTally(None)
    tally.add_events(events)  # (a batch: a column at a time)
    usage = tally.summary()["usage"]
    assert (usage["inputTokens"], usage["outputTokens"], usage["costUsd"]) == (100, 200, 100)
    pair = summarize_run(None, _events(['{"inputTokens":0.1,"outputTokens":1,"costUsd":0.1}',
                                        '{"inputTokens":0.2,"outputTokens":1,"costUsd":0.2}']))["usage"]
    assert (pair["inputTokens"], pair["costUsd"]) == (0.3, 0.3)


def test_all_runs_show_a_runs_cache_count_as_the_run_shows_it() -> None:
    """A run record's cache count a double does not hold as written (``3.14159265358979323846``), shown as written in
    the run's usage, is shown so in all runs' of that one run too: their cache counts were added up from 0, not from
    the first run's count as their input counts are, and showed its double (3.14159265358979)."""
    record = exactjson.loads('{"runId": "r", "usage": {"input_tokens": 1, '
                             '"cache_read_input_tokens": 3.14159265358979323846}}')
    run = summarize_run(record, [])["usage"]
    total = aggregate([summarize_run(record, [])])["usage"]
    assert exactjson.dumps(run["cacheReadTokens"]) == b"3.14159265358979323846"
    assert exactjson.dumps(total["cacheReadTokens"]) == exactjson.dumps(run["cacheReadTokens"])



def test_all_runs_show_a_runs_cost_as_the_run_shows_it() -> None:
    """A run record's cost a double does not hold as written, shown as written in the run's usage, is shown so in all
    runs' of that one run too: the runs' costs are added up by ``UsageSum``, as their token counts are (they were
    added by a sum of their own, ``math.fsum``, which showed its double: 3.14159265358979)."""
    record = exactjson.loads('{"runId": "r", "usage": {"input_tokens": 1, "costUsd": 3.14159265358979323846}}')
    run = summarize_run(record, [])["usage"]
    total = aggregate([summarize_run(record, [])])["usage"]
    assert exactjson.dumps(run["costUsd"]) == b"3.14159265358979323846"
    assert exactjson.dumps(total["costUsd"]) == exactjson.dumps(run["costUsd"])
    many = aggregate([summarize_run(None, _events(['{"costUsd":0.1}'])) for _ in range(1000)])["usage"]
    assert many["costUsd"] == 100  # (0.1 added 1000 times as doubles is 99.9999999999986)

# counts written with up to 6 decimals
written = st.lists(st.builds(lambda whole, part: f"{whole}.{part:06d}".rstrip("0").rstrip("."),
                             st.integers(0, 10 ** 6), st.integers(0, 999_999)), min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(written, st.integers(1, 4))
def test_the_shown_sum_of_counts_is_their_exact_sum_to_15_significant_digits(texts: list[str], runs: int) -> None:
    """Event by event, a batch at a time, over runs and in the trace alike."""
    exact = _shown(sum(map(Decimal, texts), Decimal(0)))
    events = _events([f'{{"inputTokens":{t},"costUsd":{t}}}' for t in texts])
    one_by_one = summarize_run(None, events)["usage"]
    batched = RunTally(None)
    batched.add_events(events)
    for usage in (one_by_one, batched.summary()["usage"]):
        assert Decimal(repr(usage["inputTokens"])) == exact == Decimal(repr(usage["costUsd"]))
    parts = [events[i::runs] for i in range(runs)]  # (the same counts, in several runs)
    over_runs = aggregate([summarize_run(None, part) for part in parts if part])["usage"]
    assert Decimal(repr(over_runs["inputTokens"])) == exact == Decimal(repr(over_runs["costUsd"]))
    trace = TraceBuilder(None, "x.jsonl")
    for event in events:
        trace.add(event)
    spans = [span for request in trace.requests() for span in _spans(request)]
    root, = [span for span in spans if span["name"].startswith("invoke_agent")]
    attrs = {a["key"]: a["value"] for a in root["attributes"]}
    value = attrs["gen_ai.usage.input_tokens"]
    assert Decimal(value.get("intValue") or value["stringValue"]) == exact


def _spans(request: Any) -> list[dict[str, Any]]:
    return [span for spans in request["resourceSpans"] for scope in spans["scopeSpans"] for span in scope["spans"]]
