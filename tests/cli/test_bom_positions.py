"""A whole JSON or TOML document (a pipeline config, a heal rules file, an override sidecar, a .json artifact) that
starts with a UTF-8 byte order mark is read as `read` reads a journal after one: the mark is skipped and an error's
positions stay positions in the file (``offset`` of the line's start, so the bad byte is at ``offset + column - 1``).
A config's error had line 1's column counted from after the mark and no offset (3 bytes off), a byte that is not
UTF-8 had offset 0 for line 1 (and 3 too few on later lines), and a heal rules file with a mark was refused
("UTF-8 byte order mark (BOM) is not supported"), as a replay script was (`load_script`, behind `ReplayModel.from_script`:
read by the library, not by a command)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.session import load_script

BOM = b"\xef\xbb\xbf"
TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"
SESSION = EXAMPLES / "echo-agent" / "scenarios" / "echo" / "session.jsonl"


def _case(tmp_path: Path, kind: str, fault: bytes, line: int) -> tuple[list[str], str, bytes]:
    gap = b"\n" * (line - 1)
    if kind == "config-toml":
        data = BOM + gap + b'chain = [{type = "select", types = [' + fault + b"]}]\n"
        (tmp_path / "p.toml").write_bytes(data)
        return ["run", "p.toml", str(TWO_RUNS)], "E_CONFIG_PARSE", data
    data = BOM + gap + b'{"chain":[{"type":"select","types":[' + fault + b"]}]}"
    if kind == "config-json":
        (tmp_path / "p.json").write_bytes(data)
        return ["run", "p.json", str(TWO_RUNS)], "E_CONFIG_PARSE", data
    if kind == "heal-rules":
        (tmp_path / "rules.json").write_bytes(data)
        return ["heal", "--rules", "rules.json", str(TWO_RUNS)], "E_HEAL_RULES_INVALID_JSON", data
    if kind == "override":
        shutil.copy(SESSION, tmp_path / "session.jsonl")
        (tmp_path / "replay.override.json").write_bytes(data)
        return ["script", "session.jsonl"], "E_OVERRIDE_INVALID", data
    assert kind == "artifact"
    (tmp_path / "run.json").write_bytes(data)
    return ["read", "run.json"], "E_ARTIFACT_JSON_INVALID", data


@pytest.mark.parametrize("line", [1, 2])
@pytest.mark.parametrize("fault", [b"x", b"\xff"])
@pytest.mark.parametrize("kind", ["config-json", "config-toml", "heal-rules", "override", "artifact"])
def test_positions_after_a_byte_order_mark_are_positions_in_the_file(tmp_path: Path, kind: str, fault: bytes,
                                                                      line: int) -> None:
    args, code, data = _case(tmp_path, kind, fault, line)
    proc = run_replay(*args, cwd=tmp_path)
    assert proc.returncode in (1, 2), proc.stderr
    (error,) = [e for e in errors_of(proc.stderr) if e["code"] == code]
    assert error["line"] == line, error
    assert error["offset"] == (3 if line == 1 else 3 + line - 1), error  # line 1 starts after the mark, as in a journal
    assert data[error["offset"] + error["column"] - 1:][:1] == fault, error


def test_a_heal_rules_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    (tmp_path / "rules.json").write_bytes(BOM + b'{"version": "v1", "eventAliases": {"run_begin": "run_started"}}')
    (tmp_path / "run.jsonl").write_bytes(b'{"type":"run_begin","run_id":"r"}\n')
    proc = run_replay("heal", "--rules", "rules.json", "run.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert b'"type":"run_started"' in proc.stdout.splitlines()[0]


@pytest.mark.parametrize("line", [1, 2])
@pytest.mark.parametrize("fault", [b"x", b"\xff"])
def test_positions_in_a_replay_script_after_a_byte_order_mark_are_positions_in_the_file(tmp_path: Path, fault: bytes,
                                                                                         line: int) -> None:
    data = BOM + b"\n" * (line - 1) + b'{"version":1,"groups":[' + fault + b"]}"
    (tmp_path / "script.json").write_bytes(data)
    with pytest.raises(ReplayError) as caught:
        load_script(tmp_path / "script.json")
    error = caught.value.body
    assert error["code"] == "E_SCRIPT_INVALID" and error["line"] == line, error
    assert error["offset"] == (3 if line == 1 else 3 + line - 1), error
    assert data[error["offset"] + error["column"] - 1:][:1] == fault, error


def test_a_replay_script_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    script = run_replay("script", str(SESSION))
    assert script.returncode == 0, script.stderr
    (tmp_path / "plain.json").write_bytes(script.stdout)
    (tmp_path / "marked.json").write_bytes(BOM + script.stdout)
    marked = [g.to_json() for g in load_script(tmp_path / "marked.json")]
    assert marked and marked == [g.to_json() for g in load_script(tmp_path / "plain.json")]
