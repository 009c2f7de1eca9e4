"""A JSON file a person names that is not there (heal rules, a replay script, a session journal loaded for a replay
model) is refused with advice about that file: not the catalogue's `replay read -` for stdin, which none is read from;
and a replay model given a path where its recorded groups go says how to load one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, errors_of, run_replay


def test_a_missing_heal_rules_file_is_told_to_check_its_path(tmp_path: Path) -> None:
    done = run_replay("heal", str(FIXTURES / "walk" / "hello.jsonl"), "--rules", "nope.json", cwd=tmp_path, process=True)
    (error,) = errors_of(done.stderr)
    assert (done.returncode, done.stdout, error["code"], error["path"]) == (2, b"", "E_INPUT_PATH_NOT_FOUND", "--rules")
    assert error["received"] == "nope.json"
    assert error["howToFix"] == "Check the path of the heal rules file.", error


LOAD = """
import sys
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.testing import ReplayModel
try:
    ReplayModel.load(sys.argv[1])
except ReplayError as exc:
    print(exc.body["code"], exc.body["howToFix"], sep="|")
"""


@pytest.mark.parametrize("name, what", [("nope.jsonl", "session journal"), ("nope.json", "replay script")])
def test_a_replay_model_of_a_missing_file_is_told_to_check_its_path(tmp_path: Path, name: str, what: str) -> None:
    done = subprocess.run([sys.executable, "-c", LOAD, name], capture_output=True, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().strip() == f"E_INPUT_PATH_NOT_FOUND|Check the path of the {what}."


NEW = """
import sys
from replay.pipeline.testing import ReplayModel
try:
    ReplayModel(sys.argv[1])
except TypeError as exc:
    print(exc)
else:
    print("taken")
"""


def test_a_replay_model_given_a_path_for_its_groups_says_to_load_it() -> None:
    # it took the path's characters for groups, and the first call failed: 'str' object has no attribute 'key'
    session = str(Path("examples") / "echo-agent" / "scenarios" / "echo" / "session.jsonl")
    done = subprocess.run([sys.executable, "-c", NEW, session], capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().strip() == (f"ReplayModel takes the recorded groups, not a path: load a session journal "
                                            f"or a replay script with ReplayModel.load({session!r})")


def test_a_missing_override_sidecar_of_a_config_is_not_told_of_a_flag_it_has_no(tmp_path: Path) -> None:
    # in a config the sidecar is the script stage's `override`; its advice named only the command's --override
    (tmp_path / "script.toml").write_text('chain = [{ type = "script", override = "nope.json" }]\n')
    session = FIXTURES.parent.parent / "examples" / "echo-agent" / "scenarios" / "echo" / "session.jsonl"
    done = run_replay("run", "script.toml", str(session), cwd=tmp_path, process=True)
    (error,) = errors_of(done.stderr)
    assert (done.returncode, done.stdout, error["code"], error["path"]) == (2, b"", "E_INPUT_PATH_NOT_FOUND", "chain[0].override")
    assert "`override`" in error["howToFix"], error
