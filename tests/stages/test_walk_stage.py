"""The walk stage on lists of batches: one line per record, --at truncation, read failures, any batching."""

from __future__ import annotations

import contextlib
import os
import tempfile

import orjson
import pytest
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError, diagnostic
from replay.pipeline.engine.inline import run_inline
from replay.stages.parse import ParseLines
from replay.stages.walk import WalkRecords

WALK = FIXTURES / "walk"


def raw_batches(name: str, size: int = 128) -> list[Batch]:
    whole = Batch.from_lines((WALK / name).read_bytes().split(b"\n")[:-1], name)
    return [whole.select(range(k, min(k + size, len(whole)))) for k in range(0, len(whole), size)]


def walk(name: str, **options) -> tuple[list[bytes], dict]:
    result = run_inline([WalkRecords(**options)], raw_batches(name))
    return result.to_jsonl().splitlines(), result.side


def test_one_text_line_per_record_in_order_ending_at_the_terminal_record():
    out, side = walk("hello.jsonl")
    source = (WALK / "hello.jsonl").read_bytes().splitlines()
    assert len(out) == len(source) and side == {}
    kinds = [line.split()[0].decode() for line in out]
    assert kinds == [orjson.loads(raw)["kind"] for raw in source]
    assert out[-1].split()[-1] == b"[terminal]"
    assert [line.split()[-1].decode() for line in out] == [
        "[pending]", "[pending]", "[running]", "[succeeded]", "[pending]", "[running]", "[info]", "[succeeded]", "[terminal]",
    ]


def test_json_lines_carry_the_record_bytes_as_event():
    out, _ = walk("hello.jsonl", format="json")
    source = (WALK / "hello.jsonl").read_bytes().splitlines()
    for line, raw in zip(out, source, strict=True):
        assert b'"event":' + raw + b',"verification"' in line
        assert list(orjson.loads(line)) == ["step_id", "kind", "event", "verification", "spend"]
    objects = [orjson.loads(line) for line in out]
    assert [o["step_id"] for o in objects] == [None, "step-1", "step-1", "step-1", "step-2", "step-2", "step-2", "step-2", None]
    assert objects[3]["verification"] == {"type": "exit_code", "verdict": "ok"}
    assert objects[7]["spend"] == {"tokens_in": 812, "tokens_out": 64, "usd": 0.0031}


def test_parsed_input_gives_the_same_walk():
    result = run_inline([ParseLines(), WalkRecords(format="json")], raw_batches("interleaved.jsonl"))
    assert result.to_jsonl().splitlines() == walk("interleaved.jsonl", format="json")[0]


def test_records_from_a_document_are_rendered_from_the_parsed_record():
    record = {"type": "tool_called", "runId": "r", "payload": {"callId": "c1", "toolName": "ls"}}
    batch = Batch("a.json", [record], [None], [None], [None], ["$.events[0]"])
    out = run_inline([WalkRecords(format="json")], [batch]).to_jsonl()
    assert orjson.loads(out)["event"] == record and orjson.loads(out)["step_id"] == "c1"


# --at ---------------------------------------------------------------------------------------------------
def test_at_stops_after_the_terminal_record_of_the_step():
    out, side = walk("interleaved.jsonl", at="fetch-a")
    assert side == {}
    assert len(out) == 8  # fetch-b's records in between are shown, nothing after fetch-a's end
    assert out[-1].split()[:2] == [b"step.completed", b"fetch-a"]


def test_at_a_step_that_never_terminated_stops_at_its_last_record():
    out, side = walk("parked.jsonl", at="approve")
    assert side == {}
    assert [line.split()[0] for line in out][-2:] == [b"step.scheduled", b"step.attempt.started"]
    assert len(out) == 8  # run.parked (after the step's last record) is not shown


def test_held_records_come_back_when_the_step_shows_again():
    records = [{"kind": "step.started", "step_id": "a"}, {"kind": "step.started", "step_id": "b"},
               {"kind": "note"}, {"kind": "step.completed", "step_id": "a"}, {"kind": "after"}]
    result = run_inline([WalkRecords(at="a")], [Batch.of(records[:2]), Batch.of(records[2:3]), Batch.of(records[3:])])
    assert [r["kind"] for r in result.records] == ["step.started", "step.started", "note", "step.completed"]


