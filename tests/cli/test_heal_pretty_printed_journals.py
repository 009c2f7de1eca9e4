"""`jq . run.jsonl | replay heal`: a journal pretty-printed record by record heals to what the compact journal heals to
(the records, and each run's heal record but for its joins), whatever its payloads hold, by file and by pipe."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import errors_of, jsonl, run_replay
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

RULE = "join_split_records"
ARR = [{"seq": 1, "timestamp": "2026-03-01T12:00:00Z", "type": "run_started", "runId": "r1",
        "payload": {"s": ["x", "y"], "n": [1, 2]}},
       {"seq": 2, "timestamp": "2026-03-01T12:00:01Z", "type": "run_completed", "runId": "r1", "payload": {}}]


def compact(events: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events).encode()


def pretty(events: list[dict[str, Any]], indent: int | None = 2) -> bytes:
    return "".join(json.dumps(e, indent=indent) + "\n" for e in events).encode()


def without_joins(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The healed records with the joins taken out of the heal records (a heal record left with no repair, none)."""
    out = []
    for record in records:
        if record.get("$record") == "heal" and RULE in record["byRule"]:
            by_rule = {k: v for k, v in record["byRule"].items() if k != RULE}
            record = {**record, "repairs": record["repairs"] - record["byRule"][RULE], "byRule": by_rule}
            if not by_rule:
                continue
        out.append(record)
    return out


def test_a_pretty_printed_record_holding_arrays_of_scalars_is_joined_not_lost(tmp_path: Path) -> None:
    """The last element of a pretty-printed array (`"y"`, `2`) is JSON alone: the join stopped there, every piece was
    reported (E_JSONL_LINE_INVALID, E_EVENT_NOT_OBJECT) and a run_started was made up in place of the record."""
    data = pretty(ARR)
    path = tmp_path / "arr.jsonl"
    path.write_bytes(data)
    for healed in (run_replay("heal", input=data), run_replay("heal", str(path))):
        assert healed.returncode == 0 and errors_of(healed.stderr) == []
        assert jsonl(healed.stdout) == [*ARR, {"$record": "heal", "runId": "r1", "repairs": 2, "byRule": {RULE: 2}}]


payload_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False, width=32),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8)
payloads = st.dictionaries(st.sampled_from(["text", "items", "args", "meta", "n"]), payload_values, max_size=3)


@st.composite
def journals(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Valid runs: run_started, messages with any payload, a terminal event."""
    events = []
    for run in range(draw(st.integers(1, 3))):
        kinds = ["run_started", *draw(st.lists(st.sampled_from(["user_message", "assistant_message"]), max_size=4)),
                 draw(st.sampled_from(["run_completed", "run_failed"]))]
        for seq, kind in enumerate(kinds, 1):
            events.append({"seq": seq, "timestamp": f"2026-03-01T12:{run:02d}:{seq:02d}Z", "type": kind, "runId": f"r{run}",
                           "payload": draw(payloads) if 0 < seq < len(kinds) else {}})
    return events


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(journals(), st.sampled_from([1, 2, 4]))
def test_a_journal_pretty_printed_record_by_record_heals_as_the_compact_journal(tmp_path: Path, events: list[dict[str, Any]],
                                                                                indent: int) -> None:
    expected = run_replay("heal", input=compact(events))
    assert expected.returncode == 0, expected.stderr
    data = pretty(events, indent)
    path = tmp_path / "pretty.jsonl"
    path.write_bytes(data)
    for healed in (run_replay("heal", input=data), run_replay("heal", str(path))):
        assert healed.returncode == 0 and errors_of(healed.stderr) == [], healed.stderr
        assert without_joins(jsonl(healed.stdout)) == jsonl(expected.stdout)
        joins = sum(r["byRule"].get(RULE, 0) for r in jsonl(healed.stdout) if r.get("$record") == "heal")
        assert joins == sum(json.dumps(e, indent=indent).count("\n") > 0 for e in events)


def test_a_pretty_printed_journal_longer_than_max_line_bytes_is_joined_record_by_record(tmp_path: Path) -> None:
    """Its first line (`{` alone) opens what may be one document, read whole up to --max-line-bytes: past it, the
    journal was refused whole (E_JSONL_LINE_TOO_LONG, "one JSON document ... longer than"), though its first record
    had ended long before and others followed. A head holding a whole record and more is no one document: its lines
    are joined, each record within the limit; one document longer than the limit is still refused."""
    events = [{**e, "runId": f"r{k}"} for k in range(20) for e in ARR]
    data = pretty(events)
    limit = str(len(data) // 4)
    path = tmp_path / "pretty.jsonl"
    path.write_bytes(data)
    for healed in (run_replay("heal", "--max-line-bytes", limit, input=data), run_replay("heal", "--max-line-bytes", limit, str(path))):
        assert healed.returncode == 0 and errors_of(healed.stderr) == [], healed.stderr
        assert [r for r in jsonl(healed.stdout) if "$record" not in r] == events
    document = json.dumps([*events, {"seq": 3}], indent=2).encode()
    for refused in (run_replay("heal", "--max-line-bytes", limit, input=document),
                    run_replay("read", "--max-line-bytes", limit, input=document)):
        [error] = errors_of(refused.stderr)
        assert refused.returncode == 1 and error["code"] == "E_JSONL_LINE_TOO_LONG" and "one JSON document" in error["message"]


def test_read_tells_every_line_of_a_pretty_printed_record_with_arrays_to_be_joined() -> None:
    """`jq . run.jsonl | replay read` (which joins nothing) advised "Fix or delete the line" for an array's element
    (`"x",`) and "Each line must be one JSON object" for its last one (`"y"`, `2`: JSON alone, no object): each is a
    piece of a record, told so as the other pieces are (one record a line, or let heal join them)."""
    read = run_replay("--max-errors", "0", "read", input=pretty(ARR))
    errors = errors_of(read.stderr)
    assert read.returncode == 1 and len(errors) == pretty(ARR).count(b"\n")
    assert {e["code"] for e in errors} == {"E_JSONL_LINE_INVALID", "E_EVENT_NOT_OBJECT"}
    assert all("`jq -c .`" in e["howToFix"] for e in errors)
    others = errors_of(run_replay("read", input=b'{"a": 1}\n2\n"x"\nnot json,\n').stderr)
    assert [e["line"] for e in others] == [2, 3, 4] and not any("`jq -c .`" in e["howToFix"] for e in others)
