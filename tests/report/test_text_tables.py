"""The text report's run tables laid out at once (many runs' rows by C-level maps and one format a row) are the
tables laid out cell by cell, whatever the cells: the fast layout takes a table only when it can write it alike."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.report import render_text
from replay.stages.report import render

# characters that take every branch of clean() and width(): ASCII, blanks, controls, bidi, a lone surrogate half,
# wide and combining characters, and a character str.rstrip() takes for a blank
_TEXT = st.text(alphabet=st.sampled_from("ab Z-_.9%\t\n\x07\x1f\x7f\u202e\ud83d日ツ\u0301é\u3000\u2028"), max_size=8)
_ASCII = st.text(alphabet=st.sampled_from("abcdefghij_ -"), max_size=16)
_NUMBER = st.one_of(st.none(), st.integers(-10, 10), st.integers(0, 10**9), st.integers(10**300, 10**310),
                    st.sampled_from([0.0, -0.0, 1.5, 999.5, 1e20, float("inf")]), st.booleans())
_SEQ = st.one_of(st.none(), st.integers(-5, 10**6), _TEXT, _ASCII, st.sampled_from([8.5, True, 10**30]))


def _mostly(usual: st.SearchStrategy[Any], odd: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``usual`` values 19 times in 20 (so that many tables are of the kind the fast layout takes), else ``odd``."""
    return st.integers(0, 19).flatmap(lambda k: odd if k == 0 else usual)


_INT = st.integers(0, 10**6)
_LONG = st.integers(render_text.CELL_LIMIT - 2, render_text.MESSAGE_LIMIT + 2).map(lambda n: "ab" * (n // 2) + "c" * (n % 2))
_PLAIN_SEQ = st.none() | _INT


def _call() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"toolName": _mostly(_ASCII, _TEXT | st.none() | st.sampled_from(["", 0, 5]) | _LONG),
         "status": _mostly(st.sampled_from(["ok", "error"]), _TEXT | st.just("error ")),
         "durationMs": _mostly(_INT, _NUMBER), "startMs": _mostly(_PLAIN_SEQ, _NUMBER), "seq": _mostly(_PLAIN_SEQ, _SEQ)},
        optional={"unfinished": _mostly(st.just(False), st.just(True)), "callId": _ASCII})


def _error() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"kind": _mostly(st.sampled_from(["tool_failed", "run_failed", "run"]), _TEXT),
         "code": _mostly(st.none() | _ASCII, _TEXT | st.integers(-3, 600)), "seq": _mostly(_PLAIN_SEQ, _SEQ),
         "message": _mostly(_ASCII, _TEXT | st.none() | st.sampled_from(["", "end "]) | _LONG)},
        optional={"toolName": _mostly(st.none() | _ASCII, _TEXT | st.sampled_from(["", 0, 0.0, False, 7]))})


