"""The `replay` executable keeps its error and output contract on generated argv and inputs (cli_contract): a short,
derandomized run in `make test` (the same examples every run); `make fuzz` runs thousands (fuzz_cli.py)."""

from __future__ import annotations

from fuzz import cli_contract
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


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
