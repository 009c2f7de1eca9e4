"""join_split_records: a record its writer split across lines is one record again (logged), built from real corpus
samples with the corruption applied; lines valid on their own are never joined, and valid journals pass untouched
(attribution of the samples: tests/fixtures/corpus/SOURCES.md)."""

from __future__ import annotations

import json
from typing import Any

import orjson
from dialect_support import CORPUS, batches_of, events, heal_dialect, originals
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.inline import InlineResult, run_inline
from replay.pipeline.io.journals import LineCutter
from replay.pipeline.model.dialects import ORIGIN_KEY
from replay.stages.check_lines import CheckLines
from replay.stages.dialect import MapDialect
from replay.stages.heal_summary import SummarizeRepairs
from replay.stages.join_split_records import JoinSplitRecords
from replay.stages.parse import ParseLines
from replay.stages.screen import _DECODER, ScreenRuns
from replay.stages.undialect import WriteDialect
from replay.stages.validate import ValidateEvents

CLAUDE = CORPUS / "claude-code" / "representative_messages.jsonl"
CODEX = CORPUS / "codex" / "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def join(parts: list[bytes]) -> bytes:
    return b"\n".join(parts) + b"\n"


def unescaped(line: bytes) -> bytes:
    """The line as a writer that forgot to escape newlines in strings wrote it (the sample has no other backslash-n)."""
    assert b"\\\\n" not in line
    return line.replace(b"\\n", b"\n")


def joined(data: bytes, batch_events: int = 4) -> tuple[list[tuple[bytes, int | None, int | None]], list[dict[str, Any]]]:
    """The join stage alone: (raw line, line number, offset) of what comes out, and its repairs."""
    stage = JoinSplitRecords()
    result = run_inline([stage], batches_of(data, "log.jsonl", batch_events))
    rows = [(raw, line, offset) for b in result.batches for raw, line, offset in zip(b.raws, b.lines, b.offsets, strict=True)]
    return rows, logged(result)  # type: ignore[return-value]


def logged(result: InlineResult) -> list[dict[str, Any]]:
    """The joins' log entries: the stage alone (no ``parse`` after it to hand them on to) logs them on its ``repairs``."""
    assert not any(b.rejoined for b in result.batches)
    return result.side.get("repairs", [])


def repairs_by(result, rule: str) -> list[dict[str, Any]]:
    return [r for r in result.side.get("repairs", []) if r["rule"] == rule]


# a real sample with the corruption applied ---------------------------------------------------------------
def test_a_tool_output_written_with_raw_newlines_is_one_record_again_and_logged():
    lines = CLAUDE.read_bytes().splitlines()
    assert b"Hello, Alice!\\nHello, Alice!" in lines[8]  # the Bash call's output, three lines of it
    broken = unescaped(lines[8])
    data = join([*lines[:8], broken, *lines[9:]])
    assert broken.count(b"\n") == 4  # the output is in the record twice: five physical lines
    result = heal_dialect(data, "session.jsonl")
    (entry,) = repairs_by(result, "join_split_records")
    assert (entry["action"], entry["source"], entry["line"], entry["offset"], entry["joined"]) == (
        "changed", "session.jsonl", 9, data.index(broken), 5)
    assert entry["original"] == broken.decode() and "inside a string" in entry["message"]
    assert result.side.get("errors", []) == []  # parse saw one valid line, not five broken ones
    assert originals(result) == [orjson.loads(line) for line in lines]  # the record is the original one
    clean = heal_dialect(CLAUDE.read_bytes(), "session.jsonl")
    assert [e["type"] for e in events(result)] == [e["type"] for e in events(clean)]
    (summary,) = [r for r in result.records if r.get("$record") == "heal"]
    assert summary["byRule"]["join_split_records"] == 1
    healed = result.to_jsonl()
    checked = run_inline([ParseLines(), ValidateEvents()], batches_of(healed, "healed.jsonl"))
    assert checked.side.get("errors", []) == []
    again = heal_dialect(healed, "healed.jsonl")
    assert again.side.get("repairs", []) == []  # healing the healed stream changes nothing
    back = run_inline([ParseLines(), WriteDialect()], batches_of(healed, "healed.jsonl")).records
    assert back == [orjson.loads(line) for line in lines]  # --dialect-out writes the session as it should have been


