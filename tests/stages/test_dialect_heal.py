"""Each way agent logs break, applied to a real sample, healed with a heal-log entry; healing the result again
changes nothing, and writing the dialect back gives the repaired log (attribution: fixtures/corpus/SOURCES.md)."""

from __future__ import annotations

from typing import Any

import orjson
from dialect_support import CORPUS, batches_of, events, heal_dialect, jsonl_records

from replay.pipeline.engine.inline import run_inline
from replay.pipeline.model.dialects import ORIGIN_KEY
from replay.stages.heal_summary import SummarizeRepairs
from replay.stages.parse import ParseLines
from replay.stages.undialect import WriteDialect
from replay.stages.validate import ValidateEvents

SAMPLE = CORPUS / "claude-code" / "representative_messages.jsonl"
TODOS = CORPUS / "claude-code" / "todowrite_examples.jsonl"


def lines(path=SAMPLE) -> list[bytes]:
    return path.read_bytes().splitlines()


def join(parts: list[bytes]) -> bytes:
    return b"\n".join(parts) + b"\n"


def repairs_by(result, rule: str) -> list[dict[str, Any]]:
    return [r for r in result.side.get("repairs", []) if r["rule"] == rule]


def heal_again(result) -> Any:
    """Heal the healed stream (replay's own format now): the dialect stage passes it through."""
    from dialect_support import dialect_heal_chain

    from replay.stages.dialect import MapDialect

    stages = [ParseLines(torn_tail="repair"), MapDialect(), *dialect_heal_chain(), SummarizeRepairs()]
    return run_inline(stages, batches_of(result.to_jsonl(), "healed.jsonl"), feed_side={len(stages) - 1: ("repairs",)})


def check_healed(result) -> None:
    """The healed stream is valid, and healing it again repairs nothing."""
    checked = run_inline([ParseLines(), ValidateEvents()], batches_of(result.to_jsonl(), "healed.jsonl"))
    assert checked.side.get("errors", []) == []
    again = heal_again(result)
    assert again.side.get("repairs", []) == []


def written_back(result) -> list[Any]:
    return run_inline([ParseLines(), WriteDialect()], batches_of(result.to_jsonl(), "healed.jsonl")).records


# a torn last line -----------------------------------------------------------------------------------
def test_a_torn_last_line_is_dropped_and_logged():
    data = SAMPLE.read_bytes()
    torn = data[: len(data) - 60]  # the crash cut the last record (the summary) short, with no newline
    result = heal_dialect(torn, "session.jsonl")
    (entry,) = repairs_by(result, "drop_torn_line")
    assert entry["line"] == 12 and entry["offset"] == data.rindex(b"\n", 0, len(data) - 1) + 1
    assert len({e[ORIGIN_KEY]["index"] for e in events(result) if ORIGIN_KEY in e}) == 11
    check_healed(result)


# an orphaned tool result --------------------------------------------------------------------------------
def test_an_orphaned_tool_result_is_dropped_and_the_log_keeps_it():
    parts = lines()
    assert b'"tool_use"' in parts[3] and b'"tool_result"' in parts[4]
    del parts[3]  # the assistant record that made the call is gone; its result stays
    result = heal_dialect(join(parts), "session.jsonl")
    (entry,) = repairs_by(result, "pair_tool_calls")
    assert entry["action"] == "dropped" and entry["line"] == 4 and entry["value"] == "tool_001"
    assert entry["original"][ORIGIN_KEY]["record"] == orjson.loads(parts[3])  # the log holds what went
    assert "tool_001" not in [e["payload"].get("callId") for e in events(result)]
    check_healed(result)
    back = written_back(result)
    assert orjson.loads(parts[3]) not in back and len(back) == len(parts) - 1


# a dangling tool call -----------------------------------------------------------------------------------
def test_a_dangling_tool_call_is_marked_unanswered_and_no_result_is_invented():
    parts = lines()
    assert b'"tool_result"' in parts[8] and b"tool_002" in parts[8]
    del parts[8]  # the session stopped before the result of tool_002 was written
    result = heal_dialect(join(parts), "session.jsonl")
    (entry,) = repairs_by(result, "pair_tool_calls")
    assert entry["action"] == "inserted" and entry["value"] == "tool_unanswered" and entry["line"] == 8
    (mark,) = [e for e in events(result) if e["type"] == "tool_unanswered"]
    assert mark["synthetic"] is True and mark["payload"]["callId"] == "tool_002"
    assert ORIGIN_KEY not in mark and "output" not in mark["payload"]
    assert not [e for e in events(result) if e["type"] == "tool_completed" and e["payload"]["callId"] == "tool_002"]
    kinds = [e["type"] for e in events(result)]
    assert kinds.index("tool_unanswered") < kinds.index("run_failed")  # before the run's end
    check_healed(result)
    assert [r for r in written_back(result)] == [orjson.loads(p) for p in parts]  # nothing invented in the log


