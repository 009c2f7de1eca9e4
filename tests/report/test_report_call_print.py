"""`replay report` of a call whose id comes again after the call was answered: that call's record written again (one
call) when its payload is the same as written, keys in any order (``toolcalls.call_print``), else a new call of that id
(``OpenCalls.written_again``). The report reads no other field of a call's line, but its whole payload (issue 11):
each case here is counted as a whole decode of the line counts it, in every way the report runs."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import run_replay

from replay.pipeline.model.toolcalls import CALLED
from replay.pipeline.report.model import CANONICAL_TYPES

FIRST = b'{"callId":"c1","toolName":"bash","args":{"a":1,"b":[1,"x"]}}'
# (a later call of the answered id c1: its payload as written, and the calls the report counts: the seq of each)
CASES = {
    "the same bytes": (FIRST, [2]),
    "keys in another order": (b'{"args":{"b":[1,"x"],"a":1},"toolName":"bash","callId":"c1"}', [2]),
    "whitespace inside": (b'{ "callId" : "c1",\t"toolName":"bash" , "args" : { "a" : 1 , "b" : [ 1 , "x" ] } }', [2]),
    "a character escaped": (b'{"callId":"c1","toolName":"b\\u0061sh","args":{"a":1,"b":[1,"\\u0078"]}}', [2]),
    "a key written twice, the last one the same": (b'{"callId":"c1","toolName":"bash","args":{"a":2},'
                                                   b'"args":{"a":1,"b":[1,"x"]}}', [2]),
    "1.0 for 1": (b'{"callId":"c1","toolName":"bash","args":{"a":1.0,"b":[1,"x"]}}', [2, 4]),
    "true for 1": (b'{"callId":"c1","toolName":"bash","args":{"a":true,"b":[1,"x"]}}', [2, 4]),
    "1e0 for 1": (b'{"callId":"c1","toolName":"bash","args":{"a":1e0,"b":[1,"x"]}}', [2, 4]),
    "another argument": (b'{"callId":"c1","toolName":"bash","args":{"a":2,"b":[1,"x"]}}', [2, 4]),
}
# numbers a double does not hold, each against another one a double reads as the same: another call all the same
CALL_ALIASES = {old for old, new in CANONICAL_TYPES.items() if new in CALLED}
NUMBERS = {
    "a decimal beyond a double": (b"0.1", b"0.1000000000000000000001", [2, 4]),
    "one decimal beyond a double, written two ways": (b"0.1000000000000000000001", b"0.10000000000000000000010", [2, 4]),
    "an integer beyond 64 bits": (b"123456789012345678901234567890", b"123456789012345678901234567891", [2, 4]),
    "numbers beyond a double's range": (b"1e400", b"2e400", [2, 4]),
    "numbers below a double's range": (b"1.5e-400", b"2.5e-400", [2, 4]),
    "a double written two ways": (b"1.0", b"1.00", [2]),
    "the same decimal beyond a double": (b"0.1000000000000000000001", b"0.1000000000000000000001", [2]),
    "half of a surrogate pair, another": (b'"\\ud800"', b'"\\ud801"', [2, 4]),
    "half of a surrogate pair, the same": (b'"\\ud800"', b'"\\ud800"', [2]),
}


def _journal(tmp_path: Path, first: bytes, again: bytes, called: str = "tool_called") -> Path:
    """A run: a call of id c1 of payload ``first`` answered, then a call of that id of payload ``again`` (the text
    as written), answered too; the calls of type ``called``."""
    def line(seq: int, kind: str, payload: bytes) -> bytes:
        return (b'{"seq":%d,"timestamp":"2026-03-01T12:00:%02dZ","type":"%s","runId":"r1","payload":%s}\n'
                % (seq, seq, kind.encode(), payload))

    path = tmp_path / "calls.jsonl"
    path.write_bytes(b"".join([line(1, "run_started", b"{}"), line(2, called, first),
                               line(3, "tool_completed", b'{"callId":"c1"}'), line(4, called, again),
                               line(5, "tool_completed", b'{"callId":"c1"}'), line(6, "run_completed", b"{}")]))
    return path


def _counted(path: Path) -> list[list[int]]:
    """The seq each call the report counts began at, by `replay report --format json`, with one worker and with the
    default."""
    seen = []
    for workers in (["--workers", "1"], []):
        done = run_replay("report", "--format", "json", *workers, str(path))
        assert done.returncode == 0, done.stderr
        [run] = orjson.loads(done.stdout)["runs"]
        assert run["toolCalls"]["total"] == len(run["toolCalls"]["calls"])
        seen.append([call["seq"] for call in run["toolCalls"]["calls"]])
    return seen


@pytest.mark.parametrize("case", list(CASES))
def test_a_call_of_an_answered_id_is_that_call_only_when_its_payload_is_the_same_as_written(tmp_path: Path, case: str):
    again, calls = CASES[case]
    assert _counted(_journal(tmp_path, FIRST, again)) == [calls, calls]


@pytest.mark.parametrize("case", list(NUMBERS))
def test_numbers_a_double_does_not_hold_tell_calls_apart_as_written(tmp_path: Path, case: str):
    first, again, calls = NUMBERS[case]
    payload = b'{"callId":"c1","toolName":"bash","args":{"n":%s}}'
    assert _counted(_journal(tmp_path, payload % first, payload % again)) == [calls, calls]


@pytest.mark.parametrize("called", sorted(CALL_ALIASES))
@pytest.mark.parametrize("case", ["keys in another order", "another argument", "1.0 for 1"])
def test_a_call_under_an_alias_of_tool_called_is_told_apart_as_a_tool_called_is(tmp_path: Path, called: str, case: str):
    """The report reads an alias (``tool_start``, ``tool_use``, ...) as the tool_called heal renames it to: its whole
    payload tells a call written again from a new call of its id, as for a tool_called (a new call was counted as the
    same one when only the fields a summary reads were kept of it)."""
    again, calls = CASES[case]
    assert _counted(_journal(tmp_path, FIRST, again, called)) == [calls, calls]
