"""report's projection (parse with ``fields``) writes what report without it writes, for numbers a double does not hold
as written: msgspec reads them as the nearest double, where the whole parse keeps them exact (``ExactNumber``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, diagnostics, run_replay
from test_screen import after_a_batch

SPEC = (ROOT / "pipeline" / "specs" / "report.toml").read_text()


def _event(seq: int, kind: str, payload: bytes) -> bytes:
    return (b'{"seq":%d,"timestamp":"2026-03-01T12:00:0%d.000Z","type":"%s","runId":"r1","payload":{%s}}'
            % (seq, seq, kind.encode(), payload))


def _journal(payload: bytes) -> bytes:
    return b"\n".join([_event(1, "run_started", b""), _event(2, "tool_called", b'"callId":"c1",' + payload),
                       _event(3, "tool_failed", b'"callId":"c1",' + payload), _event(4, "run_failed", payload)]) + b"\n"


# fields a summary reads (an error's code; a usage count and cost) holding a number of more digits than a double keeps,
# and one below a double's range
NUMBERS = {
    "code-long": b'"error":{"code":0.1000000000000000000001,"message":"m"}',
    "code-tiny": b'"error":{"code":1e-400,"message":"m"}',
    "flat-code": b'"code":0.1000000000000000000001,"message":"m"',
    "usage": b'"usage":{"inputTokens":3,"costUsd":0.25000000000000000000001},"error":"e"',
}


@pytest.mark.parametrize("later", [False, True], ids=["first-batch", "later-batch"])
@pytest.mark.parametrize("fmt", ["json", "text"])
@pytest.mark.parametrize("payload", list(NUMBERS.values()), ids=list(NUMBERS))
def test_a_number_a_double_does_not_hold_is_reported_as_written_with_the_projection_too(tmp_path: Path, payload: bytes,
                                                                                        fmt: str, later: bool):
    data = _journal(payload)
    path = after_a_batch(tmp_path, data) if later else tmp_path / "j.jsonl"
    if not later:
        path.write_bytes(data)
    whole = tmp_path / "whole.toml"  # report's graph as its spec has it: parse decodes every field of every line
    whole.write_text(SPEC.replace('type = "summarize"', 'type = "summarize"\ntimeline = false', 1)
                     .replace('type = "report"', f'type = "report"\nformat = "{fmt}"', 1))
    projected = run_replay("report", "--format", fmt, str(path))
    expected = run_replay("run", str(whole), str(path))
    assert projected.stdout == expected.stdout
    assert (projected.returncode, diagnostics(projected.stderr)) == (expected.returncode, diagnostics(expected.stderr))
    if b"code" in payload:
        written = payload.split(b'"code":')[1].split(b",")[0]
        assert written in projected.stdout  # as written, not as the double read (0.1, 0.0)
