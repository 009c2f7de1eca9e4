"""The renderers called directly: escaping helpers, alignment, timeline geometry, every format over one model."""

from __future__ import annotations

import itertools
import json
import re
import xml.etree.ElementTree as ET

import pytest
from conftest import FIXTURES as FIXTURES_DIR
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine.batch import Batch
from replay.pipeline.report import render_html, render_markdown, render_text
from replay.pipeline.report.render_junit import text as xml_text
from replay.stages.report import FORMATS, render, render_chunks
from replay.stages.summarize import SummarizeRuns

FIXTURES = FIXTURES_DIR / "report"


def summaries_of(*names: str) -> list[dict]:
    stage = SummarizeRuns()
    out: list[dict] = []
    for name in names:
        recs = [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line.strip()]
        out += list(stage(Batch.of(recs, name)) or [])
    return out + list(stage.flush() or [])


def test_text_clean_and_display_width():
    assert render_text.clean("a\x1b[1mb\nc\u202ed") == "a\\u001b[1mb c\\u202ed"
    assert render_text.clean("x" * 10, 5) == "xxxx…"
    assert render_text.width("日本") == 4 and render_text.width("e\u0301") == 1


def test_text_table_aligns_wide_characters():
    lines = render_text.table(["NAME", "N"], [["日本語", "1"], ["ab", "22"]], right={1})
    assert [render_text.width(line) for line in lines] == [10, 10, 10]


def test_markdown_escape():
    assert render_markdown.esc("a|b\nc <x> *y* $1") == "a\\|b c \\<x\\> \\*y\\* \\$1"
    assert render_markdown.esc(None) == "-"
    # an entity is shown as written, not as the character it stands for (a bidi override shown is no override)
    assert render_markdown.esc("&lt;b&gt; &#x202e;") == "\\&lt;b\\&gt; \\&\\#x202e;"
    # control characters str.split() takes for blanks are shown, as the other formats show them, not dropped
    assert render_markdown.esc("E\x0b|\x1fx\x85y") == render_markdown.esc("E\\u000b|\\u001fx\\u0085y") == "E\\\\u000b\\|\\\\u001fx\\\\u0085y"


# every character Python takes for whitespace, and letters: what a text and a Markdown table show of them is the same
_BLANKS = "".join(chr(c) for c in range(0x3001) if chr(c).isspace()) + "ab"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_BLANKS, max_size=12))
def test_text_and_markdown_turn_the_same_characters_into_spaces(value: str) -> None:
    """Tabs and line breaks (U+2028 and U+2029 too) a space each in both (``markup.breaks_as_spaces``); the control characters
    among the blanks (VT, FF, NEL, ...) shown as \\uXXXX in both, Markdown escaping its backslash; the rest as written."""
    assert render_markdown.esc(value) == render_text.clean(value).replace("\\", "\\\\")


def test_junit_text_replaces_characters_xml_forbids():
    assert xml_text("a\x00b\x1fc\td") == "a\\u0000b\\u001fc\td"
    assert xml_text("a\u202eb\x85c\x9b[1m\x0cd") == "a\\u202eb\\u0085c\\u009b[1m\\u000cd"


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_renders_an_empty_report(fmt):
    data = render(fmt, [], None)
    assert data.endswith(b"\n") and len(data) > 10


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_names_every_run(fmt):
    data = render(fmt, summaries_of("healed_two_runs.jsonl", "no_run_records.jsonl"), None).decode()
    for run in ("run_a", "run_b", "r1", "r2"):
        assert run.replace("_", "\\_" if fmt == "markdown" else "_") in data


def test_html_escapes_every_value_from_the_data():
    page = render("html", summaries_of("escaping.jsonl"), None, title="<i>t</i>").decode()
    assert "<script" not in page and "<img" not in page and "<svg onload" not in page and "<b>x" not in page
    assert "<title>&lt;i&gt;t&lt;/i&gt;</title>" in page
    assert "&lt;/title&gt;&lt;script&gt;window.__pwned=4" in page
    assert 'data-tool="&lt;svg onload=window.__pwned=3&gt;"' in page


CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # (all but tab and line breaks)
XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_format_writes_a_control_character_from_the_data_raw(fmt):
    """A NUL or ESC in a run id, prompt, tool name or error (valid JSON, escaped) is shown as \\uXXXX in every
    format: raw, an HTML parser errs on it, a Markdown file is no text, a terminal acts on it. A form feed too: HTML
    wrote it raw, and its timeline SVG, which is XML, was no well-formed XML then."""
    odd = "r\x00\x01\x1b[31m\x7f\x85\u202e\x0cff"
    stage = SummarizeRuns()
    records = [{"$record": "run", "runId": odd, "prompt": f"p{odd}", "status": "error", "error": {"code": odd, "message": odd}},
               {"seq": 1, "timestamp": "2026-03-01T12:00:00Z", "type": "run_started", "runId": odd, "payload": {}},
               {"seq": 2, "timestamp": "2026-03-01T12:00:01Z", "type": "tool_called", "runId": odd,
                "payload": {"callId": "c1", "toolName": odd}},
               {"seq": 3, "timestamp": "2026-03-01T12:00:02Z", "type": "tool_failed", "runId": odd,
                "payload": {"callId": "c1", "toolName": odd, "error": odd}}]
    summaries = list(stage(Batch.of(records, "odd.jsonl")) or []) + list(stage.flush() or [])
    data = render(fmt, summaries, None).decode()
    if fmt == "json":
        return  # JSON escapes what it must itself
    # (XML allows C1 controls and bidi overrides, but the README shows them as \uXXXX in every format: JUnit wrote them raw)
    for forbidden in (CONTROLS, XML_FORBIDDEN) if fmt == "junit" else (CONTROLS,):
        assert not forbidden.search(data), forbidden.findall(data)
    assert "\\u001b" in data and "\\u000cff" in data
    if fmt == "html":
        svgs = re.findall(r"<svg class=\"timeline\".*?</svg>", data, re.S)
        assert len(svgs) == 1 and "\\u000cff" in svgs[0]
        ET.fromstring(svgs[0])  # the timeline, holding the data's text, is well-formed XML


def test_html_timeline_has_one_bar_per_call_and_failure_markers():
    svg = render_html.timeline_svg(summaries_of("healed_two_runs.jsonl")[1], 2)
    assert svg.count("<rect class=\"call-bar") == 1 and 'data-status="error"' in svg
    assert svg.count('class="failure run-failed"') == 1 and svg.count("tool-failed") == 1
    ET.fromstring(svg)  # the SVG is well-formed XML as well


def test_timeline_bars_sit_where_their_calls_start():
    s = summaries_of("healed_two_runs.jsonl")[0]  # 2100 ms; calls start at 100, 450, 1500 ms
    svg = render_html.timeline_svg(s, 1)
    xs = [float(x) for x in re.findall(r'<rect class="call-bar[^"]*" data-tool="[^"]*" data-status="[^"]*" x="([\d.]+)"', svg)]
    expected = [render_html.GUTTER + render_html.PLOT * ms / 2100 for ms in (100, 450, 1500)]
    assert xs == pytest.approx(expected, abs=0.01)


def test_overlapping_calls_get_their_own_lanes():
    assert render_html._lanes([(0, 10), (5, 15), (11, 20), (16, 30)]) == [0, 1, 0, 1]
    many = render_html._lanes([(0, 100)] * (render_html.MAX_LANES + 3))
    assert max(many) == render_html.MAX_LANES - 1


@settings(max_examples=300)
@given(st.lists(st.one_of(st.integers(-10**20, 10**20), st.text(max_size=60), st.none(), st.booleans(),
                          st.floats(allow_nan=False)), max_size=12), st.sampled_from([0, 5, 48]))
def test_a_column_is_cleaned_as_each_of_its_cells_is(values, limit):
    """The text report cleans a table column at once when it can (all ints; printable ASCII within the limit)."""
    assert render_text._cleaned(list(values), limit) == [render_text.clean(v, limit) for v in values]


