"""``replay report`` (text, json) and ``replay export --otlp`` show a run's tokens in by one rule (``shown_usage``): every
input token the model read, the prompt cache's too (as ``gen_ai.usage.input_tokens`` counts them), the cache's counts
parts of it. The text's per-run block said ``- tokens in (+50 cache read)`` of a usage object of cache counts alone
while its TOKENS IN said 50; export left Anthropic's cache counts out of ``input_tokens`` and read Codex's
``cached_input_tokens`` as a cache read where report did not. Real processes, over journals written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_replay

T = "2026-01-02T03:04:%02d.000Z"


def _journal(*usages: dict) -> str:
    events = [{"seq": 1, "timestamp": T % 0, "type": "run_started", "runId": "r1", "payload": {}}]
    events += [{"seq": n, "timestamp": T % n, "type": "assistant_message", "runId": "r1",
                "payload": {"text": "ok", "model": "claude-x", "messageId": f"m{n}", "usage": usage}}
               for n, usage in enumerate(usages, 2)]
    events.append({"seq": len(events) + 1, "timestamp": T % 9, "type": "run_completed", "runId": "r1", "payload": {}})
    return "".join(json.dumps(e) + "\n" for e in events)


def _rollout() -> str:
    """A Codex rollout of two model calls, mapped through the codex dialect (``token_count``'s ``last_token_usage``)."""
    def count(second: int, last: dict, total: dict) -> dict:
        return {"timestamp": T % second, "type": "event_msg",
                "payload": {"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": last}}}
    first = {"input_tokens": 1000, "cached_input_tokens": 800, "output_tokens": 50}
    second = {"input_tokens": 1300, "cached_input_tokens": 1000, "output_tokens": 30}
    records = [
        {"timestamp": T % 0, "type": "session_meta", "payload": {"id": "cx1", "cwd": "/w", "cli_version": "0.1"}},
        {"timestamp": T % 1, "type": "turn_context", "payload": {"model": "gpt-5"}},
        {"timestamp": T % 2, "type": "event_msg", "payload": {"type": "user_message", "message": "hi"}},
        {"timestamp": T % 3, "type": "response_item", "payload": {
            "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]}},
        count(4, first, first),
        {"timestamp": T % 5, "type": "response_item", "payload": {
            "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "b"}]}},
        count(6, second, {"input_tokens": 2300, "cached_input_tokens": 1800, "output_tokens": 80}),
    ]
    return "".join(json.dumps(r) + "\n" for r in records)


# name, file, its text; tokens in, cache read, cache write (None: not given), and the text's per-run usage line
CASES = [
    ("anthropic", "a.jsonl", _journal({"input_tokens": 20, "cache_read_input_tokens": 50000,
                                       "cache_creation_input_tokens": 1000, "output_tokens": 35},
                                      {"inputTokens": 5, "cacheReadInputTokens": 7, "outputTokens": 1}),
     51032, 50007, 1000, "51,032 tokens in (50,007 cache read, 1,000 cache write), 36 tokens out, -"),
    ("cache only", "c.jsonl", _journal({"cache_read_input_tokens": 50, "output_tokens": 3}),
     50, 50, None, "50 tokens in (50 cache read), 3 tokens out, -"),
    ("codex", "rollout-cx1.jsonl", _rollout(),
     2300, 1800, None, "2,300 tokens in (1,800 cache read), 80 tokens out, -"),
]


def _otlp_tokens(path: Path) -> list[tuple[str, dict[str, int]]]:
    done = run_replay("export", "--otlp", str(path), process=True)
    assert done.returncode == 0 and not done.stderr, done.stderr
    spans = [s for line in done.stdout.splitlines() for r in json.loads(line)["resourceSpans"]
             for scope in r["scopeSpans"] for s in scope["spans"]]
    return [(s["name"], {a["key"]: int(a["value"]["intValue"]) for a in s["attributes"]
                         if a["key"].startswith("gen_ai.usage.")}) for s in spans]


@pytest.mark.parametrize(("name", "file", "text", "tokens_in", "read", "write", "line"), CASES, ids=[c[0] for c in CASES])
def test_text_json_and_otlp_show_the_same_tokens_in(tmp_path: Path, name: str, file: str, text: str, tokens_in: int,
                                                    read: int, write: int | None, line: str) -> None:
    path = tmp_path / file
    path.write_text(text)
    done = run_replay("report", "--format", "json", str(path), process=True)
    assert done.returncode == 0 and not done.stderr, done.stderr
    document = json.loads(done.stdout)
    for usage in (document["runs"][0]["usage"], document["aggregate"]["usage"]):
        assert (usage["inputTokens"], usage.get("cacheReadTokens"), usage.get("cacheCreationTokens")) == \
            (tokens_in, read, write)
    done = run_replay("report", str(path), process=True)
    assert done.returncode == 0 and not done.stderr, done.stderr
    lines = done.stdout.decode().splitlines()
    assert lines[2].split()[-6:] == ["TOKENS", "IN", "TOKENS", "OUT", "COST", "REPAIRS"], lines[:6]
    rows = [row.split() for row in lines[3:5]]  # the run's row and TOTAL: TOKENS IN, TOKENS OUT, COST, REPAIRS last
    assert [row[-4] for row in rows] == [f"{tokens_in:,}"] * 2, lines[:6]
    assert f"  usage    {line}" in lines, lines
    spans = _otlp_tokens(path)
    root = spans[0][1]
    assert root["gen_ai.usage.input_tokens"] == tokens_in
    assert root.get("gen_ai.usage.cache_read.input_tokens") == read
    assert root.get("gen_ai.usage.cache_creation.input_tokens") == write
    chats = [tokens for span, tokens in spans if span.startswith("chat")]
    assert chats and sum(t.get("gen_ai.usage.input_tokens", 0) for t in chats) == tokens_in
    assert sum(t.get("gen_ai.usage.cache_read.input_tokens", 0) for t in chats) == read
