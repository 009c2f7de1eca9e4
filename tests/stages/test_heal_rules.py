"""Each heal rule alone, on plain batches, with no event loop; then all rules together."""

from __future__ import annotations

import orjson
import pytest
from heal_support import ev, events_of, heal_lines, heal_records, lines_of

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.inline import run_inline
from replay.pipeline.model.events import EPOCH
from replay.pipeline.model.runs import RunScoped, run_id_from_source
from replay.stages.alias import AliasEventTypes
from replay.stages.check_order import ReportTimestampOrder
from replay.stages.dedupe import DropAdjacentDuplicates
from replay.stages.drop_empty_fields import DropEmptyFields
from replay.stages.ensure_run_started import LOOK_AHEAD, InsertRunStarted
from replay.stages.ensure_terminal import InsertTerminalEvent
from replay.stages.fill_run_id import FillRunId
from replay.stages.fix_timestamp import FixTimestamps
from replay.stages.heal_summary import SummarizeRepairs
from replay.stages.normalize_payload import NormalizePayload
from replay.stages.pair_tool_calls import PairToolCalls
from replay.stages.parse import ParseLines
from replay.stages.renumber import NO_SEQ, RenumberSeq, stretches
from replay.stages.synthesize_assistant_message import SynthesizeAssistantMessage

RUN = {"$record": "run", "runId": "r1", "status": "ok", "response": "done", "timestamp": "2026-03-01T11:59:00.000Z"}


def one(stage, records, source="run.jsonl"):
    """Run one stage over the records in batches of two; return (records out, repairs)."""
    batches = [Batch.of(records[i:i + 2], source) for i in range(0, len(records), 2)]
    result = run_inline([stage], batches)
    return result.records, result.side.get("repairs", [])


# alias ------------------------------------------------------------------------------------------
def test_alias_maps_builtin_and_custom_names_and_logs_the_original():
    out, repairs = one(AliasEventTypes(aliases={"my_end": "run_completed"}),
                       [ev(1, "tool_end"), ev(2, "my_end"), ev(3, "tool_completed")])
    assert [e["type"] for e in out] == ["tool_completed", "run_completed", "tool_completed"]
    assert [(r["original"], r["value"]) for r in repairs] == [("tool_end", "tool_completed"), ("my_end", "run_completed")]
    assert all(r["rule"] == "alias" and r["action"] == "changed" for r in repairs)


def test_alias_custom_rules_override_builtin_and_chains_resolve():
    stage = AliasEventTypes(aliases={"tool_end": "tool_done", "tool_done": "tool_completed"})
    out, _ = one(stage, [ev(1, "tool_end")])
    assert out[0]["type"] == "tool_completed"
    out, repairs = one(AliasEventTypes(builtin=False), [ev(1, "tool_end")])
    assert out[0]["type"] == "tool_end" and repairs == []


def test_alias_ignores_non_string_types_and_records():
    out, repairs = one(AliasEventTypes(), [ev(1, ["tool_end"]), {"$record": "run", "runId": "r1", "type": "tool_end"}])
    assert out[0]["type"] == ["tool_end"] and out[1]["type"] == "tool_end" and repairs == []


def test_untouched_events_keep_their_original_bytes():
    lines = [b'{"seq": 1,  "timestamp":"2026-03-01T12:00:00Z","type":"run_started","runId":"r1","payload":{}}',
             b'{"seq":2,"timestamp":"2026-03-01T12:00:01Z","type":"tool_end","runId":"r1","payload":{}}']
    result = run_inline([ParseLines(), AliasEventTypes()], [Batch.from_lines(lines)])
    out = result.to_jsonl().splitlines()
    assert out[0] == lines[0]  # odd spacing kept: nothing changed it
    assert orjson.loads(out[1])["type"] == "tool_completed"


# normalize_payload ------------------------------------------------------------------------------------
@pytest.mark.parametrize("payload", ["text", 3, None, [1, 2], True])
def test_non_object_payload_becomes_empty_object_with_original_logged(payload):
    out, repairs = one(NormalizePayload(), [ev(1, "x", payload=payload) | {"payload": payload}])
    assert out[0]["payload"] == {}
    assert repairs[0]["original"] == payload and repairs[0]["field"] == "payload"


def test_missing_payload_is_added_in_canonical_position():
    event = {"seq": 1, "timestamp": "2026-03-01T12:00:00Z", "type": "x", "runId": "r1", "extra": 1}
    out, repairs = one(NormalizePayload(), [event])
    assert list(out[0]) == ["seq", "timestamp", "type", "runId", "payload", "extra"]
    assert "original" not in repairs[0]


# drop_empty_fields ------------------------------------------------------------------------------------
def test_fields_that_say_nothing_are_left_out_in_place_and_logged_with_their_value():
    event = ev(4, "assistant_message", payload={"text": "hi"}) | {"step": None, "turn": None, "synthetic": False,
                                                                    "extra": 1}
    out, repairs = one(DropEmptyFields(), [RUN, event, ev(5, "x") | {"synthetic": None}])
    assert out[0] == RUN
    assert list(out[1]) == ["seq", "timestamp", "type", "runId", "payload", "extra"]
    assert "synthetic" not in out[2]
    assert [(r["field"], r["original"], r["seqBefore"], r["action"]) for r in repairs] == [
        ("step", None, 4, "changed"), ("turn", None, 4, "changed"), ("synthetic", False, 4, "changed"),
        ("synthetic", None, 5, "changed")]
    assert all(r["rule"] == "drop_empty_fields" and r["runId"] == "r1" for r in repairs)


@pytest.mark.parametrize(("field", "value"), [("step", 0), ("turn", ""), ("step", {}), ("synthetic", 0),
                                              ("synthetic", True), ("synthetic", "false"), ("parentId", None)])
def test_a_field_that_says_something_or_is_another_fault_is_kept(field, value):
    event = ev(1, "x") | {field: value}
    out, repairs = one(DropEmptyFields(), [event, {"$record": "run", "runId": "r1", "step": None}])
    assert out == [event, {"$record": "run", "runId": "r1", "step": None}] and repairs == []


# fix_timestamp ----------------------------------------------------------------------------------------
def test_timestamps_converted_or_borrowed_and_originals_kept():
    records = [RUN, ev(1, "a", ts=1772366400), ev(2, "b", ts="2026-03-01T12:00:05"), ev(3, "c", ts="soon"),
               ev(4, "d", ts=None)]
    out, repairs = one(FixTimestamps(), records)
    stamps = [e["timestamp"] for e in out[1:]]
    assert stamps == ["2026-03-01T12:00:00.000Z", "2026-03-01T12:00:05.000Z", "2026-03-01T12:00:05.000Z",
                      "2026-03-01T12:00:05.000Z"]
    assert [r.get("original", "<missing>") for r in repairs] == [1772366400, "2026-03-01T12:00:05", "soon", "<missing>"]


@pytest.mark.parametrize(("written", "read"), [
    (1772366400, "2026-03-01T12:00:00.000Z"), (1772366400.25, "2026-03-01T12:00:00.250Z"),
    (1772366400250, "2026-03-01T12:00:00.250Z"), (1772366400250.0, "2026-03-01T12:00:00.250Z"),
    (1772366400250999, "2026-03-01T12:00:00.250Z"), (1772366400250999999, "2026-03-01T12:00:00.250Z"),
    (-1772366400, "1913-11-02T12:00:00.000Z"), (-1772366400250, "1913-11-02T11:59:59.750Z"),
    (-1772366400250000, "1913-11-02T11:59:59.750Z"), (-1772366400250000000, "1913-11-02T11:59:59.750Z")])
def test_an_epoch_number_is_read_in_the_unit_its_size_tells(written, read):
    # seconds, milliseconds, microseconds and nanoseconds since 1970: each converted to its own time, not the Unix
    # epoch (a microsecond count read as milliseconds is the year 58,000: no time, and the epoch was used in its place)
    out, repairs = one(FixTimestamps(), [RUN, ev(1, "a", ts=written)])
    assert out[1]["timestamp"] == read
    assert repairs[0]["original"] == written and "converted" in repairs[0]["message"]


