"""Batch: columns stay aligned through every change, and output keeps untouched bytes."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine.batch import Batch, changed, invented
from replay.pipeline.model.records import is_run_record

RAW = [b'{"seq":1,"type":"a"}', b'{"seq": 2, "type": "b"}', b'{"seq":3,  "type":"c"}']


def parsed(raws: list[bytes] = RAW, source: str = "run.jsonl") -> Batch:
    batch = Batch.from_lines(raws, source)
    batch.events = [orjson.loads(r) for r in raws]
    return batch


def test_from_lines_numbers_lines_and_offsets_from_the_start():
    batch = Batch.from_lines(RAW, "run.jsonl")
    assert batch.events is None
    assert batch.lines == [1, 2, 3]
    assert batch.offsets == [0, len(RAW[0]) + 1, len(RAW[0]) + len(RAW[1]) + 2]
    assert batch.pointers == [None, None, None]
    assert len(batch) == 3


def test_untouched_events_are_written_as_their_original_bytes():
    batch = parsed()
    assert batch.to_jsonl() == b"\n".join(RAW) + b"\n"


def test_replace_reserialises_only_the_changed_event():
    batch = parsed()
    batch.replace(1, {"seq": 2, "type": "B"})
    out = batch.to_jsonl().split(b"\n")
    assert out[0] == RAW[0] and out[2] == RAW[2]
    assert out[1] == b'{"seq":2,"type":"B"}'
    assert batch.raws[1] is None
    # the position survives a change: diagnostics still point at the input line
    assert batch.position(1) == {"source": "run.jsonl", "line": 2, "offset": len(RAW[0]) + 1}


def test_insert_adds_an_invented_record_without_a_position():
    batch = parsed()
    batch.insert(0, {"seq": 0, "type": "run_started", "synthetic": True})
    assert len(batch) == 4
    assert batch.lines == [None, 1, 2, 3]
    assert batch.offsets[0] is None and batch.raws[0] is None
    assert batch.to_jsonl().split(b"\n")[1:4] == RAW


def test_select_keeps_columns_together_in_the_given_order():
    batch = parsed()
    out = batch.select([2, 0])
    assert [e["seq"] for e in out] == [3, 1]
    assert out.raws == [RAW[2], RAW[0]]
    assert out.lines == [3, 1]
    assert out.source == "run.jsonl"


def test_select_keeps_the_open_tail_only_when_the_last_column_survives():
    batch = Batch.from_lines(RAW)
    batch.tail_open = True
    assert batch.select([0, 2]).tail_open
    assert not batch.select([0, 1]).tail_open
    assert not batch.select([]).tail_open


def test_select_keeps_the_side_port_tag():
    side = Batch.side([{"code": "E"}], "errors", "<parse.errors>")
    assert side.select([0]).port == "errors"


def test_select_keeps_the_log_entries_of_the_joined_lines_it_keeps_at_their_new_places():
    batch = Batch.from_lines(RAW)
    batch.rejoined = {0: {"rule": "join_split_records", "line": 1}, 2: {"rule": "join_split_records", "line": 3}}
    assert batch.select([2, 1]).rejoined == {0: {"rule": "join_split_records", "line": 3}}
    assert batch.select([1]).rejoined is None



def test_a_column_taken_out_of_one_batch_carries_its_join_into_the_batch_it_is_put_back_in():
    """A per-run stage holds a line across batches (``RunScoped``): the joined line's entry goes with its column (and
    with a column changed from it), into a later batch's rebuild or a batch made of columns (``close_run``)."""
    first = parsed()
    entry = {"rule": "join_split_records", "line": 2}
    first.rejoined = {1: entry}
    held = first.column(1)
    assert first.rebuild({}, {1}, []).rejoined is None  # (taken out: not in the batch it left)
    later = parsed([b'{"seq":4,"type":"d"}'])
    assert later.rebuild({0: [held]}, set(), []).rejoined == {0: entry}
    assert later.rebuild({}, set(), [invented({"type": "end"}), changed(held, {"type": "B"})]).rejoined == {2: entry}
    assert Batch.from_columns([invented({"type": "end"}), held]).rejoined == {1: entry}
    assert Batch.from_columns([first.column(0)]).rejoined is None

def test_rebuild_inserts_drops_and_appends_columns():
    batch = parsed()
    made = invented({"type": "made"})
    out = batch.rebuild({1: [made]}, drop={2}, after=[invented({"type": "end"})])
    assert [e["type"] for e in out] == ["a", "made", "b", "end"]
    assert out.lines == [1, None, 2, None]
    assert out.raws[0] == RAW[0] and out.raws[1] is None


