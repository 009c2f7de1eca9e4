"""How a journal record reads as a walk line: kind, step, state, detail, verification, spend; where --at stops."""

from __future__ import annotations

import orjson
import pytest
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.pipeline.engine import exactjson
from replay.pipeline.model.walk import (
    SpendLedger,
    StepWatch,
    ends_step,
    kind_of,
    read_record,
    state_of,
    step_of,
    verification_of,
)
from replay.pipeline.model.walk_journal import (
    find_step_end,
    find_step_end_in,
    first_record_problem,
    journal_dialect,
    line_problems,
)

WALK = FIXTURES / "walk"


def lines_of(name: str) -> list[bytes]:
    return (WALK / name).read_bytes().splitlines()


# kind and step ------------------------------------------------------------------------------------
@pytest.mark.parametrize("record, kind, step", [
    ({"seq": 3, "type": "tool_called", "runId": "r", "payload": {"callId": "c1", "toolName": "ls"}}, "tool_called", "c1"),
    ({"seq": 3, "type": "tool_completed", "runId": "r", "payload": {"toolCallId": "t9"}}, "tool_completed", "t9"),
    ({"seq": 4, "type": "assistant_message", "runId": "r", "step": 2, "payload": {}}, "assistant_message", "2"),
    ({"seq": 4, "type": "tool_called", "runId": "r", "step": "plan", "payload": {"callId": "c2"}}, "tool_called", "plan"),
    ({"seq": 1, "type": "user_message", "runId": "r", "payload": {}}, "user_message", None),
    ({"kind": "step.completed", "step_id": "step-1"}, "step.completed", "step-1"),
    ({"kind": "run.spawned", "run_id": "r1"}, "run.spawned", None),
    # a mapped log's run-level events carry the model call they came in as ``step``: still no step's
    ({"seq": 7, "type": "run_completed", "runId": "r", "step": 2, "payload": {}}, "run_completed", None),
    ({"seq": 1, "type": "run_started", "runId": "r", "step": 1, "payload": {}}, "run_started", None),
    ({"kind": "run.parked", "step": {"id": "s-7"}}, "run.parked", None),
    ({"seq": 5, "type": "run_command", "runId": "r", "step": 3, "payload": {}}, "run_command", "3"),
    ({"kind": "step.scheduled", "step": {"id": "s-7", "type": "run"}}, "step.scheduled", "s-7"),
    ({"$record": "run", "runId": "r", "step": 3}, "$run", None),
    ({"$record": "heal", "runId": "r", "repairs": 2}, "$heal", None),
    ({"note": "neither kind nor type"}, "?", None),
])
def test_kind_and_step(record, kind, step):
    assert kind_of(record) == kind
    assert step_of(record) == step


def test_a_boolean_is_no_step():
    assert step_of({"kind": "x", "step_id": True}) is None


# state ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("record, state", [
    ({"kind": "run.spawned"}, "pending"),
    ({"kind": "step.scheduled", "step_id": "s"}, "pending"),
    ({"kind": "run.spawned", "step_id": "s"}, "pending"),
    ({"kind": "step.attempt.started", "step_id": "s"}, "running"),
    ({"kind": "step.completed", "step_id": "s", "exit_code": 0}, "succeeded"),
    ({"kind": "step.completed", "step_id": "s", "exit_code": 3}, "failed"),
    ({"kind": "step.completed", "step_id": "s", "verification": {"type": "json_schema", "verdict": "fail"}}, "failed"),
    ({"kind": "step.completed", "step_id": "s", "verification": {"type": "x", "passed": False}}, "failed"),
    ({"kind": "step.failed", "step_id": "s"}, "failed"),
    ({"kind": "step.timed_out", "step_id": "s"}, "failed"),
    ({"kind": "step.skipped", "step_id": "s"}, "skipped"),
    ({"kind": "step.cancelled", "step_id": "s"}, "cancelled"),
    ({"kind": "run.completed"}, "terminal"),
    ({"kind": "run.parked"}, "terminal"),
    ({"kind": "run.failed"}, "terminal"),
    ({"type": "run_started", "payload": {}}, "running"),
    ({"type": "run_completed", "payload": {}}, "terminal"),
    ({"type": "run_failed", "payload": {}}, "terminal"),
    ({"type": "run_completed", "step": 2, "payload": {}}, "terminal"),
    ({"type": "tool_called", "payload": {"callId": "c"}}, "running"),
    ({"type": "tool_completed", "payload": {"callId": "c"}}, "succeeded"),
    ({"type": "tool_completed", "payload": {"callId": "c", "output": {"exitCode": 1}}}, "failed"),
    ({"type": "tool_failed", "payload": {"callId": "c"}}, "failed"),
    ({"type": "user_message", "payload": {}}, "info"),
    ({"kind": "spend", "step_id": "s", "usd": 0.1}, "info"),
    ({"$record": "run", "status": "ok"}, "info"),
])
def test_state(record, state):
    kind = kind_of(record)
    assert state_of(record, kind, step_of(record, kind)) == state


