"""The validation checks as plain functions: artifacts, stream records, and agreement with the schemas."""

from __future__ import annotations

import copy
import functools
from typing import Any

import orjson
import pytest
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from replay.pipeline.engine.errors import CATALOGUE
from replay.pipeline.model.artifacts import artifact_from_run
from replay.pipeline.model.events import run_record
from replay.pipeline.model.validation import EventChecker, is_rfc3339, validate_artifact

SCHEMAS = ROOT / "schemas"


@functools.cache
def validator(stem: str) -> Draft202012Validator:
    docs = [orjson.loads(p.read_bytes()) for p in sorted(SCHEMAS.glob("*.schema.json"))]
    registry = Registry().with_resources([(d["$id"], Resource.from_contents(d)) for d in docs])
    schema = orjson.loads((SCHEMAS / f"{stem}.schema.json").read_bytes())
    return Draft202012Validator(schema, registry=registry, format_checker=Draft202012Validator.FORMAT_CHECKER)


def schema_ok(stem: str, instance: Any) -> bool:
    return validator(stem).is_valid(instance)


def ev(seq: int, type_: str = "tool_called", run: str = "run_1", **more: Any) -> dict[str, Any]:
    return {"seq": seq, "timestamp": f"2026-03-01T12:00:{seq % 60:02d}.000Z", "type": type_, "runId": run, "payload": {}, **more}


_DEFAULT: Any = object()


def artifact(events: Any = _DEFAULT, **more: Any) -> dict[str, Any]:
    doc = {
        "schemaVersion": "1.0.0", "artifactType": "replay", "id": "art_1", "timestamp": "2026-03-01T12:00:00Z",
        "prompt": "p", "query": "p", "status": "ok",
        "events": [ev(1, "run_started"), ev(2, "run_completed")] if events is _DEFAULT else events,
    }
    doc.update(more)
    return doc


def codes(problems: list[dict]) -> list[str]:
    return [p["code"] for p in problems]


def stream_problems(records: list[Any], seq_order: str = "contiguous") -> list[dict]:
    checker = EventChecker(seq_order)
    return [p for r in records for p in checker.check(r)]


# artifacts --------------------------------------------------------------------------------------
def test_a_good_artifact_has_no_problems() -> None:
    assert validate_artifact(artifact()) == []


@pytest.mark.parametrize(("change", "code", "path"), [
    ({"schemaVersion": "0.9"}, "E_SCHEMA_VERSION_UNSUPPORTED", "$.schemaVersion"),
    ({"artifactType": "raw"}, "E_ARTIFACT_TYPE_INVALID", "$.artifactType"),
    ({"id": 7}, "E_ARTIFACT_ID_INVALID", "$.id"),
    ({"status": "OK"}, "E_ARTIFACT_STATUS_INVALID", "$.status"),
    ({"events": None}, "E_ARTIFACT_EVENTS_INVALID", "$.events"),
    ({"timestamp": "2026-02-30T00:00:00Z"}, "E_ARTIFACT_SHAPE_INVALID", "$.timestamp"),
    ({"sources": ["a", 1]}, "E_ARTIFACT_SHAPE_INVALID", "$.sources"),
    ({"error": {"retryable": "yes"}}, "E_ARTIFACT_SHAPE_INVALID", "$.error.retryable"),
    ({"toolCalls": [{"toolName": "t", "status": "ok", "durationMs": -1}]}, "E_ARTIFACT_SHAPE_INVALID", "$.toolCalls[0].durationMs"),
    ({"runId": ""}, "E_ARTIFACT_SHAPE_INVALID", "$.runId"),
])
def test_each_artifact_field_problem_names_its_code_and_path(change: dict, code: str, path: str) -> None:
    problems = validate_artifact(artifact(**change))
    assert [(p["code"], p["path"]) for p in problems] == [(code, path)]
    body = problems[0]
    assert body["howToFix"] and "expected" in body and "received" in body


def test_missing_fields_are_received_as_missing() -> None:
    doc = artifact()
    del doc["status"], doc["id"]
    problems = {p["code"]: p for p in validate_artifact(doc)}
    assert problems["E_ARTIFACT_STATUS_INVALID"]["received"] == "missing"
    assert problems["E_ARTIFACT_ID_INVALID"]["received"] == "missing"


