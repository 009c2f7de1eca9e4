"""heal --in logs an artifact's own toolCalls that its healed copy writes anew when they differ, compared as JSON types
are (``exactjson.typed_equal``): a call's ``durationMs`` of 850 is not the 850.0 the copy writes. The comparison told
the type apart only at the top (a list is a list), so such a list passed for the same and its change went unlogged."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import FIXTURES, run_replay


def _healed(tmp_path: Path, tool_calls: list[dict]) -> tuple[dict, list[dict]]:
    artifact = json.loads((FIXTURES / "artifacts" / "valid" / "full.json").read_text())
    artifact["toolCalls"] = tool_calls
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text(json.dumps(artifact))
    done = run_replay("heal", "--in", str(tmp_path / "in"), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    log = json.loads((tmp_path / "out" / "a.heal-log.json").read_text())
    healed = json.loads((tmp_path / "out" / "a.healed.json").read_text())
    return healed, [r for r in log["repairs"] if r.get("field") == "toolCalls"]


def test_a_tool_call_written_with_another_number_type_is_a_logged_change(tmp_path: Path):
    healed, logged = _healed(tmp_path, [{"toolName": "get_portfolio", "status": "ok", "durationMs": 850}])
    assert healed["toolCalls"] == [{"toolName": "get_portfolio", "status": "ok", "durationMs": 850.0}]
    assert [(r["original"], r["value"]) for r in logged] == [(
        [{"toolName": "get_portfolio", "status": "ok", "durationMs": 850}],
        [{"toolName": "get_portfolio", "status": "ok", "durationMs": 850.0}])]


def test_the_same_tool_calls_are_no_change(tmp_path: Path):
    _, logged = _healed(tmp_path, [{"toolName": "get_portfolio", "status": "ok", "durationMs": 850.0}])
    assert logged == []
