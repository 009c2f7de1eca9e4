"""The same file named twice is two inputs of one name: read's mark before each ends the run in progress, in heal,
validate and report, whether the files are named to the command or come through `replay read` on a pipe."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import ROOT, run_replay

BROKEN = str(ROOT / "examples" / "journals" / "broken.jsonl")  # a run record, repairs of many rules, a torn last line


def heal_records(out: bytes) -> list[dict]:
    return [orjson.loads(line) for line in out.splitlines() if b'"$record":"heal"' in line]


def test_heal_counts_each_copy_s_repairs_with_its_own_run_named_or_piped():
    once = heal_records(run_replay("heal", BROKEN).stdout)
    named = run_replay("heal", BROKEN, BROKEN).stdout
    piped = run_replay("heal", input=run_replay("read", BROKEN, BROKEN).stdout).stdout
    assert heal_records(named) == heal_records(piped) == once * 2  # the torn line of each copy too
    lines = named.splitlines()
    marks = [k for k, line in enumerate(lines) if b'"$record":"source"' in line]
    assert b'"$record":"heal"' in lines[marks[1] - 1]  # the first copy's run ends before the second's mark


def test_validate_and_report_see_two_runs_through_a_pipe(tmp_path: Path):
    path = tmp_path / "one.jsonl"
    path.write_bytes(b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"a","payload":{}}\n'
                     b'{"seq":2,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_completed","runId":"a","payload":{}}\n')
    stream = run_replay("read", str(path), str(path)).stdout
    checked = run_replay("validate", input=stream)
    assert checked.returncode == 0, checked.stderr  # (the second copy's seq 1 is no error: it begins a run)
    assert orjson.loads(checked.stdout) | {"source": None} == {"source": None, "kind": "stream", "valid": True, "errors": 0,
                                                              "events": 4, "runs": 2}
    report = orjson.loads(run_replay("report", "--format", "json", input=stream).stdout)
    direct = orjson.loads(run_replay("report", "--format", "json", str(path), str(path)).stdout)
    assert [(r["runId"], r["events"]["total"]) for r in report["runs"]] == [("a", 2), ("a", 2)]
    assert [(r["runId"], r["events"]["total"]) for r in direct["runs"]] == [("a", 2), ("a", 2)]
