"""A model call's span of ``replay export --otlp`` shows the sum of its usage objects as ``replay report`` shows the
run's: added up by the one rule (``report.model.UsageSum``), a float sum's roundings added back. The chat span added
them by plain float adds: 0.1 tokens in each of 1000 parts of one response were 99.9999999999986, the report's 100."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from conftest import run_replay


def _journal(path: Path) -> Path:
    """One run, one model response written in 1000 parts (one ``messageId``), each with fractional token counts."""
    events: list[dict[str, Any]] = [{"type": "run_started", "seq": 1, "runId": "r1", "timestamp": "2026-01-01T00:00:00Z",
                                     "payload": {}}]
    events += [{"type": "assistant_message", "seq": n, "runId": "r1", "timestamp": "2026-01-01T00:00:01Z",
                "payload": {"model": "m", "messageId": "msg-1", "text": "x",
                            "usage": {"inputTokens": 0.1, "outputTokens": 0.3, "cache_read_input_tokens": 0.7}}}
               for n in range(2, 1002)]
    events.append({"type": "run_completed", "seq": 1002, "runId": "r1", "timestamp": "2026-01-01T00:00:02Z",
                   "payload": {}})
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return path


def _value(attribute: dict[str, Any]) -> Any:
    value = attribute["value"]
    return int(value["intValue"]) if "intValue" in value else orjson.loads(value["stringValue"])


def test_a_chat_spans_fractional_usage_sum_is_the_reports(tmp_path: Path) -> None:
    journal = _journal(tmp_path / "j.jsonl")
    report = run_replay("report", "--format", "json", str(journal))
    assert report.returncode == 0, report.stderr
    usage = orjson.loads(report.stdout)["runs"][0]["usage"]
    assert (usage["inputTokens"], usage["outputTokens"], usage["cacheReadTokens"]) == (800, 300, 700)
    done = run_replay("export", "--otlp", str(journal))
    assert done.returncode == 0, done.stderr
    spans = [s for line in done.stdout.splitlines() for rs in orjson.loads(line)["resourceSpans"]
             for ss in rs["scopeSpans"] for s in ss["spans"]]
    chat, = [s for s in spans if s["name"].startswith("chat")]
    attrs = {a["key"]: _value(a) for a in chat["attributes"] if a["key"].startswith("gen_ai.usage.")}
    assert attrs == {"gen_ai.usage.input_tokens": usage["inputTokens"],
                     "gen_ai.usage.output_tokens": usage["outputTokens"],
                     "gen_ai.usage.cache_read.input_tokens": usage["cacheReadTokens"]}
