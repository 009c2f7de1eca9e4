"""Markdown report: a runs table, a section per run and the totals, every cell escaped for tables."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from replay.pipeline.model.markup import breaks_as_spaces, shown_text
from replay.pipeline.report.model import (
    counted,
    format_cost,
    format_count,
    format_counts,
    format_ms,
    format_tokens_in,
    run_label,
    run_statuses,
    status_of,
)
from replay.pipeline.report.streaming import pieces

PROMPT_LIMIT = 500
STATUS_SHOWN = {"ok": "✅ ok", "error": "❌ error", "unknown": "❔ unknown"}  # a run's status in the runs table
CALL_ROWS = 200  # tool calls listed per run (the json format lists them all)
ERROR_ROWS = 100  # errors listed per run, and repairs of no run in the report
_SPECIAL = set("\\`*_[]<>|#!~$&")  # (& begins an entity: &lt; shows as <, &#x202e; as a bidi override)


def esc(value: Any, limit: int = 0) -> str:
    """Text safe inside a Markdown table cell: one line, Markdown and HTML punctuation backslash-escaped."""
    text = "-" if value is None else str(value)
    text = breaks_as_spaces(shown_text(text))  # a line break would end the table row: a space, as in a text table (control
    # characters, VT, US and NEL among them, are shown as \uXXXX first)
    if limit and len(text) > limit:
        text = text[: limit - 1] + "…"
    return "".join("\\" + ch if ch in _SPECIAL else ch for ch in text)


def table(headers: list[str], rows: list[list[str]], right: frozenset[int] | set[int] = frozenset()) -> list[str]:
    align = ["---:" if k in right else "---" for k in range(len(headers))]
    return [row_line(headers), row_line(align), *map(row_line, rows)]


def row_line(row: list[str]) -> str:
    return "| " + " | ".join(row) + " |"


def _lines(lines: list[str]) -> str:
    """Lines as the page writes them: each ended by a newline."""
    return "\n".join(lines) + "\n"


def render_chunks(summaries: Sequence[dict[str, Any]], agg: dict[str, Any], title: str) -> Iterator[bytes]:
    """The page a piece at a time (its head, the runs table's rows, a section per run, the totals), so that its memory
    stays flat however many runs it shows: ``summaries`` (spooled ones) are read twice, a run at a time."""
    runs, tc, usage = agg["runs"], agg["toolCalls"], agg["usage"]
    out = [f"# {esc(title)}", ""]
    unattributed = agg["unattributedRepairs"]["total"]
    line = (f"**{counted(runs['total'], 'run', 'runs')}**: {run_statuses(runs)} · {counted(agg['events']['total'], 'event', 'events')}"
            f" · {counted(tc['total'], 'tool call', 'tool calls')} ({format_count(tc['error'])} failed)"
            f" · {counted(agg['repairs']['total'], 'repair', 'repairs')}"
            + (f" ({format_count(unattributed)} in no run of this report)" if unattributed else "")
            + f" · {format_ms(agg['durationMs'])} in all")
    if usage["runsWithUsage"]:
        line += (f" · {format_tokens_in(usage)}, {format_count(usage['outputTokens'])} tokens out,"
                 f" {esc(format_cost(usage['costUsd']))}")
    out += [line, ""]
    if agg["diagnostics"]["total"]:
        out += [f"> **{counted(agg['diagnostics']['total'], 'input problem', 'input problems')}**: {esc(format_counts(agg['diagnostics']['byCode']))}", ""]
    if len(summaries):
        out += ["## Runs", ""]
        out += table(["Run", "Status", "Duration", "Events", "Tool calls", "Failed", "Tokens in", "Tokens out",
                      "Cost", "Repairs"], [], right={2, 3, 4, 5, 6, 7, 8, 9})
        yield _lines(out).encode("utf-8")
        yield from pieces(row_line(_overview_row(s, n)) + "\n" for n, s in enumerate(summaries, 1))
        out = [""]
    yield _lines(out).encode("utf-8")
    yield from pieces(_lines(_run_section(s, n)) for n, s in enumerate(summaries, 1))
    yield ("\n".join(_aggregate_section(agg)).rstrip("\n") + "\n").encode("utf-8")  # (the section never ends blank)


def _overview_row(s: dict[str, Any], n: int) -> list[str]:
    u = s["usage"]
    return [
        f"[{esc(run_label(s, n))}](#run-{n})", STATUS_SHOWN[status_of(s)],
        format_ms(s["durationMs"]), format_count(s["events"]["total"]), format_count(s["toolCalls"]["total"]),
        format_count(s["toolCalls"]["error"]), format_count(u["inputTokens"]) if u else "-",
        format_count(u["outputTokens"]) if u else "-", esc(format_cost(u["costUsd"])) if u else "-",
        format_count(s["repairs"]["total"]),
    ]


def _run_section(s: dict[str, Any], n: int) -> list[str]:
    out = [f'<a id="run-{n}"></a>', "", f"## Run {esc(run_label(s, n))}", ""]
    facts = [("Status", s["status"]), ("Source", esc(s.get("source"))), ("Framework", esc(s.get("framework"))),
             ("Started", esc(s["startedAt"])), ("Ended", esc(s["endedAt"])), ("Duration", format_ms(s["durationMs"]))]
    if s.get("artifactId"):
        facts.insert(1, ("Artifact", esc(s["artifactId"])))
    if s.get("prompt") is not None:
        facts.append(("Prompt", esc(s["prompt"], PROMPT_LIMIT)))
    u = s["usage"]
    facts.append(("Usage", f"{format_tokens_in(u)}, {format_count(u['outputTokens'])} tokens out, "
                           f"{esc(format_cost(u['costUsd']))}" if u else "-"))
    out += [f"- **{k}**: {v}" for k, v in facts] + [""]
    by_type = s["events"]["byType"]
    if by_type:
        out += [f"### Events ({s['events']['total']})", ""]
        out += [*table(["Type", "Count"], [[esc(k), format_count(v)] for k, v in by_type.items()], right={1}), ""]
    calls = s["toolCalls"]["calls"]
    if calls:
        out += [f"### Tool calls ({s['toolCalls']['total']}, {s['toolCalls']['error']} failed)", ""]
        rows = [[str(k), esc(c["toolName"]), ("ok" if c["status"] == "ok" else "**error**")
                 + (" (unfinished)" if c.get("unfinished") else ""), format_ms(c["durationMs"]),
                 "-" if c["startMs"] is None else "+" + format_ms(c["startMs"]), esc(c["seq"])]
                for k, c in enumerate(calls[:CALL_ROWS], 1)]
        out += [*table(["#", "Tool", "Status", "Duration", "Start", "Seq"], rows, right={0, 3, 4, 5}), ""]
        if len(calls) > CALL_ROWS:
            out += [f"*… {len(calls) - CALL_ROWS} more tool calls (the json format lists them all)*", ""]
    if s["errors"]:
        out += [f"### Errors ({len(s['errors'])})", ""]
        rows = [[esc(e["kind"]), esc(e.get("code")), esc(e.get("toolName")), esc(e.get("seq")), esc(e["message"], 300)]
                for e in s["errors"][:ERROR_ROWS]]
        out += [*table(["Kind", "Code", "Tool", "Seq", "Message"], rows), ""]
        if len(s["errors"]) > ERROR_ROWS:
            out += [f"*… {len(s['errors']) - ERROR_ROWS} more errors (the json format lists them all)*", ""]
    if s["repairs"]["total"]:
        out += [f"### Repairs ({s['repairs']['total']})", ""]
        out += table(["Rule", "Count"], [[esc(k), format_count(v)] for k, v in s["repairs"]["byRule"].items()], right={1})
        out.append("")
    return out


def _aggregate_section(agg: dict[str, Any]) -> list[str]:
    out = ["## All runs", ""]
    span = f"{esc(agg['startedAt'])} to {esc(agg['endedAt'])}" if agg["startedAt"] else "-"
    out += [f"- **Runs**: {format_count(agg['runs']['total'])} ({run_statuses(agg['runs'])})",
            f"- **Time**: {span} (runs took {format_ms(agg['durationMs'])} in all)",
            f"- **Errors**: {format_count(agg['errors']['total'])}", ""]
    sections = [
        ("Events by type", ["Type", "Count"], [[esc(k), format_count(v)] for k, v in agg["events"]["byType"].items()], {1}),
        ("Tool calls by tool", ["Tool", "Calls", "Ok", "Failed", "Total time", "Longest"],
         [[esc(k), format_count(v["calls"]), format_count(v["ok"]), format_count(v["error"]), format_ms(v["durationMs"]),
           format_ms(v["maxMs"])] for k, v in agg["toolCalls"]["byTool"].items()], {1, 2, 3, 4, 5}),
        ("Repairs by rule", ["Rule", "Count"], [[esc(k), format_count(v)] for k, v in agg["repairs"]["byRule"].items()], {1}),
        ("Errors by code", ["Code", "Count"], [[esc(k), format_count(v)] for k, v in agg["errors"]["byCode"].items()], {1}),
        ("Repairs in no run of this report (heal dropped every event of their run)", ["Run", "Source", "Repairs", "By rule"],
         [[esc(u["runId"]), esc(u["source"]), format_count(u["total"]), esc(format_counts(u["byRule"]))]
          for u in agg["unattributedRepairs"]["runs"][:ERROR_ROWS]], {2}),
    ]
    for heading, headers, rows, right in sections:
        if rows:
            out += [f"### {heading}", "", *table(headers, rows, right), ""]
    left = len(agg["unattributedRepairs"]["runs"]) - ERROR_ROWS
    if left > 0:
        out += [f"*… {left} more (the json format lists them all)*", ""]
    return out
