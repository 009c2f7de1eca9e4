"""The dialect and undialect stages: detection per input, replay's own records untouched, the run record first,
and reading a dialect then writing it back gives the input back (corpus attribution: fixtures/corpus/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from dialect_support import CORPUS, CORPUS_FILES, batches_of, events, heal_dialect, read_dialect
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.inline import run_inline
from replay.pipeline.model.dialects import ORIGIN_KEY
from replay.stages.dialect import HOLD_EVENTS, MapDialect
from replay.stages.parse import ParseLines
from replay.stages.undialect import WriteDialect


def round_trip(data: bytes, source: str, dialect: str = "auto") -> list[Any]:
    """read --dialect X | write --dialect X, through the JSONL text in between."""
    read = read_dialect(data, source, dialect)
    return run_inline([ParseLines(), WriteDialect(dialect=dialect)], batches_of(read.to_jsonl(), "<stdin>")).records


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_reading_and_writing_a_dialect_back_gives_the_input_back(path: Path):
    data = path.read_bytes()
    back = round_trip(data, str(path))
    if path.suffix == ".json":
        assert back == [orjson.loads(data)]  # the whole document, keys in their order
        assert list(back[0]) == list(orjson.loads(data)) if isinstance(back[0], dict) else True
    else:
        wanted = []
        for line in data.splitlines():
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(value, dict):
                wanted.append(value)
        assert back == wanted


def test_a_trajectory_object_is_read_record_by_record_and_written_back_whole():
    messages = orjson.loads((CORPUS / "mini-swe-agent" / "github_issue.traj.json").read_bytes())
    document = {"info": {"exit_status": "LimitsExceeded", "submission": "", "model_stats": {"instance_cost": 0.5},
                         "config": {"model": {"model_name": "m1"}}},
                "messages": messages, "trajectory_format": "mini-swe-agent-1"}
    data = orjson.dumps(document)
    read = read_dialect(data, "run.traj.json")
    run = read.records[0]
    assert (run["status"], run["error"]["code"], run["model"], run["usage"]) == ("error", "LimitsExceeded", "m1", {"costUsd": 0.5})
    assert events(read)[0][ORIGIN_KEY]["record"] == messages[0]
    assert round_trip(data, "run.traj.json") == [document]


def test_replay_journals_pass_through_byte_for_byte():
    lines = [b'{"seq": 1, "timestamp":"2026-03-01T12:00:00Z","type":"run_started","runId":"r1","payload":{}}',
             b'{"seq":2,"timestamp":"2026-03-01T12:00:01Z","type":"user","runId":"r1","payload":{}}']
    result = run_inline([ParseLines(), MapDialect()], [Batch.from_lines(lines, "run.jsonl")])
    assert result.to_jsonl() == b"\n".join(lines) + b"\n"
    assert result.side == {}


def test_each_input_is_detected_on_its_own():
    claude = (CORPUS / "claude-code" / "session_b.jsonl").read_bytes().splitlines()
    codex = (CORPUS / "codex" / "rollout-66666666-6666-4666-8666-666666666666.jsonl").read_bytes().splitlines()[:2]
    own = [b'{"seq":1,"timestamp":"2026-03-01T12:00:00Z","type":"run_started","runId":"r1","payload":{}}']
    batches = [Batch.from_lines(claude, "a.jsonl"), Batch.from_lines(own, "b.jsonl"), Batch.from_lines(codex, "c.jsonl")]
    result = run_inline([ParseLines(), MapDialect()], batches)
    runs = [r for r in result.records if r.get("$record") == "run"]
    assert [(r["framework"], r["runId"]) for r in runs] == [("claude-code", "session_b"),
                                                            ("codex", "66666666-6666-4666-8666-666666666666")]
    assert orjson.loads(own[0]) in result.records


def test_a_named_dialect_that_does_not_fit_is_reported_and_still_mapped():
    data = (CORPUS / "codex" / "rollout-66666666-6666-4666-8666-666666666666.jsonl").read_bytes()
    result = read_dialect(b"\n".join(data.splitlines()[:2]) + b"\n", "rollout.jsonl", "claude-code")
    (error,) = result.side["errors"]
    assert (error["code"], error["expected"], error["received"], error["line"]) == ("E_DIALECT_MISMATCH", "claude-code", "codex", 1)
    assert [e["type"] for e in events(result)] == ["session_meta", "event_msg"]  # unknown to claude-code: own types


def test_the_run_record_waits_for_the_prompt_then_events_flow():
    summary = {"type": "summary", "summary": "s", "leafUuid": "u0"}
    prompt = {"type": "user", "uuid": "u1", "sessionId": "s1", "timestamp": "2026-01-01T00:00:00Z",
              "message": {"role": "user", "content": "hi"}}
    stage = MapDialect()
    first = stage(Batch.of([summary], "s.jsonl"))
    assert first is None or len(first) == 0 or not first.events  # held: the run record is not known yet
    out = stage(Batch.of([prompt], "s.jsonl"))
    records = out.events
    assert records[0]["$record"] == "run" and records[0]["runId"] == "s1" and records[0]["prompt"] == "hi"
    assert [e["runId"] for e in records[1:]] == ["s1", "s1"]


def test_a_log_without_a_prompt_opens_its_run_after_hold_events():
    records = [{"type": "summary", "summary": str(k), "leafUuid": "x"} for k in range(HOLD_EVENTS + 5)]
    result = run_inline([MapDialect(dialect="claude-code")], [Batch.of(records[k:k + 100], "s.jsonl") for k in range(0, len(records), 100)])
    assert result.batches[0].events[0]["$record"] == "run"
    assert len(result.batches[0].events) == HOLD_EVENTS + 1  # the run record and the events that waited
    assert len(events(result)) == len(records)


# property: whatever Claude-like records come in, each is kept once and comes back out -----------------------
_text = st.text(max_size=20)
_block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": _text}),
    st.fixed_dictionaries({"type": st.just("tool_use"), "id": st.sampled_from(["t1", "t2", "t3"]), "name": _text,
                           "input": st.dictionaries(st.sampled_from(["a", "b"]), _text, max_size=2)}),
    st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": st.sampled_from(["t1", "t2", "t9"]),
                           "content": _text, "is_error": st.booleans()}),
    st.fixed_dictionaries({"type": st.sampled_from(["image", "thinking", "server_tool_use"])}),
    _text,
)
_record = st.one_of(
    st.fixed_dictionaries({
        "type": st.sampled_from(["user", "assistant"]), "uuid": st.sampled_from(["a", "b", "c", "d"]),
        "parentUuid": st.sampled_from([None, "a", "b"]), "sessionId": st.just("s"),
        "isSidechain": st.booleans(), "timestamp": st.sampled_from(["2026-01-01T00:00:00Z", "nope"]),
        "message": st.one_of(
            st.fixed_dictionaries({"role": st.just("user"), "content": st.one_of(_text, st.lists(_block, max_size=4))}),
            st.fixed_dictionaries({"id": st.sampled_from(["m1", "m2"]), "content": st.lists(_block, max_size=4),
                                   "usage": st.just({"input_tokens": 1})}),
            _text,
        ),
    }),
    st.fixed_dictionaries({"type": st.sampled_from(["summary", "system", "file-history-snapshot", "future"]),
                           "uuid": st.just("z")}),
    st.dictionaries(st.sampled_from(["silly", "x"]), _text, max_size=2),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_record, max_size=12), st.integers(min_value=1, max_value=5))
def test_property_no_record_is_lost_and_writing_back_restores_them(records, size):
    data = b"".join(orjson.dumps(r) + b"\n" for r in records)
    read = run_inline([ParseLines(), MapDialect(dialect="claude-code")], batches_of(data, "s.jsonl", size))
    kept = {e[ORIGIN_KEY]["index"]: e[ORIGIN_KEY]["record"] for e in events(read)}
    assert [kept[k] for k in sorted(kept)] == records
    assert [e["seq"] for e in events(read)] == list(range(1, len(events(read)) + 1))
    back = run_inline([ParseLines(), WriteDialect()], batches_of(read.to_jsonl(), "<stdin>", size)).records
    assert back == records


def test_an_input_two_dialects_claim_is_reported_and_passed_through():
    record = {"id": 1, "action": "message", "role": "user", "content": "hi"}  # OpenHands and mini-swe-agent keys
    batch = Batch.from_lines([orjson.dumps(record)], "both.json")
    result = run_inline([ParseLines(), MapDialect()], [batch])
    (error,) = result.side["errors"]
    assert error["code"] == "E_DIALECT_AMBIGUOUS" and error["received"] == ["openhands", "mini-swe-agent"]
    assert result.records == [record]


# Codex rollouts holding more than one session_meta (codex-rs core/src/rollout/recorder.rs) -------------------------
ROLLOUT = CORPUS / "codex" / "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"
PARENT = "11111111-1111-4111-8111-111111111111"
CHILD = "22222222-2222-4222-8222-222222222222"


def _trajectory(exit_status: str, tag: str, **top: Any) -> dict[str, Any]:
    """A mini-swe-agent trajectory document of the corpus messages, each text marked with ``tag``."""
    messages = orjson.loads((CORPUS / "mini-swe-agent" / "github_issue.traj.json").read_bytes())
    marked = [{**m, "content": f"{m['content']} {tag}"} if isinstance(m.get("content"), str) else m for m in messages]
    return {"info": {"exit_status": exit_status, "submission": tag}, "messages": marked,
            "trajectory_format": "mini-swe-agent-1", **top}


def test_a_file_of_trajectories_one_a_line_is_a_run_each_and_written_back_line_by_line():
    """A dataset of mini-swe-agent runs (a trajectory document per line): each line its own run, with its own run
    record (its status from its own info), ids the file's name then `-2`, ..., seq from 1, origins indexed in its
    own messages; written back, the same lines. (Before, the second line was one `unknown` event of the first run.)"""
    docs = [_trajectory("Submitted", "#0"), _trajectory("LimitsExceeded", "#1"), _trajectory("Submitted", "#2")]
    data = _jsonl(docs)
    read = read_dialect(data, "trajs.jsonl")
    runs = _runs(read.records)
    assert [(run["runId"], run["status"], run["response"]) for run, _ in runs] == [
        ("trajs", "ok", "#0"), ("trajs-2", "error", "#1"), ("trajs-3", "ok", "#2")]
    for k, (run, evs) in enumerate(runs):
        assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1)) and {e["runId"] for e in evs} == {run["runId"]}
        assert len(evs) == len(runs[0][1]) and "unknown" not in [e["type"] for e in evs]
        assert evs[0][ORIGIN_KEY]["index"] == 0 and evs[0][ORIGIN_KEY]["record"] == docs[k]["messages"][0]
    assert round_trip(data, "trajs.jsonl") == docs


def test_a_trajectory_that_names_its_instance_is_the_run_of_that_id():
    docs = [_trajectory("Submitted", "#0", instance_id="django__django-11099"),
            _trajectory("Submitted", "#1", instance_id="sympy__sympy-20590"), _trajectory("Submitted", "#2")]
    runs = _runs(read_dialect(_jsonl(docs), "preds.jsonl").records)
    assert [run["runId"] for run, _ in runs] == ["django__django-11099", "sympy__sympy-20590", "preds"]
    assert [run["runId"] for run, _ in _runs(read_dialect(_jsonl(docs[:1] * 2), "same.jsonl").records)] == [
        "django__django-11099", "django__django-11099-2"]  # (runs of one input never share an id)


def _rollout() -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in ROLLOUT.read_bytes().splitlines()]


def _later(record: dict[str, Any], at: str, **payload: Any) -> dict[str, Any]:
    """A record of the corpus rollout's shape written at another time (and with other payload fields)."""
    return {**record, "timestamp": at, "payload": {**record["payload"], **payload}}