def test_every_problem_of_an_artifact_is_reported_not_just_the_first() -> None:
    doc = artifact([ev(1), "oops", ev(3, type_=""), {**ev(4), "timestamp": "soon"}], artifactType="x", status=None)
    assert codes(validate_artifact(doc)) == [
        "E_ARTIFACT_TYPE_INVALID", "E_ARTIFACT_STATUS_INVALID",
        "E_ARTIFACT_EVENT_INVALID", "E_ARTIFACT_EVENT_TYPE_INVALID", "E_ARTIFACT_EVENT_TIMESTAMP_INVALID",
    ]


def test_a_non_object_artifact_is_one_shape_problem() -> None:
    for doc in ([], "artifact", 3, None):
        problems = validate_artifact(doc)
        assert codes(problems) == ["E_ARTIFACT_SHAPE_INVALID"] and problems[0]["path"] == "$"


def test_event_paths_point_into_the_events_array() -> None:
    problems = validate_artifact(artifact([ev(1), {**ev(2), "payload": []}]))
    assert [(p["code"], p["path"], p["received"]) for p in problems] == [("E_EVENT_INVALID", "$.events[1].payload", "array")]


def test_all_codes_used_are_in_the_catalogue() -> None:
    doc = artifact([ev(1), 5, {"seq": True}], id="", status=1, schemaVersion=None, artifactType=None, prompt=3)
    for body in validate_artifact(doc):
        assert body["code"] in CATALOGUE


# seq order ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("seqs", "flagged"), [
    ([1, 2, 3], []),
    ([2, 3], [0]),  # a run starts at 1
    ([1, 3, 4], [1]),  # a gap is one problem, not one per later event
    ([1, 2, 2, 3], [2]),  # a repeat
    ([1, 9, 3, 4], [1]),  # one stray seq is one problem
    ([1, 0, 3], [1]),  # a bad seq still takes its place
    ([1, "2", 3], [1]),
    ([1, 2.0, 3], [1]),  # written as a float
    ([1, True, 3], [1]),
])
def test_seq_must_go_one_by_one(seqs: list[Any], flagged: list[int]) -> None:
    problems = validate_artifact(artifact([{**ev(1), "seq": s} for s in seqs]))
    assert [p["path"] for p in problems] == [f"$.events[{i}].seq" for i in flagged]
    assert set(codes(problems)) <= {"E_ARTIFACT_EVENT_SEQ_INVALID"}


@pytest.mark.parametrize(("seqs", "seq_problems"), [
    ([1, 2], []),  # the element that is no object has no seq: 2 follows 1
    ([1, 3], []),  # or the event after it has its place's
    ([1, 4], [("$.events[2].seq", "event $.events[2] has seq 4 but follows seq 1: seq must go 1, 2, ... n in each run")]),
])
def test_an_element_that_is_no_object_has_no_seq(seqs: list[int], seq_problems: list[tuple]) -> None:
    problems = validate_artifact(artifact([ev(seqs[0], "run_started"), "oops", ev(seqs[1], "run_completed")]))
    assert [p["path"] for p in problems if p["code"] == "E_ARTIFACT_EVENT_INVALID"] == ["$.events[1]"]
    assert [(p["path"], p["message"]) for p in problems if p["code"] == "E_ARTIFACT_EVENT_SEQ_INVALID"] == seq_problems


@pytest.mark.parametrize("bad", ["x", 0, 2.0, None])
@pytest.mark.parametrize(("seqs", "seq_problems"), [
    ([1, 2], []),  # an invalid seq is no seq the next event follows: 2 follows 1
    ([1, 3], []),  # or the event after it has its place's
    ([1, 4], [("seq", "has seq 4 but follows seq 1: seq must go 1, 2, ... n in each run")]),
])
def test_an_invalid_seq_is_no_seq_to_follow_in_an_artifact_or_a_journal(bad: Any, seqs: list[int],
                                                                         seq_problems: list[tuple]) -> None:
    """[1, {"seq": "x"}, 2] was 'has seq 2 but follows seq 2': the invalid seq moved the last seq on."""
    events = [ev(seqs[0], "run_started"), {**ev(2, "user_message"), "seq": bad}, ev(seqs[1], "run_completed")]
    in_artifact = [(p["path"], p["message"]) for p in validate_artifact(artifact(events))]
    assert in_artifact == [("$.events[1].seq", in_artifact[0][1])] + [
        (f"$.events[2].{path}", f"event $.events[2] {message}") for path, message in seq_problems]
    in_journal = [(p["path"], p["message"]) for p in stream_problems(events)]
    assert in_journal == [("$.seq", in_journal[0][1])] + [(f"$.{path}", f"event {message}") for path, message in seq_problems]
    assert [p["path"] for p in stream_problems(events, "increasing")] == ["$.seq"]