def test_a_nanosecond_count_is_divided_exactly():
    # 2**63-1 ns (Go's and OTel's largest time): a double of it is off by a microsecond; the int division is not
    out, _ = one(FixTimestamps(), [RUN, ev(1, "a", ts=9223372036854775807)])
    assert out[1]["timestamp"] == "2262-04-11T23:47:16.854Z"
    out, _ = one(FixTimestamps(), [RUN, ev(1, "a", ts=1772366400999999999)])
    assert out[1]["timestamp"] == "2026-03-01T12:00:00.999Z"  # (milliseconds, cut as replay cuts every time)


def test_timestamp_with_nothing_to_borrow_uses_the_epoch_and_says_so():
    out, repairs = one(FixTimestamps(), [ev(1, "a", ts="??")])
    assert out[0]["timestamp"] == EPOCH and "epoch" in repairs[0]["message"]


def test_first_events_with_no_time_borrow_the_runs_first_later_time_not_the_epoch():
    records = [ev(1, "a", ts=None), ev(2, "b", ts="??"), ev(3, "c", ts=None), ev(4, "d", ts="2026-03-01T12:00:07Z"),
               ev(5, "e", ts=None)]
    lines = [orjson.dumps(r) for r in records]
    batches = [Batch.from_lines(lines[i:i + 2], "run.jsonl") for i in range(0, len(lines), 2)]
    for k, b in enumerate(batches):
        b.lines = [2 * k + 1, 2 * k + 2][:len(b.raws)]
    result = run_inline([ParseLines(), FixTimestamps()], batches)
    out, repairs = result.records, result.side["repairs"]
    assert [e["seq"] for e in out] == [1, 2, 3, 4, 5]  # order kept
    assert [e["timestamp"] for e in out] == ["2026-03-01T12:00:07Z"] * 5
    assert [(r["line"], r.get("original", "<missing>")) for r in repairs] == [(1, "<missing>"), (2, "??"),
                                                                               (3, "<missing>"), (5, "<missing>")]
    assert all(r["rule"] == "fix_timestamp" and r["action"] == "changed" and r["source"] == "run.jsonl"
               for r in repairs)
    assert repairs[0]["message"] == ("timestamp missing; no earlier time in the run to borrow; borrowed the first later "
                                     "timestamp in the run")
    assert "previous event's" in repairs[3]["message"]
    assert list(out[0]) == ["seq", "timestamp", "type", "runId", "payload"]  # in its canonical place


def test_first_events_with_no_time_borrow_a_converted_later_time():
    out, repairs = one(FixTimestamps(), [ev(1, "a", ts=None), ev(2, "b", ts=1772366400)])
    assert [e["timestamp"] for e in out] == ["2026-03-01T12:00:00.000Z"] * 2
    assert ["borrowed the first later" in r["message"] for r in repairs] == [True, False]


def test_a_run_with_no_valid_time_at_all_gets_the_epoch_and_the_next_run_is_its_own():
    records = [ev(1, "a", ts=None), ev(2, "b", ts="??"), ev(1, "a", run="r2", ts=None),
               ev(2, "b", run="r2", ts="2026-03-01T12:00:07Z")]
    out, repairs = one(FixTimestamps(), records)
    assert [(e["runId"], e["seq"], e["timestamp"]) for e in out] == [
        ("r1", 1, EPOCH), ("r1", 2, EPOCH), ("r2", 1, "2026-03-01T12:00:07Z"), ("r2", 2, "2026-03-01T12:00:07Z")]
    assert [r["message"].split("; ", 1)[1] for r in repairs] == [
        "the run has no valid time to borrow; used the Unix epoch"] * 2 + [
        "no earlier time in the run to borrow; borrowed the first later timestamp in the run"]


def test_records_after_events_waiting_for_a_time_keep_their_place():
    heal = {"$record": "heal", "runId": "r1", "repairs": 1, "byRule": {"x": 1}}
    out, _ = one(FixTimestamps(), [ev(1, "a", ts=None), heal, ev(2, "b", ts="2026-03-01T12:00:07Z")])
    assert [r.get("seq", r.get("$record")) for r in out] == [1, "heal", 2]
    assert out[0]["timestamp"] == "2026-03-01T12:00:07Z"


def test_events_waiting_for_a_time_are_bounded(monkeypatch):
    import replay.stages.fix_timestamp as fix_timestamp

    monkeypatch.setattr(fix_timestamp, "MAX_WAITING", 3)
    records = [ev(n, "x", ts=None) for n in range(1, 6)] + [ev(6, "y", ts="2026-03-01T12:00:07Z")]
    out, repairs = one(FixTimestamps(), records)
    assert [e["seq"] for e in out] == [1, 2, 3, 4, 5, 6]
    assert [e["timestamp"] for e in out] == [EPOCH] * 5 + ["2026-03-01T12:00:07Z"]
    assert "no time in the run's first 3 events to borrow; used the Unix epoch" in repairs[0]["message"]
    assert "previous event's" in repairs[3]["message"]


def test_records_waiting_behind_events_with_no_time_are_bounded_too(monkeypatch):
    """Records after an event that waits for a time wait with it: they count toward the bound, or one such event and
    a million records after it (heal records of its run, say) were all kept in memory until a time came."""
    import replay.stages.fix_timestamp as fix_timestamp

    monkeypatch.setattr(fix_timestamp, "MAX_WAITING", 3)
    heal = {"$record": "heal", "runId": "r1", "repairs": 1, "byRule": {"x": 1}}
    stage = FixTimestamps()
    records = [ev(1, "a", ts=None), heal, heal, heal, heal, ev(2, "b", ts="2026-03-01T12:00:07Z")]
    batches = [Batch.of(records[:4], "run.jsonl"), Batch.of(records[4:], "run.jsonl")]
    first = stage(batches[0])
    assert stage.run is not None and len(stage.run.state["waiting"]) < 3
    out = run_inline([FixTimestamps()], batches).records
    assert [r.get("seq", r.get("$record")) for r in out] == [1, "heal", "heal", "heal", "heal", 2]
    assert out[0]["timestamp"] == EPOCH and first is not None


def test_healed_run_whose_first_event_has_no_time_starts_at_its_first_later_time():
    result = heal_records([ev(1, "user_message", ts=None), ev(2, "run_completed", ts="2026-03-01T12:00:07.000Z")])
    events = events_of(result)
    assert [(e["type"], e["timestamp"]) for e in events] == [("run_started", "2026-03-01T12:00:07.000Z"),
                                                             ("user_message", "2026-03-01T12:00:07.000Z"),
                                                             ("run_completed", "2026-03-01T12:00:07.000Z")]
    heal = [r for r in result.records if r.get("$record") == "heal"]
    assert heal[0]["byRule"] == {"ensure_run_started": 1, "fix_timestamp": 1, "renumber": 1}


def test_first_bad_timestamp_borrows_the_run_records_time():
    out, _ = one(FixTimestamps(), [RUN, ev(1, "a", ts="??")])
    assert out[1]["timestamp"] == RUN["timestamp"]
    # a run record's time written another way (epoch seconds, no zone) is borrowed as heal reads an event's: the run
    # was dated 1970 (the Unix epoch: 'no valid time at all'), the record 2026
    for written in (1772366400, "2026-03-01 12:00:00", 1772366400000):
        out, repairs = one(FixTimestamps(), [{**RUN, "timestamp": written}, ev(1, "a", ts=None), ev(2, "b", ts="??")])
        assert [e["timestamp"] for e in out[1:]] == ["2026-03-01T12:00:00.000Z"] * 2 and len(repairs) == 2
        # and a run of no events, only its record: the events heal invents for it take that time too
        result = heal_records([{**RUN, "timestamp": written}], summary=False)
        assert [(e["type"], e["timestamp"]) for e in events_of(result)] == [
            ("run_started", "2026-03-01T12:00:00.000Z"), ("assistant_message", "2026-03-01T12:00:00.000Z"),
            ("run_completed", "2026-03-01T12:00:00.000Z")]


