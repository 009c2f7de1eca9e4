"""A record pretty-printed across lines, joined by `join_split_records`, is logged exactly once whatever the graph: by
the join itself when no `parse` follows it (`read -> join_split_records -> write`: it logged nothing, in silence), by
that `parse` when one does (heal's graphs, where it is logged with its run)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from conftest import CORPUS as COPIES
from conftest import run_replay

CORPUS = COPIES / "codex"  # (the repository's copies of the real logs, licences in tests/fixtures/corpus/SOURCES.md)


def event(seq: int, kind: str, run: str) -> dict[str, object]:
    return {"seq": seq, "timestamp": f"2026-03-01T12:00:0{seq}Z", "runId": run, "type": kind, "payload": {}}


def journal(path: Path) -> Path:
    """Two runs: run_a has no terminal event (heal adds one at its end), run_b has a record pretty-printed (line 4)."""
    a = [event(1, "run_started", "run_a"), event(2, "user_message", "run_a")]
    b = [event(1, "run_started", "run_b"), event(2, "user_message", "run_b"), event(3, "run_completed", "run_b")]
    lines = [json.dumps(e) for e in a] + [json.dumps(b[0]), json.dumps(b[1], indent=2), json.dumps(b[2])]
    path.write_text("\n".join(lines) + "\n")
    return path


def entries(log: Path) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in log.read_bytes().splitlines()]


CONFIG_HEAD = """
[stages.read]
type = "read"

[stages.join]
type = "join_split_records"
inputs = ["read"]
"""


@pytest.mark.parametrize("logged_by", ["write", "log"])
def test_a_join_with_no_parse_after_it_logs_its_joins_on_its_repairs_port(tmp_path: Path, logged_by: str):
    log = tmp_path / "joins.jsonl"
    sink = (f'[stages.joins]\ntype = "write"\npath = "{log}"\ninputs = ["join.repairs"]\n' if logged_by == "write"
            else '[stages.joins]\ntype = "log"\ninputs = ["join.repairs"]\nevent = "joined"\n')
    config = tmp_path / "join.toml"
    config.write_text(CONFIG_HEAD + '\n[stages.out]\ntype = "write"\ninputs = ["join"]\n\n' + sink)
    path = journal(tmp_path / "j.jsonl")
    run = run_replay("run", str(config), str(path), process=True)
    assert run.returncode == 0, run.stderr
    assert len(run.stdout.splitlines()) == 5  # (the pretty-printed record on one line)
    found = entries(log) if logged_by == "write" else [json.loads(line) for line in run.stderr.splitlines()
                                                        if b'"event":"joined"' in line]
    assert [(e["rule"], e["line"], e["joined"]) for e in found] == [("join_split_records", 4, 7)]


def test_a_join_a_parse_follows_is_logged_once_by_the_parse(tmp_path: Path):
    log = tmp_path / "repairs.jsonl"
    config = tmp_path / "join-parse.toml"
    config.write_text(CONFIG_HEAD + '\n[stages.parse]\ntype = "parse"\ninputs = ["join"]\n\n'
                      '[stages.out]\ntype = "write"\ninputs = ["parse"]\n\n'
                      f'[stages.repairs]\ntype = "write"\npath = "{log}"\ninputs = ["join.repairs", "parse.repairs"]\n')
    run = run_replay("run", str(config), str(journal(tmp_path / "j.jsonl")), process=True)
    assert run.returncode == 0, run.stderr
    assert [(e["rule"], e["line"]) for e in entries(log)] == [("join_split_records", 4)]


def test_heal_logs_the_runs_in_order_the_join_first_among_its_run_s(tmp_path: Path):
    path, log = journal(tmp_path / "j.jsonl"), tmp_path / "heal.log"
    run = run_replay("heal", str(path), "--log", str(log))
    assert run.returncode == 0, run.stderr
    assert [(e["rule"], e["runId"]) for e in entries(log)] == [
        ("ensure_terminal", "run_a"), ("join_split_records", "run_b")]
    assert b'"byRule":{"join_split_records":1}' in run.stdout.splitlines()[-1]


def codex_two_sessions(path: Path) -> Path:
    """Two Codex sessions in one file (the screen leaves another agent's log alone), the second's second record
    pretty-printed: the first session has no terminal, which heal adds at its end."""
    first = (CORPUS / "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl").read_text().splitlines()
    second = (CORPUS / "rollout-66666666-6666-4666-8666-666666666666.jsonl").read_text().splitlines()[:2]
    path.write_text("\n".join([*first, second[0], json.dumps(json.loads(second[1]), indent=1)]) + "\n")
    return path


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the real-log corpus is not here")
def test_screen_off_a_later_session_s_join_comes_after_the_earlier_session_s_repairs(tmp_path: Path):
    path, log = codex_two_sessions(tmp_path / "two.jsonl"), tmp_path / "codex.log"
    run = run_replay("heal", str(path), "--log", str(log))
    assert run.returncode == 0, run.stderr
    rules = [(e["rule"], e["runId"]) for e in entries(log)]
    assert rules.index(("join_split_records", None)) > rules.index(
        ("ensure_terminal", "11111111-1111-4111-8111-111111111111"))


def test_a_join_handed_on_is_logged_once_across_a_stage_that_rebuilds_its_batch(tmp_path: Path):
    """A stage between `parse` (which hands the joins on) and heal's `cut_runs` (which logs them) that rebuilds its
    batches (``Batch.rebuild_parts``): here `ensure_run_started`, which takes run_a's events out to look for its
    run_started and puts them back after one it invents. The joined line's entry goes on with it: it is logged once,
    first among its run's repairs (it was dropped with the batch the stage rebuilt, and never logged)."""
    a = [event(1, "user_message", "run_a"), event(2, "run_completed", "run_a")]
    b = [event(1, "run_started", "run_b"), event(2, "user_message", "run_b"), event(3, "run_completed", "run_b")]
    path = tmp_path / "j.jsonl"  # (run_a's first event pretty-printed: lines 1-7)
    path.write_text("\n".join([json.dumps(a[0], indent=2), *map(json.dumps, [a[1], *b])]) + "\n")
    log, started = tmp_path / "heal.log", tmp_path / "started.log"
    config = tmp_path / "rebuilt.toml"
    config.write_text(CONFIG_HEAD + '\n[stages.parse]\ntype = "parse"\ninputs = ["join"]\n\n'
                      '[stages.start]\ntype = "ensure_run_started"\ninputs = ["parse"]\n\n'
                      '[stages.heal]\ntype = "heal"\ninputs = ["start", "parse.repairs"]\n\n'
                      '[stages.out]\ntype = "write"\ninputs = ["heal"]\n\n'
                      f'[stages.log]\ntype = "write"\npath = "{log}"\ninputs = ["join.repairs", "heal.repairs"]\n\n'
                      f'[stages.started]\ntype = "write"\npath = "{started}"\ninputs = ["start.repairs"]\n')
    run = run_replay("run", str(config), str(path))
    assert run.returncode == 0, run.stderr
    assert [(e["rule"], e["runId"]) for e in entries(started)] == [("ensure_run_started", "run_a")]  # (it rebuilt)
    assert [(e["rule"], e["runId"], e.get("line")) for e in entries(log)] == [
        ("join_split_records", "run_a", 1), ("renumber", "run_a", 1)]
    out = [orjson.loads(line) for line in run.stdout.splitlines()]
    assert [(e["runId"], e["type"]) for e in out if "type" in e][:3] == [
        ("run_a", "run_started"), ("run_a", "user_message"), ("run_a", "run_completed")]
