"""A whole JSON or TOML document (a pipeline config, a heal rules file, an override sidecar, a replay script, a .json
artifact) with a byte that is not UTF-8 is refused at that byte's line and column, as a journal line is: orjson
checks the whole text first and said line 1, column 1 ("str is not valid UTF-8: surrogates not allowed"), and the
TOML reader gave Python's codec message with no position at all."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.session import load_script

TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"
SESSION = EXAMPLES / "echo-agent" / "scenarios" / "echo" / "session.jsonl"
# the bad byte is on line 2, at column 11 (the line starts at offset 28); in the TOML at column 12 (offset 27)
JSON_DOC = b'{"chain":[{"type":"select",\n"types":["\xff"]}]}'
TOML_DOC = b'chain = [{type = "select",\n types = ["\xff"]}]\n'


def _case(tmp_path: Path, kind: str) -> tuple[list[str], str]:
    if kind == "config-json":
        (tmp_path / "p.json").write_bytes(JSON_DOC)
        return ["run", "p.json", str(TWO_RUNS)], "E_CONFIG_PARSE"
    if kind == "config-toml":
        (tmp_path / "p.toml").write_bytes(TOML_DOC)
        return ["run", "p.toml", str(TWO_RUNS)], "E_CONFIG_PARSE"
    if kind == "heal-rules":
        (tmp_path / "rules.json").write_bytes(JSON_DOC)
        return ["heal", "--rules", "rules.json", str(TWO_RUNS)], "E_HEAL_RULES_INVALID_JSON"
    if kind == "override":
        shutil.copy(SESSION, tmp_path / "session.jsonl")
        (tmp_path / "replay.override.json").write_bytes(JSON_DOC)
        return ["script", "session.jsonl"], "E_OVERRIDE_INVALID"
    assert kind == "artifact"
    (tmp_path / "run.json").write_bytes(JSON_DOC)
    return ["read", "run.json"], "E_ARTIFACT_JSON_INVALID"


@pytest.mark.parametrize("kind", ["config-json", "config-toml", "heal-rules", "override", "artifact"])
def test_a_byte_that_is_not_utf8_is_named_where_it_is(tmp_path: Path, kind: str) -> None:
    args, code = _case(tmp_path, kind)
    proc = run_replay(*args, cwd=tmp_path)
    assert proc.returncode in (1, 2), proc.stderr
    (error,) = [e for e in errors_of(proc.stderr) if e["code"] == code]
    where = (2, 12, 27) if kind == "config-toml" else (2, 11, 28)
    assert (error["line"], error["column"], error["offset"]) == where, error
    assert "0xff" in error["message"] and "surrogates" not in error["message"], error


def test_a_replay_script_with_a_byte_that_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "script.json").write_bytes(JSON_DOC)
    with pytest.raises(ReplayError) as caught:
        load_script(tmp_path / "script.json")
    assert caught.value.code == "E_SCRIPT_INVALID"
    assert (caught.value.body["line"], caught.value.body["column"]) == (2, 11)