def test_a_pretty_printed_record_is_joined_with_its_newlines_as_whitespace():
    lines = CODEX.read_bytes().splitlines()
    meta = orjson.loads(lines[0])
    pretty = json.dumps(meta, indent=2).encode().splitlines()
    assert all(_not_json(p) for p in pretty), "every line of the pretty record is invalid alone"
    data = join([*pretty, *lines[1:]])
    rows, repairs = joined(data)
    assert [orjson.loads(raw) for raw, _, _ in rows] == [orjson.loads(line) for line in lines]
    assert rows[0][1:] == (1, 0) and [r[1] for r in rows[1:]] == list(range(len(pretty) + 1, len(pretty) + len(lines)))
    (entry,) = repairs
    assert entry["joined"] == len(pretty) and "between its tokens" in entry["message"]
    assert b"\n" not in rows[0][0] and rows[0][0].startswith(b"{")


def _not_json(raw: bytes) -> bool:
    try:
        exactjson.loads(raw)  # (as parse reads a line: half a surrogate pair, a number beyond a double are JSON)
    except orjson.JSONDecodeError:
        return True
    return False


def test_a_pretty_printed_array_s_last_element_valid_alone_is_a_piece_of_the_record():
    """`jq .` writes an array's last element on a line of its own, with no comma: `"y"`, `2`, `true`, `null`, `{}`,
    `[]` are JSON alone. Such a line ended the join (a line valid alone was never joined): every piece was reported and
    the record lost. No such line is a record (an object with a key), so it goes on a join that is open."""
    record = {"seq": 1, "type": "run_started", "payload": {"s": ["x", "y"], "n": [1, 2], "b": [False, True], "z": [None],
                                                            "o": [{"k": 1}, {}], "a": [[1], []], "deep": [[[0.5]]]}}
    after = b'{"seq": 2}'
    pretty = json.dumps(record, indent=2).encode().splitlines()
    assert [p.strip() for p in pretty if not _not_json(p)] == [b'"y"', b"2", b"true", b"null", b"{}", b"1", b"[]", b"0.5"]
    for batch_events in (1, 3, 64):
        rows, repairs = joined(join([*pretty, after]), batch_events)
        assert [orjson.loads(raw) for raw, _, _ in rows] == [record, {"seq": 2}]
        assert [line for _, line, _ in rows] == [1, len(pretty) + 1]
        (entry,) = repairs
        assert entry["joined"] == len(pretty) and "between its tokens" in entry["message"]
    # a line of a tool's output that is JSON alone (a number), written with its newlines unescaped, is a piece too
    split = b'{"type": "user", "toolUseResult": "exit code\n0\nend"}'
    rows, repairs = joined(join([b'{"a": 1}', split, b'{"b": 2}']))
    assert [raw for raw, _, _ in rows] == [b'{"a": 1}', split.replace(b"\n", b"\\n"), b'{"b": 2}']
    assert len(repairs) == 1 and "inside a string" in repairs[0]["message"]


def test_a_join_with_pieces_valid_alone_is_held_to_max_bytes_and_to_one_object():
    pretty = json.dumps({"s": ["x", "y"]}, indent=2).encode()
    one_line = pretty.replace(b"\n", b" ")
    for limit, joins in ((len(one_line) - 1, 0), (len(one_line), 1)):
        result = run_inline([JoinSplitRecords(max_bytes=limit)], batches_of(pretty + b"\n", "log.jsonl", 4))
        rows = [raw for b in result.batches for raw in b.raws]
        assert (rows == [one_line]) == bool(joins) and len(logged(result)) == joins
    # pieces valid alone that make more than one value with the others, or none, are passed on as they were
    for data in (b'{"a":\n2\n}{"b": 1}\n', b'{"a": [\n"y"\n]]}\n', b'{"a": [\n"y"\n"z"\n]}\n', b'{"a": [\n{}\n{}\n]}\n'):
        rows, repairs = joined(data)
        assert repairs == [] and [raw for raw, _, _ in rows] == data.splitlines(), data


