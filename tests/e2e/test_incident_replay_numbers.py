"""Incident replay compares an agent's numbers with the recording's by value: 4900 and 4900.0 are one JSON number
(an agent in JavaScript cannot even write the second); they diverged as a changed call. Exactly: a number no double
holds is not the double nearest it, and true is no 1 (big integers: test_same_json.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import jsonl, run_replay
from incident_support import plan_agent

EXPORT = ('{"schema_version":1,"input":{},"events":['
          '{"type":"tool_call","call_id":"c1","name":"refund","args":{"amount_cents":4900,"flag":true,"n":1}},'
          '{"type":"tool_result","call_id":"c1","ok":true,"result":{"y":1}},'
          '{"type":"final_output","output":{"status":"done","total":12.5}}],'
          '"assertions":[{"id":"status-present","type":"required_output","fields":["status"]}]}')
ARGS = '"amount_cents":4900,"flag":true,"n":1'
CALL = '{"type":"tool_call","call_id":"z1","name":"refund","args":{%s}}'
FINAL = '{"type":"final_output","output":{"status":"done","total":12.5}}'


@pytest.mark.parametrize(("call_args", "final", "outcome", "kind"), [
    (ARGS, FINAL, "matched", None),
    (ARGS.replace("4900", "4900.0"), FINAL.replace("12.5", "12.50"), "matched", None),
    (ARGS.replace("4900", "4.9e3").replace('"n":1', '"n":1.0'), FINAL.replace("12.5", "1.25e1"), "matched", None),
    (ARGS.replace("4900", "4900.5"), FINAL, "diverged", "changed_call"),
    (ARGS.replace("4900", "4900.000000000000000001"), FINAL, "diverged", "changed_call"),  # no double holds it
    (ARGS.replace('"flag":true', '"flag":1'), FINAL, "diverged", "changed_call"),
    (ARGS.replace('"n":1', '"n":true'), FINAL, "diverged", "changed_call"),
    (ARGS.replace("4900", '"4900"'), FINAL, "diverged", "changed_call"),
    (ARGS, FINAL.replace("12.5", "12.51"), "diverged", "changed_final_output"),
])
def test_an_agents_numbers_match_the_recording_by_value(tmp_path: Path, call_args: str, final: str, outcome: str,
                                                         kind: str | None) -> None:
    (tmp_path / "export.json").write_text(EXPORT)
    done = run_replay("incident", "import", "export.json", "--out", "imported", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    agent = plan_agent([{"raw": CALL % call_args}, {"raw": final}])
    done = run_replay("incident", "replay", "imported/incident.json", "--agent-command", agent, "--out", "replayed",
                      cwd=tmp_path, process=True)
    (summary,) = jsonl(done.stdout)
    assert (summary["replay"], summary.get("divergence")) == (outcome, kind), done.stderr
    assert done.returncode == (0 if outcome == "matched" else 1)
