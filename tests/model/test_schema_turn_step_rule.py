"""The session, replay-script and replay-override schemas say the rule on `turn` and `step` JSON Schema cannot state:
its integer takes 1.0, which `replay script` and ReplayModel refuse (found by a tester), so each says how to write them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, run_replay

SCHEMAS = ROOT / "schemas"


def _places(stem: str) -> list[dict]:
    schema = json.loads((SCHEMAS / f"{stem}.schema.json").read_text())
    if stem == "session":
        return [schema["$defs"]["count"], schema["properties"]["turn"], schema["properties"]["step"]]
    where = schema["$defs"]["group" if stem == "replay-script" else "override"]["properties"]
    return [where["turn"], where["step"]]


@pytest.mark.parametrize("stem", ["session", "replay-script", "replay-override"])
def test_turn_and_step_say_they_are_written_without_a_fraction(stem: str):
    for place in _places(stem):
        assert "not 0.0" in place["description"] or "not 1.0" in place["description"], place


def test_the_session_line_the_schema_takes_is_refused_as_it_says(tmp_path: Path):
    session = tmp_path / "s.jsonl"
    session.write_text('{"type":"assistant/chunk","turn":1.0,"step":0,"chunk":{"type":"finish","finishReason":"stop"}}\n')
    done = run_replay("script", str(session))
    said = json.loads(done.stderr.splitlines()[0])["error"]["code"]
    assert done.returncode == 1 and said in _places("session")[0]["description"]