def _record(raw: bytes) -> bool:
    """Is the line a record on its own (an object with a key), which no join takes?"""
    if _not_json(raw):
        return False
    value = exactjson.loads(raw)
    return isinstance(value, dict) and bool(value)


def test_pieces_arriving_in_separate_batches_and_at_the_end_of_the_input_are_joined():
    lines = CLAUDE.read_bytes().splitlines()
    broken = unescaped(lines[8])
    data = b"\n".join([*lines[:9 - 1], broken])  # the split record is the last one, with no newline after it
    rows, repairs = joined(data, batch_events=1)
    assert [orjson.loads(raw) for raw, _, _ in rows] == [orjson.loads(line) for line in lines[:9]]
    assert len(repairs) == 1 and repairs[0]["line"] == 9


def test_a_join_longer_than_max_bytes_is_not_made_with_its_escaped_newlines_counted():
    """The pieces with their newlines take as many bytes as the record written on one line less one a newline inside a
    string (written escaped, two bytes): held to max_bytes, the joined line was that one byte over it."""
    record = b'{"type":"user","text":"one\\ntwo"}'
    data = record.replace(b"\\n", b"\n") + b"\n"
    for limit, joins in ((len(record) - 1, 0), (len(record), 1)):
        result = run_inline([JoinSplitRecords(max_bytes=limit)], batches_of(data, "log.jsonl", 4))
        rows = [raw for b in result.batches for raw in b.raws]
        assert (rows == [record]) == bool(joins) and len(logged(result)) == joins


def test_a_split_record_cut_off_is_left_for_parse_to_report():
    lines = CLAUDE.read_bytes().splitlines()
    broken = unescaped(lines[8])
    cut = broken[: broken.rindex(b"Hello") + 3]  # the crash came in the middle of the record's last piece
    data = b"\n".join([*lines[:8], cut])
    result = heal_dialect(data, "session.jsonl")
    assert repairs_by(result, "join_split_records") == []
    # its last piece alone is no start of a JSON text (it begins inside a string): not torn, as a cut-off write of a
    # line would be, but invalid like the pieces before it: every piece reported, none dropped in silence
    assert repairs_by(result, "drop_torn_line") == []
    invalid = [e for e in result.side["errors"] if e["code"] == "E_JSONL_LINE_INVALID"]
    assert [e["line"] for e in invalid] == list(range(9, 9 + cut.count(b"\n") + 1))  # reported, not guessed at


# never joined ---------------------------------------------------------------------------------------------
def test_records_on_their_own_are_never_joined():
    lines = CLAUDE.read_bytes().splitlines()
    head, tail = unescaped(lines[8]).split(b"\n", 1)
    # the pieces of the split record with a valid record between them: nothing may be joined over it
    data = join([lines[0], head, lines[1], tail, lines[2]])
    rows, repairs = joined(data)
    assert repairs == [] and [raw for raw, _, _ in rows] == data.splitlines()
    # an object with a key among the pieces, where a value may come, is a record too: nothing is joined over it
    data = join([b'{"a": [', b'{"b": 1}', b"]}", b'{"a": {"k":', b'{"b": 1}', b"}}"])
    rows, repairs = joined(data)
    assert repairs == [] and [raw for raw, _, _ in rows] == data.splitlines()
    # valid records that look like halves are still records
    rows, repairs = joined(join([b'{"a": "x"}', b'{"b": "y"}', b"{}", b'{"c": [1, {"d": 2}]}']))
    assert repairs == [] and len(rows) == 4


def test_garbage_between_records_is_passed_on_as_it_is():
    lines = CLAUDE.read_bytes().splitlines()[:3]
    junk = [b"{not json", b"", b"a log line }", b'{"seq": 1,', b"}}"]
    data = join([lines[0], *junk, lines[1], b'{"a": "unterminated', lines[2]])
    rows, repairs = joined(data)
    assert repairs == [] and [raw for raw, _, _ in rows] == data.splitlines()
    assert [line for _, line, _ in rows] == list(range(1, len(data.splitlines()) + 1))


def test_a_valid_journal_passes_as_the_very_batches_that_came_in():
    stage = JoinSplitRecords()
    for batch in batches_of(CLAUDE.read_bytes(), "session.jsonl"):
        assert stage(batch) is batch
    assert stage.flush() is None and stage.take("repairs") == []


