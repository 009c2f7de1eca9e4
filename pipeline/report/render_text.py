"""Plain-text report: column-aligned tables for a terminal, with control characters from the data made harmless."""

from __future__ import annotations

import itertools
import operator
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from replay.pipeline.model.markup import BIDI_CONTROLS, breaks_as_spaces
from replay.pipeline.report.model import (
    MS_TEXTS,
    Texts,
    counted,
    format_cost,
    format_count,
    format_counts,
    format_ms,
    format_tokens_in,
    run_label,
    run_statuses,
)
from replay.pipeline.report.spool import ByteSpool
from replay.pipeline.report.streaming import render_through

CALL_ROWS = 200  # tool calls listed per run (the json format lists them all)
ERROR_ROWS = 100  # errors listed per run, and repairs of no run in the report
CELL_LIMIT = 48  # characters of a name or id shown in a table cell
MESSAGE_LIMIT = 120
PROMPT_LIMIT = 200
_INT, _STR = {int}, {str}
_BIDI = set(BIDI_CONTROLS)
_NOT_SHOWN = ("Cc", "Cs")  # control characters, and halves of a surrogate pair (no character: not UTF-8)
_DURATION = operator.itemgetter("durationMs")
_START_MS = operator.itemgetter("startMs")


def clean(value: Any, limit: int = 0) -> str:
    """One printable line: tabs and line breaks a space each (``markup.breaks_as_spaces``); control and bidi-override
    characters, and halves of a surrogate pair (a JSON ``\\ud83d`` alone), shown as \\uXXXX; cut at ``limit``."""
    text = "-" if value is None else str(value)
    if text.isascii() and text.isprintable():
        return text if not limit or len(text) <= limit else text[: limit - 1] + "…"
    out = []
    for ch in breaks_as_spaces(text):  # (tabs and line breaks: spaces, as Markdown shows them)
        if ch in _BIDI or unicodedata.category(ch) in _NOT_SHOWN:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    text = "".join(out)
    if limit and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def _cleaned(values: list[Any], limit: int = 0) -> list[str]:
    """``clean`` of each value; at once for the usual column (all ints, or printable ASCII strings within the limit)."""
    classes = set(map(type, values))
    texts = list(map(str, values)) if classes == _INT else values if classes == _STR else None
    if texts:
        text = "".join(texts)
        if text.isascii() and text.isprintable() and (not limit or max(map(len, texts)) <= limit):
            return texts
    return [clean(v, limit) for v in values]


def width(text: str) -> int:
    """Terminal columns ``text`` takes (wide East Asian characters count twice, combining marks not at all)."""
    if text.isascii():
        return len(text)
    total = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        total += 2 if unicodedata.east_asian_width(ch) in "WF" else 1
    return total


def table(headers: list[str], rows: list[list[str]], right: frozenset[int] | set[int] = frozenset(), indent: str = "") -> list[str]:
    """Rows aligned under their headers; columns in ``right`` (numbers) are right-aligned."""
    return aligned(headers, [list(column) for column in zip(*rows, strict=True)] if rows else [[] for _ in headers],
                   right, indent)


def aligned(headers: list[str], columns: list[list[str]], right: frozenset[int] | set[int] = frozenset(),
            indent: str = "") -> list[str]:
    """``table`` of the same cells given a column at a time (each column as long as the others)."""
    if "".join(headers).isascii() and "".join(map("".join, columns)).isascii():
        spec = _spec([max(len(headers[k]), max(map(len, column)) if column else 0) for k, column in enumerate(columns)],
                     right, indent)
        return [(spec % tuple(headers)).rstrip(), *map(str.rstrip, map(spec.__mod__, zip(*columns, strict=True)))]
    rows = [headers, *map(list, zip(*columns, strict=True))]
    widths = _widths(headers, rows[1:])
    return [_row(row, widths, right, indent) for row in rows]


def _spec(widths: list[int], right: frozenset[int] | set[int], indent: str) -> str:
    """The format that lays out a row of ASCII cells (a character is a column) in columns of ``widths``."""
    return indent.replace("%", "%%") + "  ".join([f"%{'' if k in right else '-'}{w}s" for k, w in enumerate(widths)])