def test_at_a_step_that_never_appears_shows_nothing_and_is_refused():
    """With no pre-scan (stdin), every record is held until the step shows: one that never does is refused (exit 2,
    REFUSED [step_not_found]), as in a file, with nothing shown."""
    stage = WalkRecords(at="step-9")
    shown = [stage(batch) for batch in raw_batches("hello.jsonl", size=3)]
    assert shown == [None, None, None] and stage.take("errors") == []
    with pytest.raises(ReplayError) as caught:
        stage.flush()
    assert caught.value.code == "E_STEP_NOT_FOUND" and caught.value.exit_code == 2
    assert caught.value.body["message"].startswith("REFUSED [step_not_found] ")


def test_a_tool_call_is_a_step_of_a_canonical_journal():
    records = [
        {"$record": "run", "runId": "r"},
        {"seq": 1, "type": "run_started", "runId": "r", "payload": {}},
        {"seq": 2, "type": "tool_called", "runId": "r", "payload": {"callId": "c1", "toolName": "ls"}},
        {"seq": 3, "type": "tool_called", "runId": "r", "payload": {"callId": "c2", "toolName": "cat"}},
        {"seq": 4, "type": "tool_completed", "runId": "r", "payload": {"callId": "c1"}},
        {"seq": 5, "type": "tool_completed", "runId": "r", "payload": {"callId": "c2"}},
        {"seq": 6, "type": "run_completed", "runId": "r", "payload": {}},
    ]
    result = run_inline([WalkRecords(at="c1")], [Batch.of(records)])
    assert [r["event"].get("seq") for r in result.records] == [None, 1, 2, 3, 4]


# read failures -----------------------------------------------------------------------------------------
def test_a_bad_line_ends_the_walk_with_its_byte_offset():
    out, side = walk("mid-journal-error.jsonl")
    assert len(out) == 3
    (error,) = side["errors"]
    data = (WALK / "mid-journal-error.jsonl").read_bytes()
    assert error["code"] == "E_JOURNAL_READ_FAILED" and error["refusal"] == "journal_read_failed"
    assert error["line"] == 4 and error["offset"] == sum(len(x) + 1 for x in data.split(b"\n")[:3])
    assert str(error["offset"]) in error["message"]


def test_a_cut_off_last_line_is_a_read_failure():
    batch = Batch.from_lines([b'{"kind":"run.spawned"}', b'{"kind":"step.sta'], "t.jsonl")
    batch.tail_open = True
    result = run_inline([WalkRecords()], [batch])
    assert len(result.records) == 1
    assert "cut off" in result.side["errors"][0]["message"] and result.side["errors"][0]["offset"] == 23


def test_blank_lines_are_no_records():
    result = run_inline([WalkRecords()], [Batch.from_lines([b"", b'{"kind":"a"}', b"  \r", b'{"kind":"b"}'])])
    assert [r["kind"] for r in result.records] == ["a", "b"] and result.side == {}


def test_a_json_line_that_is_no_object_ends_the_walk():
    result = run_inline([WalkRecords()], [Batch.from_lines([b'{"kind":"a"}', b"[1]", b'{"kind":"b"}'])])
    assert [r["kind"] for r in result.records] == ["a"]
    assert "not an object" in result.side["errors"][0]["message"]


def test_a_diagnostic_routed_in_ends_the_walk_where_reading_stopped():
    stage = WalkRecords()
    first = Batch.from_lines([b'{"kind":"a"}', b'{"kind":"b"}'], "j.jsonl")
    assert len(stage(first)) == 2
    side = Batch.side([diagnostic("E_INPUT_UNREADABLE", "reading 'j.jsonl' failed: Input/output error", source="j.jsonl")],
                      "errors", "<read.errors>")
    assert stage(side) is None
    assert stage(Batch.from_lines([b'{"kind":"c"}'], "j.jsonl")) is None
    (error,) = stage.take("errors")
    assert error["code"] == "E_JOURNAL_READ_FAILED" and error["cause"] == "E_INPUT_UNREADABLE"
    assert error["offset"] == 26 and error["line"] == 3 and error["source"] == "j.jsonl"