# properties ---------------------------------------------------------------------------------------------
text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)
scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | text | st.floats(allow_nan=False, allow_infinity=False)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
                      max_leaves=10)
records = st.dictionaries(text, values, max_size=5)


@st.composite
def record_lines(draw) -> bytes:
    record = draw(records)
    style = draw(st.sampled_from(["orjson", "spaced", "ascii", "crlf"]))
    if style == "orjson":
        return orjson.dumps(record)
    if style == "spaced":
        return json.dumps(record, separators=(", ", ": "), ensure_ascii=False).encode()
    if style == "ascii":
        return json.dumps(record).encode()
    return orjson.dumps(record) + b"\r"


@SETTINGS
@given(st.lists(record_lines(), max_size=30), st.integers(1, 8))
def test_a_valid_journal_is_untouched(lines: list[bytes], batch_events: int):
    data = join(lines) if lines else b""
    batches = batches_of(data, "log.jsonl", batch_events)
    stage = JoinSplitRecords()
    out = [stage(b) for b in batches]
    assert out == batches  # the very batch objects, untouched
    assert stage.flush() is None and stage.take("repairs") == []


# A tool's output with newlines in it, written unescaped: no backslash and no brace in it, so a piece
# never starts another record, and the unescaped form is the escaped one with every \n made raw. Some hold what
# is JSON though orjson refuses it (half a surrogate pair, as a JavaScript writer cutting an emoji leaves it, and
# a number beyond a double), before or after the newlines.
output_text = st.text(st.sampled_from("ab 7\n\"é"), min_size=1, max_size=12)
orjson_refuses = st.sampled_from([exactjson.ExactNumber("1e400"), exactjson.ExactNumber("-2E+999"), "\ud83d", "x\udc00"])
split_records = st.fixed_dictionaries({"type": st.sampled_from(["user", "tool_result"]), "pre": st.none() | orjson_refuses,
                                       "output": output_text},
                                      optional={"n": st.integers(0, 9), "more": st.lists(output_text, max_size=2),
                                                "odd": orjson_refuses})


@SETTINGS
@given(st.lists(st.tuples(st.booleans(), split_records) | st.tuples(st.just(False), records), min_size=1, max_size=12),
       st.integers(1, 6))
def test_split_records_are_joined_and_nothing_else_is(items: list[tuple[bool, dict[str, Any]]], batch_events: int):
    lines: list[bytes] = []
    expected: list[tuple[bool, dict[str, Any], list[bytes]]] = []
    for broken, record in items:
        good = exactjson.dumps(record)
        written = good.replace(b"\\n", b"\n") if broken and b"\\\\" not in good else good
        pieces = written.split(b"\n")
        lines += pieces
        expected.append((len(pieces) > 1, record, pieces))
    rows, repairs = joined(join(lines), batch_events)
    got = iter(rows)
    line_no = 1
    joins = 0
    for split, record, pieces in expected:
        if split and not any(_record(p) for p in pieces):
            raw, line, _ = next(got)
            assert (exactjson.loads(raw), line) == (record, line_no)  # one record again, where it began
            joins += 1
        else:  # whole, or split with a piece that is a record alone: every line as it was
            for k, piece in enumerate(pieces):
                assert next(got)[:2] == (piece, line_no + k)
        line_no += len(pieces)
    assert next(got, None) is None
    assert len(repairs) == joins


BLANK_LINES = st.lists(st.sampled_from([b"", b"   ", b"\t", b" \r", b"\r"]), max_size=2)  # JSON's whitespace, alone


def with_blank_lines(draw: Any, written: bytes) -> bytes:
    """A record pretty-printed, blank lines (empty, or spaces, tabs, carriage returns) drawn between its lines: before
    each that is no JSON alone (not before a last element `{}`: a line read keeps, whose place down the pipe is the
    pipe's, so blank lines before it are not told from those after it)."""
    first, *rest = written.split(b"\n")
    return b"\n".join([first, *(line for piece in rest
                                 for line in [*(draw(BLANK_LINES) if _not_json(piece) else []), piece])])


