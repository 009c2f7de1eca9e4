"""The `replay` executable keeps its error and output contract on generated argv and inputs (cli_contract): a short,
derandomized run in `make test` (the same examples every run); `make fuzz` runs thousands (fuzz_cli.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES
from fuzz import cli_contract
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HUGE = "99999999999999999999"
# What the fuzzer found, as it ran them (each fixed; the regression tests beside the fixes say more).
FOUND = [
    ["heal", "--in", "dir", "--out", "new/a/b", "--rules", "bad.rules.json"],  # left new/a: tests/cli/test_failed_outputs.py
    ["incident", "import", "dir", "--format", "replay", "--rules", "rules.json", "--out", "new/a/b"],  # the same
    ["incident", "replay", "incident.json", "--agent-command", "AGENT", "--out", "out", "--max-bytes", HUGE],
    ["incident", "promote", "incident.json", "--to", "case.json", "--max-bytes", HUGE],  # E_UNHANDLED: test_incident_cli.py
    ["heal", "--in", "dir", "--out", "out", "--max-line-bytes", HUGE],  # E_UNHANDLED: tests/cli/test_heal_cli.py
    ["incident", "import", "dir", "--format", "replay", "--case", "run_a", "--rules", "rules.json", "--out", "out",
     "--max-events", HUGE],  # E_UNHANDLED: tests/cli/test_incident_many_cli.py
    ["read", "dir", ">>", "dir/run.jsonl"],  # read its own output without end: tests/e2e/test_faults_stdout.py
    ["golden", "check", "dir/run.jsonl", "dir/run.jsonl", ">>", "dir/run.jsonl"],  # appended its line to the input
]


@settings(max_examples=8, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_generated_command_lines_keep_the_contract(data: st.DataObject) -> None:
    ex, problems = cli_contract.run_example(lambda base: data.draw(cli_contract.example(base)))
    assert not problems, f"replay {' '.join(ex.argv)}: {problems}"


def test_the_contract_check_sees_a_broken_run(tmp_path) -> None:
    """The checker itself: a run that keeps the contract passes, one that breaks it (here: an exit code said to be
    wrong) is caught."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "in.jsonl").write_bytes(b'{"seq":1}\n')
    ex = cli_contract.Example(work, ["read", "in.jsonl"], b"", ("read",), files=["in.jsonl"], named=["in.jsonl"])
    assert cli_contract.check(ex) == []
    ex.argv = ["read", "--strict", "in.jsonl"]
    (work / "in.jsonl").write_bytes(b"not json\n")
    ex.usage_error = True  # (said so, falsely: a run that exits 1 is then a finding)
    assert any("not 2" in p for p in cli_contract.check(ex))


@pytest.mark.parametrize("argv", FOUND, ids=lambda argv: " ".join(argv[:2] + argv[-2:]))
def test_what_the_fuzzer_found_keeps_the_contract(tmp_path: Path, argv: list[str]) -> None:
    work = tmp_path / "work"
    (work / "dir").mkdir(parents=True)
    (work / "dir" / "run.jsonl").write_bytes((EXAMPLES / "journals" / "two-runs.jsonl").read_bytes())
    (work / "bad.rules.json").write_bytes(b"{")
    (work / "rules.json").write_bytes(cli_contract.RULES.read_bytes())
    (work / "incident.json").write_bytes(cli_contract.BUNDLES[0])
    argv = [cli_contract.orjson.dumps([cli_contract.sys.executable, str(cli_contract.AGENT)]).decode()
            if a == "AGENT" else a for a in argv]
    stdout_into = argv[-1] if ">>" in argv else None
    argv = argv[:-2] if stdout_into else argv
    outputs = [argv[argv.index(flag) + 1] for flag in ("--out", "--to") if flag in argv]
    command = tuple(argv[:2]) if argv[0] in ("incident", "golden") else (argv[0],)
    ex = cli_contract.Example(work, argv, b"", command, outputs=outputs,
                              output_kinds={o: "doc" if o == "case.json" else "folder" for o in outputs},
                              files=["dir/run.jsonl", "incident.json"], named=["dir", "incident.json"],
                              stdout_into=stdout_into)
    assert cli_contract.check(ex) == []
