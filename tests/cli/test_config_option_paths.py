"""What a stage of a `replay run` config refuses about one of its options is named at the config's key
(``stages.<id>.<option>``, ``chain[N].<option>``) and worded as the config writes it; the commands that bind the same
options from flags still name the flag the user typed (``Stage.as_named``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import errors_of, run_replay
from incident_support import INCIDENTS, REFUND_EXPORT

RAW_LOG = INCIDENTS / "raw-logs" / "refund-run.jsonl"  # two cases: refund-case, greeting-case
RULES = INCIDENTS / "rules.json"
EVENTS = b'{"seq":1,"type":"run_started","runId":"r","payload":{}}\n'
INCIDENT_TAIL = ('[stages.redact]\ntype = "redact"\ninputs = ["load"]\n[stages.evaluate]\ntype = "evaluate"\n'
                 'inputs = ["redact"]\n[stages.folder]\ntype = "write_incident"\ninputs = ["evaluate"]\nout = "{out}"\n'
                 '[stages.summary]\ntype = "write"\ninputs = ["folder"]\n')
HEAL = ('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n[stages.heal]\ntype = "heal"\n'
        'inputs = ["parse", "parse.repairs"]\n{heal}\n[stages.o]\ntype = "write"\ninputs = ["heal"]\n')


def refused(tmp_path: Path, config: str, *args: str, cwd: Path | None = None) -> dict[str, Any]:
    """The one error of `replay run` over ``config`` (exit 2, nothing on stdout)."""
    (tmp_path / "c.toml").write_text(config)
    done = run_replay("run", str(tmp_path / "c.toml"), *args, cwd=cwd or tmp_path, input=EVENTS, process=True)
    assert done.returncode == 2, done.stderr
    assert done.stdout == b""
    (error,) = errors_of(done.stderr)
    return error


def no_flag_in(error: dict[str, Any]) -> None:
    """Nothing the error says names a command-line flag: the config has none."""
    for key in ("message", "howToFix", "example", "received", "path"):
        assert "--" not in str(error.get(key, "")), (key, error)


def test_rules_given_to_a_canonical_export_are_named_at_the_config_key(tmp_path: Path) -> None:
    config = f'[stages.load]\ntype = "load_incident"\nrules = "{RULES}"\n' + INCIDENT_TAIL.format(out="o")
    error = refused(tmp_path, config, str(REFUND_EXPORT))
    assert error["code"] == "E_USAGE_INVALID" and error["path"] == "stages.load.rules"
    assert "`rules`" in error["message"] and "format" in error["howToFix"]
    no_flag_in(error)


@pytest.mark.parametrize(("load", "path"), [
    (f'[stages.load]\ntype = "load_incident"\nformat = "runledger"\nrules = "{RULES}"\n' + INCIDENT_TAIL.format(out="o"),
     "stages.load.case"),
    (f'chain = [{{type = "load_incident", format = "runledger", rules = "{RULES}"}}, "redact"]\n', "chain[0].case"),
])
def test_a_log_of_several_cases_asks_for_the_config_s_case(tmp_path: Path, load: str, path: str) -> None:
    error = refused(tmp_path, load, str(RAW_LOG))
    assert error["code"] == "E_INCIDENT_CASE_REQUIRED" and error["path"] == path
    assert error["example"] == 'case = "refund-case"' and "`case`" in error["howToFix"]
    no_flag_in(error)


def test_a_runledger_log_without_rules_asks_for_the_config_s_rules(tmp_path: Path) -> None:
    config = ('[stages.load]\ntype = "load_incident"\nformat = "runledger"\ncase = "refund-case"\n'
              + INCIDENT_TAIL.format(out="o"))
    error = refused(tmp_path, config, str(RAW_LOG))
    assert error["code"] == "E_INCIDENT_RULES_MISSING" and error["path"] == "stages.load.rules"
    assert error["example"] == 'rules = "rules.json"'
    no_flag_in(error)


def test_the_command_still_names_its_flags(tmp_path: Path) -> None:
    done = run_replay("incident", "import", str(RAW_LOG), "--format", "runledger", "--rules", str(RULES),
                      "--out", str(tmp_path / "o"), process=True)
    (error,) = errors_of(done.stderr)
    assert done.returncode == 2 and error["path"] == "--case"
    assert error["example"] == "--case refund-case" and error["howToFix"] == "Choose one with --case ID."
    (tmp_path / "sub").mkdir()
    done = run_replay("incident", "import", str(RAW_LOG), "--format", "runledger", "--case", "refund-case",
                      "--rules", str(tmp_path / "sub"), "--out", str(tmp_path / "o"), process=True)
    (error,) = errors_of(done.stderr)
    assert done.returncode == 2 and error["code"] == "E_INPUT_UNREADABLE" and error["path"] == "--rules"


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    done = run_replay("incident", "import", str(REFUND_EXPORT), "--out", str(tmp_path / "imp"), process=True)
    assert done.returncode == 0, done.stderr
    return tmp_path / "imp" / "incident.json"


def test_an_agent_program_not_there_is_named_at_the_stage_s_command(tmp_path: Path, bundle: Path) -> None:
    config = ('[stages.load]\ntype = "load_incident"\nformat = "bundle"\n[stages.agent]\ntype = "spawn_agent"\n'
              'inputs = ["load"]\ncommand = ["./no-such-agent"]\n[stages.match]\ntype = "match"\ninputs = ["agent"]\n'
              '[stages.evaluate]\ntype = "evaluate"\ninputs = ["match"]\n[stages.folder]\ntype = "write_incident"\n'
              'inputs = ["evaluate"]\nout = "rp"\n[stages.summary]\ntype = "write"\ninputs = ["folder"]\n')
    error = refused(tmp_path, config, str(bundle))
    assert error["code"] == "E_INCIDENT_AGENT_COMMAND_INVALID" and error["path"] == "stages.agent.command"
    done = run_replay("incident", "replay", str(bundle), "--agent-command", '["./no-such-agent"]',
                      "--out", str(tmp_path / "r"), process=True)
    assert done.returncode == 2 and errors_of(done.stderr)[0]["path"] == "--agent-command"


def test_an_agent_the_system_cannot_start_is_named_at_the_stage_s_command(tmp_path: Path, bundle: Path) -> None:
    """Executable but no program (ENOEXEC): only starting it tells, an agent error at run time (exit 1), named where the
    command was given: the config's key, or the flag."""
    unrunnable = tmp_path / "agent.bin"
    unrunnable.write_bytes(b"\x00\x01 not a program")
    unrunnable.chmod(0o755)
    config = ('[stages.load]\ntype = "load_incident"\nformat = "bundle"\n[stages.agent]\ntype = "spawn_agent"\n'
              f'inputs = ["load"]\ncommand = ["{unrunnable}"]\n[stages.match]\ntype = "match"\ninputs = ["agent"]\n'
              '[stages.evaluate]\ntype = "evaluate"\ninputs = ["match"]\n[stages.folder]\ntype = "write_incident"\n'
              'inputs = ["evaluate"]\nout = "rp"\n[stages.summary]\ntype = "write"\ninputs = ["folder"]\n')
    (tmp_path / "c.toml").write_text(config)
    done = run_replay("run", str(tmp_path / "c.toml"), str(bundle), cwd=tmp_path, process=True)
    error = errors_of(done.stderr)[0]
    assert (done.returncode, error["code"]) == (1, "E_INCIDENT_AGENT_START_FAILED"), done.stderr
    assert error["path"] == "stages.agent.command"
    no_flag_in(error)
    done = run_replay("incident", "replay", str(bundle), "--agent-command", f'["{unrunnable}"]',
                      "--out", str(tmp_path / "r"), process=True)
    error = errors_of(done.stderr)[0]
    assert (done.returncode, error["code"], error["path"]) == (1, "E_INCIDENT_AGENT_START_FAILED", "--agent-command")