# verification and spend ---------------------------------------------------------------------------------
@pytest.mark.parametrize("record, verification", [
    ({"verification": {"type": "exit_code", "verdict": "ok"}}, {"type": "exit_code", "verdict": "ok"}),
    ({"verification": {"kind": "schema", "result": "fail"}}, {"type": "schema", "verdict": "fail"}),
    ({"verification": "ok"}, {"type": None, "verdict": "ok"}),
    ({"payload": {"verification": {"type": "t", "verdict": False}}}, {"type": "t", "verdict": False}),
    ({"verdict": "ok", "verification_type": "regex"}, {"type": "regex", "verdict": "ok"}),
    ({"verification": {"type": "pending"}}, None),
    ({"kind": "step.completed"}, None),
])
def test_verification(record, verification):
    assert verification_of(record) == verification


def test_a_step_adds_up_its_spend_and_every_later_line_of_the_step_shows_it():
    ledger = SpendLedger()
    lines = [read_record(r, ledger) for r in (
        {"kind": "step.attempt.started", "step_id": "s"},
        {"kind": "spend", "step_id": "s", "usd": 0.25, "tokens": 100, "attempt": 1, "run_id": "r"},
        {"kind": "spend", "step_id": "s", "usd": 0.5, "model": "m2"},
        {"kind": "step.completed", "step_id": "s"},
        {"kind": "step.completed", "step_id": "other"},
        {"kind": "run.completed", "spend": {"usd": 9}},
    )]
    assert [line.spend for line in lines] == [
        None, {"usd": 0.25, "tokens": 100}, {"usd": 0.75, "tokens": 100}, {"usd": 0.75, "tokens": 100}, None, None,
    ]


@pytest.mark.parametrize(("amounts", "total"), [
    ([b"0.1", b"0.2"], b"0.3"),  # (as doubles add up: 0.30000000000000004)
    ([b"0.1", b"0.2", b"0.3"], b"0.6"),  # (0.6000000000000001)
    ([b"1.1", b"2.2", b"3"], b"6.3"),  # (6.300000000000001)
    ([b"1", b"2"], b"3"),
])
def test_spend_adds_up_as_written_not_as_doubles_do(amounts, total):
    """A dollar spend of 0.1 and 0.2 shows 0.3: the sum of the numbers as written, to the nearest double."""
    ledger = SpendLedger()
    spend = [read_record({"kind": "spend", "step_id": "s", "usd": exactjson.loads(raw)}, ledger).spend for raw in amounts]
    assert exactjson.dumps(spend[-1]["usd"]) == total


@pytest.mark.parametrize(("lines", "total"), [
    ([b'{"usd":1e308}', b'{"usd":1e308}'], b'{"usd":2E+308}'),  # beyond a double: it was infinity, written as null
    ([b'{"usd":1}', b'{"usd":2e400}'], b'{"usd":2E+400}'),
    ([b'{"usd":0.5}', b'{"usd":3.14159265358979323846}'], b'{"usd":3.64159265358979323846}'),  # exact as written
    ([b'{"usd":0.25,"tokens":123456789012345678901234567890}', b'{"usd":0.5,"tokens":1}'],
     b'{"usd":0.75,"tokens":123456789012345678901234567891}'),
])
def test_spend_sums_a_double_cannot_hold_are_written_as_the_numbers_add_up_not_as_null(lines, total):
    ledger = SpendLedger()
    spend = [read_record({"kind": "spend", "step_id": "s", "spend": exactjson.loads(raw)}, ledger).spend for raw in lines]
    assert exactjson.dumps(spend[-1]) == total


