"""Stream invariants of reading, checked with hypothesis: nothing lost, order kept, bytes untouched."""

from __future__ import annotations

import fnmatch
import itertools
import json
import os
import tempfile
from collections.abc import AsyncIterator

import anyio
import orjson
from conftest import errors_of, run_replay
from engine_stages import Probe
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.exactjson import UTF8_BOM
from replay.pipeline.engine.executor import ErrorPort, run_graph
from replay.pipeline.engine.graph import Graph
from replay.pipeline.engine.stage import Sink
from replay.pipeline.io.journals import LineCutter, as_document
from replay.stages.parse import ParseLines
from replay.stages.read import ReadJournal
from replay.stages.select import SelectEvents

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | text | st.floats(allow_nan=False, allow_infinity=False)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
                      max_leaves=12)
events = st.fixed_dictionaries(
    {"seq": st.integers(1, 10_000), "type": st.sampled_from(["run_started", "tool_called", "tool_completed", "user_message"]),
     "runId": st.sampled_from(["r1", "r2"]), "payload": st.dictionaries(text, values, max_size=4)},
    optional={"timestamp": st.just("2026-01-01T00:00:00Z"), "turn": st.integers(0, 50)},
)


@st.composite
def event_lines(draw) -> bytes:
    """One event serialised the way some writer might: compact, spaced, ASCII-escaped, CRLF-ended."""
    event = draw(events)
    style = draw(st.sampled_from(["orjson", "spaced", "ascii", "crlf"]))
    if style == "orjson":
        return orjson.dumps(event)
    if style == "spaced":
        return json.dumps(event, separators=(", ", ": "), ensure_ascii=False).encode()
    if style == "ascii":
        return json.dumps(event).encode()
    return orjson.dumps(event) + b"\r"


junk = (
    st.binary(min_size=1, max_size=40).filter(lambda b: b"\n" not in b)
    | st.sampled_from([b"[1, 2]", b"42", b'"text"', b"null", b"{oops", b"not json at all", b'{"seq": 1,'])
)


def is_valid_object(raw: bytes) -> bool:
    try:
        return type(orjson.loads(raw)) is dict
    except orjson.JSONDecodeError:
        return False


class Gather(Probe, Sink):
    """A probe: the test reads what it gathered, so it runs as itself."""

    name = "gather"

    def __init__(self) -> None:
        super().__init__()
        self.out = b""
        self.records: list = []

    async def consume(self, batches: AsyncIterator[Batch]) -> None:
        async for batch in batches:
            self.out += batch.to_jsonl()
            self.records.extend(batch.events or [])


def read_in_process(data: bytes, *extra) -> tuple[Gather, list[dict]]:
    """Run read -> parse (-> extra) -> gather over ``data`` in a file; return the sink and diagnostics."""
    fd, path = tempfile.mkstemp(suffix=".jsonl")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        sink = Gather()
        errors: list[bytes] = []
        graph = Graph.chain(ReadJournal(paths=[path]), ParseLines(), *extra, sink)
        anyio.run(lambda: run_graph(graph, error_port=ErrorPort(write=errors.append)))
        return sink, [orjson.loads(e)["error"] for e in errors]
    finally:
        os.unlink(path)


@SETTINGS
@given(st.lists(event_lines(), max_size=40), st.booleans())
def test_read_keeps_every_event_in_order_and_byte_identical(lines: list[bytes], final_newline: bool):
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    sink, errors = read_in_process(data)
    assert errors == []
    assert sink.out == b"".join(line + b"\n" for line in lines)
    assert sink.records == [orjson.loads(line) for line in lines]