@settings(max_examples=300)
@given(st.lists(st.one_of(st.integers(0, 8), st.just("x")), max_size=8))
def test_a_run_passes_exactly_when_its_seqs_are_one_to_n(seqs: list[Any]) -> None:
    problems = validate_artifact(artifact([{**ev(1), "seq": s} for s in seqs]))
    assert (problems == []) == (seqs == list(range(1, len(seqs) + 1)))


def test_a_gap_says_which_seq_was_expected() -> None:
    (problem,) = validate_artifact(artifact([ev(1), ev(2), ev(5)]))
    assert (problem["expected"], problem["received"]) == (3, 5)


def test_seq_order_increasing_allows_gaps_but_not_going_back() -> None:
    assert stream_problems([ev(1), ev(4), ev(9)], "increasing") == []
    assert codes(stream_problems([ev(1), ev(4), ev(4)], "increasing")) == ["E_ARTIFACT_EVENT_SEQ_INVALID"]
    assert stream_problems([ev(3), ev(1)], "any") == []
    with pytest.raises(ValueError):
        EventChecker("sorted")


def test_seq_restarts_with_each_run_of_a_stream() -> None:
    records = [
        run_record(runId="a", status="ok"), ev(1, run="a"), ev(2, run="a"),
        run_record(runId="b"), ev(1, run="b"),
        ev(1, run="c"), ev(2, run="c"),  # no run record: a new runId opens a run
    ]
    checker = EventChecker()
    assert [p for r in records for p in checker.check(r)] == []
    assert (checker.runs, checker.events, checker.records) == (3, 5, 7)


def test_an_event_without_run_id_stays_in_its_run() -> None:
    problems = stream_problems([ev(1), {k: v for k, v in ev(2).items() if k != "runId"}, ev(3)])
    assert [(p["code"], p["path"]) for p in problems] == [("E_EVENT_INVALID", "$.runId")]


# reserved records -----------------------------------------------------------------------------------
def test_run_record_facts_are_checked() -> None:
    record = {"$record": "run", "runId": "", "status": "fine", "artifactId": 3, "usage": {"costUsd": -2}, "timestamp": "now"}
    problems = stream_problems([record])
    assert sorted((p["code"], p["path"]) for p in problems) == [
        ("E_ARTIFACT_ID_INVALID", "$.artifactId"),
        ("E_ARTIFACT_SHAPE_INVALID", "$.runId"),
        ("E_ARTIFACT_SHAPE_INVALID", "$.timestamp"),
        ("E_ARTIFACT_STATUS_INVALID", "$.status"),
        ("E_USAGE_NOT_COUNTED", "$.usage.costUsd"),
    ]


def test_heal_records_and_unknown_records() -> None:
    assert stream_problems([{"$record": "heal", "runId": None, "repairs": 2, "byRule": {"renumber": 2}}]) == []
    problems = stream_problems([{"$record": "heal", "runId": "r", "repairs": 0, "byRule": {"x": "1"}}])
    assert sorted(p["path"] for p in problems) == ["$.byRule", "$.repairs"]
    (unknown,) = stream_problems([{"$record": "comment", "text": "hi"}])
    assert (unknown["code"], unknown["path"], unknown["received"]) == ("E_EVENT_INVALID", "$.$record", "comment")


def test_a_dropped_record_without_its_code_is_named_as_one_not_as_an_unknown_kind() -> None:
    # (parse reports a dropped record with its code again and leaves it out; one without a code reached the checks
    # as "unknown reserved record kind 'dropped'; streams carry run, heal and source records": a kind the stream has)
    (problem,) = stream_problems([{"$record": "dropped", "message": "line 3 is not valid JSON"}])
    assert (problem["code"], problem["path"], problem["received"]) == ("E_EVENT_INVALID", "$.code", "missing")
    assert "unknown" not in problem["message"]
    (unknown,) = stream_problems([{"$record": None}])
    assert '"dropped"' in unknown["message"] and '"dropped"' in unknown["expected"]


def test_a_reserved_key_inside_an_artifact_event_is_a_problem() -> None:
    problems = validate_artifact(artifact([ev(1, **{"$record": "run"})]))
    assert [(p["code"], p["path"]) for p in problems] == [("E_EVENT_INVALID", "$.events[0].$record")]


# timestamps agree with JSON Schema's date-time -------------------------------------------------------
def test_timestamp_examples() -> None:
    assert is_rfc3339("2026-03-01T12:00:00Z")
    assert is_rfc3339("2026-03-01t12:00:00.123456+05:30")
    for bad in ("2026-03-01 12:00:00Z", "2026-03-01T12:00:00", "2026-02-29T00:00:00Z", "1772366400", "", None, 17):
        assert not is_rfc3339(bad), bad