@pytest.mark.parametrize("fmt", ["text", "html"])
def test_counts_and_their_words_agree(fmt):
    def used(run: str, usage: bool) -> dict:
        payload = {"usage": {"inputTokens": 3, "outputTokens": 1}} if usage else {}
        return {"seq": 1, "timestamp": "2026-03-01T12:00:00Z", "type": "run_started", "runId": run, "payload": payload}

    def report(*events: dict) -> str:
        stage = SummarizeRuns()
        summaries = list(stage(Batch.of(list(events), "j.jsonl")) or []) + list(stage.flush() or [])
        return render(fmt, [s for s in summaries if s.get("$record") == "summary"], None).decode()

    one, two = report(used("a", True), used("b", False)), report(used("a", True), used("b", True))
    assert "1 run reports usage" in one and "runs report usage" not in one
    assert "2 runs report usage" in two and "run reports usage" not in two
    if fmt == "text":
        assert report(used("a", False)).startswith("replay report: 1 run (")


_CELLS = st.text(alphabet=st.sampled_from("ab %-9日\u0301 \x1b"), max_size=6)


@settings(max_examples=300)
@given(st.integers(1, 4).flatmap(lambda k: st.tuples(st.lists(_CELLS, min_size=k, max_size=k),
                                                     st.lists(st.lists(_CELLS, min_size=k, max_size=k), max_size=5),
                                                     st.sets(st.integers(0, k - 1)))),
       st.sampled_from(["", "  ", "%s "]))
def test_a_table_laid_out_by_one_format_is_the_table_laid_out_cell_by_cell(table, indent):
    """``table`` (and ``aligned``, its cells a column at a time) pads an ASCII table by one format of fixed widths:
    the lines are those of padding each cell to its column's display width, as a table with wide characters is."""
    headers, rows, right = table
    widths = render_text._widths(headers, rows)
    expected = [render_text._row(row, widths, right, indent) for row in [headers, *rows]]
    assert render_text.table(headers, rows, right, indent) == expected
    columns = [[row[k] for row in rows] for k in range(len(headers))]
    assert render_text.aligned(headers, columns, right, indent) == expected


@settings(max_examples=200)
@given(st.lists(st.lists(_CELLS, min_size=len(render_text.HEADERS), max_size=len(render_text.HEADERS)), min_size=1,
                max_size=12), st.lists(st.integers(1, 12), max_size=3))