def test_rebuild_moves_a_column_with_its_bytes_and_position():
    batch = parsed()
    moved = batch.column(0)
    out = batch.rebuild({}, drop={0}, after=[moved])
    assert out.raws == [RAW[1], RAW[2], RAW[0]]
    assert out.lines == [2, 3, 1]


def test_rebuild_parts_cuts_after_the_columns_inserted_before_the_cut():
    batch = parsed()
    batch.tail_open, batch.closes_run, batch.notes = True, False, [{"note": 1}]
    end, record = invented({"type": "end"}), invented({"$record": "run"})
    parts = batch.rebuild_parts({1: [end, record]}, drop={1}, after=[], cuts=[(1, 1)])
    assert [[e["type"] if "type" in e else e["$record"] for e in part] for part in parts] == [["a", "end"], ["run", "c"]]
    assert [part.closes_run for part in parts] == [True, False]  # the first closes its run; the last keeps the batch's
    assert [part.tail_open for part in parts] == [False, True]
    assert [part.notes for part in parts] == [[{"note": 1}], None]
    assert parts[1].lines == [None, 3]
    assert [part.ends_before for part in parts] == [2, None]  # the next run begins at line 2 (its event dropped here)


def test_each_part_but_the_last_ends_before_the_first_line_at_or_after_its_cut():
    batch = parsed()
    batch.lines[1] = None  # (a column a stage invented: no line of the input)
    batch.ends_before = 9
    parts = batch.rebuild_parts({}, drop=set(), after=[], cuts=[(1, 0), (2, 0)])
    assert [part.ends_before for part in parts] == [3, 3, 9]


def test_rebuild_parts_may_cut_before_everything():
    batch = parsed()
    parts = batch.rebuild_parts({}, drop={0}, after=[], cuts=[(0, 0)])
    assert [len(part) for part in parts] == [0, 2] and parts[0].closes_run


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_rebuild_parts_carries_each_kept_joined_line_s_log_entry_to_its_place_in_its_part(data: st.DataObject):
    """A line join_split_records made of several goes on with its log entry (``rejoined``) wherever a rebuild puts it:
    at its new place, on the part it is in, whatever is inserted, dropped, appended or cut, and a line taken out and put
    back in the same rebuild too; a line dropped for good takes its entry with it (as ``select`` has it). The stage that
    logs joins (``cut_runs``) finds them there."""
    n = data.draw(st.integers(1, 8))
    batch = Batch.from_lines([b'{"seq":%d}' % (k + 1) for k in range(n)], "j.jsonl")
    batch.events = [{"seq": k + 1} for k in range(n)]
    joined = data.draw(st.sets(st.integers(0, n - 1)))
    batch.rejoined = {k: {"rule": "join_split_records", "line": k + 1} for k in sorted(joined)} or None
    before = {i: [invented({"type": f"made{i}.{j}"}) for j in range(data.draw(st.integers(0, 2)))]
              for i in data.draw(st.sets(st.integers(0, n - 1)))}
    drop = data.draw(st.sets(st.integers(0, n - 1)))
    back = sorted(data.draw(st.sets(st.sampled_from(sorted(drop))))) if drop else []  # (taken out, put back at the end)
    after = [invented({"type": "end"})] * data.draw(st.integers(0, 1)) + [batch.column(i) for i in back]
    cuts = sorted({(i, data.draw(st.integers(0, len(before.get(i, ()))))) for i in data.draw(st.sets(st.integers(0, n - 1)))})
    parts = batch.rebuild_parts(before, drop, after, cuts)
    for part in parts:
        expected = {k: {"rule": "join_split_records", "line": line} for k, line in enumerate(part.lines)
                    if line is not None and line - 1 in joined}
        assert part.rejoined == (expected or None)
    carried = [entry["line"] for part in parts for _, entry in sorted((part.rejoined or {}).items())]
    kept = [k + 1 for k in sorted(joined - drop)] + [k + 1 for k in back if k in joined]
    assert carried == kept  # each once, in the order of the lines; those dropped for good not


def test_copy_gives_independent_lists():
    batch = parsed()
    twin = batch.copy()
    twin.replace(0, {"x": 1})
    assert batch.raws[0] == RAW[0] and batch.events[0] == {"seq": 1, "type": "a"}


def test_from_columns_and_empty_batches():
    assert len(Batch.from_columns([])) == 0
    assert Batch.from_columns([]).to_jsonl() == b""
    cols = [invented({"a": 1}), ({"b": 2}, b'{"b": 2}', 7, 70, None)]
    batch = Batch.from_columns(cols, "x")
    assert batch.to_jsonl() == b'{"a":1}\n{"b": 2}\n'
    assert batch.position(1) == {"source": "x", "line": 7, "offset": 70}


