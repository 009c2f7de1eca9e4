"""``replay report``'s usage numbers: a cost nobody recorded, and the prompt cache's input tokens."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from conftest import run_replay

RECORD = ('{"$record":"run","runId":"r1","prompt":"p","status":"ok","usage":%s}\n'
          '{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r1","payload":{}}\n'
          '{"seq":2,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_completed","runId":"r1","payload":{}}\n')


def report(path: Path, fmt: str) -> bytes:
    done = run_replay("report", "--format", fmt, str(path))
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    return done.stdout


def test_a_run_that_recorded_no_cost_shows_none_not_zero_dollars(tmp_path: Path) -> None:
    """A run record with tokens and no cost (as Claude Code and OpenHands runs are) showed ``$0.00`` / ``"costUsd": 0``."""
    path = tmp_path / "nc.jsonl"
    path.write_text(RECORD % '{"inputTokens":10,"outputTokens":5}')
    document = json.loads(report(path, "json"))
    assert document["runs"][0]["usage"] == {"inputTokens": 10, "outputTokens": 5, "costUsd": None}
    assert document["aggregate"]["usage"] == {"inputTokens": 10, "outputTokens": 5, "costUsd": None, "runsWithUsage": 1}
    text = report(path, "text").decode()
    assert "$" not in text and "usage    10 tokens in, 5 tokens out, -\n" in text
    assert "$" not in report(path, "markdown").decode() and "$" not in report(path, "html").decode()
    props = {p.get("name"): p.get("value") for p in ET.fromstring(report(path, "junit")).iter("property")}
    assert props["costUsd"] == "-" and props["inputTokens"] == "10"


def test_a_run_that_recorded_a_cost_of_zero_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "free.jsonl"
    path.write_text(RECORD % '{"inputTokens":10,"outputTokens":5,"costUsd":0}')
    document = json.loads(report(path, "json"))
    assert document["runs"][0]["usage"]["costUsd"] == 0 and document["aggregate"]["usage"]["costUsd"] == 0
    assert "usage    10 tokens in, 5 tokens out, $0.00\n" in report(path, "text").decode()