def test_a_leap_second_is_a_date_time_only_at_23_59_utc() -> None:
    """RFC 3339's leap second, as the JSON Schema test suite's date-time cases have it."""
    for leap in ("1998-12-31T23:59:60Z", "1998-12-31T15:59:60.123-08:00", "2016-12-31T23:59:60.500Z"):
        assert is_rfc3339(leap), leap
    for bad in ("1998-12-31T23:59:61Z", "1998-12-31T23:58:60Z", "1998-12-31T22:59:60Z", "1998-12-31T23:59:60-08:00"):
        assert not is_rfc3339(bad), bad


def _pad(n: int, width: int) -> str:
    return str(n).zfill(width)


timestamps = st.builds(
    lambda y, mo, d, sep, h, mi, s, frac, zone: f"{_pad(y, 4)}-{_pad(mo, 2)}-{_pad(d, 2)}{sep}{_pad(h, 2)}:{_pad(mi, 2)}:{_pad(s, 2)}{frac}{zone}",
    st.integers(0, 9999), st.integers(0, 13), st.integers(0, 32), st.sampled_from(["T", "t", " ", "_"]),
    st.integers(0, 25), st.integers(0, 61), st.integers(0, 61),
    st.sampled_from(["", ".5", ".000", ".123456789", "."]),
    st.one_of(st.sampled_from(["Z", "z", "", "+00:00", "-00:00", "UTC"]),
              st.builds(lambda sign, h, m: f"{sign}{_pad(h, 2)}:{_pad(m, 2)}", st.sampled_from("+-"), st.integers(0, 25), st.integers(0, 61))),
)


# second 60 at the hours and minutes where it is a leap second in some zone, and where it is none
second_60 = st.builds(
    lambda day, h, mi, frac, zone: f"{day}T{h}:{mi}:60{frac}{zone}",
    st.sampled_from(["2016-12-31", "2026-03-01", "2024-02-29", "2026-02-29", "0001-01-01", "9999-12-31"]),
    st.sampled_from(["23", "22", "18", "00", "05", "12"]), st.sampled_from(["59", "58", "29", "00"]),
    st.sampled_from(["", ".5", ".000", ".123456789"]),
    st.sampled_from(["Z", "z", "", "+00:00", "-00:00", "-05:00", "+01:00", "+05:30", "-04:30", "+23:59"]),
)


def leap_second_by_rfc3339(stamp: str) -> bool:
    """Second 60 where the time in UTC is 23:59 (RFC 3339 5.7 and its appendix D; the JSON Schema test suite's cases)
    of a date-time the schema takes with second 59 in its place."""
    as_59 = stamp[:17] + "59" + stamp[19:]
    if stamp[17:19] != "60" or not schema_ok("event", {**ev(1), "timestamp": as_59}):
        return False
    zone = as_59[19:].lstrip(".0123456789").upper()
    shift = 0 if zone == "Z" else (-1 if zone[0] == "+" else 1) * (int(zone[1:3]) * 60 + int(zone[4:6]))
    return (int(stamp[11:13]) * 60 + int(stamp[14:16]) + shift) % (24 * 60) == 23 * 60 + 59


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(timestamps | second_60)
def test_timestamp_check_agrees_with_the_schema_format(stamp: str) -> None:
    """The schema's date-time is RFC 3339's, leap seconds too; the checker jsonschema uses has none (rfc3339-validator:
    "Leap seconds are not supported"; jsonschema skips the test suite's leap second cases), so for second 60 RFC 3339
    decides."""
    event = {**ev(1), "timestamp": stamp}
    expected = leap_second_by_rfc3339(stamp) if stamp[17:19] == "60" else schema_ok("event", event)
    assert is_rfc3339(stamp) == expected, stamp


# events: the code says valid exactly when the schema does ------------------------------------------
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 5), st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()),
    st.text(max_size=4), st.sampled_from(["run_1", "tool_called", "2026-03-01T12:00:00Z", "2026-03-01 12:00:00Z"]),
)
json_values = st.one_of(json_scalars, st.just([]), st.just({}), st.just({"k": 1}), st.just(["x"]))
FIELDS = ("seq", "timestamp", "type", "runId", "payload", "step", "turn", "parentId", "synthetic")


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    event = ev(1)
    for key in draw(st.lists(st.sampled_from(FIELDS), unique=True, max_size=3)):
        if draw(st.booleans()):
            event.pop(key, None)
        else:
            event[key] = draw(json_values)
    return event


