"""A graph whose output lies inside a folder one of its read stages reads (or holds it) is refused before anything
runs, by the check `heal --in runs --out runs/x` is refused by (``preflight.refuse_overlap``): the next run would read
its own output. A config's stage option is named (E_CONFIG_OPTION_INVALID, as a config's output naming a folder is);
a command's flag is E_OUTPUT_UNWRITABLE. Nothing is written. Real processes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay

TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"


def folder_of_runs(tmp_path: Path) -> Path:
    folder = tmp_path / "dd"
    folder.mkdir()
    shutil.copy(TWO_RUNS, folder / "a.jsonl")
    return folder


def refused(done, code: str, path: str) -> dict:
    assert (done.returncode, done.stdout) == (2, b""), done.stderr
    [error] = errors_of(done.stderr)
    assert (error["code"], error["path"]) == (code, path), error
    assert "overlap" in error["message"] and error["howToFix"]
    return error


@pytest.mark.parametrize(("paths", "out"), [('["dd/"]', "dd/new.jsonl"), ('["dd"]', "dd/sub/new.jsonl"),
                                            ('["dd/sub/.."]', "./dd/new.jsonl")])
def test_a_config_writing_into_the_folder_it_reads_is_refused(tmp_path: Path, paths: str, out: str):
    folder_of_runs(tmp_path)
    config = tmp_path / "w.toml"
    config.write_text(f'[stages.read]\ntype = "read"\npaths = {paths}\n'
                      f'[stages.out]\ntype = "write"\npath = "{out}"\ninputs = ["read"]\n')
    (tmp_path / "dd" / "sub").mkdir()
    error = refused(run_replay("run", str(config), cwd=tmp_path), "E_CONFIG_OPTION_INVALID", "stages.out.path")
    assert error["received"] == out
    assert sorted(p.name for p in (tmp_path / "dd").rglob("*")) == ["a.jsonl", "sub"]


def test_a_config_given_the_folder_as_an_argument_is_refused_too(tmp_path: Path):
    folder_of_runs(tmp_path)
    config = tmp_path / "r.toml"
    config.write_text('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
                      '[stages.sum]\ntype = "summarize"\ninputs = ["parse"]\n'
                      '[stages.rep]\ntype = "report"\npath = "dd/report.json"\ninputs = ["sum"]\n')
    refused(run_replay("run", str(config), "dd", cwd=tmp_path), "E_CONFIG_OPTION_INVALID", "stages.rep.path")
    assert not (tmp_path / "dd" / "report.json").exists()


@pytest.mark.parametrize("args", [["write", "dd", "--out", "dd/all.jsonl"], ["heal", "dd", "--log", "dd/log.jsonl"],
                                  ["export", "--otlp", "dd", "--out", "dd/trace.json"],
                                  # (report walks its folders itself: it reads the files it found, and the folders too)
                                  ["report", "dd", "--format", "json", "--out", "dd/report.json"],
                                  ["report", "--in", "dd", "--workers", "2", "--out", "dd/report.html"]])
def test_a_command_writing_into_the_folder_it_reads_is_refused_by_its_flag(tmp_path: Path, args: list[str]):
    folder_of_runs(tmp_path)
    refused(run_replay(*args, cwd=tmp_path), "E_OUTPUT_UNWRITABLE", args[-2])
    assert [p.name for p in (tmp_path / "dd").iterdir()] == ["a.jsonl"]


def test_writing_beside_the_folder_read_is_fine(tmp_path: Path):
    folder_of_runs(tmp_path)
    config = tmp_path / "w.toml"
    config.write_text('[stages.read]\ntype = "read"\npaths = ["dd"]\n'
                      '[stages.out]\ntype = "write"\npath = "dd.jsonl"\ninputs = ["read"]\n')
    done = run_replay("run", str(config), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "dd.jsonl").read_bytes() == TWO_RUNS.read_bytes()


HEAL_TABLES = ('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
               '[stages.h]\ntype = "heal"\ninputs = ["parse", "parse.repairs"]\n')


@pytest.mark.parametrize(("config", "path", "out"), [
    (HEAL_TABLES + '[stages.w]\ntype = "write_healed"\nout_dir = "dd/healed"\ninputs = ["h", "h.repairs"]\n',
     "stages.w.out_dir", "dd/healed"),
    (HEAL_TABLES + '[stages.e]\ntype = "emit"\nout_dir = "dd"\ninputs = ["h", "h.repairs"]\n', "stages.e.out_dir", "dd"),
    (HEAL_TABLES + '[stages.e]\ntype = "emit"\nout_dir = "elsewhere"\njournal_dir = "dd/j"\ninputs = ["h", "h.repairs"]\n',
     "stages.e.journal_dir", "dd/j"),
    ('chain = [{type = "select", types = ["tool_*"]}, {type = "write", path = "dd/x.jsonl"}]\n', "chain[1].path",
     "dd/x.jsonl"),
    ('chain = ["parse", {type = "emit", out_dir = "dd/x", journal_dir = ""}]\n', "chain[1].out_dir", "dd/x"),
], ids=["write_healed", "emit", "emit-journals", "chain-write", "chain-emit"])
def test_an_output_folder_or_chain_item_is_named_at_its_option(tmp_path: Path, config: str, path: str, out: str):
    """Before: a folder was refused at its stage (`stages.w`, not the key at fault), and a chain's item was named in the
    message by an id the config does not have (`stages.write.path`) while its path said `chain[1].path`."""
    folder_of_runs(tmp_path)
    (tmp_path / "c.toml").write_text(config)
    error = refused(run_replay("run", "c.toml", "dd", cwd=tmp_path, process=True), "E_CONFIG_OPTION_INVALID", path)
    assert error["received"] == out
    assert error["message"] == f"{path} {out!r} and the folder read 'dd' overlap: inputs are never written into"
    assert [p.name for p in (tmp_path / "dd").iterdir()] == ["a.jsonl"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.toml", "dd"]


@pytest.mark.parametrize("chain", ['{ type = "write_healed", out_dir = "dd/healed" }', '{ type = "emit", out_dir = "dd/x" }'])
def test_a_config_run_per_file_is_refused_a_folder_inside_the_folder_it_reads(tmp_path: Path, chain: str):
    """With --workers each file of the folder runs alone, but the refusal is the one run over the folder gives."""
    folder_of_runs(tmp_path)
    config = tmp_path / "c.toml"
    config.write_text(f"chain = [{chain}]\n")
    refused(run_replay("run", str(config), "dd", "--workers", "2", cwd=tmp_path), "E_CONFIG_OPTION_INVALID",
            "chain[0].out_dir")
    assert sorted(p.name for p in (tmp_path / "dd").rglob("*")) == ["a.jsonl"]