def test_an_output_folder_not_empty_is_named_at_the_stage_s_out(tmp_path: Path, bundle: Path) -> None:
    config = '[stages.load]\ntype = "load_incident"\n' + INCIDENT_TAIL.format(out="imp")  # (imp holds the bundle)
    error = refused(tmp_path, config, str(REFUND_EXPORT))
    assert error["code"] == "E_INCIDENT_OUTPUT_NOT_EMPTY" and error["path"] == "stages.folder.out"
    no_flag_in(error)
    done = run_replay("incident", "import", str(REFUND_EXPORT), "--out", "imp", cwd=tmp_path, process=True)
    (error,) = errors_of(done.stderr)
    assert done.returncode == 2 and error["path"] == "--out" and error["message"] == "--out 'imp' is not empty"


def test_a_fixture_already_there_is_named_at_the_stage_s_to(tmp_path: Path, bundle: Path) -> None:
    config = ('[stages.load]\ntype = "load_incident"\nformat = "bundle"\n[stages.fixture]\ntype = "promote_incident"\n'
              'inputs = ["load"]\nto = "imp/incident.json"\n[stages.summary]\ntype = "write"\ninputs = ["fixture"]\n')
    error = refused(tmp_path, config, str(bundle))
    assert error["code"] == "E_INCIDENT_PROMOTE_TARGET_EXISTS" and error["path"] == "stages.fixture.to"
    assert error["received"] == "an existing file"
    done = run_replay("incident", "promote", str(bundle), "--to", str(bundle), process=True)
    assert done.returncode == 2 and errors_of(done.stderr)[0]["path"] == "--to"


