"""A file a flag names to be read (heal's `--rules`, its default `.replay/heal.rules.json`) is an input: an output
over it, or stdout redirected into it, is refused (E_OUTPUT_UNWRITABLE, exit 2) before anything runs, the file
unchanged, as `script --override` and a config are."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest
from conftest import EXAMPLES, REPLAY, errors_of, run_replay

RULES = (EXAMPLES / "rules" / "heal.rules.json").read_bytes()
RUN = b'{"type":"run_started","runId":"a","seq":1,"timestamp":"2024-01-01T00:00:00Z","payload":{}}\n'


def _sum(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def here(tmp_path: Path) -> Path:
    (tmp_path / "r.json").write_bytes(RULES)
    (tmp_path / "x.jsonl").write_bytes(RUN)
    (tmp_path / ".replay").mkdir()
    (tmp_path / ".replay" / "heal.rules.json").write_bytes(RULES)
    return tmp_path


@pytest.mark.parametrize("rules, log", [(["--rules", "r.json"], "r.json"), ([], ".replay/heal.rules.json"),
                                        (["--rules", "r.json"], "./r.json")])
def test_heal_log_over_the_rules_file_is_refused(here: Path, rules: list[str], log: str) -> None:
    before = _sum(here / log)
    proc = run_replay("heal", *rules, "--log", log, "x.jsonl", cwd=here, process=True)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == b""
    (error,) = errors_of(proc.stderr)
    assert error["code"] == "E_OUTPUT_UNWRITABLE" and error["path"] == "--log"
    assert _sum(here / log) == before


@pytest.mark.parametrize("rules", [["--rules", "r.json"], []])
def test_heal_stdout_into_the_rules_file_is_refused(here: Path, rules: list[str]) -> None:
    target = here / ("r.json" if rules else ".replay/heal.rules.json")
    before = _sum(target)
    with open(target, "ab") as out:
        proc = subprocess.run([REPLAY, "heal", *rules, "x.jsonl"], cwd=here, stdout=out, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stderr
    (error,) = errors_of(proc.stderr)
    assert error["code"] == "E_OUTPUT_UNWRITABLE" and error["path"] == "<stdout>"
    assert _sum(target) == before


def test_heal_out_folder_holding_the_rules_file_is_refused(here: Path) -> None:
    """Directory mode: the healed copy `out/x.healed.jsonl` would be written over `--rules out/x.healed.jsonl`."""
    (here / "runs").mkdir()
    (here / "runs" / "x.jsonl").write_bytes(RUN)
    (here / "out").mkdir()
    rules = here / "out" / "x.healed.jsonl"
    rules.write_bytes(RULES)
    proc = run_replay("heal", "--in", "runs", "--out", "out", "--rules", "out/x.healed.jsonl", cwd=here, process=True)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == b""
    (error,) = errors_of(proc.stderr)
    assert error["code"] == "E_OUTPUT_UNWRITABLE" and error["path"] == "--out"
    assert rules.read_bytes() == RULES and sorted(p.name for p in (here / "out").iterdir()) == ["x.healed.jsonl"]


def test_a_log_beside_the_rules_file_is_written(here: Path) -> None:
    proc = run_replay("heal", "--rules", "r.json", "--log", "log.jsonl", "x.jsonl", cwd=here, process=True)
    assert proc.returncode == 0, proc.stderr
    assert (here / "log.jsonl").exists() and (here / "r.json").read_bytes() == RULES