def _runs(records: list[Any]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each run record with the events after it."""
    runs: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    for record in records:
        if record.get("$record") == "run":
            runs.append((record, []))
        elif "$record" not in record:
            runs[-1][1].append(record)
    return runs


def _jsonl(records: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def test_a_codex_session_meta_of_another_session_begins_a_run_of_its_own():
    """Two rollouts written one after another into one file (the corpus rollout, then the other corpus rollout's
    lines): two runs, each with its own run record, run_started, runId and seq from 1, written back as they were."""
    other = [orjson.loads(line) for line in
             (CORPUS / "codex" / "rollout-66666666-6666-4666-8666-666666666666.jsonl").read_bytes().splitlines()[:2]]
    records = _rollout() + other
    read = read_dialect(_jsonl(records), "rollouts.jsonl")
    runs = _runs(read.records)
    assert [run["runId"] for run, _ in runs] == [PARENT, "66666666-6666-4666-8666-666666666666"]
    assert runs[1][0]["prompt"] == "Safe line before malformed input."
    for run, evs in runs:
        assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
        assert {e["runId"] for e in evs} == {run["runId"]}
        assert [e["type"] for e in evs].count("run_started") == 1 and evs[0]["type"] == "run_started"
    assert [len(evs) for _, evs in runs] == [len(records) - 2, 2]
    assert round_trip(_jsonl(records), "rollouts.jsonl") == records
    # the first run still waiting for its prompt when the next begins: its run record and events go out first
    runs = _runs(read_dialect(_jsonl(records[:2] + other), "rollouts.jsonl").records)
    assert [(run["runId"], [e["seq"] for e in evs]) for run, evs in runs] == [(PARENT, [1, 2]), (other[0]["payload"]["id"], [1, 2])]


def test_a_forked_codex_rollout_is_one_run_that_holds_its_parents_lines():
    """A fork's file opens with its own session_meta (forked_from_id), then the parent's lines copied in, the parent's
    session_meta first: one run, the fork's, whose parent meta is a session_meta event, not a second run_started.
    The parent's own rollout written after it is a run of its own (its meta comes after the fork's other records)."""
    parent = _rollout()
    fork_meta = _later(parent[0], "2026-01-02T04:00:00.000Z", id=CHILD, forked_from_id=PARENT)
    own = [_later(parent[2], "2026-01-02T04:00:05.000Z", message="Now list the hidden ones."),
           _later(parent[12], "2026-01-02T04:00:06.000Z")]
    fork = [fork_meta, *parent, *own]
    runs = _runs(read_dialect(_jsonl(fork), "fork.jsonl").records)
    [(run, evs)] = runs
    assert run["runId"] == CHILD
    assert [(e["seq"], e["type"], e["payload"]["id"]) for e in evs[:2]] == [(1, "run_started", CHILD), (2, "session_meta", PARENT)]
    assert [e["type"] for e in evs].count("run_started") == 1
    assert [e["seq"] for e in evs] == list(range(1, len(fork) + 1)) and {e["runId"] for e in evs} == {CHILD}
    assert round_trip(_jsonl(fork), "fork.jsonl") == fork

    runs = _runs(read_dialect(_jsonl(fork + parent), "fork-then-parent.jsonl").records)
    assert [(run["runId"], len(evs)) for run, evs in runs] == [(CHILD, len(fork)), (PARENT, len(parent))]
    assert runs[1][1][0]["type"] == "run_started" and runs[1][1][0]["seq"] == 1


def test_a_codex_session_meta_of_the_same_session_again_goes_on_with_the_run():
    """The run's own session_meta written again (a resumed session, later): the run goes on, the meta a session_meta
    event in its place, no second run_started; heal has nothing to say of it (it ends the run, as for any log that
    stops without a terminal event)."""
    first = _rollout()
    again = [_later(first[0], "2026-01-03T00:00:00.000Z", timestamp="2026-01-03T00:00:00.000Z"),
             _later(first[2], "2026-01-03T00:00:01.000Z", message="And the hidden ones?"),
             _later(first[12], "2026-01-03T00:00:02.000Z")]
    healed = heal_dialect(_jsonl(first + again), "resumed.jsonl")
    [(run, evs)] = _runs(healed.records)
    assert run["runId"] == PARENT
    assert [e["type"] for e in evs].count("run_started") == 1
    assert [(e["seq"], e["type"]) for e in evs[len(first):]] == [(15, "session_meta"), (16, "event_msg.user_message"),
                                                                   (17, "assistant_message"), (18, "run_failed")]
    assert {e["runId"] for e in evs} == {PARENT}
    assert [r["rule"] for r in healed.side["repairs"]] == ["ensure_terminal"]


# one input holding two dialects: read as the dialect of its first records, the other's lines reported --------------
CLAUDE_SESSION = CORPUS / "claude-code" / "representative_messages.jsonl"


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_no_line_of_a_corpus_log_is_taken_for_another_dialects(path: Path):
    assert "notices" not in read_dialect(path.read_bytes(), str(path)).side


@pytest.mark.parametrize("size", [1, 4, 1000])
def test_a_codex_rollout_after_a_claude_code_session_in_one_file_is_reported_at_its_first_line(size: int):
    """A Claude Code session with a Codex rollout written after it: the input is claude-code (its first records), so
    the rollout's lines are mapped as claude-code records (kept whole), but not in silence: the first of them is
    reported (E_DIALECT_MISMATCH, a notice: a warning), with its line and offset, once for the stretch."""
    claude, codex = CLAUDE_SESSION.read_bytes().rstrip(b"\n") + b"\n", ROLLOUT.read_bytes()
    data = claude + codex
    read = run_inline([ParseLines(), MapDialect()], batches_of(data, "both.jsonl", size))
    runs = _runs(read.records)
    assert [run["framework"] for run, _ in runs] == ["claude-code"]
    (note,) = read.side["notices"]
    first = len(claude.splitlines()) + 1
    assert (note["code"], note["action"], note["line"], note["offset"], note["expected"], note["received"]) == (
        "E_DIALECT_MISMATCH", "reported", first, len(claude), "claude-code", "codex")
    assert f"line {first} of 'both.jsonl' is a codex record" in note["message"] and note["howToFix"]
    assert [e[ORIGIN_KEY]["record"] for e in events(read)][-1] == orjson.loads(codex.splitlines()[-1])  # nothing lost


@pytest.mark.parametrize("size", [1, 4, 1000])
def test_claude_code_lines_after_replays_own_events_are_reported_and_passed_on_as_they_are(size: int):
    """Replay's own journal with a Claude Code session after it: the input is replay's own and passes through
    byte for byte (the fast way, a batch at a time, too), but the first Claude Code line is reported; so is replay's
    own event written into a Claude Code log."""
    own = [b'{"seq":1,"timestamp":"2026-03-01T12:00:00Z","type":"run_started","runId":"r1","payload":{}}',
           b'{"seq":2,"timestamp":"2026-03-01T12:00:01Z","type":"run_completed","runId":"r1","payload":{}}']
    claude = CLAUDE_SESSION.read_bytes().splitlines()
    data = b"\n".join(own + claude + own) + b"\n"
    read = run_inline([ParseLines(), MapDialect()], batches_of(data, "run.jsonl", size))
    assert read.to_jsonl() == data
    assert [(n["line"], n["expected"], n["received"]) for n in read.side["notices"]] == [
        (3, "canonical", "claude-code")]  # the own events after them are the input's: nothing to say

    read = run_inline([ParseLines(), MapDialect()], batches_of(b"\n".join(claude + own) + b"\n", "session.jsonl", size))
    assert [(n["line"], n["expected"], n["received"]) for n in read.side["notices"]] == [
        (len(claude) + 1, "claude-code", "canonical")]
    assert "replay's own event" in read.side["notices"][0]["message"]


def test_other_dialects_lines_among_replays_own_events_are_reported_whatever_the_batches():
    """A Claude Code line, and then two Codex lines, in the middle of replay's own journal: the first line of each
    stretch is reported at its line and offset however read cut the batches (a later batch that begins and ends with
    replay's own events, one that begins or ends with such a line), as with a batch a line."""
    own = [b'{"seq":%d,"timestamp":"2026-03-01T12:00:00Z","type":"tool_called","runId":"r1","payload":{}}' % n
           for n in range(1, 11)]
    claude, codex = CLAUDE_SESSION.read_bytes().splitlines()[0], ROLLOUT.read_bytes().splitlines()
    lines = [*own[:5], claude, *own[5:7], codex[0], codex[1], *own[7:]]
    data = b"\n".join(lines) + b"\n"
    expected = [(6, len(b"".join(line + b"\n" for line in lines[:5])), "claude-code"),
                (9, len(b"".join(line + b"\n" for line in lines[:8])), "codex")]
    for size in range(1, len(lines) + 1):
        read = run_inline([ParseLines(), MapDialect()], batches_of(data, "run.jsonl", size))
        assert read.to_jsonl() == data
        assert [(n["line"], n["offset"], n["received"]) for n in read.side["notices"]] == expected, size


def test_a_named_dialect_that_does_not_fit_is_reported_once_not_again_line_by_line():
    read = read_dialect(ROLLOUT.read_bytes(), "rollout.jsonl", "claude-code")
    assert [e["code"] for e in read.side["errors"]] == ["E_DIALECT_MISMATCH"]
    assert "notices" not in read.side
