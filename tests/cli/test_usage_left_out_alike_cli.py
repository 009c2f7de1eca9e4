"""``replay report`` and ``replay export --otlp`` count a usage object or leave it out by one rule (``usage_of``), and
say what they leave out by one notice (``usage_notice``, E_USAGE_NOT_COUNTED). Real processes, over one journal."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from conftest import run_replay


def _line(record: dict[str, object] | str) -> str:
    return record if isinstance(record, str) else json.dumps(record)


def _message(seq: int, run: str, usage: str) -> str:
    """An assistant message whose usage is written as given (numbers a double does not hold among them)."""
    return (f'{{"seq":{seq},"timestamp":"2026-01-01T00:00:0{seq}Z","type":"assistant_message","runId":"{run}",'
            f'"payload":{{"model":"m","usage":{usage}}}}}')


JOURNAL = "\n".join(map(_line, [
    {"seq": 1, "timestamp": "2026-01-01T00:00:00Z", "type": "run_started", "runId": "r1", "payload": {}},
    _message(2, "r1", '{"inputTokens":1e5000,"outputTokens":5}'),  # a number no count holds: the object left out
    _message(3, "r1", '{"inputTokens":7,"outputTokens":3,"costUsd":1e5000}'),  # (its cost: its tokens too)
    _message(4, "r1", '{"inputTokens":"45","outputTokens":2}'),  # no count: that field alone left out
    _message(5, "r1", '{"inputTokens":1e400,"outputTokens":1}'),  # beyond a double, but a count: 10**400
    {"seq": 6, "timestamp": "2026-01-01T00:00:06Z", "type": "run_completed", "runId": "r1", "payload": {}},
    # a run record's usage is read by the same rule: left out here, the run's events' counted instead
    '{"$record":"run","runId":"r2","status":"ok","usage":{"inputTokens":1e5000,"outputTokens":4}}',
    {"seq": 1, "timestamp": "2026-01-01T00:00:00Z", "type": "run_started", "runId": "r2", "payload": {}},
    _message(2, "r2", '{"inputTokens":2,"outputTokens":6}'),
    {"seq": 3, "timestamp": "2026-01-01T00:00:03Z", "type": "run_completed", "runId": "r2", "payload": {}},
])) + "\n"


def _notices(stderr: bytes) -> list[tuple[object, ...]]:
    said = [json.loads(line) for line in stderr.splitlines()]
    return [(n["line"], n["runId"], n["received"], n["message"], n["howToFix"], n["level"])
            for n in said if n.get("code") == "E_USAGE_NOT_COUNTED"]


def _count(value: dict[str, str]) -> Decimal:
    """A token count attribute's number (an int64, else its text: ``1e400``), as a Decimal (printed short)."""
    return Decimal(value.get("intValue") or value["stringValue"])


def test_report_and_export_count_and_leave_out_the_same_usage_and_say_so_alike(tmp_path: Path):
    """A usage value beyond what a count holds (``1e5000``): report left its usage object out, with a warning, and
    the export wrote it as a token count (``"1e5000"``, on the model call's span and the run's totals) in silence.
    Now the export leaves out what report leaves out, and gives report's notice of it, line for line."""
    path = tmp_path / "j.jsonl"
    path.write_text(JOURNAL)
    report = run_replay("report", "--format", "json", str(path))
    assert report.returncode == 0, report.stderr
    usages = [(run["runId"], Decimal(run["usage"]["inputTokens"]), Decimal(run["usage"]["outputTokens"]))
              for run in json.loads(report.stdout)["runs"]]
    assert usages == [("r1", 10**400, 3), ("r2", 2, 6)]
    out = tmp_path / "otlp.jsonl"
    export = run_replay("export", "--otlp", str(path), "--out", str(out))
    assert export.returncode == 0, export.stderr
    totals, chats = [], []
    for line in out.read_bytes().splitlines():
        for spans in json.loads(line)["resourceSpans"]:
            for span in spans["scopeSpans"][0]["spans"]:
                attrs = {a["key"]: a["value"] for a in span["attributes"]}
                counts = tuple(_count(attrs[key]) if key in attrs else None
                               for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"))
                if span["name"].startswith("invoke_agent"):
                    totals.append((attrs["gen_ai.conversation.id"]["stringValue"], *counts))
                else:
                    chats.append(counts)
    assert totals == usages
    assert chats == [(None, None), (None, None), (None, 2), (10**400, 1), (2, 6)]
    expected = _notices(report.stderr)
    assert [(line, run, received) for line, run, received, *_ in expected] == [
        (2, "r1", "inputTokens 1e5000"), (3, "r1", "costUsd 1e5000"), (4, "r1", 'inputTokens "45"'),
        (7, "r2", "inputTokens 1e5000")]
    assert _notices(export.stderr) == expected