@settings(max_examples=500)
@given(events())
def test_event_check_agrees_with_the_event_schema(event: dict[str, Any]) -> None:
    # seq order is beyond the schema: "any" leaves only what the schema can say
    problems = EventChecker("any").check(event)
    assert (problems == []) == schema_ok("event", event), (event, problems)


@settings(max_examples=300)
@given(events(), st.sampled_from(["schemaVersion", "artifactType", "id", "status", "prompt", "query", "timestamp", "usage", "sources", "none"]),
       json_values)
def test_artifact_check_agrees_with_the_artifact_schema(event: dict[str, Any], field: str, value: Any) -> None:
    doc = artifact([event])
    if field != "none":
        doc[field] = value
    problems = validate_artifact(doc, seq_order="any")
    assert (problems == []) == schema_ok("replay-artifact", doc), (doc, problems)


@st.composite
def members(draw: st.DrawFn, names: tuple[str, ...]) -> dict[str, Any]:
    """An object of some of ``names``, each a drawn JSON value (null, a negative number, a string, ... or a count)."""
    counts = st.integers(0, 10**30) | st.floats(0, 1e6, allow_nan=False)
    chosen = draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
    return {name: draw(json_values | counts) for name in chosen}


@settings(max_examples=300)
@given(events(), members(("inputTokens", "outputTokens", "costUsd", "cacheReadTokens")),
       members(("code", "message", "retryable")))
def test_artifact_check_agrees_with_the_artifact_schema_member_by_member(event: dict[str, Any], usage: dict[str, Any],
                                                                          error: dict[str, Any]) -> None:
    """One member of ``usage`` or ``error`` at a time (a null count, a negative cost, a string code): validate says
    valid exactly when the artifact schema does."""
    doc = artifact([event])
    doc["usage"], doc["error"] = usage, error
    problems = validate_artifact(doc, seq_order="any")
    assert (problems == []) == schema_ok("replay-artifact", doc), (doc, problems)


# artifacts built by the library validate ---------------------------------------------------------------
@st.composite
def runs(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    n = draw(st.integers(0, 12))
    types = draw(st.lists(st.sampled_from(["user_message", "assistant_message", "tool_called", "tool_completed", "tool_failed"]),
                          min_size=n, max_size=n))
    events_ = [ev(i + 1, t, payload={"toolName": "search"}) for i, t in enumerate(types)]
    record = run_record(runId="run_1", timestamp="2026-03-01T12:00:00.000Z", prompt=draw(st.text(max_size=5)),
                        status=draw(st.sampled_from(["ok", "error", None])),
                        usage=draw(st.none() | st.just({"inputTokens": 1, "outputTokens": 2, "costUsd": 0.5})))
    return record, events_


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_artifact_from_run_always_validates(run: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    record, events_ = run
    doc = artifact_from_run(record, copy.deepcopy(events_))
    assert validate_artifact(doc) == []
    assert schema_ok("replay-artifact", doc)


def test_an_artifact_gives_a_call_of_unknown_length_a_duration_of_0() -> None:
    """The artifact schema asks every tool call a durationMs >= 0: a call no time tells the length of (which a report
    shows as unknown) is 0.0 there, not null."""
    timeless = [{"seq": 1, "type": "tool_called", "runId": "r", "payload": {"callId": "c", "toolName": "t"}},
                {"seq": 2, "type": "tool_completed", "runId": "r", "payload": {"callId": "c"}}]
    assert artifact_from_run(None, timeless)["toolCalls"] == [{"toolName": "t", "status": "ok", "durationMs": 0.0}]


@settings(max_examples=200)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=5), st.data())
def test_dropping_one_event_is_one_seq_problem_unless_it_was_last(run_sizes: list[int], data: st.DataObject) -> None:
    """Runs with seq 1..n validate; take one event out and exactly the event after it is flagged."""
    records: list[dict[str, Any]] = []
    for r, size in enumerate(run_sizes):
        records.append(run_record(runId=f"run_{r}"))
        records.extend(ev(s, run=f"run_{r}") for s in range(1, size + 1))
    assert stream_problems(records) == []
    positions = [i for i, rec in enumerate(records) if "$record" not in rec]
    gone = data.draw(st.sampled_from(positions))
    last_of_its_run = gone + 1 == len(records) or "$record" in records[gone + 1]
    problems = stream_problems(records[:gone] + records[gone + 1:])
    assert len(problems) == (0 if last_of_its_run else 1)
    assert set(codes(problems)) <= {"E_ARTIFACT_EVENT_SEQ_INVALID"}