@SETTINGS
@given(st.lists(st.tuples(st.booleans(), event_lines(), junk), max_size=30))
@example([(False, b"{}", b"\x00"), (False, b"{}", UTF8_BOM)])  # a line of only a byte order mark: blank (CI found it)
def test_junk_lines_are_reported_and_valid_ones_still_flow_in_order(mix: list[tuple[bool, bytes, bytes]]):
    lines = [line if good else bad for good, line, bad in mix]
    data = b"".join(line + b"\n" for line in lines)
    assume(not data.startswith(b"\x1f\x8b"))  # gzip's magic: such an input is read as gzip
    assume(as_document(data) is None)  # e.g. one line `[0, 0]`: a whole JSON array, read as a document
    assume(not data.startswith(b"\xef\xbb\xbf"))  # a byte order mark first is the file's, skipped (not a junk line)
    sink, errors = read_in_process(data)
    valid = [ln for ln in lines if is_valid_object(ln)]
    # (a byte order mark that starts a line is left out of it: a line of only that is blank, as a file of only that)
    reported = [n for n, ln in enumerate(lines, start=1)
                if exactjson.skip_bom(ln)[0].strip(b" \t\r") and not is_valid_object(ln)]
    assert sink.out == b"".join(line + b"\n" for line in valid)
    assert [e["line"] for e in errors] == reported  # every dropped line, once, at its own line number
    offsets = {n: sum(len(x) + 1 for x in lines[: n - 1]) for n in reported}
    assert all(e["offset"] == offsets[e["line"]] for e in errors)
    assert {e["code"] for e in errors} <= {"E_JSONL_LINE_INVALID", "E_EVENT_NOT_OBJECT"}


@SETTINGS
@given(st.lists(event_lines(), min_size=1, max_size=10), st.binary(min_size=1, max_size=30))
@example([b'{"seq":1,"type":"run_started","runId":"r1","payload":{}}'], UTF8_BOM + b'{"seq":2,')  # torn after a mark
def test_a_torn_tail_is_reported_at_its_offset_and_never_emitted(lines: list[bytes], tail: bytes):
    rest = tail.removeprefix(UTF8_BOM)  # (a byte order mark opening the tail is left out, as of any line: its offset past it)
    assume(b"\n" not in tail and rest.strip(b" \t\r") and not is_valid_object(rest))
    body = b"".join(line + b"\n" for line in lines)
    sink, errors = read_in_process(body + tail)
    assert sink.out == body
    try:
        orjson.loads(rest)
        code = "E_EVENT_NOT_OBJECT"  # whole JSON, just not an object (`0`, `[1]`): not a torn write
    except orjson.JSONDecodeError as exc:
        # torn only when the tail is the start of a JSON text that ends too early (a cut-off write; its last UTF-8
        # character may be cut in two); anything wrong before its end is invalid whatever followed (what a start of
        # a JSON text is, independently: tests/engine/test_torn_line_prefix.py)
        code = "E_JSONL_LINE_TORN" if exactjson.cut_off(rest, exc) else "E_JSONL_LINE_INVALID"
    assert [(e["code"], e["offset"]) for e in errors] == [(code, len(body) + len(tail) - len(rest))]


@SETTINGS
@given(st.lists(event_lines(), max_size=30), st.sampled_from([["tool_*"], ["*_message"], ["run_*", "tool_called"]]))
def test_select_keeps_untouched_events_byte_identical(lines: list[bytes], types: list[str]):
    data = b"".join(line + b"\n" for line in lines)
    sink, _ = read_in_process(data, SelectEvents(types=types))
    kept = [ln for ln in lines if any(fnmatch.fnmatchcase(orjson.loads(ln)["type"], g) for g in types)]
    assert sink.out == b"".join(line + b"\n" for line in kept)


def test_a_tail_that_is_a_byte_order_mark_alone_is_a_blank_line():
    """A last line (no newline) holding only a byte order mark is, without it, blank: nothing to report or write."""
    body = b'{"seq":1,"type":"run_started","runId":"r1","payload":{}}\n'
    sink, errors = read_in_process(body + UTF8_BOM)
    assert (sink.out, errors) == (body, [])