def _usual(rows: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[list[list[dict[str, Any]]]]:
    """Runs' rows, most of them of the usual kind (so that the fast layout takes most batches)."""
    return st.lists(st.lists(rows, min_size=1, max_size=4), min_size=1, max_size=5)


def _agrees(runs: list[list[dict[str, Any]]], fast: Any, general: Any) -> None:
    """What ``fast`` lays out of ``runs`` (at once, and each run alone) is what ``general`` lays out cell by cell."""
    for batch in [runs, *([shown] for shown in runs)]:
        tables = render_text._fast_or_none(fast, batch)
        if tables is None:
            continue
        assert tables == ["\n".join(general(shown)) for shown in batch]


@settings(max_examples=400)
@given(_usual(_call()))
def test_call_tables_laid_out_at_once_are_the_tables_laid_out_cell_by_cell(runs):
    _agrees(runs, render_text._fast_call_tables, render_text._call_table)


@settings(max_examples=400)
@given(_usual(_error()))
def test_error_tables_laid_out_at_once_are_the_tables_laid_out_cell_by_cell(runs):
    _agrees(runs, render_text._fast_error_tables, render_text._error_table)


_PLAIN_CALL = st.fixed_dictionaries({"toolName": _ASCII.filter(bool), "status": st.sampled_from(["ok", "error"]),
                                     "durationMs": st.integers(0, 10**7), "startMs": st.none() | st.integers(0, 10**7),
                                     "seq": st.integers(1, 10**5)})
_PLAIN_ERROR = st.fixed_dictionaries({"kind": st.sampled_from(["tool_failed", "run_failed"]),
                                      "code": st.none() | st.sampled_from(["ETIMEDOUT", "E_X"]),
                                      "seq": st.integers(1, 10**5), "message": _ASCII.map(lambda m: m.strip() + "x")},
                                     optional={"toolName": st.none() | _ASCII})


@settings(max_examples=100)
@given(_usual(_PLAIN_CALL), _usual(_PLAIN_ERROR))
def test_the_usual_tables_are_laid_out_at_once(calls, errors):
    """Plain ASCII names and messages, whole-number durations, int seqs: the fast layout takes them (it is not a
    path that falls back to the slow one for the summaries a report usually gets)."""
    call_tables = render_text._fast_call_tables(calls)
    error_tables = render_text._fast_error_tables(errors)
    assert call_tables is not None and error_tables is not None
    _agrees(calls, render_text._fast_call_tables, render_text._call_table)
    _agrees(errors, render_text._fast_error_tables, render_text._error_table)


def _summary(n: int, calls: list[dict[str, Any]], errors: list[dict[str, Any]]) -> dict[str, Any]:
    return {"$record": "summary", "runId": f"run_{n}", "artifactId": None, "source": "j.jsonl", "status": "ok",
            "framework": None, "prompt": None, "startedAt": None, "endedAt": None, "durationMs": 5,
            "events": {"total": 1, "byType": {"x": 1}},
            "toolCalls": {"total": len(calls), "ok": 0, "error": 0, "calls": calls, "byTool": {}},
            "errors": errors, "usage": None, "repairs": {"total": 0, "byRule": {}}}


def test_runs_written_a_batch_at_once_are_the_runs_written_one_by_one():
    """The report writes its runs' sections a batch at a time; a run whose tables the fast layout leaves (a wide
    name, an unfinished call, a row ending in a blank) among usual ones is written as it is alone, in its place:
    the sections are those of the runs with their tables laid out cell by cell."""
    plain = {"toolName": "bash", "status": "ok", "durationMs": 12, "startMs": 3, "seq": 4}
    odd = [{**plain, "toolName": "日本語"}, {**plain, "unfinished": True}, {**plain, "seq": "7 "}, {**plain, "seq": ""},
           {**plain, "durationMs": 1.5}, {**plain, "toolName": "x" * 60}]
    error = {"kind": "tool_failed", "code": None, "seq": 9, "message": "boom", "toolName": None}
    runs = [_summary(n, [plain] * (n % 3) + ([odd[n % len(odd)]] if n % 5 == 0 else []),
                     [error] * (n % 4) + ([{**error, "message": "ends "}] if n % 7 == 0 else []))
            for n in range(render_text.BATCH_RUNS * 2 + 5)]
    report = render("text", runs).decode()
    one_by_one = []
    for n, s in enumerate(runs, 1):
        calls = "\n".join(render_text._call_table(render_text._calls_shown(s))) if s["toolCalls"]["calls"] else None
        errors = "\n".join(render_text._error_table(render_text._errors_shown(s))) if s["errors"] else None
        one_by_one.append("\n".join(render_text._run_block(s, n, calls, errors)) + "\n\n")
    assert "".join(one_by_one) in report


def test_a_long_tables_format_is_laid_out_but_not_kept():
    """Whole-table formats are kept for tables of up to FORMAT_ROWS_KEPT rows (a run's usual table): a longer table's
    format, as long as its rows, is made for it and let go (the cache stays a few MB however long the runs are)."""
    rows = render_text.FORMAT_ROWS_KEPT + 1
    calls = [{"toolName": "bash", "status": "ok", "durationMs": 12, "startMs": 3, "seq": k} for k in range(1, rows + 1)]
    for shown in (calls, calls[:-1]):
        tables = render_text._fast_call_tables([shown])
        assert tables == ["\n".join(render_text._call_table(shown))]
    kept = [rows_ for formats in render_text._TABLE_FORMATS.values() for _, rows_ in formats]
    assert render_text.FORMAT_ROWS_KEPT in kept and max(kept) <= render_text.FORMAT_ROWS_KEPT