def through_read(data: bytes, batch_events: int) -> list[Batch]:
    """``data`` as `replay read` writes it (``check_lines``: a dropped record for each line left out, blank lines left
    out), cut again as a read down the pipe cuts it."""
    cutter = LineCutter("log.jsonl", batch_events=batch_events)
    read = run_inline([CheckLines(mark_dropped=True)], [b for b in cutter.feed(data) + cutter.finish() if isinstance(b, Batch)])
    piped = b"".join(raw + b"\n" for b in read.batches for raw in b.raws)  # type: ignore[operator]
    cutter = LineCutter("<stdin>", batch_events=batch_events)
    return [b for b in cutter.feed(piped) + cutter.finish() if isinstance(b, Batch)]


@SETTINGS
@given(st.lists(st.tuples(st.booleans(), records), max_size=12), st.integers(1, 8), st.sampled_from([1, 2, 4]), st.data())
def test_a_journal_pretty_printed_record_by_record_is_the_compact_journal_again(items: list[tuple[bool, dict[str, Any]]],
                                                                                batch_events: int, indent: int, data: Any):
    """`jq . run.jsonl` (``json.dumps(record, indent=...)``), some records or all: each record is one line again, at
    its first line, the very value, whatever it holds (arrays of scalars, empty arrays and objects, nesting); one repair
    for each record that took more than one line, none for the rest, its ``original`` the very lines of its span. Blank
    lines inside a record (JSON's whitespace: empty, or spaces, tabs, carriage returns) are pieces of it; and `replay
    read` of the journal down a pipe (blank lines left out, each piece a dropped record) joins the same records, logged
    the same (``MarkedLines``)."""
    written = [json.dumps(r, indent=indent if pretty else None, ensure_ascii=False).encode() for pretty, r in items]
    written = [with_blank_lines(data.draw, w) for w in written]
    cutter = LineCutter("log.jsonl", batch_events=batch_events)  # (lines, as read cuts them: never one document)
    batches = [b for b in cutter.feed(join(written) if written else b"") + cutter.finish() if isinstance(b, Batch)]
    result = run_inline([JoinSplitRecords()], batches)
    rows = [(raw, line) for b in result.batches for raw, line in zip(b.raws, b.lines, strict=True)]
    starts = [1 + sum(w.count(b"\n") + 1 for w in written[:k]) for k in range(len(written))]
    assert [(exactjson.loads(raw), line) for raw, line in rows] == [(r, at) for (_, r), at in zip(items, starts, strict=True)]
    assert all(b"\n" not in raw for raw, _ in rows)
    repairs = logged(result)
    assert [(r["line"], r["joined"], r["original"].encode()) for r in repairs] == \
        [(at, w.count(b"\n") + 1, w) for w, at in zip(written, starts, strict=True) if b"\n" in w]
    piped = run_inline([JoinSplitRecords()], through_read(join(written) if written else b"", batch_events))
    assert [exactjson.loads(raw) for b in piped.batches for raw in b.raws] == [r for _, r in items]  # type: ignore[arg-type]
    assert [(r["joined"], r["original"]) for r in logged(piped)] == [(r["joined"], r["original"]) for r in repairs]


LIMIT = 200  # the reads' --max-line-bytes below
LONG = b'"t": "' + b"y" * LIMIT + b'",'  # a piece of a pretty-printed record too long for it: read leaves it out


def read_joined(data: bytes, batch_events: int, chunk: int) -> tuple[list[tuple[bytes | None, int | None]], list[dict[str, Any]]]:
    """The join stage after a read of ``data`` in reads of ``chunk`` bytes under ``LIMIT``: what comes out (raw line, line
    number), and its repairs."""
    cutter = LineCutter("log.jsonl", max_line_bytes=LIMIT, batch_events=batch_events)
    items = [item for at in range(0, len(data), chunk) for item in cutter.feed(data[at:at + chunk])] + cutter.finish()
    result = run_inline([JoinSplitRecords()], [b for b in items if isinstance(b, Batch)])
    return [(raw, line) for b in result.batches for raw, line in zip(b.raws, b.lines, strict=True)], logged(result)


