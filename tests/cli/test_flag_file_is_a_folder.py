"""A file a flag names that is a folder (`--rules DIR`, `--override DIR`): one refusal wherever it is found out,
E_INPUT_UNREADABLE ("Is a directory", exit 2, nothing run); it was E_INPUT_NOT_FILE_OR_DIR for incident's rules
("neither a file nor a directory": wrong for a folder) and E_USAGE_INVALID for script's override."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay

ROOT = EXAMPLES.parent
CASES = {
    "heal --rules": (["heal", str(EXAMPLES / "journals" / "two-runs.jsonl"), "--rules", "dir"], "--rules"),
    "incident import --rules": (["incident", "import", str(EXAMPLES / "incidents" / "raw-logs" / "refund-run.jsonl"),
                                 "--format", "runledger", "--case", "refund-case", "--rules", "dir", "--out", "X"], "--rules"),
    "script --override": (["script", str(EXAMPLES / "echo-agent" / "scenarios" / "echo" / "session.jsonl"),
                           "--override", "dir"], "--override"),
}


@pytest.mark.parametrize(("args", "path"), CASES.values(), ids=CASES.keys())
def test_a_folder_for_a_flags_file_is_one_refusal(tmp_path: Path, args: list[str], path: str) -> None:
    (tmp_path / "dir").mkdir()
    proc = run_replay(*args, cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, b""), proc.stderr
    (error,) = errors_of(proc.stderr)
    assert (error["code"], error["path"], error["source"], error["received"]) == (
        "E_INPUT_UNREADABLE", path, "dir", "Is a directory"), error
    assert error["message"].startswith("cannot read ") and error["message"].endswith("'dir': Is a directory")
    assert error["howToFix"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir"]
