"""A config's mistakes are refused before anything runs, exit 2, at the key of the config that is wrong, saying what
it takes. Around a composite stage (`type = "heal"`) that key is the composite's (`stages.heal.inputs`), never a stage
it expands into (`heal/cut_runs`), which no config has, and never a Python error."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import EXAMPLES, REPLAY, errors_of, run_replay


def heal_config(tmp_path: Path, heal_inputs: str) -> Path:
    config = tmp_path / "heal.toml"
    config.write_text(
        '[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
        f'[stages.heal]\ntype = "heal"\ninputs = {heal_inputs}\n[stages.out]\ntype = "write"\ninputs = ["heal"]\n'
    )
    return config


def refusal(config: Path) -> dict:
    result = run_replay("run", str(config), str(EXAMPLES / "journals" / "two-runs.jsonl"))
    assert result.returncode == 2 and result.stdout == b"", result.stderr
    (body,) = errors_of(result.stderr)
    return body


def test_a_composite_taking_its_own_side_port_is_a_cycle(tmp_path: Path):
    """`heal.repairs` stands for the repairs heal takes in as well as its own: heal taking it resolved it without
    end, E_UNHANDLED (RecursionError), exit 1."""
    body = refusal(heal_config(tmp_path, '["parse", "heal.repairs"]'))
    assert body["code"] == "E_CONFIG_CYCLE" and body["path"] == "stages.heal.inputs"
    assert "heal.repairs" in body["message"] and body["howToFix"]


@pytest.mark.parametrize("inputs, code", [
    ('["parse", "heal"]', "E_CONFIG_CYCLE"),
    ('["read"]', "E_CONFIG_INPUTS_INVALID"),
    ("[]", "E_CONFIG_INPUTS_INVALID"),
    ('["parse", ""]', "E_CONFIG_INPUT_UNKNOWN"),
    ('["parse", "parse.repairs", "*.repairs"]', "E_CONFIG_INPUTS_INVALID"),
])
def test_a_composite_s_wrong_inputs_are_named_as_the_config_wrote_them(tmp_path: Path, inputs: str, code: str):
    """Each was refused at `stages.heal/cut_runs.inputs` (or `stages.heal/heal_summary.inputs[2]`): a stage of heal's
    sub-graph, a key the config does not have."""
    body = refusal(heal_config(tmp_path, inputs))
    assert body["code"] == code and body["path"] == "stages.heal.inputs", body


@pytest.mark.parametrize("item, path, expected", [
    ("{type = 'select', keep_run_records = [true]}", "chain[0].keep_run_records", "bool"),
    ("{type = 'write', path = ['out.jsonl']}", "chain[0].path", "str"),
    ("{type = 'select', types = 'tool_*'}", "chain[0].types", "list of non-empty str"),
])
def test_an_option_of_the_wrong_type_says_the_type_it_takes(tmp_path: Path, item: str, path: str, expected: str):
    """A list given to a bool or str option was refused as 'must be bool of str' ('str of str'): what a list option's
    items are was said of options that take no list."""
    config = tmp_path / "chain.toml"
    config.write_text(f"chain = [{item}]\n")
    body = refusal(config)
    assert body["code"] == "E_CONFIG_OPTION_INVALID" and body["path"] == path
    assert body["expected"] == expected and body["message"].endswith(f"must be {expected}")


@pytest.mark.parametrize("heal_inputs, out_inputs, path", [
    ('["parse."]', '["heal"]', "stages.heal.inputs[0]"),
    ('["parse"]', '["heal."]', "stages.out.inputs[0]"),
])
def test_an_input_with_a_dot_and_no_port_is_refused(tmp_path: Path, heal_inputs: str, out_inputs: str, path: str):
    """`parse.` (a port's name left out) was taken as parse's main output, and the run went on (exit 0)."""
    config = heal_config(tmp_path, heal_inputs)
    config.write_text(config.read_text().replace('inputs = ["heal"]', f"inputs = {out_inputs}"))
    body = refusal(config)
    assert body["code"] == "E_CONFIG_INPUT_UNKNOWN" and body["path"] == path and body["howToFix"]


@pytest.mark.parametrize("second", ["/dev/stdout", "out.jsonl"])
def test_a_second_writer_of_stdout_through_a_path_is_refused(tmp_path: Path, second: str):
    """`path = "/dev/stdout"` (or the file stdout is redirected to) beside a stage writing stdout: with stdout a file,
    the second was renamed over it and the first stage's output was lost (exit 0); with stdout a pipe, their lines
    were mixed."""
    config = tmp_path / "two.toml"
    config.write_text('[stages.read]\ntype = "read"\n[stages.a]\ntype = "write"\ninputs = ["read"]\n'
                      f'[stages.b]\ntype = "write"\ninputs = ["read"]\npath = "{second}"\n')
    out = tmp_path / "out.jsonl"
    with out.open("wb") as stdout:
        ran = subprocess.run([REPLAY, "run", str(config), str(EXAMPLES / "journals" / "two-runs.jsonl")], cwd=tmp_path,
                             stdout=stdout, stderr=subprocess.PIPE, check=False, timeout=60)
    assert ran.returncode == 2 and out.read_bytes() == b"", ran.stderr
    [error] = errors_of(ran.stderr)
    assert error["code"] == "E_CONFIG_OPTION_INVALID" and error["path"] == "stages.b.path"
    assert error["received"] == second and "stdout" in error["message"]


def test_a_heal_rule_to_skip_that_heal_has_not_is_refused(tmp_path: Path):
    """`skip = ["dedup"]` (a rule misspelled) skipped nothing, in silence: every rule ran, exit 0."""
    config = heal_config(tmp_path, '["parse"]')
    config.write_text(config.read_text().replace('inputs = ["parse"]\n', 'inputs = ["parse"]\nskip = ["dedup"]\n'))
    body = refusal(config)
    assert body["code"] == "E_CONFIG_OPTION_INVALID" and body["path"] == "stages.heal.skip"
    assert body["received"] == "dedup" and "dedupe" in body["expected"]


@pytest.mark.parametrize("pattern", ["heal*", "he*"])
def test_a_pattern_names_a_composite_not_the_stages_it_expands_into(tmp_path: Path, pattern: str):
    """`inputs = ["heal*"]` took the main output of each of heal's 15 inner stages (`heal/cut_runs`, ...): every event
    came out 15 times over, exit 0. It names the config's `heal`, whose output is the healed stream."""
    config = heal_config(tmp_path, '["parse"]')
    config.write_text(config.read_text().replace('inputs = ["heal"]', f'inputs = ["{pattern}"]'))
    journal = str(EXAMPLES / "journals" / "two-runs.jsonl")
    by_pattern = run_replay("run", str(config), journal)
    assert by_pattern.returncode == 0, by_pattern.stderr
    assert by_pattern.stdout == run_replay("run", str(heal_config(tmp_path, '["parse"]')), journal).stdout


def test_a_composite_takes_every_other_stage_s_repairs_by_a_pattern(tmp_path: Path):
    """heal given `*.repairs` was refused at `stages.heal/heal_summary.inputs[2]` (the pattern named heal's own inner
    stages' repairs, which heal already counts); a log of `*.repairs` beside heal has every repair once."""
    config = heal_config(tmp_path, '["parse", "*.repairs"]')
    config.write_text(config.read_text().replace('inputs = ["read"]\n', 'inputs = ["read"]\ntorn_tail = "repair"\n')
                      + '[stages.log]\ntype = "write"\npath = "log.jsonl"\ninputs = ["*.repairs"]\n')
    broken = str(EXAMPLES / "journals" / "broken.jsonl")
    ran = run_replay("run", str(config), broken, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    healed = run_replay("heal", broken, "--log", str(tmp_path / "heal-log.jsonl"), cwd=tmp_path)
    assert ran.stdout == healed.stdout
    logged = (tmp_path / "log.jsonl").read_bytes().splitlines()
    assert sorted(logged) == sorted((tmp_path / "heal-log.jsonl").read_bytes().splitlines()) and len(logged) == 12


@pytest.mark.parametrize("taken", ["heal.errors", "*.errors", "h*.errors", "hea?.errors"])
def test_a_composite_s_routed_errors_taken_by_a_pattern_are_consumed(tmp_path: Path, taken: str):
    """`route_errors = true` on heal with its errors taken as `h*.errors` was refused, E_CONFIG_ERRORS_UNCONSUMED:
    only `heal.errors` and `*.errors`, as written, counted."""
    config = heal_config(tmp_path, '["parse"]')
    config.write_text(config.read_text().replace('inputs = ["parse"]\n', 'inputs = ["parse"]\nroute_errors = true\n')
                      + f'[stages.dead]\ntype = "write"\npath = "dead.jsonl"\ninputs = ["{taken}"]\n')
    ran = run_replay("run", str(config), str(EXAMPLES / "journals" / "two-runs.jsonl"), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "dead.jsonl").read_bytes() == b""


@pytest.mark.parametrize("text", ["chain = " + "[" * 5000 + "]" * 5000, "a = " + "{b = " * 3000 + "1" + "}" * 3000])
def test_a_toml_config_nested_too_deeply_is_a_parse_error(tmp_path: Path, text: str):
    """tomllib reads nested arrays and tables by recursion: a config nested thousands deep was E_UNHANDLED
    (RecursionError), exit 1. A JSON config is refused so already (its parser's depth limit)."""
    config = tmp_path / "deep.toml"
    config.write_text(text + "\n")
    body = refusal(config)
    assert body["code"] == "E_CONFIG_PARSE" and body["source"] == str(config) and body["howToFix"]


@pytest.mark.parametrize("stage, code, path", [
    ({"type": "write", "path": "out\u0000.jsonl"}, "E_CONFIG_OPTION_INVALID", "chain[0].path"),
    ({"type": "write", "path": "x/\ud800.jsonl"}, "E_CONFIG_OPTION_INVALID", "chain[0].path"),
    ({"type": "heal", "rules_file": "rules\u0000.json"}, "E_INPUT_PATH_NOT_FOUND", "chain[0].rules_file"),
    ({"type": "write_healed", "out_dir": "healed\u0000"}, "E_CONFIG_OPTION_INVALID", "chain[0].out_dir"),  # (a folder)
])
def test_a_file_name_no_file_can_have_is_refused(tmp_path: Path, stage: dict, code: str, path: str):
    """A NUL (or half a surrogate pair) in a file a JSON config names was E_UNHANDLED (ValueError: embedded null byte;
    UnicodeEncodeError), exit 1."""
    config = tmp_path / "nul.json"
    config.write_bytes(json.dumps({"chain": [stage]}).encode())
    body = refusal(config)
    assert body["code"] == code and body["path"] == path


@pytest.mark.parametrize(("text", "line", "column"), [
    (b"chain = [\n", 1, 10), (b'[stages.a]\ntype = "read"\nx = [1,\n\n', 3, 8), (b'\xef\xbb\xbfa = "', 1, 6)])
def test_a_config_cut_short_is_refused_at_the_end_of_its_last_line(tmp_path: Path, text: bytes, line: int, column: int):
    """tomllib says "at end of document" with no line: the error had no line or column, while its howToFix says to fix
    the syntax at the reported line. It is the end of the last line written (a byte order mark before it skipped)."""
    (tmp_path / "broken.toml").write_bytes(text)
    done = run_replay("run", "broken.toml", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, b""), done.stderr
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_CONFIG_PARSE" and "at end of document" in error["message"]
    assert (error["line"], error["column"]) == (line, column), error