def test_a_canonical_step_with_usage_has_spend():
    line = read_record({"type": "assistant_message", "step": 1, "payload": {"usage": {"inputTokens": 5}}}, SpendLedger())
    assert line.spend == {"inputTokens": 5}
    assert read_record({"type": "assistant_message", "payload": {"usage": {"inputTokens": 5}}}).spend is None


# detail and the two output forms -------------------------------------------------------------------------
def test_essential_fields_are_never_cut_and_a_line_stays_one_line():
    error = "x" * 400 + "\nsecond line"
    command = "python -c 'print(1)' " + "--flag " * 60
    line = read_record({"kind": "step.failed", "step_id": "s", "exit_code": 137, "step": {"type": "run", "command": command},
                        "error": {"code": "OOM", "message": error}, "verification": {"type": "exit_code", "verdict": "fail"}})
    text = line.text()
    assert "\n" not in text
    assert command in text
    assert "error=OOM: " + "x" * 400 + "\\nsecond line" in text
    assert "exit_code=137" in text and "verification=exit_code:fail" in text
    assert text.endswith("[failed]")


def test_the_tool_is_named_from_the_payload_else_from_the_top_of_the_record():
    assert "tool=grep" in read_record({"type": "tool_called", "tool": "top", "payload": {"toolName": "", "name": "grep"}}).detail
    assert "tool=top" in read_record({"kind": "tool.called", "tool_name": "top", "payload": {"toolName": None}}).detail
    assert "tool=" not in read_record({"type": "tool_called", "payload": {"tool_name": "x"}}).detail


def test_message_texts_are_excerpts():
    line = read_record({"type": "assistant_message", "payload": {"content": "word " * 100}})
    assert len(line.detail) < 80 and line.detail.endswith('…"')


LONG_COMMAND = "sed -i 's/def division(a: float, b: float) -> float/def division(a: float, b: float) -> float:/' t.py"


@pytest.mark.parametrize("args, shown", [
    ({"command": LONG_COMMAND}, f"command={orjson.dumps(LONG_COMMAND).decode()}"),  # mini-swe-agent's, Claude Code's Bash
    ({"cmd": LONG_COMMAND, "workdir": "/w"}, f'cmd={orjson.dumps(LONG_COMMAND).decode()} args={{"workdir":"/w"}}'),  # Codex
    ({"command": ["bash", "-lc", LONG_COMMAND]}, f"command={orjson.dumps(['bash', '-lc', LONG_COMMAND]).decode()}"),
    (orjson.dumps({"command": LONG_COMMAND}).decode(), f"command={orjson.dumps(LONG_COMMAND).decode()}"),  # a JSON text
])
def test_a_shell_calls_command_is_never_cut(args, shown):
    line = read_record({"type": "tool_called", "payload": {"callId": "c", "toolName": "bash", "args": args}})
    assert line.detail == f"tool=bash {shown}"


def test_the_other_arguments_of_a_shell_call_are_an_excerpt():
    line = read_record({"type": "tool_called", "payload": {"callId": "c", "toolName": "execute_bash", "args": {
        "command": "ls", "description": "word " * 40}}})
    assert line.detail.startswith('tool=execute_bash command="ls" args={"description":"word word') and line.detail.endswith("…")
    other = read_record({"type": "tool_called", "payload": {"callId": "c", "toolName": "Edit", "args": {"path": "x" * 200}}})
    assert other.detail.startswith('tool=Edit args={"path":"xxx') and other.detail.endswith("…") and len(other.detail) < 80


def test_the_message_heal_makes_of_a_final_response_shows_its_text():
    """heal's synthesize_assistant_message writes the run record's response as ``payload.response``: walk showed a blank."""
    line = read_record({"type": "assistant_message", "payload": {"response": "3 files"}, "synthetic": True})
    assert '"3 files"' in line.detail


def test_text_columns_split_on_whitespace():
    line = read_record({"kind": "step.completed", "step_id": "step-1", "exit_code": 0,
                        "verification": {"type": "exit_code", "verdict": "ok"}})
    fields = line.text().split()
    assert fields[0] == "step.completed" and fields[1] == "step-1" and fields[-1] == "[succeeded]"
    run_level = read_record({"kind": "run.completed", "outcome": "success"}).text().split()
    assert run_level[:2] == ["run.completed", "-"] and run_level[-1] == "[terminal]"


def test_a_step_id_with_spaces_is_quoted():
    assert read_record({"kind": "step.completed", "step_id": "two words"}).text().split()[1] == '"two'


