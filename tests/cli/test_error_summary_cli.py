"""A binary file (or any input broken the same way on every line) gives the first errors, then one summary line."""

from __future__ import annotations

from pathlib import Path

from conftest import errors_of, jsonl, run_replay

GARBAGE = b"\x7fELF\x02\x01\x01\x00\xff\xfe binary \x00\x00"


def binary_file(tmp_path: Path, lines: int = 100) -> Path:
    path = tmp_path / "blob.jsonl"
    path.write_bytes((GARBAGE + b"\n") * lines)
    return path


def test_a_binary_file_gives_twenty_errors_and_one_summary(tmp_path: Path) -> None:
    proc = run_replay("read", str(binary_file(tmp_path)), cwd=tmp_path)
    # no record comes out; each line left out has its dropped record, so a parse down a pipe reports it again
    out = proc.stdout.split(b"\n")[:-1]
    assert proc.returncode == 1 and len(out) == 100 and all(line.startswith(b'{"$record":"dropped"') for line in out)
    errors = errors_of(proc.stderr)
    assert [e["code"] for e in errors] == ["E_JSONL_LINE_INVALID"] * 20 + ["E_ERRORS_SUPPRESSED"]
    summary = errors[-1]
    assert summary["suppressed"] == 80 and summary["suppressedCode"] == "E_JSONL_LINE_INVALID"
    assert summary["source"].endswith("blob.jsonl") and (summary["firstLine"], summary["lastLine"]) == (21, 100)


def test_max_errors_sets_the_limit_and_zero_shows_all(tmp_path: Path) -> None:
    blob = str(binary_file(tmp_path))
    assert len(errors_of(run_replay("--max-errors", "0", "read", blob, cwd=tmp_path).stderr)) == 100
    three = errors_of(run_replay("--max-errors", "3", "read", blob, cwd=tmp_path).stderr)
    assert [e["code"] for e in three] == ["E_JSONL_LINE_INVALID"] * 3 + ["E_ERRORS_SUPPRESSED"]


def test_validate_still_counts_every_error(tmp_path: Path) -> None:
    proc = run_replay("validate", str(binary_file(tmp_path)), cwd=tmp_path)
    assert proc.returncode == 1
    [summary] = jsonl(proc.stdout)
    assert summary["errors"] == 100 and summary["valid"] is False
    assert errors_of(proc.stderr)[-1]["code"] == "E_ERRORS_SUPPRESSED"


def test_max_errors_reaches_every_run_of_a_command_over_many_inputs(tmp_path: Path) -> None:
    """validate, heal --in and report run each input on its own graph: --max-errors is theirs too (it was 20)."""
    blob = str(binary_file(tmp_path))
    commands = (["validate", blob], ["validate", blob, blob, "--workers", "2"], ["heal", "--in", blob, "--out", "healed-{}"],
                ["report", blob, blob])
    for command in commands:
        for limit, shown in (("0", 100), ("3", 3)):
            argv = [word.format(limit) for word in command]
            codes = [e["code"] for e in errors_of(run_replay("--max-errors", limit, *argv, cwd=tmp_path).stderr)]
            assert codes.count("E_JSONL_LINE_INVALID") == shown * command.count(blob), (argv, codes)