def test_a_routed_diagnostic_with_a_position_ends_the_walk_there():
    """``read`` reports a too-long line before the batch holding the lines in front of it: those still show."""
    stage = WalkRecords()
    side = Batch.side([diagnostic("E_JSONL_LINE_TOO_LONG", "line 3 is too long", source="j", line=3, offset=26)],
                      "errors", "<read.errors>")
    assert stage(side) is None and stage.take("errors") == []
    shown = stage(Batch("j", None, [b'{"kind":"a"}', b'{"kind":"b"}', b'{"kind":"d"}'], [1, 2, 4], [0, 13, 300]))
    assert [r["kind"] for r in shown.events] == ["a", "b"]
    (error,) = stage.take("errors")
    assert (error["line"], error["offset"], error["cause"]) == (3, 26, "E_JSONL_LINE_TOO_LONG")
    late = WalkRecords()
    late(Batch("j", None, [b'{"kind":"a"}'], [1], [0]))
    late(side)
    late.flush()
    assert late.take("errors")[0]["offset"] == 26  # nothing came after it: reported at the end


def test_an_unreadable_first_record_of_an_input_no_prescan_read_is_refused():
    """On stdin (no pre-scan) a first record that cannot be read, nothing printed, is refused as a file's is before
    the run: E_JOURNAL_READ_FAILED, exit 2; after a line went out, it ends the walk (exit 1)."""
    side = Batch.side([diagnostic("E_JSONL_LINE_TOO_LONG", "line 3 is too long", source="j", line=3, offset=26)],
                      "errors", "<read.errors>")
    for stage in (WalkRecords(), WalkRecords(at="s")):
        stage(side)
        with pytest.raises(ReplayError) as refusal:
            stage.flush()
        assert (refusal.value.code, refusal.value.exit_code, refusal.value.body["offset"]) == (
            "E_JOURNAL_READ_FAILED", 2, 26)
    with pytest.raises(ReplayError) as refusal:
        WalkRecords(at="s")(Batch("j", None, [b'{"kind":', b'{"kind":"a","step_id":"s"}'], [1, 2], [0, 9]))
    assert (refusal.value.code, refusal.value.body["line"]) == ("E_JOURNAL_READ_FAILED", 1)


# any batching -------------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["hello.jsonl", "parked.jsonl", "interleaved.jsonl", "mid-journal-error.jsonl"]),
       st.integers(min_value=1, max_value=5), st.sampled_from(["", "step-1", "build", "approve", "fetch-a", "merge"]),
       st.sampled_from(["text", "json"]))
def test_how_records_are_batched_does_not_change_the_walk(name, size, at, fmt):
    def outcome(batches: list[Batch]) -> tuple:
        try:
            result = run_inline([WalkRecords(format=fmt, at=at)], batches)
        except ReplayError as exc:  # a step in none of it: refused
            return ("refused", exc.body)
        return (result.to_jsonl(), result.side)

    assert outcome(raw_batches(name, size)) == outcome(raw_batches(name))


def test_the_same_journal_walks_to_the_same_bytes():
    for fmt in ("text", "json"):
        assert walk("interleaved.jsonl", format=fmt) == walk("interleaved.jsonl", format=fmt)


def test_unknown_format_is_refused():
    with pytest.raises(TypeError):
        WalkRecords(colour=True)
    assert WalkRecords.options["format"].check("yaml") is not None


def test_after_the_pre_scan_nothing_is_held_back():
    """preflight finds where the walk ends, so records between the step's sightings go straight out."""
    path = str(WALK / "interleaved.jsonl")
    stage = WalkRecords(at="fetch-a")
    stage.preflight([path])
    shown = 0
    for batch in raw_batches("interleaved.jsonl", size=1):
        batch.source = path
        out = stage(batch)
        assert not stage.held
        shown += len(out) if out is not None else 0
    assert shown == 8 and stage.done


def test_preflight_refuses_a_step_in_no_input_and_an_unreadable_first_record():
    with pytest.raises(ReplayError) as caught:
        WalkRecords(at="nope").preflight([str(WALK / "hello.jsonl")])
    assert caught.value.code == "E_STEP_NOT_FOUND" and caught.value.body["refusal"] == "step_not_found"
    with pytest.raises(ReplayError) as caught:
        WalkRecords().preflight([str(WALK / "bad-first-record.jsonl")])
    assert caught.value.code == "E_JOURNAL_READ_FAILED" and caught.value.body["offset"] == 0
    WalkRecords(at="nope").preflight(["-"])  # stdin cannot be pre-scanned: decided at the end instead


