"""The run summary (``RunTally``) and the OTLP trace (``TraceBuilder``) of the same events count the same usage values
and leave out the same ones, noting each alike (``usage_of``: what ``report`` and ``export --otlp`` warn by)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine import exactjson
from replay.pipeline.report.model import RunTally
from replay.pipeline.report.otlp import TraceBuilder, tokens

# counts (fractions, beyond a double too) and values no count holds: text, negative, true, null, too many digits (whole or not)
VALUES = ["7", "0", "1.5", "0.25", "123456789012345678901234567890", "1e400", '"45"', "-5", "true", "null", "1e5000",
          "1." + "0" * 400 + "1e400"]
# the input count and the prompt cache's counts beside it (Anthropic's, left out of it) or in it (Codex's cached_input_tokens)
usage = st.dictionaries(st.sampled_from(["inputTokens", "input_tokens", "outputTokens", "costUsd", "cache_read_input_tokens",
                                         "cacheCreationInputTokens", "cached_input_tokens"]),
                        st.sampled_from(VALUES), max_size=5)
GEN_AI = {"inputTokens": "gen_ai.usage.input_tokens", "outputTokens": "gen_ai.usage.output_tokens",
          "cacheReadTokens": "gen_ai.usage.cache_read.input_tokens",
          "cacheCreationTokens": "gen_ai.usage.cache_creation.input_tokens"}


def _events(usages: list[dict[str, str]]) -> list[dict[str, Any]]:
    text = ",".join("{" + ",".join(f'"{k}":{v}' for k, v in u.items()) + "}" for u in usages)
    objects = exactjson.loads(f"[{text}]")
    return [{"seq": n, "type": "assistant_message", "runId": "r", "payload": {"usage": u}}
            for n, u in enumerate(objects, 1)]


def _whole(value: Any) -> Decimal:
    """A count as the number it writes (``1e400`` as read; a sum no double holds, an ``ExactNumber``, as its digits)."""
    return Decimal(exactjson.dumps(value).decode())


@settings(max_examples=200, deadline=None)
@given(st.lists(usage, max_size=6))
def test_the_summary_and_the_trace_count_and_leave_out_the_same_usage(usages: list[dict[str, str]]):
    events = _events(usages)
    tally, trace = RunTally(None, "j.jsonl"), TraceBuilder(None, "j.jsonl")
    for event in events:
        tally.add_event(event)
        trace.add(event)
    summary = tally.summary()["usage"] or {}
    totals = tokens(trace.totals.settled())  # (the run's token attributes, by the rule report shows usage by)
    for key, name in GEN_AI.items():
        # the same counts given (a count none gave: null, and no attribute), and the same numbers (a fraction too)
        assert (summary.get(key) is None) == (name not in totals), (key, usages)
        counted = summary.get(key) or 0
        assert _whole(totals.get(name, 0)) == _whole(counted), (key, usages)
    assert [(fields, only) for _, fields, only in tally.unheld] == trace.left_out