def test_a_leap_second_is_kept_and_one_written_another_way_becomes_rfc3339():
    records = [RUN, ev(1, "a", ts="2016-12-31T23:59:60.250Z"), ev(2, "b", ts="2016-12-31T18:59:60-05:00"),
               ev(3, "c", ts="2016-12-31 23:59:60.5Z"), ev(4, "d", ts="2016-12-31T23:59:60.75"),
               ev(5, "e", ts="2016-12-31T12:00:60Z")]
    out, repairs = one(FixTimestamps(), records)
    assert [e["timestamp"] for e in out[1:]] == ["2016-12-31T23:59:60.250Z", "2016-12-31T18:59:60-05:00",
                                                 "2016-12-31T23:59:60.500Z", "2016-12-31T23:59:60.750Z",
                                                 "2016-12-31T23:59:60.750Z"]  # (no leap second at noon: borrowed)
    assert [(r["original"], r["message"]) for r in repairs] == [
        ("2016-12-31 23:59:60.5Z", "timestamp '2016-12-31 23:59:60.5Z' is not RFC 3339; converted '2016-12-31 "
                                   "23:59:60.5Z' to RFC 3339"),
        ("2016-12-31T23:59:60.75", "timestamp '2016-12-31T23:59:60.75' is not RFC 3339; converted "
                                   "'2016-12-31T23:59:60.75' to RFC 3339"),
        ("2016-12-31T12:00:60Z", "timestamp '2016-12-31T12:00:60Z' is not RFC 3339; borrowed the previous event's "
                                 "timestamp")]


# fill_run_id ------------------------------------------------------------------------------------------
def test_missing_run_id_comes_from_run_record_then_other_events_then_file_name():
    out, repairs = one(FillRunId(), [RUN, ev(1, "a", run=None)])
    assert out[1]["runId"] == "r1" and "run record" in repairs[0]["message"]
    out, repairs = one(FillRunId(), [ev(1, "a", run="x"), ev(2, "b", run=None), ev(3, "c", run="")])
    assert [e["runId"] for e in out] == ["x", "x", "x"] and repairs[1]["original"] == ""
    out, repairs = one(FillRunId(), [ev(1, "a", run=None)], source="/logs/session_b.jsonl.gz")
    assert out[0]["runId"] == "session_b"
    assert run_id_from_source("<stdin>") == "stdin"


@pytest.mark.parametrize("batch_size", [1, 2, 5])
def test_a_run_record_without_a_run_id_takes_its_first_events_and_goes_back_before_it(batch_size):
    """A run record with no runId (or an empty one) was left as it was, and validate refused heal's output (E_ARTIFACT_
    SHAPE_INVALID): it is named as its run is, by the run's first event, else the file name; its key after $record."""
    record = {"$record": "run", "status": "ok", "runId": ""}
    records = [record, ev(1, "run_started", run="x"), ev(2, "run_completed", run="x"),
               {"$record": "run", "status": "ok"}, ev(1, "run_started", run=None), ev(2, "run_completed", run=None),
               {"$record": "run", "status": "error"}]
    batches = [Batch.of(records[i:i + batch_size], "j.jsonl") for i in range(0, len(records), batch_size)]
    result = run_inline([FillRunId()], batches)
    assert [(r.get("$record"), r["runId"]) for r in result.records] == [
        ("run", "x"), (None, "x"), (None, "x"), ("run", "j"), (None, "j"), (None, "j"), ("run", "j")]
    assert list(result.records[0]) == ["$record", "runId", "status"] and list(result.records[3])[:2] == ["$record", "runId"]
    assert [r["message"] for r in result.side["repairs"]] == [
        "run record runId was ''; took 'x' from the run's first event",
        "run record runId was missing; took 'j' from the journal's file name (j.jsonl)",
        "runId was missing; took 'j' from the journal's file name (j.jsonl)",
        "runId was missing; took 'j' from the journal's file name (j.jsonl)",
        "run record runId was missing; took 'j' from the journal's file name (j.jsonl)"]


# dedupe ----------------------------------------------------------------------------------------------
def test_exact_adjacent_duplicates_dropped_even_across_batches():
    a, b = ev(1, "a"), ev(2, "b")
    out, repairs = one(DropAdjacentDuplicates(), [a, a, b, b, b, a])
    assert out == [a, b, a]
    assert [r["action"] for r in repairs] == ["dropped"] * 3 and repairs[0]["original"] == a


def test_near_duplicates_and_duplicates_across_runs_are_kept():
    a = ev(1, "a")
    out, _ = one(DropAdjacentDuplicates(), [a, a | {"seq": 2}, RUN, a | {"seq": 2}])
    assert len(out) == 4


def test_events_whose_payloads_differ_are_no_duplicates_of_any_kind_once_their_payloads_are_made_objects():
    """Two user messages whose payloads were strings (other questions) became the same event once normalize_payload
    made each payload {}, and dedupe dropped the second as an 'exact duplicate' (its question kept only in the log),
    drop_resume_duplicates a record of the same id likewise: both run before normalize_payload. Two events written the
    same still are duplicates, payload and all."""
    records = [ev(1, "run_started"), ev(2, "user_message", payload="first question"),
               ev(2, "user_message", payload="second question"), ev(3, "user_message", payload="again"),
               ev(3, "user_message", payload="again"), ev(4, "run_completed")]
    result = heal_records(records, summary=False)
    assert [e["seq"] for e in events_of(result)] == [1, 2, 3, 4, 5] and all(e["payload"] == {} for e in events_of(result))
    [dropped] = [r for r in result.side["repairs"] if r["action"] == "dropped"]
    assert (dropped["rule"], dropped["line"], dropped["original"]["payload"]) == ("dedupe", 5, "again")
    assert [r["original"] for r in result.side["repairs"] if r["rule"] == "normalize_payload"] == [
        "first question", "second question", "again"]
    # a record written again after a resume (same id) with another payload is a notice, not a duplicate, either
    resumed = [ev(1, "run_started"), ev(2, "user_message", payload="first question", id="u1"), ev(3, "assistant_message"),
               ev(4, "user_message", payload="second question", id="u1"), ev(5, "run_completed")]
    result = heal_records(resumed, summary=False)
    assert len(events_of(result)) == 5 and not [r for r in result.side["repairs"] if r["action"] == "dropped"]
    assert [n["message"] for n in result.side["notices"]] == ["id 'u1' is used again with other content; both kept"]


def test_events_that_differ_in_a_values_json_type_or_its_digits_are_no_duplicates():
    """1, 1.0 and true are three JSON values, and 1e400 and 2e400 two (both read as infinity): dedupe dropped the second
    of such neighbours as an 'exact duplicate' (Python's == takes 1 for true and 1.0)."""
    lines = [b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r1","payload":{}}', *[
        b'{"seq":2,"timestamp":"2026-03-01T12:00:00.000Z","type":"log","runId":"r1","payload":{"v":%s}}' % v
        for v in (b"true", b"1", b"1.0", b"1e400", b"2e400", b"2e400")]]
    result = heal_lines(lines, summary=False)
    assert [r["rule"] for r in result.side["repairs"] if r["action"] == "dropped"] == ["dedupe"]  # the last 2e400 only
    assert [line.split(b'"v":')[1] for line in result.to_jsonl().splitlines()[1:-1]] == [b"true}}", b"1}}", b"1.0}}",
                                                                                         b"1e400}}", b"2e400}}"]