@pytest.mark.parametrize(("config", "path"), [
    ('[stages.load]\ntype = "load_incident"\nformat = "runledger"\ncase = "refund-case"\nrules = "sub"\n'
     + INCIDENT_TAIL.format(out="o"), "stages.load.rules"),
    (HEAL.format(heal='rules_file = "sub"'), "stages.heal.rules_file"),
    ('[stages.s]\ntype = "script"\noverride = "sub"\n', "stages.s.override"),
])
def test_a_folder_given_as_a_file_is_named_at_the_option(tmp_path: Path, config: str, path: str) -> None:
    (tmp_path / "sub").mkdir()
    error = refused(tmp_path, config, str(RAW_LOG) if "load_incident" in config else "-")
    assert error["code"] == "E_INPUT_UNREADABLE" and error["path"] == path


@pytest.mark.parametrize(("config", "path"), [
    (HEAL.format(heal='aliases = {run_completed = "done"}'), "stages.heal.aliases.run_completed"),
    ('chain = [{type = "alias", aliases = {run_completed = "done"}}]\n', "chain[0].aliases.run_completed"),
    (HEAL.format(heal='aliases = {tool_called = "tool_start"}'), "stages.heal.aliases"),  # a circle with a built-in one
])
def test_aliases_refused_are_named_where_the_config_wrote_them(tmp_path: Path, config: str, path: str) -> None:
    error = refused(tmp_path, config)
    assert error["code"] == "E_CONFIG_OPTION_INVALID" and error["path"] == path


def test_a_chain_s_own_write_is_named_as_the_chain(tmp_path: Path) -> None:
    """The `write` a chain adds at its end is declared by no item: the refusal names the chain, not `stages.write`."""
    error = refused(tmp_path, 'chain = [{type = "load_incident"}]\n', str(REFUND_EXPORT))
    assert error["code"] == "E_INCIDENT_NOT_REDACTED" and error["path"] == "chain"


@pytest.mark.parametrize("name", ["case.json", "format.jsonl", "rules.json"])
def test_a_file_named_like_an_option_is_named_as_the_file(tmp_path: Path, name: str) -> None:
    """A refusal's path that is a file the user typed (``case.json``, missing) was taken for a key of the option
    its name begins with (``stages.load.case.json``, a key nowhere): a file is named as typed, on the command line and
    as a config's argument."""
    done = run_replay("incident", "import", name, "--out", str(tmp_path / "o"), cwd=tmp_path, process=True)
    (error,) = errors_of(done.stderr)
    assert (done.returncode, error["code"], error["path"]) == (2, "E_INPUT_PATH_NOT_FOUND", name)
    config = ('[stages.load]\ntype = "load_incident"\n' + INCIDENT_TAIL.format(out=tmp_path / "o2"))
    error = refused(tmp_path, config, name)
    assert (error["code"], error["path"]) == ("E_INPUT_PATH_NOT_FOUND", name)