# records written again after a resume ---------------------------------------------------------------------
def test_records_written_again_after_a_resume_are_dropped_and_logged():
    parts = lines()
    resumed = parts[:11] + parts[:5] + parts[11:]  # the resumed session wrote the first five records again
    result = heal_dialect(join(resumed), "session.jsonl")
    dropped = repairs_by(result, "drop_resume_duplicates")
    # line 15 maps to one event only now: its model call (message id) was counted at line 4
    assert [d["line"] for d in dropped] == [12, 13, 14, 15, 16]
    assert all(d["action"] == "dropped" and "resumed" in d["message"] for d in dropped)
    assert len(events(result)) == len(events(heal_dialect(join(parts), "session.jsonl")))
    check_healed(result)
    assert written_back(result) == [orjson.loads(p) for p in parts]


# sidechain records out of order ----------------------------------------------------------------------------
def sidechain(record: bytes) -> bytes:
    value = orjson.loads(record)
    value["isSidechain"] = True
    return orjson.dumps(value)


def test_a_sidechain_record_before_its_parent_is_moved_after_it():
    parts = [sidechain(p) for p in lines(TODOS)[:-1]]  # a sub-agent's conversation (the summary left out)
    records = [orjson.loads(p) for p in parts]
    assert records[2]["parentUuid"] == "assistant_001" and records[1]["uuid"] == "assistant_001"
    shuffled = [parts[0], parts[2], parts[1], *parts[3:]]  # a child written before its parent
    result = heal_dialect(join(shuffled), "agent.jsonl")
    (entry,) = repairs_by(result, "order_sidechains")
    assert entry["action"] == "changed" and entry["field"] == "position" and entry["line"] == 2
    order = [e[ORIGIN_KEY]["record"]["uuid"] for e in events(result) if ORIGIN_KEY in e]
    assert order.index("assistant_002") > order.index("assistant_001")
    check_healed(result)
    assert written_back(result) == records


def test_a_sub_agents_records_written_before_their_parent_move_together_in_one_logged_move():
    """The sub-agent's first record hangs off a main-chain record written after it; its reply hangs off that first
    record, right after it. Both move to just after the parent, in one move: the reply never came before its own
    parent, and the log does not say it did."""
    parts = lines()
    main = [orjson.loads(p) for p in parts]
    assert main[3]["uuid"] == "msg_004" and main[3]["type"] == "assistant"
    ask = {**main[0], "uuid": "side_001", "parentUuid": "msg_004", "isSidechain": True}
    reply = {**main[1], "uuid": "side_002", "parentUuid": "side_001", "isSidechain": True}
    written = [*main[:2], ask, reply, *main[2:]]  # the sub-agent's records written before msg_004
    result = heal_dialect(join([orjson.dumps(r) for r in written]), "session.jsonl")
    (entry,) = repairs_by(result, "order_sidechains")
    assert entry["line"] == 3 and "'side_001'" in entry["message"] and "'msg_004'" in entry["message"]
    order = [e[ORIGIN_KEY]["record"].get("uuid") for e in events(result) if ORIGIN_KEY in e and e[ORIGIN_KEY]["part"] == 0]
    assert order[:6] == ["msg_001", "msg_002", "msg_003", "msg_004", "side_001", "side_002"]
    check_healed(result)


def test_the_main_chain_and_parents_from_elsewhere_are_not_moved():
    parts = lines(TODOS)[:-1]
    shuffled = [parts[0], parts[2], parts[1], *parts[3:]]  # not a sidechain: written order is kept
    result = heal_dialect(join(shuffled), "main.jsonl")
    assert repairs_by(result, "order_sidechains") == []
    orphan = [sidechain(p) for p in parts[2:]]  # the first record's parent is in another file
    result = heal_dialect(join(orphan), "agent.jsonl")
    assert repairs_by(result, "order_sidechains") == []
    assert [e[ORIGIN_KEY]["record"] for e in events(result) if ORIGIN_KEY in e and e[ORIGIN_KEY]["part"] == 0] == \
        [orjson.loads(p) for p in orphan]


def test_the_heal_summary_counts_the_dialect_repairs():
    parts = lines()
    del parts[8]
    result = heal_dialect(join(parts + parts[:2]), "session.jsonl")
    (summary,) = [r for r in result.records if r.get("$record") == "heal"]
    assert summary["byRule"]["pair_tool_calls"] == 1 and summary["byRule"]["drop_resume_duplicates"] == 2


def test_healing_every_clean_sample_stays_valid_and_is_idempotent():
    for path in sorted((CORPUS / "claude-code").glob("*.jsonl")) + sorted((CORPUS / "openhands").glob("*.json")):
        result = heal_dialect(path.read_bytes(), path.name)
        check_healed(result)
        assert written_back(result) == [r for r in _records(path)], path


def _records(path) -> list[Any]:
    if path.suffix == ".json":
        return [orjson.loads(path.read_bytes())]
    return [r for r in jsonl_records(path.read_bytes()) if isinstance(r, dict)]