def test_the_runs_table_laid_out_a_piece_at_a_time_is_the_table_laid_out_cell_by_cell(rows, cuts):
    """The runs table is measured and laid out a piece of rows at a time (each row its cells packed in one string),
    by one format for a piece in ASCII: its lines are those of padding each cell to its column's display width over
    the whole table, however the rows are cut into pieces and whichever pieces hold a wide character."""
    packed = [render_text._CELL.join(row) for row in rows]
    bounds = sorted({0, len(rows), *(c % len(rows) for c in cuts)})
    pieces = [packed[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    widths = [render_text.width(h) for h in render_text.HEADERS]
    for piece in pieces:
        widths = render_text._packed_widths(widths, piece)
    assert widths == render_text._widths(render_text.HEADERS, rows)
    spec = render_text._spec(widths, render_text.RIGHT, "")
    lines = [line for piece in pieces for line in render_text._packed_rows(piece, widths, spec)]
    assert lines == [render_text._row(row, widths, render_text.RIGHT) for row in rows]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_is_written_in_pieces_of_a_bounded_size(fmt):
    """Each format comes out a run (or up to 1 MiB) at a time, however many runs there are: html, markdown and
    junit were one piece, the whole page built in memory (420 MiB for the html report of a 100 MB journal). The pieces
    join to what ``render`` gives."""
    runs = summaries_of("healed_two_runs.jsonl", "no_run_records.jsonl") * 1500
    pieces = list(render_chunks(fmt, runs, None))
    total = sum(map(len, pieces))
    assert total > 2 << 20 and max(map(len, pieces)) <= 1 << 20, (total, max(map(len, pieces)))
    assert b"".join(pieces) == render(fmt, runs, None)


def _summaries_of(runs: int, usage: bool = False) -> list[dict]:
    payload = {"usage": {"inputTokens": 3, "outputTokens": 1}} if usage else {}
    stage = SummarizeRuns()
    events = [{"seq": 1, "timestamp": "2026-03-01T12:00:00Z", "type": kind, "runId": f"r{n}", "payload": payload}
              for n in range(runs) for kind in ("run_started", "run_completed")]
    summaries = list(stage(Batch.of(events, "j.jsonl")) or []) + list(stage.flush() or [])
    return [s for s in summaries if s.get("$record") == "summary"]


def test_thousands_are_written_alike_in_the_totals_and_the_statuses():
    """`3,000 runs (3000 ok, 0 error)`: the total had a thousands separator, the statuses none."""
    summaries = _summaries_of(1000)
    text = render("text", summaries, None).decode()
    assert text.startswith("replay report: 1,000 runs (1,000 ok, 0 error)\n")
    assert re.search(r"^  runs +1,000 \(1,000 ok, 0 error\)$", text, re.M)
    markdown = render("markdown", summaries, None).decode()
    assert "**1,000 runs**: 1,000 ok, 0 error" in markdown and "- **Runs**: 1,000 (1,000 ok, 0 error)" in markdown


def test_all_runs_shows_no_usage_as_a_dash_when_no_run_reports_any():
    """With no usage anywhere the rows and TOTAL said `-`, but All runs `0 tokens in, 0 tokens out, -`."""
    text = render("text", _summaries_of(2), None).decode()
    assert re.search(r"^  usage +- \(0 runs report usage\)$", text, re.M) and "0 tokens in" not in text
    used = render("text", _summaries_of(2, usage=True), None).decode()
    assert re.search(r"^  usage +12 tokens in, 4 tokens out, - \(2 runs report usage\)$", used, re.M)


def test_markdown_and_html_counts_agree_with_one():
    """``1 event``, ``1 tool call``, ``1 repair``: not ``1 tool calls`` (markdown's head line, HTML's timeline)."""
    from replay.pipeline.report.model import summarize_run

    one = summarize_run(None, [{"seq": 1, "type": "tool_called", "runId": "r", "payload": {"callId": "c", "toolName": "t"}}],
                        repairs=[{"$record": "heal", "runId": "r", "repairs": 1, "byRule": {"alias": 1}}])
    head = render("markdown", [one]).decode().splitlines()[2]
    assert "· 1 event ·" in head and "· 1 tool call (1 failed) ·" in head and "· 1 repair ·" in head, head
    page = render("html", [one]).decode()
    assert "Timeline of run r: 1 event, 1 tool call</title>" in page and "1 event in stream order" in page


def test_junit_says_no_usage_as_the_other_formats_do():
    """No run reports usage: the suite's token properties say ``-`` (as its cost does, and text's ``usage -``), not 0
    tokens counted; a run that reports some gives the counts."""
    from replay.pipeline.report.model import summarize_run

    def props(*summaries: dict) -> dict[str, str]:
        suite = ET.fromstring(render("junit", list(summaries))).find("testsuite")
        return {p.get("name"): p.get("value") for p in suite.iter("property")}

    bare = summarize_run(None, [{"seq": 1, "type": "run_started", "runId": "a", "payload": {}}])
    counted = summarize_run(None, [{"seq": 1, "type": "assistant_message", "runId": "b",
                                    "payload": {"usage": {"inputTokens": 0, "outputTokens": 7}}}])
    assert (props(bare)["inputTokens"], props(bare)["outputTokens"], props(bare)["costUsd"]) == ("-", "-", "-")
    assert (props(bare, counted)["inputTokens"], props(bare, counted)["outputTokens"]) == ("0", "7")