def test_the_first_event_of_an_input_is_no_duplicate_of_the_last_event_of_the_input_before():
    """`heal x x` of a one-event x dropped the second copy's event: read's mark (and a new file) begins another input."""
    a = ev(1, "run_started")
    mark = {"$record": "source", "source": "x.jsonl"}
    batches = [Batch.of([mark], "x.jsonl"), Batch.of([a], "x.jsonl"), Batch.of([mark], "x.jsonl"), Batch.of([a], "x.jsonl"),
               Batch.of([a], "y.jsonl"), Batch.of([a, {"$record": "source", "source": "z.jsonl"}, a], "y.jsonl")]
    result = run_inline([DropAdjacentDuplicates()], batches)
    assert result.records == [mark, a, mark, a, a, {"$record": "source", "source": "z.jsonl"}]  # (z's mark: not y's)
    assert [r["source"] for r in result.side["repairs"]] == ["y.jsonl"] * 2


# ensure_run_started -----------------------------------------------------------------------------------------
def test_run_started_inserted_only_when_run_does_not_begin_with_it():
    out, repairs = one(InsertRunStarted(), [RUN, ev(1, "tool_called"), ev(2, "x", run="r2"),
                                            ev(1, "run_started", run="r3")])
    types = [(e.get("runId"), e.get("type")) for e in out if "$record" not in e]
    assert types == [("r1", "run_started"), ("r1", "tool_called"), ("r2", "run_started"), ("r2", "x"),
                     ("r3", "run_started")]
    synthetic = [e for e in out if e.get("synthetic")]
    assert len(synthetic) == 2 and all(e["synthetic"] is True for e in synthetic)
    assert len(repairs) == 2 and repairs[0]["runId"] == "r1"


def test_run_with_no_events_gets_a_run_started():
    out, _ = one(InsertRunStarted(), [RUN])
    assert out[1]["type"] == "run_started" and out[1]["timestamp"] == RUN["timestamp"]


def test_a_runs_own_run_started_among_its_first_events_is_moved_to_its_start():
    """A run whose run_started was its second event got a synthetic one before the first: two run_started, and
    validate then warned of heal's own output. The run's own is moved (batches of two: it comes in the next batch)."""
    records = [RUN, ev(1, "user_message"), {"$record": "heal", "runId": "r1", "repairs": 1, "byRule": {"x": 1}},
               ev(2, "assistant_message"), ev(3, "run_started"), ev(4, "run_completed")]
    out, repairs = one(InsertRunStarted(), records)
    assert [e.get("type") or e["$record"] for e in out] == [
        "run", "run_started", "user_message", "heal", "assistant_message", "run_completed"]
    assert not any(e.get("synthetic") for e in out)
    [moved] = repairs
    assert (moved["action"], moved["value"]) == ("moved", "run_started") and "2 event(s) later" in moved["message"]


@pytest.mark.parametrize("ends", [True, False])
def test_a_run_without_its_own_run_started_among_its_first_events_gets_one_and_keeps_their_order(ends):
    """Past the events held (16), or at the run's end, a synthetic run_started goes first, the events in their order."""
    n = LOOK_AHEAD + 3 if not ends else 5
    records = [ev(k, "user_message" if k % 2 else "assistant_message") for k in range(1, n + 1)]
    out, repairs = one(InsertRunStarted(), [*records, ev(n + 1, "x", run="r2")] if ends else records)
    mine = [e for e in out if e["runId"] == "r1"]
    assert mine[0]["type"] == "run_started" and mine[0]["synthetic"] is True and mine[1:] == records
    assert [(r["action"], r["value"]) for r in repairs if r["runId"] == "r1"] == [("inserted", "run_started")]
    assert "began with 'user_message'" in repairs[0]["message"]


# ensure_terminal ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("status", "expected"), [("ok", "run_completed"), ("error", "run_failed")])
def test_terminal_inserted_from_run_status(status, expected):
    record = RUN | {"status": status, "error": {"code": "X", "message": "boom"}}
    out, repairs = one(InsertTerminalEvent(), [record, ev(1, "run_started"), ev(2, "x")])
    assert out[-1]["type"] == expected and out[-1]["synthetic"] is True
    assert repairs[0]["decision"] == "from run status"
    if status == "error":
        assert out[-1]["payload"] == {"error": {"code": "X", "message": "boom"}}


def test_terminal_without_run_facts_is_an_honest_failure():
    out, repairs = one(InsertTerminalEvent(), [ev(1, "run_started"), ev(2, "x")])
    assert out[-1]["type"] == "run_failed" and out[-1]["payload"]["status"] == "unknown"
    assert repairs[0]["decision"] == "inferred" and "status unknown" in repairs[0]["message"]


@pytest.mark.parametrize(("ended", "stamp"), [
    ("2026-03-01T12:00:09.500Z", "2026-03-01T12:00:09.500Z"),  # (a runner killed at its timeout: no event then)
    ("2026-03-01T11:00:00.000Z", "2026-03-01T12:00:00.000Z"),  # (before the last event: that one's time)
    ("soon", "2026-03-01T12:00:00.000Z"), (None, "2026-03-01T12:00:00.000Z")])
def test_the_inserted_end_is_when_the_run_record_says_the_run_ended(ended, stamp):
    record = RUN | {"status": "error", "timings": {"startedAt": RUN["timestamp"], "endedAt": ended}}
    out, _ = one(InsertTerminalEvent(), [record, ev(1, "run_started"), ev(2, "x")])
    assert (out[-1]["type"], out[-1]["timestamp"]) == ("run_failed", stamp)


@pytest.mark.parametrize("batch_size", [1, 2, 10])
def test_the_inserted_end_comes_after_every_event_whatever_order_they_were_written_in(batch_size):
    """The end heal inserts took the time of the event written last: a run whose last line was earlier than one before
    it ended before it had happened (a Claude Code log: ended at 11:03:01, its latest event at 11:03:30)."""
    events = [ev(1, "run_started", ts="2026-03-01T12:00:00.000Z"), ev(2, "x", ts="2026-03-01T12:00:30.000Z"),
              ev(3, "y", ts="2026-03-01T13:00:40+01:00"), ev(4, "z", ts="2026-03-01T12:00:01.000Z")]
    batches = [Batch.of(events[i:i + batch_size], "j.jsonl") for i in range(0, len(events), batch_size)]
    out = run_inline([InsertTerminalEvent()], batches).records
    assert (out[-1]["type"], out[-1]["timestamp"]) == ("run_failed", "2026-03-01T13:00:40+01:00")
    messages = run_inline([SynthesizeAssistantMessage()], [Batch.of([RUN, *events, ev(5, "run_completed")], "j.jsonl")])
    assert [e["timestamp"] for e in messages.records if e.get("type") == "assistant_message"] == ["2026-03-01T13:00:40+01:00"]


def test_an_unanswered_calls_mark_is_in_the_calls_step():
    """A mapped log numbers its events by model call (`step`, `turn`); the mark of a call that got no result had
    neither, so `replay walk` put it in a step of its own (the call id) and `--at` the call's step stopped before it."""
    call = ev(2, "tool_called", payload={"callId": "c1", "toolName": "Bash"}, step=4, turn=3)
    out, _ = one(PairToolCalls(), [ev(1, "run_started"), call, ev(3, "user_message", step=5, turn=4)])
    (mark,) = [e for e in out if e["type"] == "tool_unanswered"]
    assert (mark["step"], mark["turn"], mark["payload"]["callId"]) == (4, 3, "c1")
    bare, _ = one(PairToolCalls(), [ev(1, "run_started"), ev(2, "tool_called", payload={"callId": "c1"})])
    assert "step" not in bare[-1] and "turn" not in bare[-1]  # (a journal of replay's own: none made up)


def test_an_unanswered_calls_mark_claims_no_more_than_heal_knows():
    """The mark said "no result was recorded": of a call whose result was on a line too long to read (skipped, and
    reported), heal cannot know that. It says what it knows: none was read, and why that may be."""
    out, _ = one(PairToolCalls(), [ev(1, "run_started"), ev(2, "tool_called", payload={"callId": "c1"})])
    reason = out[-1]["payload"]["reason"]
    assert "was read" in reason and "could not be read" in reason and "recorded" not in reason