def test_position_includes_the_json_pointer_of_document_records():
    batch = Batch("a.json", [{"seq": 1}], [None], [None], [None], ["$.events[0]"])
    assert batch.position(0) == {"source": "a.json", "line": None, "offset": None, "path": "$.events[0]"}


def test_where_is_the_position_without_its_none_fields():
    batch = Batch("a.json", [{"seq": 1}, {"seq": 2}], [None, None], [None, 4], [None, 40], ["$.events[0]", None])
    assert batch.where(0) == {"source": "a.json", "path": "$.events[0]"}
    assert batch.where(1) == {"source": "a.json", "line": 4, "offset": 40}
    lines = parsed()
    lines.insert(1, {"seq": 0, "type": "invented"})
    assert lines.where(1) == {"source": "run.jsonl"}
    assert lines.where(2) == lines.position(2) == {"source": "run.jsonl", "line": 2, "offset": len(RAW[0]) + 1}


def test_of_builds_a_parsed_batch_that_serialises_every_record():
    batch = Batch.of([{"a": 1}, {"b": [1, 2]}])
    assert list(batch) == [{"a": 1}, {"b": [1, 2]}]
    assert batch.to_jsonl() == b'{"a":1}\n{"b":[1,2]}\n'


def test_is_run_record():
    assert is_run_record({"$record": "run", "runId": "r"})
    assert not is_run_record({"$record": "heal"})
    assert not is_run_record({"type": "run_started"})
    assert not is_run_record([("$record", "run")])


def test_what_a_stage_worked_out_about_the_lines_is_dropped_with_a_change_and_never_carried():
    batch = parsed()
    batch.joined, batch.heads = b"\n".join(RAW), ["h1", "h2", "h3"]
    for other in (batch.select([0, 1, 2]), batch.copy(), batch.rebuild({}, set(), [])):
        assert other.joined is None and other.heads is None
    batch.replace(0, {"seq": 1, "type": "A"})
    assert batch.joined is None and batch.heads is None
    batch.joined, batch.heads = b"x", ["h"]
    batch.insert(0, {"seq": 0})
    assert batch.joined is None and batch.heads is None


def test_a_line_appended_to_an_unparsed_batch_has_no_position_and_drops_what_was_worked_out():
    batch = Batch.from_lines(RAW)
    batch.joined, batch.heads = b"\n".join(RAW), ["h1", "h2", "h3"]
    batch.append_line(b'{"$record":"heal"}')
    assert batch.raws[-1] == b'{"$record":"heal"}' and batch.lines[-1] is None and batch.offsets[-1] is None
    assert len(batch.pointers) == len(batch.raws) == 4
    assert batch.joined is None and batch.heads is None


