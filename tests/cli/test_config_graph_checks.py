"""A config is checked as a whole before anything runs: two sources reading stdin, a stage id, an option's value
(a `report_as` code, empty strings in a list) are refused at the key at fault (exit 2, nothing written), and a graph
of thousands of stages is checked without recursion, and runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay

TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"
TWO_READS = """[stages.r1]
type = "read"
{r1}
[stages.r2]
type = "read"
{r2}
[stages.p1]
type = "parse"
inputs = ["r1"]
[stages.p2]
type = "parse"
inputs = ["r2"]
[stages.o1]
type = "write"
path = "from-r1.jsonl"
inputs = ["p1"]
[stages.o2]
type = "write"
path = "from-r2.jsonl"
inputs = ["p2"]
"""


def refused(result) -> dict:
    assert result.returncode == 2 and result.stdout == b"", result.stderr
    (body,) = errors_of(result.stderr)
    return body


@pytest.mark.parametrize("r1, r2, args, path", [
    ("", "", [], "stages.r2"),  # no paths: both took stdin (BusyResourceError, or stdin split between them)
    ("", 'paths = ["-"]', [], "stages.r2.paths"),
    ('paths = ["-"]', 'paths = ["-"]', [], "stages.r2.paths"),
    ("", "", ["-"], "stages.r2"),  # `-` as the argument fills both
])
def test_two_sources_reading_stdin_are_refused(tmp_path: Path, r1: str, r2: str, args: list[str], path: str):
    config = tmp_path / "two.toml"
    config.write_text(TWO_READS.format(r1=r1, r2=r2))
    body = refused(run_replay("run", str(config), *args, input=TWO_RUNS.read_bytes(), cwd=tmp_path))
    assert body["code"] == "E_CONFIG_OPTION_INVALID" and body["path"] == path, body
    assert "stdin" in body["message"] and "paths" in body["howToFix"] and "inputs" in body["howToFix"]
    assert not (tmp_path / "from-r1.jsonl").exists() and not (tmp_path / "from-r2.jsonl").exists()


def test_one_source_reading_stdin_and_one_a_file_run(tmp_path: Path):
    config = tmp_path / "two.toml"
    config.write_text(TWO_READS.format(r1="", r2=f"paths = [{str(TWO_RUNS)!r}]"))
    result = run_replay("run", str(config), input=TWO_RUNS.read_bytes(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "from-r1.jsonl").read_bytes() == (tmp_path / "from-r2.jsonl").read_bytes() != b""


@pytest.mark.parametrize("shape", ["chain", "tables"])
def test_a_graph_of_3000_stages_runs(tmp_path: Path, shape: str):
    """E_UNHANDLED RecursionError: the cycle check walked the graph by recursion, a level per stage."""
    config = tmp_path / "long.toml"
    if shape == "chain":
        config.write_text("chain = [" + ", ".join(['{type = "select"}'] * 3000) + "]\n")
    else:
        tables = ['[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n']
        tables += [f'[stages.s{n}]\ntype = "select"\ninputs = ["{f"s{n - 1}" if n else "parse"}"]\n' for n in range(3000)]
        tables.append('[stages.out]\ntype = "write"\ninputs = ["s2999"]\n')
        config.write_text("".join(tables))
    result = run_replay("run", str(config), str(TWO_RUNS))
    assert result.returncode == 0, result.stderr[-2000:]
    expected = run_replay("read", str(TWO_RUNS))
    assert result.stdout == expected.stdout != b""


def test_a_cycle_in_a_long_graph_is_still_named(tmp_path: Path):
    config = tmp_path / "cycle.toml"
    tables = ['[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n']
    back = ', "s1999"'  # (s5 takes s1999 too: a cycle s5 -> ... -> s1999 -> s5)
    tables += [f'[stages.s{n}]\ntype = "select"\ninputs = ["{f"s{n - 1}" if n else "parse"}"{back if n == 5 else ""}]\n'
               for n in range(2000)]
    tables.append('[stages.out]\ntype = "write"\ninputs = ["s1999"]\n')
    config.write_text("".join(tables))
    body = refused(run_replay("run", str(config), str(TWO_RUNS)))
    assert body["code"] == "E_CONFIG_CYCLE" and len(body["received"]) == 1996, body["message"][:200]


def test_an_unknown_report_as_code_is_refused_with_the_close_ones(tmp_path: Path):
    """Any string was taken: a clean input hid the typo, and a bad one failed the run (E_STAGE_FAILED, exit 1)."""
    config = tmp_path / "v.toml"
    config.write_text('chain = [{type = "validate", id = "v", report_as = "E_HEALED_ARTIFACT_INVALD"}]\n')
    body = refused(run_replay("run", str(config), str(TWO_RUNS)))
    assert body["code"] == "E_CONFIG_OPTION_INVALID" and body["path"] == "chain[0].report_as", body
    assert body["received"] == "E_HEALED_ARTIFACT_INVALD" and "ERROR_CODES.md" in body["expected"]
    assert "'E_HEALED_ARTIFACT_INVALID'" in body["howToFix"]
    config.write_text('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
                      '[stages.v]\ntype = "validate"\ninputs = ["parse"]\nreport_as = "E_HEALED_ARTIFACT_INVALD"\n'
                      '[stages.o]\ntype = "write"\ninputs = ["v"]\n')
    assert refused(run_replay("run", str(config), str(TWO_RUNS)))["path"] == "stages.v.report_as"
    config.write_text('chain = [{type = "validate", report_as = "E_HEALED_ARTIFACT_INVALID"}]\n')
    assert run_replay("run", str(config), str(TWO_RUNS)).returncode == 0


@pytest.mark.parametrize("item, option", [
    ('{type = "select", types = [""]}', "types"),
    ('{type = "select", types = ["tool_*", ""]}', "types"),
])
def test_an_empty_string_in_a_list_option_is_refused_as_such(tmp_path: Path, item: str, option: str):
    """`types = [""]` was refused as 'must be list of str': it is one."""
    config = tmp_path / "c.toml"
    config.write_text(f"chain = [{item}]\n")
    body = refused(run_replay("run", str(config), str(TWO_RUNS)))
    assert body["path"] == f"chain[0].{option}" and body["expected"] == "list of non-empty str", body


def test_a_stage_id_with_a_letter_beyond_ascii_is_refused_with_a_rename(tmp_path: Path):
    """'réad' was refused as using something other than letters: é is a letter; the rule is ASCII."""
    config = tmp_path / "u.toml"
    config.write_text('[stages."réad"]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["réad"]\n'
                      '[stages.out]\ntype = "write"\ninputs = ["parse"]\n')
    body = refused(run_replay("run", str(config), str(TWO_RUNS)))
    assert body["code"] == "E_CONFIG_SHAPE_INVALID" and body["path"] == "stages.réad", body
    assert "ASCII letters, digits, _ and -" in body["message"]
    assert "'read'" in body["howToFix"] and "inputs" in body["howToFix"]
