"""ReplayModel (and the replay_session fixture) loads a replay script only as `replay schema replay-script` allows it:
every document the schema refuses is E_SCRIPT_INVALID with its path (a misspelt `acton` replayed a throw as a clean
stop), and the schema agrees with each refusal."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import run_replay
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.session import groups_from_script
from replay.pipeline.testing.replay_model import ReplayModel

ROOT = Path(__file__).resolve().parents[2]
FINISH = {"type": "finish", "finishReason": "stop"}


@functools.cache
def script_schema() -> Draft202012Validator:
    docs = [orjson.loads(p.read_bytes()) for p in (ROOT / "schemas").glob("*.schema.json")]
    registry = Registry().with_resources([(d["$id"], Resource.from_contents(d)) for d in docs])
    return Draft202012Validator(orjson.loads((ROOT / "schemas" / "replay-script.schema.json").read_bytes()),
                                registry=registry)


def group(**fields: Any) -> dict[str, Any]:
    return {"turn": 1, "step": 0, "chunks": [{"type": "text-delta", "text": "hi"}, FINISH], **fields}


ERROR = {"name": "APIError", "message": "overloaded"}


@pytest.mark.parametrize("document, path", [
    ({"version": 1, "groups": [group(acton="throw", error=ERROR)]}, "$.groups[0].acton"),
    ({"version": 1, "groups": [group(error=ERROR)]}, "$.groups[0].error"),
    ({"version": 1, "groups": [group(chunks=[FINISH, {"type": "text-delta", "text": "after"}, FINISH])]},
     "$.groups[0].chunks[1]"),
    ({"version": 1, "groups": [], "extra": 1}, "$.extra"),
    ({"version": True, "groups": []}, "$.version"),
    ({"version": 1, "session": 5, "groups": []}, "$.session"),
    ({"version": 1, "groups": [group(chunks=[{"type": "text-delta", "text": 5}, FINISH])]}, "$.groups[0].chunks[0].text"),
    ({"version": 1, "groups": [group(chunks=[{"type": "finish", "usage": "lots"}])]}, "$.groups[0].chunks[0].usage"),
    ({"version": 1, "groups": [group(action="throw", error={"name": "", "message": "m"})]}, "$.groups[0].error.name"),
    ({"version": 1, "groups": [group(action="hang", error=ERROR)]}, "$.groups[0].error"),
    ({"version": 1, "groups": [group(action="hang")]}, "$.groups[0].chunks[1]"),
    ({"version": 1, "groups": [group(), {**group(action="throw", error=ERROR), "turn": 2}]}, "$.groups[1].chunks[1]"),
], ids=["misspelt-action", "error-without-action", "chunk-after-finish", "unknown-top-key", "version-true",
        "session-not-string", "chunk-text-number", "chunk-usage-string", "error-name-empty", "hang-with-error",
        "hang-with-finish", "throw-with-finish"])
def test_a_script_the_schema_refuses_is_refused(tmp_path: Path, document: dict[str, Any], path: str):
    assert list(script_schema().iter_errors(document)) != [] or path.endswith("chunks[1]")  # (the schema's words)
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps(document))
    with pytest.raises(ReplayError) as caught:
        ReplayModel.load(script)
    body = caught.value.body
    assert (body["code"], body["path"], body["source"]) == ("E_SCRIPT_INVALID", path, str(script))
    assert body["howToFix"]


def test_a_script_the_schema_allows_loads(tmp_path: Path):
    document = {"version": 1, "session": "s.jsonl", "override": "o.json", "groups": [
        group(), {"turn": 2, "step": 0, "chunks": [{"type": "text-delta", "text": "Let me"}], "action": "throw",
                  "error": ERROR}, {"turn": 3, "step": 0, "chunks": [], "action": "hang"}]}
    assert list(script_schema().iter_errors(document)) == []
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps(document))
    assert ReplayModel.load(script).calls == [(1, 0), (2, 0), (3, 0)]


def test_a_finish_chunk_in_a_group_with_an_action_is_refused_where_replay_script_leaves_it_out(tmp_path: Path):
    """A script whose hang / throw group still held its finish chunk loaded without a word, and the finish was silently
    not served (the schema: an overridden group's chunks are "the recorded ones before any finish"). `replay script`
    leaves it out of such a group, so what it writes still loads; the Python API refuses one that holds it."""
    with pytest.raises(ReplayError) as caught:
        groups_from_script({"version": 1, "groups": [group(action="hang")]})
    assert caught.value.code == "E_SCRIPT_INVALID" and caught.value.body["path"] == "$.groups[0].chunks[1]"
    assert "action" in caught.value.message and caught.value.body["received"] == "finish"
    session = tmp_path / "session.jsonl"
    session.write_bytes(b"".join(orjson.dumps({"type": "assistant/chunk", "turn": 1, "step": 0, "chunk": c}) + b"\n"
                                 for c in group()["chunks"]))
    (tmp_path / "o.json").write_bytes(orjson.dumps({"overrides": [{"turn": 1, "step": 0, "action": "hang"}]}))
    done = run_replay("script", str(session), "--override", str(tmp_path / "o.json"), "--out", str(tmp_path / "s.json"))
    assert done.returncode == 0, done.stderr
    [written] = orjson.loads((tmp_path / "s.json").read_bytes())["groups"]
    assert written["action"] == "hang" and FINISH not in written["chunks"]
    assert ReplayModel.load(tmp_path / "s.json").calls == [(1, 0)]