# folded batches: columns made on first use ---------------------------------------------------------
lines_strategy = st.lists(st.binary(max_size=12).filter(lambda b: b"\n" not in b), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(lines_strategy, st.integers(1, 50), st.integers(0, 500))
def test_a_folded_batch_has_the_columns_of_its_lines_cut_apart(lines: list[bytes], line: int, offset: int):
    folded = Batch.folded("j.jsonl", len(lines), b"\n".join(lines), line, offset)
    plain = Batch.from_lines(lines, "j.jsonl")
    assert len(folded) == len(lines)
    assert folded.to_jsonl() == plain.to_jsonl()  # written from the block, never cut apart
    assert folded.raws == lines
    assert folded.lines == list(range(line, line + len(lines)))
    assert folded.offsets == [o + offset for o in plain.offsets]  # type: ignore[operator]
    assert folded.pointers == [None] * len(lines)


@settings(max_examples=200, deadline=None)
@given(st.lists(lines_strategy, min_size=1, max_size=4), st.data())
def test_a_batch_folded_from_pieces_of_others_has_their_columns_in_order(parts: list[list[bytes]], data: st.DataObject):
    batches = [Batch.folded("j.jsonl", len(p), b"\n".join(p), 1 + 100 * k, 1000 * k) for k, p in enumerate(parts)]
    pieces = []
    for b in batches:
        a = data.draw(st.integers(0, len(b) - 1))
        pieces.append((b, a, data.draw(st.integers(a + 1, len(b)))))
    folded = Batch.folded("j.jsonl", sum(z - a for _, a, z in pieces), pieces=pieces)
    assert len(folded) == sum(z - a for _, a, z in pieces)
    for name in ("offsets", "raws", "pointers", "lines"):  # any order: each column alone
        assert getattr(folded, name) == [x for b, a, z in pieces for x in getattr(b, name)[a:z]]
    assert folded.to_jsonl() == b"".join(raw + b"\n" for b, a, z in pieces for raw in b.raws[a:z])  # type: ignore[operator]


def test_a_change_to_a_folded_batch_makes_every_column_first_and_keeps_its_length_right():
    folded = Batch.folded("j.jsonl", 2, b'{"a":1}\n{"b":2}', 7, 30)
    folded.append_line(b'{"c":3}')
    assert len(folded) == 3 and folded.lines == [7, 8, None] and folded.offsets == [30, 38, None]
    assert folded.to_jsonl() == b'{"a":1}\n{"b":2}\n{"c":3}\n'
    parsed = Batch.folded("j.jsonl", 2, b'{"a":1}\n{"b":2}', 1, 0)
    parsed.events = [{"a": 1}, {"b": 2}]
    parsed.insert(0, {"z": 0})
    assert len(parsed) == 3 and parsed.raws == [None, b'{"a":1}', b'{"b":2}'] and parsed.lines == [None, 1, 2]


@settings(max_examples=200, deadline=None)
@given(st.lists(lines_strategy, min_size=1, max_size=4), st.data())
def test_a_batch_folded_from_pieces_with_lines_of_its_own_keeps_the_other_columns_unmade_as_lines_are_appended(parts, data):
    """The screen's repaired run: its own lines (some changed), where each was from the batches it came in (its offsets
    made only if a stage reads them, the heal log's positions); a line appended (heal_summary's heal record) keeps it
    folded, and every column then reads as if it had been made before."""
    from replay.pipeline.engine.batch import _made

    batches = [Batch.folded("j.jsonl", len(p), b"\n".join(p), 1 + 100 * k, 1000 * k) for k, p in enumerate(parts)]
    pieces = [(b, 0, len(b)) for b in batches]
    own: list[bytes | None] = [raw + b"!" for p in parts for raw in p]
    folded = Batch.folded("j.jsonl", len(own), pieces=pieces, raws=list(own))
    read_first = data.draw(st.sets(st.sampled_from(["lines", "offsets", "pointers"])))
    for name in read_first:
        getattr(folded, name)
    folded.append_line(b'{"$record":"heal"}')
    assert folded._folded is not None and _made(folded, "offsets") == ("offsets" in read_first)
    assert len(folded) == len(own) + 1
    assert folded.to_jsonl() == b"".join(raw + b"\n" for raw in [*own, b'{"$record":"heal"}'])  # type: ignore[operator]
    assert folded.raws == [*own, b'{"$record":"heal"}']
    for name in ("lines", "offsets", "pointers"):
        assert getattr(folded, name) == [*(x for b in batches for x in getattr(b, name)), None]


@settings(max_examples=300, deadline=None)
@given(st.lists(lines_strategy, min_size=1, max_size=4), st.data())
def test_lines_of_a_folded_batch_are_cut_out_of_its_blocks_without_cutting_them_into_lines(parts, data):
    """What a writer and dedupe read of a batch the screen folded from stretches of the cutter's batches: the same
    bytes as its lines cut apart, and the blocks they come from stay uncut (a batch cut already is read as lines)."""
    from replay.pipeline.engine.batch import _made

    batches = [Batch.folded("j.jsonl", len(p), b"\n".join(p), 1 + 100 * k, 1000 * k) for k, p in enumerate(parts)]
    cut = [k for k in range(len(batches)) if data.draw(st.booleans())]
    for k in cut:
        assert batches[k].raws == parts[k]
    pieces = []
    for b in batches:
        a = data.draw(st.integers(0, len(b) - 1))
        pieces.append((b, a, data.draw(st.integers(a + 1, len(b)))))
    expected = [raw for (b, a, z), p in zip(pieces, parts, strict=True) for raw in p[a:z]]
    folded = Batch.folded("j.jsonl", len(expected), pieces=pieces)
    i = data.draw(st.integers(-len(expected), len(expected) - 1))
    assert folded.at("raws", i) == expected[i]
    numbers = [1 + 100 * k + j for k, (b, a, z) in enumerate(pieces) for j in range(a, z)]
    assert folded.at("lines", i) == numbers[i]
    offsets = [1000 * k + sum(len(raw) + 1 for raw in p[:j]) for k, ((b, a, z), p) in enumerate(zip(pieces, parts, strict=True))
               for j in range(a, z)]
    assert folded.at("offsets", i) == offsets[i]  # (where the line begins in its block: no block cut into lines for it)
    a = data.draw(st.integers(0, len(batches[0]) - 1))
    z = data.draw(st.integers(a + 1, len(batches[0])))
    assert batches[0].stretch(a, z) == b"\n".join(parts[0][a:z])
    assert folded.to_jsonl() == b"".join(raw + b"\n" for raw in expected)
    assert [k for k, b in enumerate(batches) if _made(b, "raws")] == cut
    assert not _made(folded, "raws") and folded.raws == expected
    with pytest.raises(IndexError):
        folded.at("raws", len(expected))