def _facts(facts: list[list[str]]) -> list[str]:
    """A run's or the report's facts, a line each: ``table`` of no headers for labels in ASCII (as they are)."""
    size = max([len(label) for label, _ in facts])
    return [f"  {label.ljust(size)}  {value}".rstrip() for label, value in facts]


def _tokens(usage: dict[str, Any] | None, key: str) -> str:
    return format_count(usage[key]) if usage else "-"


HEADERS = ["RUN", "STATUS", "DURATION", "EVENTS", "TOOL CALLS", "FAILED", "TOKENS IN", "TOKENS OUT", "COST", "REPAIRS"]
RIGHT = frozenset({2, 3, 4, 5, 6, 7, 8, 9})
CHUNK_LINES = 2000
BATCH_RUNS = 64  # runs whose sections are written together (their tables laid out at once)
BATCH_ROWS = 8192  # or fewer, when their calls and errors come to this many (memory stays flat)
_CELL = "\x1f"  # between a row's cells while the table is measured (clean() writes control characters as \\uXXXX)


def render_chunks(summaries: Iterable[dict[str, Any]], agg: dict[str, Any], title: str) -> Iterator[bytes]:
    return render_through(Streamed(), summaries, agg, title)


class Streamed:
    """The text report built as the runs come: a run's section is written at once (into a ``ByteSpool``: memory
    stays flat) and its row of the runs table kept as one short string; ``chunks`` then writes the head, the
    table (its columns measured over every row), the sections and the totals."""

    def __init__(self) -> None:
        self.cells: list[str] = []  # a run's row of the table, its cells joined by _CELL
        self.sections = ByteSpool()
        self.pending: list[dict[str, Any]] = []  # runs not written yet: a batch at a time, their tables at once
        self.pending_rows = 0  # their calls and errors

    def add(self, summary: dict[str, Any]) -> None:
        self.pending.append(summary)
        self.pending_rows += _rows(summary)
        if len(self.pending) >= BATCH_RUNS or self.pending_rows >= BATCH_ROWS:
            self._write_pending()

    def _write_pending(self) -> None:
        """The pending runs' rows of the runs table, and their sections (their tables laid out at once)."""
        runs, first = self.pending, len(self.cells) + 1
        self.pending, self.pending_rows = [], 0
        for n, s, calls, errors in zip(itertools.count(first), runs, _tables_at_once(runs, _calls_shown, _fast_call_tables),
                                       _tables_at_once(runs, _errors_shown, _fast_error_tables), strict=False):
            # a run's row, then its section, in UTF-8: a run that cannot be written fails as it did alone
            self.cells.append(_CELL.join(_row_cells(s, n)))
            self.sections.append(_lines([*_run_block(s, n, calls, errors), ""]))

    def chunks(self, agg: dict[str, Any], title: str) -> Iterator[bytes]:
        self._write_pending()
        runs = agg["runs"]
        head = [f"{clean(title)}: {counted(runs['total'], 'run', 'runs')} "
                f"({run_statuses(runs)})", ""]
        yield _lines(head)
        if self.cells:
            cells = [*self.cells, _CELL.join(_total_row(agg))]
            pieces = [cells[at:at + CHUNK_LINES] for at in range(0, len(cells), CHUNK_LINES)]
            widths = [width(h) for h in HEADERS]
            for piece in pieces:
                widths = _packed_widths(widths, piece)
            yield _lines([_row(HEADERS, widths, RIGHT)])
            spec = _spec(widths, RIGHT, "")
            for piece in pieces:
                yield _lines(_packed_rows(piece, widths, spec))
            yield _lines([""])
            yield from self.sections.chunks()
        pending = _aggregate_block(agg)
        while pending and not pending[-1]:  # the report ends with one newline
            pending.pop()
        yield _lines(pending)

    def close(self) -> None:
        self.sections.close()