def test_terminal_not_inserted_when_present_and_each_run_gets_its_own():
    out, repairs = one(InsertTerminalEvent(), [ev(1, "run_completed"), ev(2, "late"), ev(1, "x", run="r2")])
    assert [e["type"] for e in out] == ["run_completed", "late", "x", "run_failed"]
    assert out[-1]["runId"] == "r2" and len(repairs) == 1


# synthesize_assistant_message -----------------------------------------------------------------------------
def test_assistant_message_synthesized_before_the_terminal_event():
    out, repairs = one(SynthesizeAssistantMessage(), [RUN, ev(1, "run_started"), ev(2, "run_completed")])
    assert [e.get("type") for e in out[1:]] == ["run_started", "assistant_message", "run_completed"]
    assert out[2]["payload"] == {"response": "done"} and out[2]["synthetic"] is True
    assert out[3] == ev(2, "run_completed")  # the held terminal comes back unchanged
    assert len(repairs) == 1


def test_no_assistant_message_when_one_exists_or_no_response():
    out, repairs = one(SynthesizeAssistantMessage(), [RUN, ev(1, "assistant_message"), ev(2, "run_completed")])
    assert len(out) == 3 and repairs == []
    out, repairs = one(SynthesizeAssistantMessage(), [RUN | {"response": None}, ev(1, "run_completed")])
    assert len(out) == 2 and repairs == []


def test_held_terminal_released_when_the_run_goes_on():
    out, _ = one(SynthesizeAssistantMessage(), [RUN, ev(1, "run_completed"), ev(2, "more"), ev(3, "assistant_message")])
    assert [e.get("type") for e in out[1:]] == ["run_completed", "more", "assistant_message"]


# renumber ------------------------------------------------------------------------------------------
def test_renumber_per_run_and_one_entry_per_shifted_stretch():
    records = [ev(3, "a"), ev(4, "b"), ev(5, "c"), ev(5, "d"), ev("x", "e"), ev(9, "a", run="r2")]
    out, repairs = one(RenumberSeq(), records)
    assert [e["seq"] for e in out] == [1, 2, 3, 4, 5, 1]
    assert [(r["seqBefore"], r["seqAfter"], r["count"]) for r in repairs] == [(3, 1, 3), (5, 4, 1), ("x", 5, 1), (9, 1, 1)]
    assert repairs[0]["source"] == "run.jsonl" and repairs[0]["runId"] == "r1"
    assert repairs[2]["original"] == "x"


def test_renumber_treats_booleans_as_wrong():
    out, repairs = one(RenumberSeq(), [ev(True, "a")])
    assert out[0]["seq"] == 1 and repairs


def test_renumber_stretches_on_the_seq_numbers_alone():
    """The one definition of renumber's stretches, which the stage and the screen's repair lane both use: the events
    numbered wrong, the stretches that end among them (each one repair) and the one still open after the last."""
    def spans(seqs, first=1, before=None, invented=()):
        wrong, ended, left = stretches(seqs, first, before, set(invented).__contains__, lambda k: {"k": k})
        return wrong, [(s.before, s.after, s.count, s.where["k"], s.original) for s in ended], left

    assert spans([1, 2, 3]) == ([], [], None)
    # shifted alike: one stretch; one numbered right ends it; an invented event (placeholder seq) is numbered, no repair
    wrong, ended, left = spans([1, 7, 8, 4, 9, 0], invented=[5])
    assert wrong == [1, 2, 4, 5] and ended == [(7, 2, 2, 1, False), (9, 5, 1, 4, False)] and left is None
    # a stretch open at the end goes on into the run's next events, then ends where one is numbered right
    wrong, ended, left = spans([5, 6], first=3)
    assert wrong == [0, 1] and ended == [] and (left.before, left.after, left.count) == (5, 3, 2)
    wrong, ended, left = spans([7], first=5, before=left)
    assert wrong == [0] and ended == [] and left.count == 3
    assert spans([6], first=6, before=left) == ([], [(5, 3, 3, 0, False)], None)
    # no integer: a stretch of its own (booleans too); a missing seq has no original
    assert spans([NO_SEQ, None, True, "x"])[1][:3] == [(None, 1, 1, 0, False), (None, 2, 1, 1, True), (True, 3, 1, 2, True)]


# check_order ------------------------------------------------------------------------------------------
def test_out_of_order_timestamps_reported_not_moved():
    records = [ev(1, "a", ts="2026-03-01T12:00:05Z"), ev(2, "b", ts="2026-03-01T12:00:01Z"), ev(3, "c", ts="2026-03-01T12:00:06Z")]
    stage = ReportTimestampOrder()
    batches = [Batch.of(records[i:i + 2]) for i in range(0, len(records), 2)]
    result = run_inline([stage], batches)
    assert result.records == records
    notices = result.side["notices"]
    assert [r["action"] for r in notices] == ["reported"] and notices[0]["seqBefore"] == 2
    assert "repairs" not in result.side


def order_notices(stamps: list[str], size: int = 2) -> list[str]:
    """The timestamps check_order reports as going back, ``stamps`` in batches of ``size``."""
    records = [ev(k, "a", ts=t) for k, t in enumerate(stamps, start=1)]
    result = run_inline([ReportTimestampOrder()], [Batch.of(records[i:i + size]) for i in range(0, len(records), size)])
    assert result.records == records
    return [r["value"] for r in result.side.get("notices", [])]


@pytest.mark.parametrize("size", [1, 2, 6])
def test_an_event_is_held_to_the_one_before_it_not_to_the_latest_time_so_far(size):
    # one time too far ahead is one step back after it; the events after that go forward again (each notice says
    # "earlier than the previous event's": it was one for every later event, naming a time that was not the previous)
    assert order_notices(["2026-03-01T12:00:05Z", "2026-03-01T12:00:01Z", "2026-03-01T12:00:02Z",
                          "2026-03-01T12:00:03Z", "2026-03-01T12:00:02Z"], size) == [
        "2026-03-01T12:00:01Z", "2026-03-01T12:00:02Z"]


def test_heal_does_not_report_the_terminal_event_it_adds_after_a_step_back():
    records = [ev(1, "run_started", ts="2026-03-01T12:00:05Z"), ev(2, "user_message", ts="2026-03-01T12:00:01Z")]
    notices = heal_records(records).side.get("notices", [])
    assert [(n["rule"], n["seqBefore"]) for n in notices] == [("check_order", 2)]


@pytest.mark.parametrize("size", [1, 2, 6])
def test_a_leap_second_comes_after_second_59_and_before_the_next_day_in_order_of_its_fraction(size):
    # one shape in UTC (text order is time order), and other shapes (each parsed)
    assert order_notices(["2016-12-31T23:59:59.500Z", "2016-12-31T23:59:59.999Z", "2016-12-31T23:59:60.000Z",
                          "2016-12-31T23:59:60.500Z", "2016-12-31T23:59:60.999Z", "2017-01-01T00:00:00.000Z"], size) == []
    assert order_notices(["2016-12-31T23:59:59.999999Z", "2016-12-31T23:59:60Z", "2016-12-31T18:59:60.5-05:00",
                          "2016-12-31T23:59:60.6Z", "2017-01-01T00:59:60.7+01:00", "2017-01-01T00:00:00Z"], size) == []
    assert order_notices(["2016-12-31T23:59:60.500Z", "2016-12-31T23:59:60.100Z", "2016-12-31T23:59:60.600Z",
                          "2016-12-31T23:59:59.999Z", "2017-01-01T00:00:00.000Z", "2016-12-31T23:59:60.000Z"], size) == [
        "2016-12-31T23:59:60.100Z", "2016-12-31T23:59:59.999Z", "2016-12-31T23:59:60.000Z"]
    assert order_notices(["2016-12-31T23:59:60.5Z", "2016-12-31T18:59:60.1-05:00", "2016-12-31T23:59:59.999999Z",
                          "2016-12-31T23:59:60.5Z", "2017-01-01T00:00:00Z", "2016-12-31T23:59:60.9Z"], size) == [
        "2016-12-31T18:59:60.1-05:00", "2016-12-31T23:59:59.999999Z", "2016-12-31T23:59:60.9Z"]