def test_json_form_keeps_the_event_bytes_as_journaled():
    raw = b'{"kind": "step.completed",  "step_id":"s1", "n": 1.50, "verification": "ok"}'
    record = orjson.loads(raw)
    out = read_record(record).json(raw)
    assert out.startswith(b'{"step_id":"s1","kind":"step.completed","event":' + raw + b',')
    parsed = orjson.loads(out)
    assert list(parsed) == ["step_id", "kind", "event", "verification", "spend"]
    assert parsed["event"] == record and parsed["verification"] == {"type": None, "verdict": "ok"}
    assert parsed["spend"] is None


# where a step ends ----------------------------------------------------------------------------------
def test_a_tool_step_ends_when_its_last_call_closes():
    watch = StepWatch("2")
    records = [
        {"type": "tool_called", "step": 2, "payload": {"callId": "a"}},
        {"type": "tool_called", "step": 2, "payload": {"callId": "b"}},
        {"type": "tool_completed", "step": 2, "payload": {"callId": "a"}},
        {"type": "tool_failed", "step": 2, "payload": {"callId": "b"}},
    ]
    ends = []
    for r in records:
        kind = kind_of(r)
        step = step_of(r, kind)
        ends.append(watch.feed(r, kind, step, state_of(r, kind, step)))
    assert ends == [False, False, False, True]


def test_a_call_whose_result_was_written_before_it_is_no_call_still_running():
    """As report pairs them (``CallPairing.early``): the step ends when its calls close, the call whose result came
    first among them (it stayed open, and the step never ended)."""
    watch = StepWatch("2")
    records = [
        {"type": "tool_called", "step": 2, "payload": {"callId": "a"}},
        {"type": "tool_completed", "step": 2, "payload": {"callId": "b"}},
        {"type": "tool_called", "step": 2, "payload": {"callId": "b"}},
        {"type": "tool_completed", "step": 2, "payload": {"callId": "a"}},
    ]
    ends = [watch.feed(r, kind_of(r), step_of(r, kind_of(r)), state_of(r, kind_of(r), step_of(r, kind_of(r))))
            for r in records]
    assert ends == [False, False, False, True]


@pytest.mark.parametrize("name, step, terminated, line", [
    ("hello.jsonl", "step-1", True, 4),
    ("hello.jsonl", "step-2", True, 8),
    ("interleaved.jsonl", "fetch-a", True, 8),
    ("interleaved.jsonl", "fetch-b", True, 6),
    ("parked.jsonl", "build", True, 4),  # a step.failed that does not say it retries ends the step
    ("parked.jsonl", "approve", False, 8),  # never terminated: its last record
])
def test_find_step_end(name, step, terminated, line):
    data = (WALK / name).read_bytes()
    end = find_step_end([data], step)
    assert end.found and end.terminated is terminated and end.line == line
    assert end.end == sum(len(raw) + 1 for raw in data.split(b"\n")[:line])
    records = [orjson.loads(raw) for raw in data.splitlines()]
    assert find_step_end_in(records, step).index == line - 1


@pytest.mark.parametrize("failed", [
    b'{"kind":"step.attempt.failed","step_id":"s","attempt":1}',  # one attempt ended, not the step
    b'{"kind":"step.failed","step_id":"s","retrying":true}',  # the step says it will be retried
    b'{"type":"step_failed","step":"s","payload":{"retrying":true}}',
])
def test_a_failed_attempt_or_a_failure_that_retries_does_not_end_the_step(failed):
    data = b"\n".join((b'{"kind":"step.attempt.started","step_id":"s","attempt":1}', failed,
                       b'{"kind":"step.attempt.started","step_id":"s","attempt":2}',
                       b'{"kind":"step.completed","step_id":"s"}', b'{"kind":"run.completed"}')) + b"\n"
    end = find_step_end([data], "s")
    assert end.terminated and end.line == 4
    assert find_step_end_in([orjson.loads(raw) for raw in data.splitlines()], "s").index == 3
    assert not ends_step({"kind": "step.attempt.completed"}, "step.attempt.completed")
    assert ends_step({"kind": "step.failed", "retrying": False}, "step.failed")


