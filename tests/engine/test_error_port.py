"""The error port sums up repeated errors: past the limit per (source, code), one E_ERRORS_SUPPRESSED line."""

from __future__ import annotations

import orjson
import pytest
from engine_stages import Collect, ListSource, RejectOdd, numbers

from replay.pipeline.engine.errors import StrictAbort, diagnostic
from replay.pipeline.engine.executor import ErrorPort, run_graph
from replay.pipeline.engine.graph import Graph
from replay.pipeline.engine.quota import DEFAULT_LIMIT


def bad_line(source: str, line: int, code: str = "E_JSONL_LINE_INVALID") -> dict:
    return diagnostic(code, f"line {line} is bad", source=source, line=line, offset=line * 10)


def port(limit: int = 3, strict: bool = False) -> tuple[ErrorPort, list[dict]]:
    written: list[bytes] = []
    return ErrorPort(strict=strict, write=written.append, limit=limit), written  # type: ignore[return-value]


def bodies(written: list[bytes]) -> list[dict]:
    return [orjson.loads(line)["error"] for line in written]


def test_the_first_errors_of_a_code_in_a_source_are_written_the_rest_summed_up_at_the_end() -> None:
    errors, written = port(limit=3)
    errors.put([bad_line("a.jsonl", n) for n in range(1, 11)])
    assert [b["line"] for b in bodies(written)] == [1, 2, 3]
    errors.finish()
    summary = bodies(written)[-1]
    assert summary["code"] == "E_ERRORS_SUPPRESSED" and summary["source"] == "a.jsonl"
    assert summary["suppressedCode"] == "E_JSONL_LINE_INVALID" and summary["suppressed"] == 7 and summary["shown"] == 3
    assert (summary["firstLine"], summary["firstOffset"], summary["lastLine"], summary["lastOffset"]) == (4, 40, 10, 100)
    assert "7 more E_JSONL_LINE_INVALID errors in 'a.jsonl' were left out (lines 4 to 10)" in summary["message"]
    assert errors.count == 10  # every error counts (exit code, summaries), shown or not


def test_each_source_and_code_has_its_own_limit() -> None:
    errors, written = port(limit=2)
    errors.put([bad_line("a", n) for n in range(5)] + [bad_line("b", n) for n in range(5)]
               + [bad_line("a", n, "E_EVENT_NOT_OBJECT") for n in range(2)])
    errors.finish()
    shown = [(b["code"], b.get("source"), b.get("suppressed")) for b in bodies(written)]
    assert shown == [
        ("E_JSONL_LINE_INVALID", "a", None), ("E_JSONL_LINE_INVALID", "a", None),
        ("E_JSONL_LINE_INVALID", "b", None), ("E_JSONL_LINE_INVALID", "b", None),
        ("E_EVENT_NOT_OBJECT", "a", None), ("E_EVENT_NOT_OBJECT", "a", None),
        ("E_ERRORS_SUPPRESSED", "a", 3), ("E_ERRORS_SUPPRESSED", "b", 3),
    ]


def test_nothing_is_summed_up_below_the_limit_and_finish_writes_once() -> None:
    errors, written = port(limit=3)
    errors.put([bad_line("a", n) for n in range(3)])
    errors.finish()
    errors.finish()
    assert [b["code"] for b in bodies(written)] == ["E_JSONL_LINE_INVALID"] * 3


def test_limit_zero_writes_every_error() -> None:
    errors, written = port(limit=0)
    errors.put([bad_line("a", n) for n in range(DEFAULT_LIMIT * 2)])
    errors.finish()
    assert len(written) == DEFAULT_LIMIT * 2


def test_strict_still_stops_at_the_first() -> None:
    errors, written = port(limit=1, strict=True)
    with pytest.raises(StrictAbort):
        errors.put([bad_line("a", 1), bad_line("a", 2)])
    assert len(written) == 1


@pytest.mark.anyio
async def test_a_run_sums_up_what_it_left_out_when_it_ends() -> None:
    errors, written = port(limit=2)
    result = await run_graph(Graph.chain(ListSource(numbers(20)), RejectOdd(), Collect()), error_port=errors)
    assert result.errors == 10
    *shown, summary = bodies(written)
    assert len(shown) == 2 and summary["code"] == "E_ERRORS_SUPPRESSED" and summary["suppressed"] == 8