def test_heal_leaves_a_run_over_a_leap_second_as_it_was():
    records = [ev(1, "run_started", ts="2016-12-31T23:59:59.500Z"), ev(2, "assistant_message", ts="2016-12-31T23:59:60.250Z"),
               ev(3, "assistant_message", ts="2016-12-31T18:59:60.750-05:00"), ev(4, "run_completed", ts="2017-01-01T00:00:00.000Z")]
    result = heal_records(records)
    assert events_of(result) == records
    assert result.side.get("repairs", []) == [] and result.side.get("notices", []) == []


# heal_summary ---------------------------------------------------------------------------------------
def test_summary_counts_repairs_by_rule_and_skips_reports():
    stage = SummarizeRepairs()
    side = Batch.side([{"rule": "alias", "action": "changed", "runId": "r1", "source": "<memory>"},
                       {"rule": "renumber", "action": "renumbered", "runId": "r1", "count": 3, "source": "<memory>"},
                       {"rule": "alias", "action": "changed", "runId": "r1", "source": "other.jsonl"},
                       {"rule": "check_order", "action": "reported", "runId": "r1", "source": "<memory>"}],
                      "repairs", "<x>")
    assert stage(side) is None
    out = stage(Batch.of([RUN, ev(1, "a")]))
    tail = stage.flush()
    assert len(out) == 2
    # one per log line; the repair of a run that never came here (another file's r1) is counted at the end, not lost
    assert tail.events == [{"$record": "heal", "runId": "r1", "repairs": 2, "byRule": {"alias": 1, "renumber": 1}},
                           {"$record": "heal", "runId": "r1", "repairs": 1, "byRule": {"alias": 1}, "runDropped": True}]


def test_summary_gives_a_run_that_comes_out_of_its_place_its_repairs_and_each_vanished_run_its_record():
    """Over NATS a run can come again after later runs (a message delivered again): lines go back. Where a run begins
    after a gap in its input's lines, the repairs logged in the gap for other runs are of runs dropped whole, each
    with a heal record of its own; but not those of a run still to come in the batch (b here, lines 5-6 after c)."""
    def lined(events: list[dict], lines: list[int]) -> Batch:
        batch = Batch.of(events, "nats")
        batch.lines = list(lines)
        return batch

    def repairs(*at: tuple[str, int]) -> Batch:
        return Batch.side([{"rule": "alias", "action": "changed", "runId": rid, "source": "nats", "line": line}
                           for rid, line in at], "repairs", "nats")

    stage = SummarizeRepairs()
    out = [stage(lined([ev(1, "a", run="a"), ev(2, "a", run="a")], [1, 2]))]
    # d (line 3) and x (line 7) were dropped whole, b comes again after c
    assert stage(repairs(("d", 3), ("c", 10), ("b", 5), ("b", 6), ("x", 7), ("d", 8))) is None
    out.append(stage(lined([ev(1, "a", run="c"), ev(1, "a", run="b"), ev(2, "a", run="b")], [10, 5, 6])))
    out.append(stage.flush())
    heal = [r for batch in out if batch is not None for part in (batch if isinstance(batch, list) else [batch])
            for r in part.events if r.get("$record") == "heal"]
    record = {"$record": "heal", "repairs": 1, "byRule": {"alias": 1}}
    assert heal == [{**record, "runId": "c"}, {**record, "runId": "b", "repairs": 2, "byRule": {"alias": 2}},
                    {**record, "runId": "d", "runDropped": True}, {**record, "runId": "x", "runDropped": True},
                    {**record, "runId": "d", "runDropped": True}]


# a RunScoped detail: file boundaries end runs, and what the old run gets keeps its file -----------------------
def test_run_end_records_keep_the_source_of_the_run_they_end():
    stage = InsertTerminalEvent()
    first = stage(Batch.of([ev(1, "a")], "a.jsonl"))
    parts = stage(Batch.of([ev(1, "a")], "b.jsonl"))
    assert isinstance(parts, list)
    prefix, rest = parts
    assert prefix.source == "a.jsonl" and prefix.events[0]["type"] == "run_failed"
    assert rest.source == "b.jsonl" and first.source == "a.jsonl"
    assert isinstance(stage, RunScoped)


# all rules together ------------------------------------------------------------------------------------
def test_every_rule_at_once_on_a_broken_trace():
    records = [
        {"$record": "run", "runId": "run_1", "status": "ok", "response": "AAPL", "timestamp": "2026-03-01T12:00:00Z"},
        ev(4, "tool_start", run="run_1", payload={"tool": "db"}),
        ev(4, "tool_start", run="run_1", payload={"tool": "db"}),
        ev(9, "tool_end", run=None, ts="bad", payload="raw text"),
    ]
    result = heal_records(records, tail_open=False)
    events = events_of(result)
    assert [e["type"] for e in events] == ["run_started", "tool_called", "tool_completed", "assistant_message",
                                           "run_completed"]
    assert [e["seq"] for e in events] == [1, 2, 3, 4, 5]
    assert all(e["runId"] == "run_1" for e in events)
    heal = [r for r in result.records if r.get("$record") == "heal"]
    assert heal[0]["byRule"] == {"alias": 3, "dedupe": 1, "ensure_run_started": 1, "ensure_terminal": 1,
                                 "fill_run_id": 1, "fix_timestamp": 1, "normalize_payload": 1, "renumber": 2,
                                 "synthesize_assistant_message": 1}
    rules = {r["rule"] for r in result.side["repairs"]}
    assert rules == set(heal[0]["byRule"])


def test_torn_last_line_is_dropped_and_logged_as_a_repair():
    lines = [*lines_of([ev(1, "run_started"), ev(2, "run_completed")]), b'{"seq":3,"ty']
    result = heal_lines(lines, tail_open=True)
    assert len(events_of(result)) == 2
    torn = [r for r in result.side["repairs"] if r["rule"] == "drop_torn_line"]
    assert torn and torn[0]["offset"] == sum(len(x) + 1 for x in lines[:2]) and torn[0]["original"] == '{"seq":3,"ty'


def test_repair_mode_reports_an_invalid_last_line_that_ends_with_a_newline():
    lines = [*lines_of([ev(1, "run_started")]), b'{"half', b"", b"  "]
    stage = ParseLines(torn_tail="repair")
    result = run_inline([stage], [Batch.from_lines(lines[:2]), Batch.from_lines(lines[2:])])
    assert len(result.records) == 1
    assert [e["code"] for e in result.side["errors"]] == ["E_JSONL_LINE_INVALID"]
    assert "repairs" not in result.side


def test_repair_mode_reports_an_invalid_line_that_is_not_last():
    lines = [b'{"half', *lines_of([ev(1, "run_started")])]
    result = run_inline([ParseLines(torn_tail="repair")], [Batch.from_lines(lines[:1]), Batch.from_lines(lines[1:])])
    assert [e["code"] for e in result.side["errors"]] == ["E_JSONL_LINE_INVALID"]
    assert "repairs" not in result.side and len(result.records) == 1


def test_an_invalid_last_line_of_one_file_is_torn_only_without_its_newline():
    first = Batch.from_lines([b'{"seq":1,"type":"a"}', b'{"half'], "a.jsonl")
    second = Batch.from_lines([b'{"seq":1,"type":"b"}'], "b.jsonl")
    result = run_inline([ParseLines(torn_tail="repair")], [first, second])
    assert [(e["code"], e["source"]) for e in result.side["errors"]] == [("E_JSONL_LINE_INVALID", "a.jsonl")]
    first.tail_open = True
    result = run_inline([ParseLines(torn_tail="repair")], [first, second])
    assert [(r["rule"], r["source"]) for r in result.side["repairs"]] == [("drop_torn_line", "a.jsonl")]