# chunk boundaries ----------------------------------------------------------------------------
def cut_columns(data: bytes, cuts: list[int], limit: int, batch_events: int) -> tuple[list, list]:
    cutter = LineCutter("j.jsonl", max_line_bytes=limit, batch_events=batch_events)
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    items = [item for a, b in itertools.pairwise(points) for item in cutter.feed(data[a:b])] + cutter.finish()
    columns = [(raw, ln, off, b.tail_open and k == len(b) - 1)
               for b in items if isinstance(b, Batch) for k, (raw, ln, off) in enumerate(zip(b.raws, b.lines, b.offsets, strict=True))]
    diagnostics = [(d["code"], d["line"], d["offset"]) for d in items if isinstance(d, dict)]
    for b in items:  # a batch keeps its lines as the one block they were cut from (a long line's drop loses it)
        if isinstance(b, Batch):
            assert b.joined == b"\n".join(b.raws) or (b.joined is None and (diagnostics or UTF8_BOM in data))
    return columns, diagnostics


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.binary(max_size=40).filter(lambda b: b"\n" not in b), max_size=25),
    st.booleans(),
    st.lists(st.integers(0, 10_000), max_size=30),
    st.integers(1, 60),
    st.integers(1, 8),
)
@example([b"a", UTF8_BOM + b"bcd"], True, [2, 8], 4, 8)  # a line with a mark, longer than the limit only with it: too long
@example([b"a", UTF8_BOM + b"b", UTF8_BOM], False, [3], 60, 8)  # marks on later lines, one a last line with no newline
def test_chunk_boundaries_anywhere_give_the_same_lines(lines: list[bytes], newline_at_end: bool, cuts: list[int],
                                                      limit: int, batch_events: int):
    if newline_at_end:
        data = b"".join(line + b"\n" for line in lines)
        expected = lines
    else:
        data = b"\n".join(lines)
        expected = lines[:-1] + (lines[-1:] if lines and lines[-1] else [])  # an empty tail is no line
    whole = cut_columns(data, [], limit, batch_events)
    assert cut_columns(data, cuts, limit, batch_events) == whole
    # (a byte order mark opening a line is left out of it; the limit is of the line as read, the mark too)
    assert [raw for raw, *_ in whole[0]] == [ln.removeprefix(UTF8_BOM) for ln in expected if len(ln) <= limit]
    assert [d[1] for d in whole[1]] == [n for n, ln in enumerate(expected, start=1) if len(ln) > limit]


# the real executable, a few examples -----------------------------------------------------------------
@settings(max_examples=12, deadline=None)
@given(st.lists(st.tuples(st.booleans(), event_lines(), junk), max_size=15))
@example([(False, b"", b"\xef\xbb\xbf")])  # a byte order mark alone on the first line: a blank line, not dropped
@example([(False, b"", b'\xef\xbb\xbf{"seq":1,"type":"run_started","runId":"r1","payload":{}}'), (False, b"", b"x")])
def test_replay_read_keeps_valid_lines_byte_identical(mix: list[tuple[bool, bytes, bytes]]):
    lines = [line if good else bad for good, line, bad in mix]
    data = b"".join(line + b"\n" for line in lines)
    assume(not data.startswith(b"\x1f\x8b") and as_document(data) is None)
    done = run_replay("read", input=data)
    if lines and lines[0].startswith(b"\xef\xbb\xbf"):  # read skips a byte order mark opening the input
        lines[0] = lines[0][3:]
    valid = [ln for ln in lines if is_valid_object(ln)]
    out = done.stdout.split(b"\n")[:-1]
    marks = [ln for ln in out if ln.startswith(b'{"$record":"dropped"')]
    assert [ln for ln in out if not ln.startswith(b'{"$record":"dropped"')] == valid
    dropped = [ln for ln in lines if ln.strip(b" \t\r") and not is_valid_object(ln)]
    assert len(marks) == len(dropped)  # each line left out has its dropped record in the stream
    assert len(errors_of(done.stderr)) == len(dropped)
    assert done.returncode == (1 if dropped else 0)