@pytest.mark.parametrize("tail, line", [
    (b'{"kind":"step.completed","step_id":"step-1","exit_co', 4),  # cut off, naming the step
    (b'{"kind":"step.compl', 4),  # cut off before the step id: it may still be the step's
    (b'{"kind":"step.completed","step_id":"step-1","exit_co\n{"kind":"run.completed"}\n', 4),  # mid-journal
])
def test_an_unreadable_line_that_may_be_the_steps_is_where_the_scan_stops(tail, line):
    head = b"".join((WALK / "hello.jsonl").read_bytes().splitlines(keepends=True)[:3])
    data = head + tail
    end = find_step_end([data], "step-1")
    assert end.found and not end.terminated and end.line == line
    assert end.end == len(head) + len(tail.split(b"\n")[0]) + (b"\n" in tail)
    assert not find_step_end([head + b'{"kind":"step.compl'], "step-9").found  # a step never seen is still not found
    if b"step-1" in tail:  # a terminal record after it changes nothing: the walk cannot read past the line
        assert find_step_end([data + b'\n{"kind":"step.completed","step_id":"step-1"}'], "step-1").line == 4


def test_a_step_that_never_appears_is_not_found():
    assert not find_step_end([(WALK / "hello.jsonl").read_bytes()], "step-9").found
    assert not find_step_end([(WALK / "hello.jsonl").read_bytes()], "step").found  # a prefix of real ids
    assert not find_step_end_in([{"kind": "x"}], "s").found


def test_a_step_whose_id_a_writer_escaped_is_found():
    data = b'{"kind":"step.scheduled","step_id":"\\u00e9tape"}\n{"kind":"step.completed","step_id":"\\u00e9tape"}\n'
    end = find_step_end([data], "étape")
    assert end.terminated and end.line == 2 and end.end == len(data)


def test_the_last_line_without_newline_counts():
    data = b'{"kind":"step.scheduled","step_id":"s"}\n{"kind":"step.completed","step_id":"s"}'
    end = find_step_end([data], "s")
    assert end.terminated and end.end == len(data) and end.line == 2


