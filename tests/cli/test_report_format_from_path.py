"""A `report` stage with no `format` takes it from its `path`'s extension, as `replay report --out` does (one rule,
``stages.report.report_format``): `replay run` of the printed report graph with `path = "r.html"` writes the same
HTML file as `replay report --out r.html`, for every extension the command knows; a format given still wins."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES, run_replay

from replay.stages.report import AUTO, FORMAT_BY_SUFFIX, report_format

TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"


def report_config(folder: Path, path: str, fmt: str | None = None) -> Path:
    """The graph `replay report` runs (as `replay stages --graph report` prints it), its report written to ``path``."""
    printed = run_replay("stages", "--graph", "report", process=True)
    assert printed.returncode == 0, printed.stderr
    given = f'path = "{path}"\n' + (f'format = "{fmt}"\n' if fmt else "")
    text = printed.stdout.decode().replace('type = "report"\n', 'type = "report"\n' + given, 1)
    config = folder / "report.toml"
    config.write_text(text)
    return config


def test_a_config_report_to_an_html_path_writes_html(tmp_path: Path):
    config = report_config(tmp_path, "r.html")
    done = run_replay("run", str(config), str(TWO_RUNS), cwd=tmp_path, process=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "r.html").read_bytes().startswith(b"<!DOCTYPE html>")


@pytest.mark.parametrize("suffix", [*FORMAT_BY_SUFFIX, ".HTML", ".log", ""])
def test_the_config_and_the_command_write_the_same_file(tmp_path: Path, suffix: str):
    config = report_config(tmp_path, f"config{suffix}")
    by_config = run_replay("run", str(config), str(TWO_RUNS), cwd=tmp_path, process=True)
    by_command = run_replay("report", str(TWO_RUNS), "--out", f"command{suffix}", cwd=tmp_path, process=True)
    assert by_config.returncode == by_command.returncode == 0, (by_config.stderr, by_command.stderr)
    written = (tmp_path / f"config{suffix}").read_bytes()
    assert written == (tmp_path / f"command{suffix}").read_bytes()
    assert written.startswith(b"<!DOCTYPE html>") == (suffix.lower() in (".html", ".htm"))


def test_a_format_given_wins_over_the_extension_in_both(tmp_path: Path):
    """What the command does with `--format json --out r.html` (a JSON file, no refusal), a config does too."""
    config = report_config(tmp_path, "config.html", fmt="json")
    assert run_replay("run", str(config), str(TWO_RUNS), cwd=tmp_path, process=True).returncode == 0
    done = run_replay("report", str(TWO_RUNS), "--format", "json", "--out", "command.html", cwd=tmp_path, process=True)
    assert done.returncode == 0, done.stderr
    written = (tmp_path / "config.html").read_bytes()
    assert written.startswith(b"{") and written == (tmp_path / "command.html").read_bytes()


def test_the_rule():
    assert [report_format(AUTO, p) for p in ("-", "r.HTM", "s3://b/r.md", "r", "r.xml")] == [
        "text", "html", "markdown", "text", "junit"]
    assert report_format("junit", "r.html") == "junit"