def _lines(lines: list[str]) -> bytes:
    """Each of ``lines`` ended by a newline, in UTF-8."""
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def _row_cells(s: dict[str, Any], n: int) -> list[str]:
    tc = s["toolCalls"]
    return [
        clean(run_label(s, n), CELL_LIMIT), s["status"], format_ms(s["durationMs"]),
        format_count(s["events"]["total"]), format_count(tc["total"]), format_count(tc["error"]),
        format_count(s["usage"]["inputTokens"]) if s["usage"] else "-", _tokens(s["usage"], "outputTokens"),
        format_cost(s["usage"]["costUsd"]) if s["usage"] else "-", format_count(s["repairs"]["total"]),
    ]


def _total_row(agg: dict[str, Any]) -> list[str]:
    runs, usage, tc = agg["runs"], agg["usage"], agg["toolCalls"]
    has_usage = usage["runsWithUsage"] > 0
    return [
        "TOTAL", f"{runs['error']} error" if runs["error"] else f"{runs['unknown']} unknown" if runs["unknown"] else "all ok",
        format_ms(agg["durationMs"]),
        format_count(agg["events"]["total"]), format_count(tc["total"]), format_count(tc["error"]),
        format_count(usage["inputTokens"]) if has_usage else "-",
        format_count(usage["outputTokens"]) if has_usage else "-",
        format_cost(usage["costUsd"]) if has_usage else "-", format_count(agg["repairs"]["total"]),
    ]


def _widths(headers: list[str], rows: Iterable[list[str]]) -> list[int]:
    widths = [width(h) for h in headers]
    for row in rows:
        for k, cell in enumerate(row):
            widths[k] = max(widths[k], width(cell))
    return widths


def _packed_widths(widths: list[int], piece: list[str]) -> list[int]:
    """``widths`` widened to fit the runs table's rows ``piece`` (each its cells joined by _CELL): a column at a time
    when all are ASCII."""
    rows = [packed.split(_CELL) for packed in piece]
    if "".join(piece).isascii():
        return list(map(max, widths, [max(map(len, column)) for column in zip(*rows, strict=True)]))
    return list(map(max, widths, _widths(HEADERS, rows)))


def _packed_rows(piece: list[str], widths: list[int], spec: str) -> list[str]:
    """The runs table's rows ``piece`` (each its cells joined by _CELL) laid out in columns of ``widths``: by one
    format of them (``spec``) when all are ASCII."""
    if "".join(piece).isascii():
        return list(map(str.rstrip, map(spec.__mod__, map(tuple, map(str.split, piece, itertools.repeat(_CELL))))))
    return [_row(packed.split(_CELL), widths, RIGHT) for packed in piece]


def _row(row: list[str], widths: list[int], right: frozenset[int] | set[int], indent: str = "") -> str:
    cells = []
    for k, cell in enumerate(row):
        pad = " " * (widths[k] - width(cell))
        cells.append(pad + cell if k in right else cell + pad)
    return (indent + "  ".join(cells)).rstrip()


def _rows(s: dict[str, Any]) -> int:
    """A run's calls and errors (BATCH_ROWS for no summary: its section is then written at once, failing as it does)."""
    try:
        return len(s["toolCalls"]["calls"]) + len(s["errors"])
    except Exception:  # (its row and section say what is wrong with it)
        return BATCH_ROWS


def _calls_shown(s: dict[str, Any]) -> list[dict[str, Any]]:
    return s["toolCalls"]["calls"][:CALL_ROWS]  # type: ignore[no-any-return]


def _errors_shown(s: dict[str, Any]) -> list[dict[str, Any]]:
    return s["errors"][:ERROR_ROWS]  # type: ignore[no-any-return]


