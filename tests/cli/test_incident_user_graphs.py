"""User graphs that read an incident export: its records reach no stage but `redact` (a config that would write them
as read is refused before anything runs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import errors_of, run_replay
from incident_support import REFUND_EXPORT

LOAD = '[stages.load]\ntype = "load_incident"\n'
WRITE_STDOUT = '[stages.out]\ntype = "write"\ninputs = ["{}"]\n'


@pytest.mark.parametrize(("name", "config"), [
    ("straight to stdout", LOAD + WRITE_STDOUT.format("load")),
    ("evaluated, then to a file", LOAD + '[stages.ev]\ntype = "evaluate"\ninputs = ["load"]\n'
                                  '[stages.out]\ntype = "write"\ninputs = ["ev"]\npath = "x.jsonl"\n'),
    # a redact stage further on is no help: it leaves the evaluation (raw order ids in its groups) as it is
    ("evaluated, then redacted", LOAD + '[stages.ev]\ntype = "evaluate"\ninputs = ["load"]\n'
                                 '[stages.red]\ntype = "redact"\ninputs = ["ev"]\n' + WRITE_STDOUT.format("red")),
    ("a chain without redact", 'chain = ["load_incident", "evaluate"]\n'),
])
def test_a_graph_that_would_write_an_export_unredacted_is_refused(tmp_path: Path, name: str, config: str) -> None:
    (tmp_path / "leak.toml").write_text(config)
    done = run_replay("run", "leak.toml", str(REFUND_EXPORT), cwd=tmp_path, process=True)
    assert done.returncode == 2, name
    (error,) = errors_of(done.stderr)
    assert error["code"] == "E_INCIDENT_NOT_REDACTED" and error["expected"] == "a `redact` stage"
    assert "redact" in error["howToFix"] and error["path"] in ("stages.out.inputs", "stages.ev.inputs", "chain[1]")
    assert done.stdout == b"" and b"jane.doe@example.com" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["leak.toml"]


def test_a_graph_that_redacts_first_writes_the_export_redacted(tmp_path: Path) -> None:
    (tmp_path / "ok.toml").write_text('chain = ["load_incident", "redact", "evaluate"]\n')
    done = run_replay("run", "ok.toml", str(REFUND_EXPORT), cwd=tmp_path, process=True)
    assert done.returncode == 0, done.stderr
    assert b'"$record":"incident"' in done.stdout and b'"$record":"evaluation"' in done.stdout
    assert b"jane.doe@example.com" not in done.stdout and b"order-1042" not in done.stdout
