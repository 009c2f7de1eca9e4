"""``replay report``'s usage numbers: a cost nobody recorded, and the prompt cache's input tokens."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from conftest import FIXTURES, run_replay

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


def cached_session(tmp_path: Path) -> Path:
    """A real Claude Code session whose one model call read 50,000 input tokens from the prompt cache and wrote 1,000."""
    text = (FIXTURES / "corpus" / "claude-code" / "session_b.jsonl").read_text()
    before = '"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0'
    assert text.count(before) == 1
    path = tmp_path / "cache.jsonl"
    path.write_text(text.replace(before, '"cache_creation_input_tokens": 1000, "cache_read_input_tokens": 50000'))
    return path


def test_the_prompt_cache_s_input_tokens_are_in_the_report(tmp_path: Path) -> None:
    """TOKENS IN showed Anthropic's ``input_tokens`` alone (20), which leave out the cache's: 51,000 more here."""
    path = cached_session(tmp_path)
    document = json.loads(report(path, "json"))
    assert document["runs"][0]["usage"] == {"inputTokens": 51020, "outputTokens": 35, "costUsd": None,
                                            "cacheReadTokens": 50000, "cacheCreationTokens": 1000}
    assert document["aggregate"]["usage"] == {"inputTokens": 51020, "outputTokens": 35, "costUsd": None,
                                              "cacheReadTokens": 50000, "cacheCreationTokens": 1000, "runsWithUsage": 1}
    text = report(path, "text").decode().splitlines()
    assert text[3].split()[7:10] == ["51,020", "35", "-"] and text[4].split()[8:11] == ["51,020", "35", "-"]
    assert "  usage    51,020 tokens in (50,000 cache read, 1,000 cache write), 35 tokens out, -" in text
    markdown = report(path, "markdown").decode()
    assert "| 51,020 | 35 | - |" in markdown and "51,020 tokens in (50,000 cache read, 1,000 cache write)" in markdown
    html = report(path, "html").decode()
    assert "51,055" in html and "of which cache read</td><td class=\"n\">50,000" in html
    junit = ET.fromstring(report(path, "junit"))
    props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert (props["inputTokens"], props["cacheReadTokens"], props["cacheCreationTokens"]) == ("51020", "50000", "1000")
    assert "usage: 51020 tokens in (50000 cache read, 1000 cache write), 35 tokens out, -" in junit.find(".//system-out").text


def test_a_cache_count_that_is_no_count_is_a_notice(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"seq":1,"timestamp":"2026-01-01T00:00:01.000Z","type":"assistant_message","runId":"r",'
                    '"payload":{"usage":{"input_tokens":3,"cache_read_input_tokens":-1,"cache_creation_input_tokens":7}}}\n')
    done = run_replay("report", "--format", "json", str(path))
    assert done.returncode == 0
    [notice] = [json.loads(line) for line in done.stderr.splitlines()]
    assert (notice["code"], notice["received"]) == ("E_USAGE_NOT_COUNTED", "cache_read_input_tokens -1")
    assert json.loads(done.stdout)["runs"][0]["usage"] == {"inputTokens": 10, "outputTokens": None, "costUsd": None,
                                                           "cacheCreationTokens": 7}
