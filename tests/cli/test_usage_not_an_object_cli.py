"""A usage that is no object (a string, a list, a number; null is a usage not given) is left out of the run's usage
with the E_USAGE_NOT_COUNTED warning naming its line and the value, by ``report`` and ``export --otlp`` alike, as a
value that is no count inside a usage object is. Real processes, over one journal."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_replay

JOURNAL = "\n".join([
    '{"$record":"run","runId":"r1","status":"ok","usage":"1200 tokens"}',
    '{"seq":1,"timestamp":"2026-01-01T00:00:00Z","type":"run_started","runId":"r1","payload":{}}',
    '{"seq":2,"timestamp":"2026-01-01T00:00:01Z","type":"assistant_message","runId":"r1","payload":{"model":"m",'
    '"usage":[5,6]}}',
    '{"seq":3,"timestamp":"2026-01-01T00:00:02Z","type":"assistant_message","runId":"r1","payload":{"model":"m",'
    '"usage":null}}',
    '{"seq":4,"timestamp":"2026-01-01T00:00:03Z","type":"assistant_message","runId":"r1","payload":{"model":"m",'
    '"usage":{"inputTokens":7,"outputTokens":3}}}',
    '{"seq":5,"timestamp":"2026-01-01T00:00:04Z","type":"assistant_message","runId":"r1","payload":{"model":"m",'
    '"usage":12}}',
    '{"seq":6,"timestamp":"2026-01-01T00:00:05Z","type":"run_completed","runId":"r1","payload":{}}',
]) + "\n"


def _notices(stderr: bytes) -> list[tuple[object, ...]]:
    said = [json.loads(line) for line in stderr.splitlines()]
    return [(n["line"], n["runId"], n["received"], n["message"], n["howToFix"], n["level"])
            for n in said if n.get("code") == "E_USAGE_NOT_COUNTED"]


def test_a_usage_that_is_no_object_is_left_out_with_the_warning_in_report_and_export(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text(JOURNAL)
    report = run_replay("report", "--format", "json", str(path))
    assert report.returncode == 0, report.stderr
    run, = json.loads(report.stdout)["runs"]
    assert (run["usage"]["inputTokens"], run["usage"]["outputTokens"]) == (7, 3)  # the one usage object counted
    notices = _notices(report.stderr)
    assert [(line, rid, received) for line, rid, received, *_ in notices] == [
        (1, "r1", 'usage "1200 tokens"'), (3, "r1", "usage [5,6]"), (6, "r1", "usage 12")]
    assert notices[0][3] == 'line 1: usage "1200 tokens" is no usage object (an object of counts); left out of the run\'s usage'
    assert all(level == "warning" for *_, level in notices)
    export = run_replay("export", "--otlp", str(path), "--out", str(tmp_path / "otlp.jsonl"))
    assert export.returncode == 0, export.stderr
    assert _notices(export.stderr) == notices