def test_error_mode_keeps_the_strict_definition_of_torn():
    lines = [*lines_of([ev(1, "run_started")]), b'{"half']
    result = run_inline([ParseLines()], [Batch.from_lines(lines)])
    assert [e["code"] for e in result.side["errors"]] == ["E_JSONL_LINE_INVALID"]
    torn = Batch.from_lines(lines)
    torn.tail_open = True
    result = run_inline([ParseLines()], [torn])
    assert [e["code"] for e in result.side["errors"]] == ["E_JSONL_LINE_TORN"]


def test_repairs_are_counted_for_the_file_they_happened_in():
    """Two files with the same runId: each run's heal record counts its own repairs."""
    first = Batch.of([ev(1, "run_started", run="x"), ev(2, "run_completed", run="x")], "a.jsonl")
    second = Batch.of([ev(1, "run_started", run="x"), ev(2, "tool_end", run="x"), ev(3, "run_completed", run="x")], "b.jsonl")
    stages = [AliasEventTypes(), SummarizeRepairs()]
    result = run_inline(stages, [first, second], feed_side={1: ("repairs",)})
    heal = [(b.source, r) for b in result.batches for r in b.events if r.get("$record") == "heal"]
    assert heal == [("b.jsonl", {"$record": "heal", "runId": "x", "repairs": 1, "byRule": {"alias": 1}})]



def test_a_run_dropped_whole_in_each_of_two_inputs_of_one_name_has_its_own_heal_record():
    """`heal x x`: b's repairs waited by input name and run id, which both copies share: one heal record said 2."""
    mark = {"$record": "source", "source": "x.jsonl"}
    orphan = ev(1, "tool_completed", run="b", payload={"callId": "gone"})
    copy = [Batch.of([mark], "x.jsonl"), Batch.of([ev(1, "run_started", run="a"), orphan], "x.jsonl")]
    result = run_inline([PairToolCalls(), SummarizeRepairs()], [*copy, *copy], feed_side={1: ("repairs",)})
    heal = [r for r in result.records if r.get("$record") == "heal"]
    assert heal == [{"$record": "heal", "runId": "b", "repairs": 1, "byRule": {"pair_tool_calls": 1}, "runDropped": True}] * 2

# pair_tool_calls --------------------------------------------------------------------------------------
def test_a_terminal_event_the_run_goes_on_after_stays_where_it_was_however_the_batches_are_cut():
    """The unanswered marks go before the run's last terminal event; one the run goes on after stays in place. It used
    to wait for the marks when its run went on in the same batch (a later result for the call came before it) and
    not when the run went on in the next one: the output depended on the batching, and the heal of a healed run
    moved it again (found by the property test that heals healed journals)."""
    records = [ev(1, "run_started"), ev(2, "tool_called", payload={"callId": "c1", "toolName": "bash"}),
               ev(3, "run_failed"), ev(4, "tool_completed", payload={"callId": "c1"}),
               ev(5, "tool_called", payload={"callId": "c2", "toolName": "bash"}), ev(6, "run_failed")]
    outs = {size: [(e["type"], e["payload"].get("callId")) for e in events_of(heal_records(records, batch_size=size))]
            for size in (1, 2, 3, 4, 6)}
    assert set(map(tuple, outs.values())) == {(("run_started", None), ("tool_called", "c1"), ("run_failed", None),
                                               ("tool_completed", "c1"), ("tool_called", "c2"),
                                               ("tool_unanswered", "c2"), ("run_failed", None))}


CALL_C1 = {"callId": "c1", "toolName": "bash"}


@pytest.mark.parametrize("size", [1, 2, 3])
@pytest.mark.parametrize("after", [ev(3, "run_started"), ev(3, "tool_completed", payload={"callId": "c9"})],
                         ids=["run_started", "orphan"])
def test_the_mark_goes_before_the_end_when_what_follows_the_end_does_not_stay(size, after):
    """A call open at the run's terminal event, then a run_started (ensure_run_started moves it to the run's start) or
    an orphaned result (dropped): the mark went after it, at the run's end, and was left after the end (validate:
    E_RUN_NOT_WHOLE). The terminal event now waits with what follows it, and the mark goes right before it."""
    records = [ev(1, "tool_called", payload=CALL_C1), ev(2, "run_completed"), after]
    result = heal_records(records, batch_size=size)
    assert [e["type"] for e in events_of(result)] == ["run_started", "tool_called", "tool_unanswered", "run_completed"]
    assert heal_lines(result.to_jsonl().splitlines(), batch_size=size).side.get("repairs", []) == []


@pytest.mark.parametrize("size", [1, 2, 3, 4, 7])
def test_a_result_after_the_end_answers_its_call_and_the_calls_still_open_are_marked_before_the_end(size):
    """What follows the terminal event waits with it for the run's end: a result of an open call there answers it (no
    mark: an answered call is never marked unanswered) and stays where it is, after the end; the call that none
    answers is marked right before the end, whatever else follows it (a run_started moved to the run's start)."""
    records = [ev(1, "tool_called", payload=CALL_C1), ev(2, "tool_called", payload={"callId": "c2", "toolName": "ls"}),
               ev(3, "run_failed"), ev(4, "run_started"), ev(5, "user_message"),
               ev(6, "tool_completed", payload={"callId": "c1"}), {"$record": "heal", "runId": "r1", "repairs": 1}]
    result = heal_records(records, batch_size=size, summary=False)
    assert [(r.get("type") or r["$record"], r.get("payload", {}).get("callId")) for r in result.records] == [
        ("run_started", None), ("tool_called", "c1"), ("tool_called", "c2"), ("tool_unanswered", "c2"),
        ("run_failed", None), ("user_message", None), ("tool_completed", "c1"), ("heal", None)]
    assert [(r["rule"], r["action"], r.get("line")) for r in result.side["repairs"] if r["rule"] != "renumber"] == [
        ("pair_tool_calls", "inserted", 2), ("ensure_run_started", "moved", 4)]
    late = [ev(1, "tool_called", payload=CALL_C1), ev(2, "run_failed"), ev(3, "tool_completed", payload={"callId": "c1"})]
    assert [e["type"] for e in events_of(heal_records(late, batch_size=size))] == [
        "run_started", "tool_called", "run_failed", "tool_completed"]  # (no mark of c1: its result is right there)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 9])
def test_each_call_still_open_is_marked_before_the_first_terminal_event_it_is_open_at(size):
    """A run that ends twice: the marks went before the last terminal event, all of them; c1 was open at the first."""
    records = [ev(1, "run_started"), ev(2, "tool_called", payload=CALL_C1), ev(3, "run_failed"),
               ev(4, "tool_called", payload={"callId": "c2", "toolName": "bash"}),
               ev(5, "tool_called", payload={"callId": "c3", "toolName": "bash"}), ev(6, "tool_completed", payload={"callId": "c3"}),
               ev(7, "run_failed"), ev(8, "user_message"), ev(9, "tool_called", payload={"callId": "c4", "toolName": "bash"})]
    result = heal_records(records, batch_size=size)
    assert [(e["type"], e["payload"].get("callId")) for e in events_of(result)] == [
        ("run_started", None), ("tool_called", "c1"), ("tool_unanswered", "c1"), ("run_failed", None),
        ("tool_called", "c2"), ("tool_called", "c3"), ("tool_completed", "c3"), ("tool_unanswered", "c2"),
        ("run_failed", None), ("user_message", None), ("tool_called", "c4"), ("tool_unanswered", "c4")]
    again = heal_lines(result.to_jsonl().splitlines(), batch_size=size)
    assert again.to_jsonl() == result.to_jsonl() and again.side.get("repairs", []) == []


