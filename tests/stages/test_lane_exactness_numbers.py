"""A number whose exponent is beyond a Decimal's (``0e99999999999999999999``: valid JSON, orjson reads it as 0.0) is read
by every command, in both lanes alike: exactjson compared its text with its double's as Decimals, which refused it,
and every command failed in ``read`` (E_STAGE_FAILED, InvalidOperation)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import ROOT, diagnostics, run_replay
from test_screen import after_a_batch, same, validate_both_ways

from replay.pipeline.engine import exactjson

NUMBERS = [b"0e99999999999999999999", b"1e-99999999999999999999", b"-0.0E+99999999999999999999"]
REPORT = (ROOT / "pipeline" / "specs" / "report.toml").read_text()


def _journal(number: bytes, first: bytes) -> bytes:
    return (b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"%s","runId":"r1","payload":{"n":%s}}\n'
            b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"tool_failed","runId":"r1","payload":{"callId":"c",'
            b'"error":{"code":%s}}}\n'
            b'{"seq":3,"timestamp":"2026-03-01T12:00:03.000Z","type":"run_completed","runId":"r1","payload":{}}\n'
            % (first, number, number))


def test_such_a_number_reads_as_its_value():
    assert exactjson.loads(b"0e99999999999999999999") == 0.0
    tiny = exactjson.loads(b"1e-99999999999999999999")
    assert type(tiny) is exactjson.ExactNumber and exactjson.dumps(tiny) == b"1e-99999999999999999999"
    assert exactjson.same_json(tiny, exactjson.loads(b"10e-100000000000000000000"))
    assert not exactjson.same_json(tiny, exactjson.loads(b"1e-99999999999999999998"))
    assert exactjson.same_json(exactjson.loads(b"[0e99999999999999999999]"), [0])


@pytest.mark.parametrize("later", [False, True], ids=["first-batch", "later-batch"])
@pytest.mark.parametrize("first", [b"run_started", b"start"], ids=["clean", "alias"])
@pytest.mark.parametrize("number", NUMBERS, ids=lambda n: n.decode())
def test_every_command_reads_such_a_number_and_both_lanes_agree(tmp_path: Path, number: bytes, first: bytes, later: bool):
    data = _journal(number, first)
    path = after_a_batch(tmp_path, data) if later else tmp_path / "j.jsonl"
    if not later:
        path.write_bytes(data)
    for command in (["read"], ["validate", "--in"], ["heal"], ["report", "--format", "json"]):
        done = run_replay(*command, str(path))
        assert done.returncode == 0, (command, done.stderr)  # (an alias is a warning to validate)
        assert b"E_STAGE_FAILED" not in done.stderr
    fast, slow = validate_both_ways(tmp_path, path)
    assert (fast.stdout, fast.returncode, diagnostics(fast.stderr)) == (slow.stdout, slow.returncode, diagnostics(slow.stderr))
    same(tmp_path, b"", str(path))
    whole = tmp_path / "whole.toml"  # report without the projection
    whole.write_text(REPORT.replace('type = "summarize"', 'type = "summarize"\ntimeline = false', 1)
                     .replace('type = "report"', 'type = "report"\nformat = "json"', 1))
    assert run_replay("report", "--format", "json", str(path)).stdout == run_replay("run", str(whole), str(path)).stdout
    if first == b"start":  # the event heal writes anew keeps the number as written, or as its value (zero)
        healed = [line for line in run_replay("heal", str(path)).stdout.splitlines() if b'"n":' in line]
        assert len(healed) == 1 and b'"type":"run_started"' in healed[0]
        n = orjson.loads(healed[0].replace(number, b'"as written"'))["payload"]["n"]
        assert n == ("as written" if number.startswith(b"1") else 0.0)  # (a zero, a double's zero, is written 0.0)


def test_one_number_written_with_an_exponent_beyond_an_int_is_one_number_however_its_exponent_is_written():
    """An exponent of more digits than Python reads as an int is compared as written: its sign and leading zeros were
    part of that text, so `1e+0999…` and `1e999…` (one number) were two."""
    from replay.pipeline.engine import exactjson as exact

    nines = "9" * 5000
    assert exact.same_json(exact.loads(f"[1e+0{nines}]"), exact.loads(f"[1e{nines}]"))
    assert exact.same_json(exact.loads(f"[1e-00{nines}]"), exact.loads(f"[1e-{nines}]"))
    assert not exact.same_json(exact.loads(f"[1e{nines}]"), exact.loads(f"[1e-{nines}]"))
