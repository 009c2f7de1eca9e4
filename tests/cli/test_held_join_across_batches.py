"""`replay run` with a config stage between `parse` and `heal` that holds a run's lines back (`ensure_run_started`
takes a run's first events out while it looks for its run_started): a record pretty-printed across lines among them,
joined again, has its join logged once, at its line and with its run, when the run goes on past a batch of read's
(``BATCH_EVENTS`` lines) or ends the journal. Its entry was lost when the stage let the line go in another batch than
the one it took it from, or at the stream's end (``close_run``): the join was never logged."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from conftest import run_replay

from replay.pipeline.io.journals import BATCH_EVENTS

CONFIG = """
[stages.read]
type = "read"

[stages.join]
type = "join_split_records"
inputs = ["read"]

[stages.parse]
type = "parse"
inputs = ["join"]

[stages.start]
type = "ensure_run_started"
inputs = ["parse"]

[stages.heal]
type = "heal"
inputs = ["start", "parse.repairs"]

[stages.out]
type = "write"
inputs = ["heal"]

[stages.log]
type = "write"
path = "{log}"
inputs = ["join.repairs", "heal.repairs"]
"""


def event(seq: int, kind: str, run: str) -> dict[str, object]:
    return {"seq": seq, "timestamp": f"2026-03-01T12:{seq // 60 % 60:02d}:{seq % 60:02d}Z", "runId": run, "type": kind,
            "payload": {}}


def journal(path: Path, before: int, run_b: bool) -> int:
    """run_0 (``before`` lines, whole), then run_a, which has no run_started: its first event pretty-printed (7 lines),
    11 more after it; then, if ``run_b``, a whole run_b. Returns the line run_a's first event begins at."""
    lines = [json.dumps(event(1, "run_started", "run_0"))]
    lines += [json.dumps(event(seq, "user_message", "run_0")) for seq in range(2, before)]
    lines.append(json.dumps(event(before, "run_completed", "run_0")))
    first = len(lines) + 1
    lines += json.dumps(event(1, "user_message", "run_a"), indent=2).splitlines()
    lines += [json.dumps(event(seq, "user_message", "run_a")) for seq in range(2, 12)]
    lines.append(json.dumps(event(12, "run_completed", "run_a")))
    if run_b:
        lines += [json.dumps(event(1, "run_started", "run_b")), json.dumps(event(2, "run_completed", "run_b"))]
    path.write_text("\n".join(lines) + "\n")
    return first


@pytest.mark.parametrize(("before", "run_b"), [(BATCH_EVENTS - 18, True), (BATCH_EVENTS - 18, False), (10, False)],
                         ids=["run-a-spans-a-batch", "run-a-spans-a-batch-and-ends-the-journal", "run-a-ends-the-journal"])
def test_a_join_a_config_stage_holds_is_logged_once_at_its_line(tmp_path: Path, before: int, run_b: bool):
    path, log = tmp_path / "j.jsonl", tmp_path / "heal.log"
    first = journal(path, before, run_b)
    config = tmp_path / "held.toml"
    config.write_text(CONFIG.format(log=log))
    run = run_replay("run", str(config), str(path), process=True)
    assert run.returncode == 0, run.stderr
    entries = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    assert [(e["runId"], e["line"], e["joined"]) for e in entries if e["rule"] == "join_split_records"] == [
        ("run_a", first, 7)]
    out = [orjson.loads(line) for line in run.stdout.splitlines()]
    assert [(e["type"], e.get("synthetic")) for e in out if e.get("runId") == "run_a" and "type" in e][:2] == [
        ("run_started", True), ("user_message", None)]  # (the stage held run_a's events: it put them back)