def _run_block(s: dict[str, Any], n: int, call_table: str | None = None, error_table: str | None = None) -> list[str]:
    """A run's section; ``call_table``, ``error_table``: its tables laid out already (None: laid out here)."""
    where = [f"source {clean(s['source'])}"] if s.get("source") else []
    if s.get("framework"):
        where.append(f"framework {clean(s['framework'])}")
    if s.get("artifactId") and s["artifactId"] != s.get("runId"):
        where.append(f"artifact {clean(s['artifactId'])}")
    lines = [f"Run {clean(run_label(s, n))}  [{s['status']}]" + (f"  ({', '.join(where)})" if where else "")]
    facts: list[list[str]] = []
    if s.get("prompt") is not None:
        facts.append(["prompt", clean(s["prompt"], PROMPT_LIMIT)])
    facts.append(["time", f"{clean(s['startedAt'])} .. {clean(s['endedAt'])}  ({format_ms(s['durationMs'])})"])
    facts.append(["events", f"{format_count(s['events']['total'])}: {clean(format_counts(s['events']['byType']))}"])
    usage = s["usage"]
    facts.append(["usage", f"{format_tokens_in(usage)}, {format_count(usage['outputTokens'])} "
                           f"tokens out, {format_cost(usage['costUsd'])}" if usage else "-"])
    rep = s["repairs"]
    facts.append(["repairs", f"{rep['total']}: {clean(format_counts(rep['byRule']))}" if rep["total"] else "none"])
    lines += _facts(facts)
    calls = s["toolCalls"]["calls"]
    if calls:
        lines.append(f"  tool calls ({s['toolCalls']['total']}, {s['toolCalls']['error']} failed)")
        lines.append(call_table if call_table is not None else _one_table(_calls_shown(s), _fast_call_tables, _call_table))
        if len(calls) > CALL_ROWS:
            lines.append(f"    … {len(calls) - CALL_ROWS} more (--format json lists every call)")
    errors = s["errors"]
    if errors:
        lines.append(f"  errors ({len(errors)})")
        lines.append(error_table if error_table is not None else _one_table(_errors_shown(s), _fast_error_tables,
                                                                             _error_table))
        if len(errors) > ERROR_ROWS:
            lines.append(f"    … {len(errors) - ERROR_ROWS} more (--format json lists them all)")
    return lines


CALL_HEADERS = ("#", "TOOL", "STATUS", "DURATION", "START", "SEQ")
CALL_RIGHT = frozenset({0, 3, 4, 5})
ERROR_HEADERS = ("KIND", "CODE", "TOOL", "SEQ", "MESSAGE")
ERROR_RIGHT = frozenset({3})
TABLE_INDENT = "    "
Rows = list[dict[str, Any]]  # the rows a run's table shows (its calls, or its errors)
FastTables = Callable[[list[Rows]], "list[str] | None"]


def _start(value: Any) -> str:
    """A call's START cell: when it began in the run."""
    return "-" if value is None else "+" + format_ms(value)


def _call_table(shown: Rows) -> list[str]:
    """The lines of a run's tool-call table, cell by cell: the layout ``_fast_call_tables`` agrees with."""
    columns = [  # a column at a time: most cells come of C-level maps
        list(map(str, range(1, len(shown) + 1))),
        _cleaned([c["toolName"] for c in shown], CELL_LIMIT),
        [c["status"] + " (unfinished)" if c.get("unfinished") else c["status"] for c in shown],
        list(map(format_ms, map(_DURATION, shown))),
        list(map(_start, map(_START_MS, shown))),
        _cleaned([c["seq"] for c in shown]),
    ]
    return aligned(list(CALL_HEADERS), columns, CALL_RIGHT, TABLE_INDENT)


def _error_table(shown: Rows) -> list[str]:
    """The lines of a run's error table, cell by cell: the layout ``_fast_error_tables`` agrees with."""
    columns = [[e["kind"] for e in shown], _cleaned([e.get("code") for e in shown]),
               _cleaned([e.get("toolName") or "-" for e in shown]), _cleaned([e.get("seq") for e in shown]),
               _cleaned([e["message"] for e in shown], MESSAGE_LIMIT)]
    return aligned(list(ERROR_HEADERS), columns, ERROR_RIGHT, TABLE_INDENT)


def _tables_at_once(runs: list[dict[str, Any]], rows_of: Callable[[dict[str, Any]], Rows],
                    fast: FastTables) -> list[str | None]:
    """Each run's table (of the rows ``rows_of`` gives), its lines joined, by ``fast`` laying out all the runs' rows
    at once (None for a run without rows); all None when ``fast`` cannot take them all: each run's table is then laid
    out on its own, as the run's section is written."""
    try:
        shown = list(map(rows_of, runs))
    except Exception:  # a run no summary: its section raises what it raises, in its turn
        return [None] * len(runs)
    with_rows = [rows for rows in shown if rows]
    tables = _fast_or_none(fast, with_rows) if with_rows else None
    if tables is None:
        return [None] * len(runs)
    laid_out = iter(tables)
    return [next(laid_out) if rows else None for rows in shown]


