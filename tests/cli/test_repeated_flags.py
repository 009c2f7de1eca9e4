"""A flag that takes one value, given twice, is refused (E_USAGE_INVALID naming it, exit 2, nothing written) in every
command; flags meant to repeat, and switches, still may be. Every command is made of the class that says so."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from conftest import EXAMPLES, errors_of, run_replay

from replay.pipeline.cli.app import cli
from replay.pipeline.cli.command import OnceEach

JOURNAL = str(EXAMPLES / "journals" / "two-runs.jsonl")


@pytest.mark.parametrize(("args", "flag"), [
    (["write", "--out", "a.jsonl", "--out", "b.jsonl", JOURNAL], "--out"),
    (["report", "--format", "json", "--format", "html", JOURNAL], "--format"),
    (["heal", "--log", "l1.json", "--log", "l2.json", JOURNAL], "--log"),
    (["heal", "--in", "A", "--in", "B", "--out", "D"], "--in"),
    (["--log-level", "info", "--log-level", "debug", "read", JOURNAL], "--log-level"),
    (["write", "--out=a.jsonl", "--out", "b.jsonl", JOURNAL], "--out"),
])
def test_a_one_value_flag_given_twice_is_refused(tmp_path: Path, args: list[str], flag: str) -> None:
    for name in ("A", "B"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.jsonl").write_bytes(Path(JOURNAL).read_bytes())
    result = run_replay(*args, cwd=tmp_path, process=True)
    assert result.returncode == 2
    (error,) = errors_of(result.stderr)
    assert error["code"] == "E_USAGE_INVALID" and error["path"] == flag
    assert error["howToFix"] == f"Give {flag} once."
    assert sorted(p.name for p in tmp_path.iterdir()) == ["A", "B"]  # nothing written: no a, b, l1, l2, D


def test_switches_and_repeating_flags_still_repeat() -> None:
    assert run_replay("read", "--strict", "--strict", JOURNAL).returncode == 0
    assert run_replay("heal", "--summary", "--no-summary", JOURNAL).returncode == 0
    messy = str(EXAMPLES / "journals" / "messy.jsonl")  # (a run heal repairs: --summary adds its heal line)
    for switches, summaries in ((["--summary", "--no-summary"], 0), (["--no-summary", "--summary"], 1)):
        out = run_replay("heal", *switches, messy).stdout
        assert out.count(b'"$record":"heal"') == summaries, switches  # the last switch says


def _commands(command: click.Command, ctx: click.Context) -> list[click.Command]:
    found = [command]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            found += _commands(sub, ctx)
    return found


def test_every_command_refuses_repeats() -> None:
    commands = _commands(cli, click.Context(cli))
    assert len(commands) > 15
    assert [c.name for c in commands if not isinstance(c, OnceEach)] == []
