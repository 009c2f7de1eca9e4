"""HTML report: one self-contained page (inline CSS and SVG, no script, no network) with a timeline per run.

Every value from the data goes through ``esc`` before it reaches the page, and a Content-Security-Policy
meta tag forbids scripts and every fetch, so even a value that slipped through could neither run nor
call out. The timeline is inline SVG: events as ticks on a time axis (or in stream order when the run
has no usable timestamps), tool calls as bars from their start over their duration, failures in red,
hover titles with the details.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any

from replay.pipeline.model.markup import shown_text
from replay.pipeline.report.model import (
    all_tokens,
    counted,
    format_cost,
    format_count,
    format_counts,
    format_ms,
    run_label,
    run_statuses,
)
from replay.pipeline.report.streaming import pieces

# a run's usage: the parts of its tokens in the prompt cache gave or took (``shown_usage``)
_CACHE_ROWS = (("cacheReadTokens", "of which cache read"), ("cacheCreationTokens", "of which cache write"))
PROMPT_SHOWN = 600  # characters of a prompt shown before "show all"
PROMPT_KEPT = 20_000  # characters of a prompt kept in the page at all
CALL_ROWS = 500  # tool calls listed in a run's table
ERROR_ROWS = 200  # errors listed in a run's table, and repairs of no run in the report
ERRORS_SHOWN = 5  # errors in view before "more errors"

# timeline geometry (SVG user units; the SVG scales to the page width)
WIDTH, GUTTER, RIGHT = 960, 92, 18
PLOT = WIDTH - GUTTER - RIGHT
EVENTS_Y, EVENTS_H = 14, 22
LANES_Y, LANE_H, BAR_H = 48, 20, 14
MAX_LANES = 10
TIPS_PER_TICK = 8  # events named in the hover title of one tick
MAX_BARS = 2000  # tool-call bars drawn per run; past that the failed calls come first
AXIS_H = 30
MIN_BAR = 3.0

CATEGORIES = {
    "run_started": "run", "run_completed": "run", "run_failed": "failure", "tool_failed": "failure",
    "tool_called": "tool", "tool_completed": "tool", "user_message": "message", "assistant_message": "message",
}


def esc(value: Any) -> str:
    return html.escape(shown_text("-" if value is None else str(value)), quote=True)


def _f(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


# the timeline ------------------------------------------------------------------------------------
def _nice_step(span: float, target: int = 6) -> float:
    raw = span / target
    magnitude = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * magnitude >= raw:
            return m * magnitude
    return 10 * magnitude


def _lanes(spans: list[tuple[float, float]]) -> list[int]:
    """A lane for each bar so that bars in one lane do not overlap (the last lane takes the overflow)."""
    ends: list[float] = []
    lanes = [0] * len(spans)
    for k in sorted(range(len(spans)), key=lambda k: (spans[k][0], k)):
        x0, x1 = spans[k]
        lane = next((i for i, end in enumerate(ends) if end <= x0 + 0.5), None)
        if lane is None:
            if len(ends) < MAX_LANES:
                ends.append(x1)
                lane = len(ends) - 1
            else:
                lane = min(range(len(ends)), key=lambda i: ends[i])
        ends[lane] = max(ends[lane], x1)
        lanes[k] = lane
    return lanes


_FIRST = itemgetter(0)


def _drawn_calls(calls: Sequence[dict[str, Any]], where: Sequence[Any]) -> list[tuple[dict[str, Any], Any]]:
    """The calls that get a bar: all of them up to MAX_BARS, else the failed ones first, in call order (read in one
    pass, holding no more than the bars: a run's calls may be spooled, ``spool.SpooledCalls``)."""
    failed: list[tuple[int, tuple[dict[str, Any], Any]]] = []
    ok: list[tuple[int, tuple[dict[str, Any], Any]]] = []
    for k, pair in enumerate(zip(calls, where, strict=True)):
        kept = ok if pair[0]["status"] == "ok" else failed
        if len(kept) < MAX_BARS:
            kept.append((k, pair))
    return [pair for _, pair in sorted(failed + ok[:MAX_BARS - len(failed)], key=_FIRST)]  # (all, when as few)


def timeline_svg(summary: dict[str, Any], n: int) -> str:
    tl = summary["timeline"]
    calls = summary["toolCalls"]["calls"]
    drawn = _drawn_calls(calls, tl["calls"])
    count = max(tl["events"], 1)
    by_time = tl["axis"] == "time"
    if by_time:  # the axis is the run's time, as its timestamps tell it (> 0 ms: else the axis is the stream order)
        span = float(tl["spanMs"])

        def x_of(at: float) -> float:  # at: milliseconds into the run (a fraction first: PLOT * 1e308 is no double)
            return GUTTER + PLOT * (min(at, span) / span)
    else:
        span = float(count)

        def x_of(at: float) -> float:  # at: the event's index in the run
            return GUTTER + PLOT * (at + 0.5) / count

    slot = PLOT / count
    spans: list[tuple[float, float]] = []
    for call, where in drawn:
        if not by_time:  # stream order: a slot-wide bar at the call's first event
            w = max(min(slot, 12), MIN_BAR)
            x0 = x_of(where or 0) - w / 2
        elif call["startMs"] is not None:  # (a call measured longer than the rest of the run: drawn to the axis end)
            x0 = x_of(call["startMs"])
            w = max(x_of(call["startMs"] + (call["durationMs"] or 0)) - x0, MIN_BAR)  # (of unknown length: a stub)
        else:  # a call whose start has no usable timestamp: a stub at the axis start
            x0, w = GUTTER, MIN_BAR
        x0 = min(max(x0, GUTTER), GUTTER + PLOT - MIN_BAR)
        spans.append((x0, min(x0 + w, GUTTER + PLOT)))
    lanes = _lanes(spans)
    lane_count = max(lanes, default=-1) + 1
    plot_bottom = LANES_Y + max(lane_count, 1) * LANE_H
    height = plot_bottom + AXIS_H
    label = esc(run_label(summary, n))
    parts = [
        f'<svg class="timeline" data-run="{n}" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
        f'role="img" aria-labelledby="tl-title-{n}" preserveAspectRatio="xMinYMin meet" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="tl-title-{n}">Timeline of run {label}: {counted(tl["events"], "event", "events")}, '
        f'{counted(len(calls), "tool call", "tool calls")}</title>',
        f'<rect class="plot-bg" x="{GUTTER}" y="4" width="{PLOT}" height="{plot_bottom - 4}" rx="4"/>',
        f'<text class="lane-label" x="{GUTTER - 8}" y="{EVENTS_Y + 15}">events</text>',
        f'<text class="lane-label" x="{GUTTER - 8}" y="{LANES_Y + 11}">tool calls</text>' if calls else "",
    ]
    if not calls:
        parts.append(f'<text class="empty-note" x="{GUTTER + 8}" y="{LANES_Y + 11}">no tool calls</text>')
    # axis
    parts.append(f'<line class="axis" x1="{GUTTER}" y1="{plot_bottom}" x2="{GUTTER + PLOT}" y2="{plot_bottom}"/>')
    if by_time:
        step = _nice_step(span)
        t = 0.0
        while t <= span + 1e-9:
            x = x_of(t)
            parts.append(f'<line class="grid" x1="{_f(x)}" y1="4" x2="{_f(x)}" y2="{plot_bottom + 4}"/>'
                         f'<text class="axis-label" x="{_f(x)}" y="{plot_bottom + 18}">{esc(format_ms(t) if t else "0")}</text>')
            t += step
    else:
        step = max(1, int(_nice_step(float(count))))
        for index in range(0, count, step):
            x = x_of(index)
            parts.append(f'<line class="grid" x1="{_f(x)}" y1="4" x2="{_f(x)}" y2="{plot_bottom + 4}"/>'
                         f'<text class="axis-label" x="{_f(x)}" y="{plot_bottom + 18}">#{index + 1}</text>')
    # events: one tick per unit of width and category (events closer than that look the same anyway)
    failures: list[str] = []
    ticks: dict[tuple[float, str], list[str]] = {}
    for mark in tl["marks"]:
        if by_time and mark["atMs"] is not None:
            x = x_of(mark["atMs"])
        elif by_time:
            continue  # an event without a usable timestamp has no place on a time axis
        else:
            x = x_of(mark["index"])
        kind = mark["type"]
        when = f"+{format_ms(mark['atMs'])}" if mark["atMs"] is not None else f"event {mark['index'] + 1}"
        tip = f"{kind} · seq {mark['seq'] if mark['seq'] is not None else '-'} · {when}"
        ticks.setdefault((float(round(x)), CATEGORIES.get(kind, "other")), []).append(tip)
        if kind == "run_failed":
            failures.append(
                f'<g class="failure run-failed"><line class="failure-line" x1="{_f(x)}" y1="6" x2="{_f(x)}" y2="{plot_bottom}"/>'
                f'<path class="failure-marker" d="M{_f(x)} {EVENTS_Y - 9} l6 6 l-6 6 l-6 -6 z"><title>{esc(tip)}</title></path></g>')
        elif mark.get("failed"):
            failures.append(f'<path class="failure failure-marker tool-failed" d="M{_f(x - 5)} {EVENTS_Y - 8} h10 l-5 8 z">'
                            f'<title>{esc(tip)}</title></path>')
    for (x, category), tips in ticks.items():
        tip = "\n".join(tips[:TIPS_PER_TICK]) + (f"\n… {len(tips) - TIPS_PER_TICK} more" if len(tips) > TIPS_PER_TICK else "")
        parts.append(f'<line class="tick cat-{category}" x1="{_f(x)}" y1="{EVENTS_Y}" x2="{_f(x)}" '
                     f'y2="{EVENTS_Y + EVENTS_H}"><title>{esc(tip)}</title></line>')
    # tool calls
    for (call, _), (x0, x1), lane in zip(drawn, spans, lanes, strict=True):
        failed = call["status"] != "ok"
        classes = "call-bar " + ("failed failure" if failed else "ok") + (" unfinished" if call.get("unfinished") else "")
        y = LANES_Y + lane * LANE_H
        start = f"+{format_ms(call['startMs'])}" if call["startMs"] is not None else "start unknown"
        state = call["status"] + (", never finished" if call.get("unfinished") else "")
        tip = esc(f"{call['toolName']} · {state} · {format_ms(call['durationMs'])} · started {start}"
                  f" · seq {call['seq'] if call['seq'] is not None else '-'}")
        w = x1 - x0
        parts.append(f'<rect class="{classes}" data-tool="{esc(call["toolName"])}" data-status="{esc(call["status"])}" '
                     f'x="{_f(x0)}" y="{y}" width="{_f(w)}" height="{BAR_H}" rx="2"><title>{tip}</title></rect>')
        name = call["toolName"]
        if w > 7 * len(name) + 10:
            parts.append(f'<text class="bar-label" x="{_f(x0 + 4)}" y="{y + 11}">{esc(name)}</text>')
    parts += failures  # drawn last, on top
    parts.append("</svg>")
    return "".join(parts)


# the page ----------------------------------------------------------------------------------------
STYLE = """
:root{--bg:#f6f7f9;--card:#fff;--ink:#1f2933;--muted:#66707a;--line:#e3e6ea;--ok:#16a34a;--bad:#dc2626;
--tool:#3b82f6;--msg:#64748b;--other:#7c3aed;--grid:#eef0f3;--plot:#fbfbfc}
@media (prefers-color-scheme:dark){:root{--bg:#121417;--card:#1b1e23;--ink:#e6e8eb;--muted:#9aa3ad;--line:#2c3138;
--grid:#23272d;--plot:#171a1e}}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--ink)}
main{max-width:1080px;margin:0 auto;padding:24px 20px 64px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:0}h3{font-size:14px;margin:16px 0 6px;color:var(--muted);
text-transform:uppercase;letter-spacing:.04em}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px;overflow-wrap:break-word}
.sub{color:var(--muted);margin:0 0 18px}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:10px;margin:0 0 20px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 12px}
.card .k{color:var(--muted);font-size:12px}.card .v{font-size:20px;font-weight:600}.card .d{color:var(--muted);font-size:12px}
.card.bad .v{color:var(--bad)}
.panel,.run{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px 18px;margin:0 0 18px}
.run.status-error{border-left:4px solid var(--bad)}.run.status-ok{border-left:4px solid var(--ok)}
.run.status-unknown{border-left:4px solid var(--muted)}
.badge{display:inline-block;border-radius:999px;padding:1px 9px;font-size:12px;font-weight:600;color:#fff;vertical-align:2px}
.badge.ok{background:var(--ok)}.badge.error{background:var(--bad)}.badge.unknown{background:var(--muted)}
.meta{color:var(--muted);margin:4px 0 10px}.meta span+span:before{content:" · "}
.prompt{background:var(--plot);border:1px solid var(--line);border-radius:6px;padding:8px 10px;white-space:pre-wrap;
overflow-wrap:anywhere;margin:8px 0}
.prompt b{color:var(--muted);font-weight:600;margin-right:6px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:4px 8px;border-bottom:1px solid var(--line);
vertical-align:top}th{color:var(--muted);font-weight:600;font-size:12px}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
td.msg{overflow-wrap:anywhere}
.cols{display:grid;grid-template-columns:repeat(auto-fit,minmax(280px,1fr));gap:4px 24px}
.cols>section{min-width:0;overflow-x:auto}.errors td:first-child{white-space:nowrap}
.errors{border:1px solid var(--bad);border-radius:6px;padding:6px 10px;margin:10px 0}
.errors h3{color:var(--bad);margin-top:4px}
figure{margin:10px 0 6px}figcaption{color:var(--muted);font-size:12px;margin-top:2px}
svg.timeline{width:100%;height:auto;display:block}
.plot-bg{fill:var(--plot);stroke:var(--line)}.grid{stroke:var(--grid)}.axis{stroke:var(--muted)}
.axis-label{fill:var(--muted);font-size:11px;text-anchor:middle}.lane-label{fill:var(--muted);font-size:11px;text-anchor:end}
.empty-note{fill:var(--muted);font-size:11px;font-style:italic}
.tick{stroke-width:2}.cat-run{stroke:var(--ok)}.cat-message{stroke:var(--msg)}.cat-tool{stroke:var(--tool)}
.cat-failure{stroke:var(--bad)}.cat-other{stroke:var(--other)}
.call-bar.ok{fill:var(--tool)}.call-bar.failed{fill:var(--bad)}
.call-bar.unfinished{fill-opacity:.45;stroke:var(--bad);stroke-dasharray:3 2}
.bar-label{fill:#fff;font-size:10px;pointer-events:none}
.failure-line{stroke:var(--bad);stroke-width:2;stroke-dasharray:4 3}.failure-marker{fill:var(--bad)}
.legend{display:flex;flex-wrap:wrap;gap:6px 18px;margin:4px 0 0;padding:0;list-style:none;color:var(--muted);font-size:12px}
.legend svg{vertical-align:-2px;margin-right:5px}
details summary{cursor:pointer;color:var(--muted);margin:8px 0 4px}
a{color:var(--tool)}
"""

LEGEND = [
    ('<rect width="18" height="10" y="1" rx="2" class="call-bar ok"/>', "tool call (ok)"),
    ('<rect width="18" height="10" y="1" rx="2" class="call-bar failed"/>', "tool call failed"),
    ('<rect width="18" height="10" y="1" rx="2" class="call-bar failed unfinished"/>', "tool call never finished"),
    ('<line x1="9" x2="9" y1="0" y2="12" class="tick cat-run"/>', "run started / completed"),
    ('<line x1="9" x2="9" y1="0" y2="12" class="tick cat-message"/>', "message"),
    ('<line x1="9" x2="9" y1="0" y2="12" class="tick cat-tool"/>', "tool event"),
    ('<line x1="9" x2="9" y1="0" y2="12" class="tick cat-other"/>', "other event"),
    ('<path d="M9 0 l6 6 l-6 6 l-6 -6 z" class="failure-marker"/>', "run failed"),
    ('<path d="M4 1 h10 l-5 8 z" class="failure-marker"/>', "tool failed"),
]


def _legend() -> str:
    items = "".join(f'<li><svg width="18" height="12" viewBox="0 0 18 12" aria-hidden="true">{shape}</svg>{esc(text)}</li>'
                    for shape, text in LEGEND)
    return f'<ul class="legend" aria-label="legend">{items}</ul>'


def _table(headers: list[tuple[str, bool]], rows: Iterable[list[str]]) -> str:
    """``headers`` as (label, numeric); cells must be escaped already."""
    return _table_head(headers) + "".join(_row(headers, row) for row in rows) + _TABLE_END


def _table_head(headers: list[tuple[str, bool]]) -> str:
    head = "".join(f'<th class="n">{esc(h)}</th>' if numeric else f"<th>{esc(h)}</th>" for h, numeric in headers)
    return f"<table><thead><tr>{head}</tr></thead><tbody>"


def _row(headers: list[tuple[str, bool]], row: list[str]) -> str:
    return "<tr>" + "".join(f'<td class="n">{cell}</td>' if headers[k][1] else f"<td>{cell}</td>"
                            for k, cell in enumerate(row)) + "</tr>"


_TABLE_END = "</tbody></table>"


def _card(key: str, value: str, detail: str = "", bad: bool = False) -> str:
    return (f'<div class="card{" bad" if bad else ""}"><div class="k">{esc(key)}</div><div class="v">{esc(value)}</div>'
            f'<div class="d">{esc(detail)}</div></div>')


def _cards(agg: dict[str, Any]) -> str:
    runs, tc, usage, diag = agg["runs"], agg["toolCalls"], agg["usage"], agg["diagnostics"]
    cards = [
        _card("Runs", format_count(runs["total"]), run_statuses(runs, " · ", "failed"), bad=runs["error"] > 0),
        _card("Events", format_count(agg["events"]["total"]), f"{len(agg['events']['byType'])} types"),
        _card("Tool calls", format_count(tc["total"]), f"{tc['error']} failed", bad=tc["error"] > 0),
        _card("Errors", format_count(agg["errors"]["total"]), counted(len(agg['errors']['byCode']), "kind", "kinds"), bad=agg["errors"]["total"] > 0),
        _card("Duration", format_ms(agg["durationMs"]), "all runs together"),
        _card("Tokens", format_count(all_tokens(usage)) if usage["runsWithUsage"] else "-",
              f"{format_count(usage['inputTokens'])} in · {format_count(usage['outputTokens'])} out"
              if usage["runsWithUsage"] else "no usage reported"),
        _card("Cost", format_cost(usage["costUsd"]) if usage["runsWithUsage"] else "-",
              counted(usage["runsWithUsage"], "run reports usage", "runs report usage")),
        _card("Repairs", format_count(agg["repairs"]["total"]), counted(len(agg["repairs"]["byRule"]), "rule", "rules")
              + (f" · {format_count(agg['unattributedRepairs']['total'])} in no run" if agg["unattributedRepairs"]["total"] else "")),
    ]
    if diag["total"]:
        cards.append(_card("Input problems", format_count(diag["total"]), "lines or files not read", bad=True))
    return '<section class="cards" aria-label="totals">' + "".join(cards) + "</section>"


def _overview(summaries: Iterable[dict[str, Any]]) -> Iterator[str]:
    """The runs table, a piece at a time: its head, a row per run, its end."""
    headers = [("Run", False), ("Status", False), ("Duration", True), ("Events", True), ("Tool calls", True),
               ("Failed", True), ("Tokens", True), ("Cost", True), ("Repairs", True)]
    yield '<section class="panel"><h2>Runs</h2>' + _table_head(headers)
    for n, s in enumerate(summaries, 1):
        u = s["usage"]
        yield _row(headers, [
            f'<a href="#run-{n}"><code>{esc(run_label(s, n))}</code></a>',
            f'<span class="badge {esc(s["status"])}">{esc(s["status"])}</span>',
            esc(format_ms(s["durationMs"])), esc(format_count(s["events"]["total"])),
            esc(format_count(s["toolCalls"]["total"])), esc(format_count(s["toolCalls"]["error"])),
            esc(format_count(all_tokens(u))) if u else "-",
            esc(format_cost(u["costUsd"])) if u else "-", esc(format_count(s["repairs"]["total"])),
        ])
    yield _TABLE_END + "</section>"


def _prompt(prompt: str | None) -> str:
    if prompt is None:
        return ""
    kept = prompt[:PROMPT_KEPT]
    if len(prompt) <= PROMPT_SHOWN:
        return f'<p class="prompt"><b>Prompt</b>{esc(prompt)}</p>'
    more = " (cut)" if len(prompt) > PROMPT_KEPT else ""
    return (f'<p class="prompt"><b>Prompt</b>{esc(prompt[:PROMPT_SHOWN])}…</p>'
            f'<details><summary>Whole prompt ({len(prompt):,} characters{more})</summary>'
            f'<p class="prompt">{esc(kept)}</p></details>')


def _errors_section(errors: list[dict[str, Any]]) -> str:
    """The first few errors in view, the rest (up to ERROR_ROWS) behind a "more" toggle."""
    headers = [("Kind", False), ("Code", False), ("Tool", False), ("Seq", True), ("Message", False)]

    def rows(part: list[dict[str, Any]]) -> list[list[str]]:
        return [[esc(e["kind"]), f"<code>{esc(e.get('code'))}</code>", esc(e.get("toolName")), esc(e.get("seq")),
                 esc(e["message"])] for e in part]

    html_ = f'<section class="errors"><h3>Errors ({len(errors)})</h3>' + _table(headers, rows(errors[:ERRORS_SHOWN]))
    rest = errors[ERRORS_SHOWN:ERROR_ROWS]
    if rest:
        left = len(errors) - ERROR_ROWS
        note = f"<p>… {left} more (the json format lists them all)</p>" if left > 0 else ""
        html_ += (f"<details><summary>{len(errors) - ERRORS_SHOWN} more errors</summary>"
                  + _table(headers, rows(rest)) + note + "</details>")
    return html_.replace("<td>", '<td class="msg">') + "</section>"


def _run_article(s: dict[str, Any], n: int) -> str:
    status = s["status"]
    meta = [f"<span>{esc(k)} <code>{esc(v)}</code></span>" for k, v in (
        ("source", s.get("source")), ("artifact", s.get("artifactId")), ("framework", s.get("framework")),
    ) if v]
    meta.append(f"<span>started {esc(s['startedAt'])}</span>")
    meta.append(f"<span>took {esc(format_ms(s['durationMs']))}</span>")
    tl = s["timeline"]
    events = counted(tl["events"], "event", "events")
    caption = (f"{events} and {counted(s['toolCalls']['total'], 'tool call', 'tool calls')} on a time axis"
               if tl["axis"] == "time" else f"{events} in stream order (the run has no usable time span)")
    if tl["omittedMarks"]:
        caption += f"; {tl['omittedMarks']} event ticks left out"
    if s["toolCalls"]["total"] > MAX_BARS:
        caption += f"; {MAX_BARS} of {s['toolCalls']['total']} tool calls drawn, failed ones first"
    parts = [
        f'<article class="run status-{esc(status)}" id="run-{n}" data-status="{esc(status)}">',
        f'<h2><span class="badge {esc(status)}">{esc(status)}</span> <code>{esc(run_label(s, n))}</code></h2>',
        f'<p class="meta">{"".join(meta)}</p>',
        _prompt(s.get("prompt")),
        f'<figure>{timeline_svg(s, n)}<figcaption>{esc(caption)}</figcaption></figure>',
    ]
    if s["errors"]:
        parts.append(_errors_section(s["errors"]))
    cols = []
    cols.append("<section><h3>Events by type</h3>" + _table(
        [("Type", False), ("Count", True)],
        [[f"<code>{esc(k)}</code>", esc(format_count(v))] for k, v in s["events"]["byType"].items()]) + "</section>")
    by_tool = s["toolCalls"]["byTool"]
    if by_tool:
        cols.append("<section><h3>Tool calls by tool</h3>" + _table(
            [("Tool", False), ("Calls", True), ("Failed", True), ("Total", True), ("Longest", True)],
            [[f"<code>{esc(k)}</code>", esc(v["calls"]), esc(v["error"]), esc(format_ms(v["durationMs"])),
              esc(format_ms(v["maxMs"]))] for k, v in by_tool.items()]) + "</section>")
    u = s["usage"]
    usage_rows = [["Tokens in", esc(format_count(u["inputTokens"]))],
                  *([label, esc(format_count(u[key]))] for key, label in _CACHE_ROWS if u.get(key)),
                  ["Tokens out", esc(format_count(u["outputTokens"]))],
                  ["Cost", esc(format_cost(u["costUsd"]))]] if u else [["Usage", "not reported"]]
    cols.append("<section><h3>Usage</h3>" + _table([("", False), ("", True)], usage_rows) + "</section>")
    rep = s["repairs"]
    cols.append("<section><h3>Repairs</h3>" + (_table(
        [("Rule", False), ("Count", True)], [[f"<code>{esc(k)}</code>", esc(v)] for k, v in rep["byRule"].items()])
        if rep["total"] else "<p>none</p>") + "</section>")
    parts.append('<div class="cols">' + "".join(cols) + "</div>")
    calls = s["toolCalls"]["calls"]
    if calls:
        rows = [[esc(k), f"<code>{esc(c['toolName'])}</code>",
                 esc(c["status"] + (" (never finished)" if c.get("unfinished") else "")),
                 esc(format_ms(c["durationMs"])), esc("-" if c["startMs"] is None else "+" + format_ms(c["startMs"])),
                 esc(c["seq"])] for k, c in enumerate(calls[:CALL_ROWS], 1)]
        more = f" — first {CALL_ROWS} shown" if len(calls) > CALL_ROWS else ""
        parts.append(f"<details><summary>All {len(calls)} tool calls{esc(more)}</summary>" + _table(
            [("#", True), ("Tool", False), ("Status", False), ("Duration", True), ("Start", True), ("Seq", True)], rows)
            + "</details>")
    parts.append("</article>")
    return "".join(parts)


def _totals(agg: dict[str, Any]) -> str:
    cols = ["<section><h3>Events by type</h3>" + _table(
        [("Type", False), ("Count", True)],
        [[f"<code>{esc(k)}</code>", esc(format_count(v))] for k, v in agg["events"]["byType"].items()]) + "</section>"]
    if agg["toolCalls"]["byTool"]:
        cols.append("<section><h3>Tool calls by tool</h3>" + _table(
            [("Tool", False), ("Calls", True), ("Failed", True), ("Total", True), ("Longest", True)],
            [[f"<code>{esc(k)}</code>", esc(v["calls"]), esc(v["error"]), esc(format_ms(v["durationMs"])),
              esc(format_ms(v["maxMs"]))] for k, v in agg["toolCalls"]["byTool"].items()]) + "</section>")
    if agg["repairs"]["byRule"]:
        cols.append("<section><h3>Repairs by rule</h3>" + _table(
            [("Rule", False), ("Count", True)],
            [[f"<code>{esc(k)}</code>", esc(v)] for k, v in agg["repairs"]["byRule"].items()]) + "</section>")
    if agg["errors"]["byCode"]:
        cols.append("<section><h3>Errors by code</h3>" + _table(
            [("Code", False), ("Count", True)],
            [[f"<code>{esc(k)}</code>", esc(v)] for k, v in agg["errors"]["byCode"].items()]) + "</section>")
    if agg["diagnostics"]["byCode"]:
        cols.append("<section><h3>Input problems</h3>" + _table(
            [("Code", False), ("Count", True)],
            [[f"<code>{esc(k)}</code>", esc(v)] for k, v in agg["diagnostics"]["byCode"].items()]) + "</section>")
    unattributed = agg["unattributedRepairs"]["runs"]
    if unattributed:
        left = len(unattributed) - ERROR_ROWS
        cols.append('<section id="unattributed-repairs"><h3>Repairs in no run of this report</h3>'
                    "<p>Heal dropped every event of these runs; their repairs count in the totals.</p>" + _table(
            [("Run", False), ("Source", False), ("Repairs", True), ("By rule", False)],
            [[f"<code>{esc(u['runId'])}</code>", f"<code>{esc(u['source'])}</code>", esc(format_count(u["total"])),
              esc(format_counts(u["byRule"]))] for u in unattributed[:ERROR_ROWS]])
            + (f"<p>… {left} more (the json format lists them all)</p>" if left > 0 else "") + "</section>")
    return f'<section class="panel" id="totals"><h2>All runs</h2><div class="cols">{"".join(cols)}</div></section>'


def render_chunks(summaries: Sequence[dict[str, Any]], agg: dict[str, Any], title: str) -> Iterator[bytes]:
    """The page a piece at a time (its head, the runs table's rows, a run's article each, the totals), so that its
    memory stays flat however many runs it shows: ``summaries`` (spooled ones) are read twice, a run at a time."""
    span = (f"{agg['startedAt']} to {agg['endedAt']}" if agg["startedAt"] else "no timestamps")
    yield (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<meta name=\"referrer\" content=\"no-referrer\">"
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body><main>"
        f"<header><h1>{esc(title)}</h1><p class=\"sub\">{counted(agg['runs']['total'], 'run', 'runs')} · {esc(span)}</p></header>"
        + _cards(agg) + f'<section class="panel"><h2>Legend</h2>{_legend()}</section>'
    ).encode("utf-8")
    if len(summaries):
        yield from pieces(_overview(summaries))
    yield from pieces(_run_article(s, n) for n, s in enumerate(summaries, 1))
    yield (_totals(agg) + "</main></body></html>\n").encode("utf-8")
