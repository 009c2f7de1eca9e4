"""The error catalogue: pipeline/engine/errors.py and ERROR_CODES.md agree, and every code has a producer."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import orjson
import pytest

from replay.pipeline.engine.errors import CATALOGUE, ReplayError, diagnostic, error_line, printable

ROOT = Path(__file__).resolve().parents[2]
CODE = re.compile(r"E_[A-Z0-9]+(?:_[A-Z0-9]+)*")
CATALOGUE_FILE = ROOT / "pipeline" / "engine" / "errors.py"

def documented_codes() -> list[str]:
    """Codes in the tables of ERROR_CODES.md (rows like ``| `E_X` | meaning |``)."""
    text = (ROOT / "ERROR_CODES.md").read_text()
    return re.findall(r"^\|\s*`(E_[A-Z0-9_]+)`\s*\|", text, flags=re.MULTILINE)


def catalogue_keys(tree: ast.AST) -> set[int]:
    """The nodes of the ``CATALOGUE = {...}`` keys in errors.py: they name the codes, they emit none."""
    for node in ast.walk(tree):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "CATALOGUE"
                and isinstance(node.value, ast.Dict)):
            return {id(key) for key in node.value.keys}
    raise AssertionError("errors.py has no `CATALOGUE: ... = {...}` literal to leave out")


def code_literals() -> dict[str, set[str]]:
    """Every string literal shaped like an error code in pipeline/ and stages/, but the catalogue's own keys."""
    found: dict[str, set[str]] = {}
    for folder in ("pipeline", "stages"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            skip = catalogue_keys(tree) if path == CATALOGUE_FILE else set()
            for node in ast.walk(tree):
                if (isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE.fullmatch(node.value)
                        and id(node) not in skip):
                    found.setdefault(node.value, set()).add(str(path.relative_to(ROOT)))
    return found


PRODUCED = code_literals()


def test_the_markdown_lists_exactly_the_catalogue():
    documented = documented_codes()
    assert len(documented) == len(set(documented)), "a code is listed twice in ERROR_CODES.md"
    assert set(documented) == set(CATALOGUE), (
        f"only in errors.py: {sorted(set(CATALOGUE) - set(documented))}; "
        f"only in ERROR_CODES.md: {sorted(set(documented) - set(CATALOGUE))}"
    )


def test_the_markdown_gives_the_same_meaning_as_the_catalogue():
    text = (ROOT / "ERROR_CODES.md").read_text()
    rows = dict(re.findall(r"^\|\s*`(E_[A-Z0-9_]+)`\s*\|\s*(.*?)\s*\|\s*$", text, flags=re.MULTILINE))
    for code, (meaning, _advice) in CATALOGUE.items():
        assert rows[code] == meaning.replace("|", "\\|"), code


@pytest.mark.parametrize(("code", "flag", "key"), [("E_INCIDENT_CASE_REQUIRED", "--case", "`case`"),
                                                    ("E_INCIDENT_AGENT_COMMAND_INVALID", "--agent-command", "`command`"),
                                                    ("E_INCIDENT_OUTPUT_NOT_EMPTY", "--out", "`out`")])
def test_an_incident_code_a_config_raises_too_names_its_config_key_beside_the_flag(code: str, flag: str, key: str):
    """`replay run` configs raise these at the incident stages' keys: the meaning fits both, not the CLI alone."""
    meaning, _advice = CATALOGUE[code]
    assert flag in meaning and key in meaning and "config" in meaning


def test_every_code_has_a_meaning_and_advice():
    for code, (meaning, advice) in CATALOGUE.items():
        assert CODE.fullmatch(code), code
        assert meaning and advice, code


@pytest.mark.parametrize("code", sorted(CATALOGUE))
def test_every_catalogue_code_is_produced_somewhere(code: str):
    assert code in PRODUCED, f"{code} is in the catalogue but nothing in pipeline/ or stages/ produces it"


def test_the_catalogue_keys_are_not_counted_as_producers():
    assert CATALOGUE_FILE.is_file()
    in_errors_py = {code for code, where in PRODUCED.items() if str(CATALOGUE_FILE.relative_to(ROOT)) in where}
    assert in_errors_py < set(CATALOGUE), "errors.py raises a few codes itself, not all of them"


def test_the_code_uses_no_code_missing_from_the_catalogue():
    unknown = {code: sorted(where) for code, where in PRODUCED.items() if code not in CATALOGUE}
    assert unknown == {}


# the JSON form -------------------------------------------------------------------------------
def test_diagnostic_orders_fields_and_drops_empty_ones():
    body = diagnostic("E_JSONL_LINE_INVALID", "bad", received="x", line=3, source="a.jsonl", offset=10,
                      column=None, extra="kept")
    assert list(body) == ["code", "message", "source", "line", "offset", "received", "howToFix", "extra"]
    assert body["howToFix"] == CATALOGUE["E_JSONL_LINE_INVALID"][1]


def test_diagnostic_refuses_a_code_outside_the_catalogue():
    with pytest.raises(KeyError):
        diagnostic("E_MADE_UP", "no")


def test_replay_error_prints_one_json_line():
    exc = ReplayError("E_CONFIG_CYCLE", "loop", path="stages.a.inputs", howToFix="Break it.")
    line = exc.to_json()
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert orjson.loads(line) == {"error": {"code": "E_CONFIG_CYCLE", "message": "loop", "path": "stages.a.inputs",
                                            "howToFix": "Break it."}}
    assert exc.exit_code == 2 and exc.code == "E_CONFIG_CYCLE"
    assert error_line(exc.body) == line


def test_an_error_about_a_non_utf8_name_is_still_one_json_line():
    body = diagnostic("E_INPUT_PATH_NOT_FOUND", "missing \udcff.jsonl", path="runs/\udcff.jsonl")
    line = error_line(body)
    assert orjson.loads(line)["error"]["path"] == "runs/\ufffd.jsonl"
    assert printable({"k": ["\udcfe", 1]}) == {"k": ["\ufffd", 1]}


def test_a_usage_error_names_the_command_running_where_it_is_made():
    """The catalogue's advice says `replay COMMAND`: an error made while a command runs names it (click's context), as
    typed; made outside one (the library), the placeholder stays. The command line was re-parsed for it afterwards."""
    import click

    from replay.pipeline.cli import app  # noqa: F401  (the CLI tells the engine how to find the command being run)
    from replay.pipeline.engine.parallel import Failure

    assert ReplayError("E_USAGE_INVALID", "x").body["howToFix"] == "Run `replay COMMAND --help` for the usage."
    group = click.Group("replay")
    with click.Context(group, info_name="replay") as root, click.Context(click.Command("import"), parent=root,
                                                                         info_name="import"):
        assert ReplayError("E_USAGE_INVALID", "x").body["howToFix"] == "Run `replay import --help` for the usage."
        # made in a worker process, which runs no command: named where the command reports it
        worker = Failure("error", ReplayError("E_UNKNOWN_FLAG", "x").body | {"howToFix": CATALOGUE["E_UNKNOWN_FLAG"][1]})
        assert worker.reported()["howToFix"] == "Run `replay import --help` to list the flags."
        assert worker.exception().body["howToFix"] == "Run `replay import --help` to list the flags."  # type: ignore[attr-defined]