def _one_table(shown: Rows, fast: FastTables, general: Callable[[Rows], list[str]]) -> str:
    """A run's table, its lines joined: by ``fast`` when it takes the rows, else cell by cell by ``general``."""
    tables = _fast_or_none(fast, [shown])
    return tables[0] if tables else "\n".join(general(shown))


def _fast_or_none(fast: FastTables, runs: list[Rows]) -> list[str] | None:
    """``fast(runs)``, or None when it fails: the cell-by-cell layout then decides (and raises what it raises)."""
    try:
        return fast(runs)
    except Exception:  # a value no table cell (a huge int, an object): see the general layout
        return None


_START_TEXTS, _SEQ_TEXTS = Texts(_start), Texts(clean)
_INT_NONE = {int, type(None)}
_NONE_TEXT = {None: "-"}  # .get(v, v): clean's text of None, v itself for any other value
_NO_TOOL_TEXT = {None: "-", "": "-"}  # .get(v, v): ``v or "-"`` of a string or None (another value is no string)
_CALL_FIELDS = tuple(map(operator.itemgetter, ("toolName", "status", "durationMs", "startMs", "seq")))
_ERROR_FIELDS: tuple[Callable[[dict[str, Any]], Any], ...] = (  # (each read as _error_table reads it)
    operator.itemgetter("kind"), *map(operator.methodcaller, itertools.repeat("get"), ("code", "toolName", "seq")),
    operator.itemgetter("message"))
_INDEXES = tuple(map(str, range(1, CALL_ROWS + 1)))


def _dashed(values: Sequence[Any], none: dict[Any, str] = _NONE_TEXT) -> list[Any]:
    """The values, None (or another value ``none`` names) as ``none`` writes it: for a column of strings, what
    ``clean`` writes of those of printable ASCII within its limit."""
    return list(map(none.get, values, values))


def _texts(values: Sequence[Any]) -> list[str]:
    """What ``clean`` writes of values whose text is printable ASCII (within its limit): str(value), "-" for None."""
    return list(map(str, values if None not in values else map(_NONE_TEXT.get, values, values)))


def _fast_call_tables(runs: list[Rows]) -> list[str] | None:
    """``_call_table`` of each of ``runs`` (its calls shown), by C-level maps over all their calls and one format a
    table (``_laid_out``): for the usual calls (none unfinished; ints or None for duration and start; names, statuses and seqs of
    printable ASCII, names within CELL_LIMIT; no seq blank at its end); None for any other."""
    calls = list(itertools.chain.from_iterable(runs))
    if any(map(dict.get, calls, itertools.repeat("unfinished"))):
        return None
    names, statuses, durations, starts, seqs = (list(map(field, calls)) for field in _CALL_FIELDS)
    if not set(map(type, durations + starts)) <= _INT_NONE:
        return None
    # (seqs are ints, or None, as a rule: their texts then kept by value, as the durations' are)
    seq_texts = list(map(_SEQ_TEXTS.__getitem__, seqs)) if set(map(type, seqs)) <= _INT_NONE else _texts(seqs)
    name_texts = _dashed(names)
    if not _plain_ascii(name_texts, statuses, seq_texts):  # (format_ms writes printable ASCII)
        return None
    indexes = list(itertools.chain.from_iterable(_INDEXES[:len(shown)] for shown in runs))
    columns = (indexes, name_texts, statuses, list(map(MS_TEXTS.__getitem__, durations)),
               list(map(_START_TEXTS.__getitem__, starts)), seq_texts)
    return _laid_out(list(map(len, runs)), columns, CALL_HEADERS, CALL_RIGHT, (0, CELL_LIMIT, 0, 0, 0, 0))