@st.composite
def pretty_with_long(draw) -> list[bytes]:
    """A record pretty-printed, its first field a line too long (``LONG``): its other lines alone join into an object."""
    written = json.dumps(draw(records.filter(bool)), indent=draw(st.sampled_from([None, 1, 2])), ensure_ascii=False)
    first, *rest = written.encode().split(b"\n")
    return [b"{", LONG, first[1:], *rest] if not rest else [first, LONG, *rest]


@SETTINGS
@given(st.lists(st.one_of(record_lines().map(lambda line: [line]), pretty_with_long(),
                          st.sampled_from([b"{", b"}", b'"a": 1,', b"", b"{oops", b'{"a": "x', b'y"}', b'"b": [', b'"c": {',
                                           b"]", b"],", b"},", b"2", b'"y"', b"{}", b"[]", b"null", LONG]).map(lambda line: [line])),
                max_size=25), st.integers(1, 5), st.sampled_from([7, 64, 1 << 16]))
def test_every_record_line_comes_out_unchanged_and_joins_are_objects(parts: list[list[bytes]], batch_events: int, chunk: int):
    """... and a join is of consecutive lines, all of them: none across a line read left out (too long), which would
    make up a record never written (that line's field gone)."""
    lines = [line for part in parts for line in part]
    data = join(lines) if lines else b""
    rows, repairs = read_joined(data, batch_events, chunk)
    by_line = {line: raw for raw, line in rows}
    for n, raw in enumerate(lines, 1):
        if _record(raw) and len(raw) <= LIMIT:
            assert by_line.get(n) == raw  # out, as it was, at its own line
    spans = {r["line"]: r["joined"] for r in repairs}
    covered = {n + k for n, j in spans.items() for k in range(1, j)}
    kept = {n for n, raw in enumerate(lines, 1) if len(raw) <= LIMIT}
    assert sorted(kept - covered) == [line for _, line in rows]  # order kept, nothing lost
    for entry in repairs:  # the pieces a join took: the lines of its span, every one, as they were
        assert entry["original"].encode() == b"\n".join(lines[entry["line"] - 1:entry["line"] - 1 + entry["joined"]])
    for raw, line in rows:
        if line in spans:
            assert isinstance(orjson.loads(raw), dict) and b"\n" not in raw
            first, *rest = lines[line - 1:line - 1 + spans[line]]
            assert _not_json(first) and not any(map(_record, rest))


def test_the_heal_chain_takes_the_joined_record_as_a_dialect_record():
    lines = CLAUDE.read_bytes().splitlines()
    data = join([*lines[:8], unescaped(lines[8]), *lines[9:]])
    stages = [JoinSplitRecords(), ParseLines(torn_tail="repair"), MapDialect(), SummarizeRepairs()]
    result = run_inline(stages, batches_of(data, "session.jsonl"), feed_side={3: ("repairs",)})
    mapped = [e for e in events(result) if e[ORIGIN_KEY]["index"] == 8]
    assert mapped and mapped[0][ORIGIN_KEY]["record"] == orjson.loads(lines[8])
    assert isinstance(result.batches[0], Batch)


def test_a_valid_batch_goes_on_with_the_heads_the_screen_reads_and_the_screen_takes_them():
    lines = [b'{"seq":1,"timestamp":"2026-01-01T00:00:00Z","type":"run_started","runId":"r","payload":{}}',
             b'{"seq":2,"timestamp":"2026-01-01T00:00:01Z","type":"run_completed","runId":"r","payload":{}}']
    batch = Batch.from_lines(lines, "j.jsonl")
    assert JoinSplitRecords()(batch) is batch
    assert batch.heads == [_DECODER.decode(line) for line in lines]  # decoded once, for both stages
    ScreenRuns()(batch)
    assert batch.heads is None
    JoinSplitRecords()(batch)
    assert batch.heads is not None
    ScreenRuns(enabled=False)(batch)  # (--dialect): the lines go on as they came, without the heads
    assert batch.heads is None
    refused = Batch.from_lines([b'{"seq":"1"}', b"[1]"], "j.jsonl")  # JSON, but not what the screen reads
    assert JoinSplitRecords()(refused) is refused and refused.heads is None