journals = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c", None]), st.sampled_from(["step.started", "step.completed", "note", "garbage"])),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(journals, st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=10), st.sampled_from("abcz"))
def test_how_the_bytes_arrive_does_not_change_where_a_step_ends(rows, cuts, step):
    lines = []
    for sid, kind in rows:
        if kind == "garbage":
            lines.append(b'{"kind": "step.completed", "step_id": "' + (sid or "a").encode())  # not JSON
        else:
            lines.append(orjson.dumps({"kind": kind, "step_id": sid} if sid else {"kind": kind}))
    data = b"\n".join(lines) + b"\n"
    chunks, pos = [], 0
    for n in cuts * (len(data) // max(1, sum(cuts)) + 1):
        chunks.append(data[pos:pos + n])
        pos += n
    chunks.append(data[pos:])
    whole = find_step_end([data], step)
    assert find_step_end(chunks, step) == whole
    # the byte scan and the scan over parsed records agree on the stop record, up to the first line
    # that cannot be read and names the step: unless the step ended before it, the scan stops there
    bad = next((n for n, raw in enumerate(lines, start=1) if _loads(raw) is None and step.encode() in raw), None)
    parsed = [(n, r) for n, r in enumerate((_loads(raw) for raw in lines), start=1)
              if r is not None and (bad is None or n < bad)]
    by_record = find_step_end_in([r for _, r in parsed], step)
    if bad is not None and not by_record.terminated:
        assert (whole.found, whole.terminated, whole.line) == (True, False, bad)
        return
    assert (whole.found, whole.terminated) == (by_record.found, by_record.terminated)
    if whole.found:
        assert parsed[by_record.index][0] == whole.line


def _loads(raw: bytes):
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


# the first record ------------------------------------------------------------------------------------
def test_first_record_problem():
    assert first_record_problem([(WALK / "hello.jsonl").read_bytes()]) is None
    assert first_record_problem([b""]) is None
    problem = first_record_problem([(WALK / "bad-first-record.jsonl").read_bytes()])
    assert problem is not None and problem.line == 1 and problem.offset == 0 and "not valid JSON" in problem.message
    problem = first_record_problem([b"\n  \n[1, 2]\n", b'{"kind":"x"}\n'])
    assert problem is not None and problem.line == 3 and problem.offset == 4 and "not an object" in problem.message
    problem = first_record_problem([b'\n{"kind":"x"'])
    assert problem is not None and problem.offset == 1 and "cut off" in problem.message
    assert first_record_problem([b'{"ki', b'nd":"x"}\nnot json\n']) is None  # only the first record is looked at


def test_line_problems_are_every_line_that_is_no_record_in_order_in_any_chunking():
    """What a walk --at a step not found names (the step may be in it): each line that is no record, with its line
    and byte offset: not JSON, no object, a line too long (never held whole), a last line cut off; blank lines none."""
    long = b'{"pad":"' + b"x" * 60 + b'"}\n'
    data = b'{"kind":"a"}\n\n{not json\n' + long + b'[1]\n{"kind":"b"}\n{"kind":"c'
    for chunks in ([data], [data[i:i + 5] for i in range(0, len(data), 5)]):
        found = [(p.line, p.offset, p.cause) for p in line_problems(chunks, max_line_bytes=40)]
        assert found == [(3, 14, None), (4, 24, "E_JSONL_LINE_TOO_LONG"), (5, 24 + len(long), None),
                         (7, 28 + len(long) + 13, None)]
    assert list(line_problems([(WALK / "hello.jsonl").read_bytes()])) == []


def test_a_line_longer_than_the_limit_is_no_record():
    long = b'{"kind":"step.completed","step_id":"s","pad":"' + b"x" * 100 + b'"}\n'
    data = b'{"kind":"step.started","step_id":"s"}\n' + long + b'{"kind":"step.failed","step_id":"s"}\n'
    for chunks in ([data], [data[i:i + 7] for i in range(0, len(data), 7)]):
        end = find_step_end(chunks, "s", max_line_bytes=80)
        assert end.terminated and end.line == 3 and end.end == len(data)
    assert "longer than 80 bytes" in first_record_problem([long], max_line_bytes=80).message


@pytest.mark.parametrize("mine", [False, True], ids=["other", "the-step's"])
def test_a_line_too_long_after_a_step_not_ended_is_where_the_scan_stops(mine: bool):
    """It cannot be read, and may hold the step's end: the scan stops past it (not terminated), however it is chunked,
    whether it fits in a chunk or not."""
    long = (b'{"kind":"step.completed","step_id":"s","pad":"' if mine else b'{"kind":"x","pad":"') + b"x" * 100 + b'"}\n'
    head = b'{"kind":"step.started","step_id":"s"}\n{"kind":"other"}\n'
    data = head + long + b'{"kind":"other"}\n'
    for chunks in ([data], [data[i:i + 7] for i in range(0, len(data), 7)], [data[i:i + 50] for i in range(0, len(data), 50)]):
        end = find_step_end(chunks, "s", max_line_bytes=80)
        assert (end.found, end.terminated, end.line, end.end) == (True, False, 3, len(head) + len(long))
        assert find_step_end(chunks, "s", max_line_bytes=80 + len(long)) == find_step_end(chunks, "s")  # fits: a record
    cut = head + long[:-1]  # the input ends in it
    for chunks in ([cut], [cut[i:i + 7] for i in range(0, len(cut), 7)]):
        assert find_step_end(chunks, "s", max_line_bytes=80).line == 3


def test_the_line_too_long_where_the_scan_stops_is_the_first_after_the_steps_latest_record():
    """A step's record after a line too long makes that line none that may hold its end: the next one is, in whatever
    chunks, whether it holds the step's text or not."""
    long = b'{"kind":"x","step_id":"s","pad":"' + b"x" * 100 + b'"}\n'
    other = b'{"kind":"y","pad":"' + b"x" * 100 + b'"}\n'
    step = b'{"kind":"step.started","step_id":"s"}\n'
    for second in (long, other):
        data = step + long + step + b'{"kind":"other"}\n' + second + b'{"kind":"other"}\n'
        stop = len(data) - len(b'{"kind":"other"}\n')
        for chunks in ([data], [data[i:i + 7] for i in range(0, len(data), 7)], [data[i:i + 150] for i in range(0, len(data), 150)]):
            end = find_step_end(chunks, "s", max_line_bytes=80)
            assert (end.found, end.terminated, end.line, end.end) == (True, False, 5, stop)


def test_the_spend_ledger_remembers_every_step_of_its_run():
    """Exact: a step's spend so far counts all it journaled, however many other steps recorded spend in between."""
    ledger = SpendLedger()
    ledger.add("s0", {"usd": 1})
    for n in range(1, 20_001):
        ledger.add(f"s{n}", {"usd": 1})
    assert ledger.add("s0", {"usd": 2}) == {"usd": 3}


def test_the_spend_ledger_starts_over_at_each_run():
    """Another input, a run record, a record naming another runId or run_id: a step's spend is its run's own."""
    ledger = SpendLedger()

    def spend(record, source="a.jsonl"):
        ledger.begin(record, source)
        return ledger.add("s", record.get("usd"))

    assert spend({"kind": "spend", "run_id": "r1", "usd": 1}) == 1
    assert spend({"kind": "spend", "usd": 1}) == 2  # (no run id: the run it sits in)
    assert spend({"$record": "heal", "runId": "r0"}) == 2  # (heal's record is no run's)
    assert spend({"kind": "step.completed", "run_id": "r2"}) is None
    assert spend({"kind": "spend", "runId": "r2", "usd": 1}) == 1
    assert spend({"$record": "run", "runId": "r2"}) is None  # (a run record begins a run, whatever its id)
    assert spend({"kind": "spend", "usd": 1}) == 1
    assert spend({"kind": "spend", "usd": 1}, "b.jsonl") == 1  # another input


def test_a_scan_is_made_once_while_the_file_is_unchanged(tmp_path):
    from replay.pipeline.model.walk_journal import scan_journal

    path = tmp_path / "j.jsonl"
    path.write_bytes((WALK / "hello.jsonl").read_bytes())
    first = scan_journal(str(path), "step-1")
    assert first.end.line == 4 and scan_journal(str(path), "step-1") is first
    path.write_bytes((WALK / "interleaved.jsonl").read_bytes())
    assert not scan_journal(str(path), "step-1").end.found  # changed: scanned again


_OPENED: list[str] = []
_WATCHED: set[str] = set()


def _count_opens(event: str, args: tuple) -> None:
    if event == "open" and args and str(args[0]) in _WATCHED:
        _OPENED.append(str(args[0]))


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_a_scan_opens_the_journal_once_and_finds_what_three_opens_found(tmp_path, bom):
    """The look at the head, the first record and the step's end share one read of the file (a real `open`
    audit event is counted, from Python's own audit hook)."""
    import sys

    from replay.pipeline.model import walk_journal as walk

    if not _WATCHED:
        sys.addaudithook(_count_opens)  # (a hook cannot be removed: it only counts the paths a test names)
    text = (WALK / "hello.jsonl").read_bytes()
    path = tmp_path / "j.jsonl"
    path.write_bytes(bom + text)
    _WATCHED.add(str(path))
    _OPENED.clear()
    walk._SCANS.clear()
    scan = walk.scan_journal(str(path), "step-1")
    assert [str(path)] == _OPENED
    assert scan.end.line == 4 and scan.end.end == len(bom) + len(b"".join(text.splitlines(keepends=True)[:4]))


def test_a_journal_files_dialect_is_judged_from_its_first_records(tmp_path):
    """As the dialect stage judges an input: canonical and flows-style journals are replay's own, other agents' logs
    theirs, whether lines, a JSON document (an array, a trajectory object), one line or gzipped."""
    from dialect_support import CORPUS_FILES

    from replay.pipeline.model.dialects.detect import CANONICAL

    assert {path.parent.name: journal_dialect(str(path)) for path in CORPUS_FILES} == {
        "claude-code": "claude-code", "codex": "codex", "openhands": "openhands", "mini-swe-agent": "mini-swe-agent"}
    assert {journal_dialect(str(path)) for path in WALK.iterdir()} == {CANONICAL}
    one = tmp_path / "one.jsonl"
    one.write_bytes(lines_of("../corpus/claude-code/session_b.jsonl")[0])  # one line, no newline: too short to tell
    assert journal_dialect(str(one)) == "claude-code"
    late = tmp_path / "late.jsonl"  # lines that are no record first, then a Codex record
    late.write_bytes(b'not json\n"a string"\n\n' + lines_of("../corpus/codex/rollout-2026-01-02T03-04-05-11111111-1111"
                                                         "-4111-8111-111111111111.jsonl")[0] + b"\n")
    assert journal_dialect(str(late)) == "codex"
    flows = tmp_path / "flows.jsonl"  # more than LOOKAHEAD records nobody claims, then one somebody does: too late
    flows.write_bytes(b'{"kind":"step.scheduled","step_id":"s"}\n' * 64 + lines_of("../corpus/claude-code/session_b.jsonl")[0])
    assert journal_dialect(str(flows)) == CANONICAL