def _fast_error_tables(runs: list[Rows]) -> list[str] | None:
    """``_error_table`` of each of ``runs`` (its errors shown), by C-level maps over all their errors and one format
    a table (``_laid_out``): for the usual errors (cells of printable ASCII, messages within MESSAGE_LIMIT, none empty or blank at its
    end); None for any other."""
    errors = list(itertools.chain.from_iterable(runs))
    kinds, codes, tools, seqs, messages = (list(map(field, errors)) for field in _ERROR_FIELDS)
    columns = (kinds, _dashed(codes), _dashed(tools, _NO_TOOL_TEXT), _texts(seqs), messages)
    if not _plain_ascii(*columns):
        return None
    return _laid_out(list(map(len, runs)), columns, ERROR_HEADERS, ERROR_RIGHT, (0, 0, 0, 0, MESSAGE_LIMIT),
                     last_padded=False)


def _plain_ascii(*columns: Sequence[str]) -> bool:
    """Whether the cells are all strings of printable ASCII (a character a column, none ``clean`` would change)."""
    cells = "".join(map("".join, columns))  # (TypeError for a cell no string)
    return cells.isascii() and cells.isprintable()


def _laid_out(counts: list[int], columns: tuple[Sequence[str], ...], headers: tuple[str, ...], right: frozenset[int],
              limits: tuple[int, ...], last_padded: bool = True) -> list[str] | None:
    """Tables of printable ASCII cells (``columns``: the rows of each, ``counts`` of them a table, one after another)
    laid out by one format a table (its headers' line and its rows: ``_table_format``, kept by widths and rows for tables
    of up to FORMAT_ROWS_KEPT rows) over a slice of all the cells; None when a cell is longer than its column's limit (0: none),
    or a row would end in a blank (``str.rstrip`` would cut it: a last cell empty or ending in one)."""
    lengths = [list(map(len, column)) for column in columns]
    longest = list(map(max, lengths))
    if any(limit and most > limit for limit, most in zip(limits, longest, strict=True)) or _blank_ended(columns[-1]):
        return None
    header_widths = list(map(len, headers))
    if not last_padded:
        header_widths[-1] = longest[-1] = 0
    # a column no cell of which is wider than its header is as wide as it in every table; the others are measured
    # table by table (the widest of their cells in the tables' rows start:end), by C-level maps over the tables
    ends = list(itertools.accumulate(counts))
    spans = list(map(slice, [0, *ends[:-1]], ends))
    widths_each = zip(*[map(max, itertools.repeat(header), map(max, map(lengths[k].__getitem__, spans)))
                        if longest[k] > header else itertools.repeat(header) for k, header in enumerate(header_widths)],
                      strict=False)
    # every cell in one list, a row after another: a table's rows are then one slice of it, laid out by one format
    size = len(columns)
    cells: list[str] = [""] * (ends[-1] * size)
    for k, column in enumerate(columns):
        cells[k::size] = column
    formats = _TABLE_FORMATS.setdefault((headers, right), {})
    tables = []
    for widths, span in zip(widths_each, spans, strict=False):  # (a column not measured repeats: the spans end it)
        start, stop = span.start, span.stop
        whole = formats.get((widths, stop - start))
        if whole is None:
            whole = _table_format(widths, right, headers, stop - start)
            if stop - start <= FORMAT_ROWS_KEPT:  # (a longer table's format, as long as its rows, is not held)
                if len(formats) >= FORMATS_KEPT:
                    formats.clear()
                formats[widths, stop - start] = whole
        tables.append(whole % tuple(cells[start * size:stop * size]))
    return tables


def _blank_ended(cells: Sequence[str]) -> bool:
    """Whether a cell of ASCII is empty or ends in a blank."""
    text = "\n" + "\n".join(cells) + "\n"
    return " \n" in text or "\n\n" in text


FORMATS_KEPT = 1024  # whole-table formats kept per kind of table, each of at most FORMAT_ROWS_KEPT rows (~2.5 KB):
FORMAT_ROWS_KEPT = 64  # a few MB at most
# the format of a whole table (its headers' line, and its rows), by the table's headers and right-aligned columns, then
# by its columns' widths and its rows: most runs' tables have widths and rows seen before
_TABLE_FORMATS: dict[tuple[tuple[str, ...], frozenset[int]], dict[tuple[tuple[int, ...], int], str]] = {}