def test_a_walk_after_a_stage_that_makes_records_does_not_pre_scan_the_files():
    """After dialect (or heal) the records are no longer the file's lines: preflight leaves the file alone, and `at`
    is found in the records the walk is given, held until the step shows (as on stdin)."""
    from replay.stages.dialect import MapDialect
    from replay.stages.read import ReadJournal

    after_read, after_parse, after_dialect = WalkRecords(at="nope"), WalkRecords(at="nope"), WalkRecords(at="nope")
    after_read.wired([ReadJournal()])
    after_parse.wired([ParseLines()])  # (parse's records are the file's lines, one for one: pre-scanned)
    after_dialect.wired([MapDialect()])
    assert (after_read.config["prescan"], after_parse.config["prescan"], after_dialect.config["prescan"]) == (True, True, False)
    assert after_dialect.fresh().config["prescan"] is False  # (the copy a run executes)
    for stage in (after_read, after_parse):
        with pytest.raises(ReplayError):
            stage.preflight([str(WALK / "hello.jsonl")])
    after_dialect.preflight([str(WALK / "hello.jsonl")])
    WalkRecords(prescan=False).preflight([str(WALK / "bad-first-record.jsonl")])
    with pytest.raises(ReplayError) as caught:
        run_inline([WalkRecords(at="nope", prescan=False)], raw_batches("hello.jsonl"))
    assert caught.value.code == "E_STEP_NOT_FOUND" and caught.value.body["source"] == "hello.jsonl"
    assert "never appears in 'hello.jsonl'" in caught.value.body["message"]


def temp_files() -> set[str]:
    """The temporary files this process has open (unnamed: ``/tmp/#123 (deleted)``)."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(tempfile.gettempdir() + os.sep) and target.endswith(" (deleted)"):
                found.add(target)
    return found


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_records_held_on_stdin_go_to_a_file_past_the_spools_bound_and_come_back_as_they_were(monkeypatch, fmt):
    """Without a pre-scan (stdin) the walk holds every record until the `at` step shows: in a spool, whose memory is
    bounded (past it, a temporary file), so a journal larger than memory can be held; what comes back out is what
    holding them in memory gave: the same lines, positions and {step_id, kind, event, verification, spend}."""
    from replay.pipeline.report import spool  # (the walk holds them in the report's ByteSpool)

    lines = [b'{"kind":"run.spawned","run_id":"r"}']
    for n in range(400):  # other steps' records, before the step shows: spend, verdicts, exact numbers, non-ASCII
        lines.append(orjson.dumps({"kind": "step.completed", "step_id": f"s{n}", "usage": {"tokens": n, "cost": n / 10},
                                   "verification": {"type": "exit_code", "verdict": "ok"}, "note": "é" * (n % 7)})
                     .replace(b'"tokens":', b'"big":123456789012345678901234567890,"tokens":'))
        lines.append(b'  {"kind":"step.started","step_id":"s%d","x":3.14159265358979323846}\t' % n)
    lines += [b'{"kind":"step.started","step_id":"at"}', b'{"kind":"run.note","n":1}', b'{"kind":"step.completed","step_id":"at"}']

    def run(bound: int | None) -> tuple[list[Batch], bool]:
        if bound is not None:
            monkeypatch.setattr(spool, "IN_MEMORY", bound)
        stage, out, spilled = WalkRecords(at="at", format=fmt), [], False
        whole = Batch.from_lines(lines, "<stdin>")
        before = temp_files()
        for k in range(0, len(whole), 50):
            got = stage(whole.select(range(k, min(k + 50, len(whole)))))
            spilled = spilled or bool(temp_files() - before)
            for part in got if isinstance(got, list) else [got] if got is not None else []:
                out.extend([part] if isinstance(part, Batch) else part)  # (held records come back lazily)
        tail = stage.flush()
        assert tail is None and stage.done
        return out, spilled

    in_memory, spilled = run(None)
    assert not spilled
    spooled, spilled = run(4096)
    assert spilled and len(spooled) > 1  # (given back a piece of the spool at a time)
    columns = [(b.events, b.raws, b.lines, b.offsets, b.pointers) for b in in_memory]
    flat = [[x for batch in part for x in batch] for part in zip(*columns, strict=True)]
    columns = [(b.events, b.raws, b.lines, b.offsets, b.pointers) for b in spooled]
    assert [[x for batch in part for x in batch] for part in zip(*columns, strict=True)] == flat
    assert len(flat[1]) == len(lines)
    event = next(e for e in flat[0] if e["step_id"] == "s13")["event"]
    assert event["usage"]["big"] == 123456789012345678901234567890 and event["note"] == "é" * 6