@pytest.mark.parametrize("size", [1, 2, 3, 8])
@pytest.mark.parametrize("bound", ["count", "bytes"])
def test_what_waits_after_the_end_is_bounded_and_decided_as_at_a_pause_past_the_bound(monkeypatch, size, bound):
    """The terminal event and what follows it wait within the bounds results waiting for their call keep (one count
    of both): past them the run's end is decided with what has come (the mark before the end; a result of the call
    marked that still comes is no orphan) and goes on where it was, whatever the batches."""
    from replay.stages import pair_tool_calls

    monkeypatch.setattr(pair_tool_calls, "MAX_WAITING" if bound == "count" else "MAX_WAITING_BYTES", 3 if bound == "count" else 400)
    records = [ev(1, "run_started"), ev(2, "tool_called", payload=CALL_C1), ev(3, "run_completed"),
               *[ev(k, "user_message", payload={"text": "x" * 60}) for k in (4, 5, 6)],
               ev(7, "tool_completed", payload={"callId": "c1"}), ev(8, "user_message")]
    result = heal_records(records, batch_size=size, summary=False)
    assert [(e["type"], e["payload"].get("callId")) for e in events_of(result)] == [
        ("run_started", None), ("tool_called", "c1"), ("tool_unanswered", "c1"), ("run_completed", None),
        *[("user_message", None)] * 3, ("tool_completed", "c1"), ("user_message", None)]
    assert [(r["rule"], r["action"]) for r in result.side["repairs"] if r["rule"] != "renumber"] == [
        ("pair_tool_calls", "inserted")]
    monkeypatch.undo()  # (within the bounds: the result answers its call)
    assert "tool_unanswered" not in [e["type"] for e in events_of(heal_records(records, batch_size=size))]


def test_what_waits_after_the_end_is_decided_when_the_input_pauses():
    """A live input that waits after the run's end (and events after it): the end is decided then, as if the run
    ended there (the mark right before the end, then what followed it), not held until the run ends."""
    first = Batch.of([ev(1, "run_started"), ev(2, "tool_called", payload=CALL_C1), ev(3, "run_completed"),
                      ev(4, "user_message")], "<stdin>")
    first.pause = True
    later = Batch.of([ev(5, "tool_completed", payload={"callId": "c1"}), ev(6, "user_message")], "<stdin>")
    result = run_inline([PairToolCalls()], [first, later])
    assert [(e["type"], e["payload"].get("callId")) for e in result.batches[0].events] == [
        ("run_started", None), ("tool_called", "c1"), ("tool_unanswered", "c1"), ("run_completed", None),
        ("user_message", None)]
    assert [(e["type"], e["payload"].get("callId")) for e in result.records[5:]] == [
        ("tool_completed", "c1"), ("user_message", None)]  # (a result of the call marked: no orphan)
    assert [r["action"] for r in result.side["repairs"]] == ["inserted"]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 6])
def test_what_goes_before_the_runs_terminal_event_goes_before_it_when_a_record_follows_it(size):
    """A run whose terminal event is followed by a record that begins no run (the heal record of an earlier heal, a
    record of a kind replay does not know): the unanswered mark and the assistant_message from the run's response go
    before the terminal event, as they do without the record, and the record stays after the terminal event. They
    went after the record, after the terminal event (the held terminal event came back before the record)."""
    old_heal = {"$record": "heal", "runId": "r1", "repairs": 1, "byRule": {"alias": 1}}
    records = [RUN, ev(1, "run_started"), ev(2, "tool_called", payload={"callId": "c1", "toolName": "bash"}),
               ev(3, "run_completed"), old_heal, {"$record": None, "note": "x"}]
    result = heal_records(records, batch_size=size)
    assert [r.get("type") or r["$record"] for r in result.records] == [
        "run", "run_started", "tool_called", "tool_unanswered", "assistant_message", "run_completed", "heal", None, "heal"]
    assert [e["seq"] for e in events_of(result)] == [1, 2, 3, 4, 5]
    assert result.records[6] == old_heal and result.records[-1]["byRule"] == {
        "pair_tool_calls": 1, "renumber": 1, "synthesize_assistant_message": 1}
    again = heal_lines(result.to_jsonl().splitlines(), batch_size=size)
    assert again.to_jsonl() == result.to_jsonl() and again.side.get("repairs", []) == []


# order_sidechains -----------------------------------------------------------------------------------
def test_a_sidechain_record_held_to_the_end_of_an_inputs_last_run_keeps_that_inputs_name():
    """Held for a parent that never came, it goes out where the next input begins: as the last input's record (it was
    labelled with the next input's name, so the per-run stages after it opened a run of that input for it, and a
    repair of the next input's run of the same id was counted in the wrong heal record)."""
    from replay.stages.order_sidechains import OrderSidechains

    side = ev(2, "user_message", payload={"sidechain": True}, parentId="p")
    batches = [Batch.of([ev(1, "run_started"), side], "a.jsonl"), Batch.of([ev(1, "run_started")], "b.jsonl")]
    stage = OrderSidechains()
    out = []
    for batch in batches:
        result = stage(batch)
        out += result if isinstance(result, list) else [result]
    tail = stage.flush()
    out += [tail] if tail is not None else []
    assert [(b.source, [e["type"] for e in b.events]) for b in out if len(b)] == [
        ("a.jsonl", ["run_started"]), ("a.jsonl", ["user_message"]), ("b.jsonl", ["run_started"])]


def test_alias_stages_made_with_the_same_options_share_one_resolved_table():
    """A run over many inputs makes the stages anew for each: the table is resolved once per set of aliases."""
    chain = {"a": "b", "b": "tool_completed"}
    assert AliasEventTypes(aliases=chain).table is AliasEventTypes(aliases=dict(chain)).table
    assert AliasEventTypes(aliases=chain).table["a"] == "tool_completed"
    assert AliasEventTypes(aliases=chain).table is not AliasEventTypes(aliases=chain, builtin=False).table


def test_repair_messages_name_json_values_never_python_ones():
    """A missing or null field, a boolean: the heal log's messages say missing / null / true, as JSON does."""
    records = [
        {"seq": 1, "runId": "r1", "payload": {}},  # no type, no timestamp
        {"timestamp": None, "type": "tool_called", "runId": None, "payload": {"callId": "c1", "toolName": "t"}},  # no seq
        {"seq": None, "timestamp": True, "type": "tool_completed", "runId": "r1", "payload": {"callId": "c1"}},
        {"seq": True, "timestamp": [1], "type": "run_completed", "runId": "r1", "payload": {}},
    ]
    messages = [r["message"] for r in heal_records(records, summary=False).side["repairs"]]
    assert "run began with an event with no type; inserted run_started before it" in messages
    assert "seq missing; set to 3" in messages
    assert "seq null is not an integer; set to 4" in messages and "seq true is not an integer; set to 5" in messages
    assert any(m.startswith("runId was null;") for m in messages)
    assert any(m.startswith("timestamp null is not RFC 3339;") for m in messages)
    assert any(m.startswith("timestamp true is not RFC 3339;") for m in messages)
    assert any(m.startswith("timestamp array is not RFC 3339;") for m in messages)
    assert not [m for m in messages if "None" in m or "True" in m or "[1]" in m]
    sidechain = [ev(1, "run_started"), ev(2, "assistant_message", payload={"sidechain": True}, parentId="p1"),  # (no id)
                 ev(3, "user_message", id="p1"), ev(4, "run_completed")]
    [moved] = [r["message"] for r in heal_records(sidechain, summary=False).side["repairs"] if r["rule"] == "order_sidechains"]
    assert moved == "a sidechain record with no id came before its parent 'p1'; moved it to just after the parent"
    renumbered = [r for r in heal_records(records, summary=False).side["repairs"] if r["rule"] == "renumber"]
    assert "original" not in renumbered[1] and renumbered[2]["original"] is None  # a missing seq had no original