def _table_format(widths: tuple[int, ...], right: frozenset[int], headers: tuple[str, ...], rows: int) -> str:
    """The format of a run's table of ``rows`` rows (``_spec``, indented by TABLE_INDENT) after its headers' line."""
    spec = _spec(list(widths), right, TABLE_INDENT)
    return (spec % headers).replace("%", "%%") + ("\n" + spec) * rows


def _aggregate_block(agg: dict[str, Any]) -> list[str]:
    lines = ["All runs"]
    span = f"{clean(agg['startedAt'])} .. {clean(agg['endedAt'])}" if agg["startedAt"] else "-"
    usage, unattributed = agg["usage"], agg["unattributedRepairs"]
    facts = [
        ["runs", f"{format_count(agg['runs']['total'])} ({run_statuses(agg['runs'])})"],
        ["time", f"{span}  (runs took {format_ms(agg['durationMs'])} in all)"],
        ["events", format_count(agg["events"]["total"])],
        ["tool calls", f"{format_count(agg['toolCalls']['total'])} ({format_count(agg['toolCalls']['error'])} failed)"],
        # (no run reports usage: `-`, as its runs' rows and TOTAL say, not 0 tokens counted)
        ["usage", (f"{format_tokens_in(usage)}, {format_count(usage['outputTokens'])} tokens out, "
                   f"{format_cost(usage['costUsd'])}" if usage["runsWithUsage"] else "-")
                  + f" ({counted(usage['runsWithUsage'], 'run reports usage', 'runs report usage')})"],
        ["repairs", format_count(agg["repairs"]["total"])
                    + (f" ({format_count(unattributed['total'])} in no run of this report, listed below)"
                       if unattributed["total"] else "")],
        ["errors", format_count(agg["errors"]["total"])],
    ]
    diag = agg["diagnostics"]
    if diag["total"]:
        facts.append(["input problems", f"{diag['total']}: {clean(format_counts(diag['byCode']))} (details on stderr)"])
    lines += _facts(facts)
    sections = [
        ("events by type", ["TYPE", "COUNT"], [[clean(k, CELL_LIMIT), format_count(v)] for k, v in agg["events"]["byType"].items()], {1}),
        ("tool calls by tool", ["TOOL", "CALLS", "OK", "FAILED", "TOTAL TIME", "LONGEST"],
         [[clean(k, CELL_LIMIT), format_count(v["calls"]), format_count(v["ok"]), format_count(v["error"]),
           format_ms(v["durationMs"]), format_ms(v["maxMs"])] for k, v in agg["toolCalls"]["byTool"].items()], {1, 2, 3, 4, 5}),
        ("repairs by rule", ["RULE", "COUNT"], [[clean(k, CELL_LIMIT), format_count(v)] for k, v in agg["repairs"]["byRule"].items()], {1}),
        ("errors by code", ["CODE", "COUNT"], [[clean(k, CELL_LIMIT), format_count(v)] for k, v in agg["errors"]["byCode"].items()], {1}),
    ]
    for heading, headers, rows, right in sections:
        if rows:
            lines.append("")
            lines.append(f"  {heading}")
            lines += table(headers, rows, right=right, indent="    ")
    return lines + _unattributed_block(unattributed)


def _unattributed_block(unattributed: dict[str, Any]) -> list[str]:
    """The repairs of no run in the report: of runs heal dropped whole (every event of them), by the run id heal
    named them with, counted in the totals above."""
    entries = unattributed["runs"]
    if not entries:
        return []
    rows = [[clean(u["runId"], CELL_LIMIT), clean(u["source"], CELL_LIMIT), format_count(u["total"]),
             clean(format_counts(u["byRule"]))] for u in entries[:ERROR_ROWS]]
    lines = ["", "  repairs in no run of this report (heal dropped every event of their run)",
             *table(["RUN", "SOURCE", "REPAIRS", "BY RULE"], rows, right={2}, indent="    ")]
    if len(entries) > ERROR_ROWS:
        lines.append(f"    … {len(entries) - ERROR_ROWS} more (--format json lists them all)")
    return lines
