"""`incident import --format replay` reads a call's id and tool name with the keys report, walk and OTLP read
(``toolcalls.call_id`` / ``tool_name``: callId, toolCallId, id; toolName, tool, name), not only callId/toolName."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import EXAMPLES, errors_of, run_replay


def test_a_journal_whose_calls_say_toolCallId_and_tool_is_imported_as_report_pairs_it(tmp_path: Path) -> None:
    lines = (EXAMPLES / "journals" / "two-runs.jsonl").read_text().splitlines()[:7]  # run_a: one call, c1 (bash)
    journal = tmp_path / "j.jsonl"
    journal.write_text("".join(line.replace('"callId"', '"toolCallId"').replace('"toolName"', '"tool"') + "\n"
                               for line in lines))
    report = json.loads(run_replay("report", str(journal), "--format", "json").stdout)
    assert "bash" in json.dumps(report) and "c1" in json.dumps(report)  # report pairs it
    rules = tmp_path / "rules.json"
    rules.write_text('[{"id": "no-tool-errors", "type": "max_tool_errors", "max": 0}]')
    done = run_replay("incident", "import", str(journal), "--format", "replay", "--rules", str(rules),
                      "--out", str(tmp_path / "o"))
    assert done.returncode == 0, errors_of(done.stderr)
    events = json.loads((tmp_path / "o" / "incident.json").read_text())["events"]
    assert [(e["type"], e.get("call_id"), e.get("name")) for e in events[:2]] == [
        ("tool_call", "c1", "bash"), ("tool_result", "c1", None)]
