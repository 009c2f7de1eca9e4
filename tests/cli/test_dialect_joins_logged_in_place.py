"""A record of another agent's log split across lines, joined by `join_split_records`, is logged once by heal, in its
place (first among the repairs of the run it is in), whatever the record maps to: `dialect` carries each join on to
what its line maps to. A mini-swe-agent trajectory with no messages maps to no event of its line, only to its run's
run record: its join waited in `dialect` for an event that never came (never logged; looked for again in every batch
after), and the run itself was lost when another trajectory followed it in the file."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from conftest import jsonl, run_replay
from dialect_support import CORPUS

CLAUDE = CORPUS / "claude-code" / "representative_messages.jsonl"
CODEX = CORPUS / "codex" / "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"


def trajectory(instance: str, status: str, messages: list[dict[str, str]]) -> dict[str, object]:
    return {"info": {"exit_status": status}, "messages": messages, "trajectory_format": "mini-swe-agent-1",
            "instance_id": instance}


def healed(path: Path, *args: str) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    log = path.with_suffix(".log")
    done = run_replay("heal", str(path), "--log", str(log), *args)
    assert done.returncode == 0, done.stderr
    return jsonl(done.stdout), jsonl(log.read_bytes())


@pytest.mark.parametrize("last", [False, True], ids=["another-after-it", "last"])
@pytest.mark.parametrize("dialect", [(), ("--dialect", "mini-swe-agent")])  # (named: the screen is off)
def test_a_trajectory_with_no_messages_split_across_lines_is_a_run_and_its_join_is_logged_with_it(tmp_path, dialect, last):
    said = [{"role": "system", "content": "s"}, {"role": "user", "content": "do it"}]
    before, empty, after = trajectory("b", "Submitted", said), trajectory("a", "RuntimeError", []), trajectory("c", "Submitted", said)
    trajectories = [before, empty] if last else [before, empty, after]
    path = tmp_path / "many.jsonl"  # one trajectory a line, the one with no messages pretty-printed (lines 2-9)
    path.write_text("\n".join(json.dumps(t, indent=2 if t is empty else None) for t in trajectories) + "\n")
    out, log = healed(path, *dialect)
    runs = [r["runId"] for r in out if r.get("$record") == "run"]
    assert runs == [t["instance_id"] for t in trajectories]  # (a was lost when c came after it: c took its place)
    joins = [k for k, e in enumerate(log) if e["rule"] == "join_split_records"]
    assert [(log[k]["line"], log[k]["joined"]) for k in joins] == [(2, 8)]  # (it was never logged)
    runs = [e["runId"] for e in log if e["rule"] != "join_split_records"]
    # in its place: after the repairs of run b, before those of run a (the run its line is)
    assert runs[:joins[0]] == ["b"] * joins[0] and runs[joins[0]] == "a"
    back = run_replay("heal", str(path), "--dialect-out", "mini-swe-agent", *dialect)
    assert back.returncode == 0, back.stderr
    assert jsonl(back.stdout) == trajectories  # each written back whole, on a line of its own


@pytest.mark.parametrize("log", [CLAUDE, CODEX], ids=["claude-code", "codex"])
def test_a_record_split_across_two_lines_is_logged_once_first_among_its_run_s_repairs(tmp_path, log):
    """Every Claude Code and Codex record maps to at least one event (one the dialect has no table for becomes an event
    of its own type), so its join goes on with the first: here the last record, split between two of its tokens
    (its line number and offset stay the file's), heals as the file does, with the join logged once, first."""
    lines = log.read_bytes().splitlines()
    last = lines[-1]
    cut = last.index(b",") + 1  # (after its first member)
    split = tmp_path / log.name
    split.write_bytes(b"\n".join([*lines[:-1], last[:cut], last[cut:].lstrip(b" ")]) + b"\n")
    whole = tmp_path / ("whole-" + log.name)
    whole.write_bytes(b"\n".join(lines) + b"\n")
    out, entries = healed(split)
    expected_out, expected = healed(whole)
    (counted,) = [r for r in expected_out if r.get("$record") == "heal"]  # (the join is a repair of the run: counted)
    counted.update(repairs=counted["repairs"] + 1, byRule=dict(sorted({**counted["byRule"], "join_split_records": 1}.items())))
    assert out == [json.loads(json.dumps(r).replace(whole.name, split.name)) for r in expected_out]
    join = {"rule": "join_split_records", "action": "changed", "runId": None, "source": str(split),
            "line": len(lines), "offset": len(b"\n".join(lines[:-1])) + 1, "joined": 2}
    assert {k: entries[0].get(k) for k in join} == join
    assert entries[1:] == [orjson.loads(orjson.dumps(e).replace(str(whole).encode(), str(split).encode())) for e in expected]
