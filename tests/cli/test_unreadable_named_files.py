"""A file a flag or argument names that cannot be read gives one error, worded one way, whichever command reads it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay

# Reading /proc/self/mem from its start fails with EIO, as root too: a file that is there, is a regular file, and
# cannot be read (permissions cannot make one for root).
UNREADABLE = "/proc/self/mem"
RUNNER = str(EXAMPLES / "runners" / "echo_runner.py")

CASES = {
    "pipeline config": ["run", UNREADABLE, "/dev/null"],
    "heal rules file": ["heal", "--rules", UNREADABLE, "/dev/null"],
    "context file": ["--runner", RUNNER, "--context-file", UNREADABLE, "hi"],
    "export": ["incident", "import", UNREADABLE, "--out", "incident"],
    "override sidecar": ["script", "session.jsonl", "--override", UNREADABLE],
    # (golden check read them unguarded: E_UNHANDLED, "OSError: [Errno 5] Input/output error", exit 1)
    "recorded golden": ["golden", "check", UNREADABLE, "session.jsonl"],
    "new journal or transcript": ["golden", "check", "session.jsonl", UNREADABLE],
}
FLAGS = {"context file": "--context-file", "heal rules file": "--rules", "override sidecar": "--override"}


@pytest.mark.skipif(not Path(UNREADABLE).is_file(), reason="needs Linux's /proc")
@pytest.mark.parametrize("what", sorted(CASES))
def test_an_unreadable_named_file_is_one_error_worded_one_way(tmp_path: Path, what: str) -> None:
    (tmp_path / "session.jsonl").write_bytes(b'{"turn":1}\n')
    proc = run_replay(*CASES[what], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == b""
    (error,) = errors_of(proc.stderr)
    assert error["code"] == "E_INPUT_UNREADABLE"
    assert error["message"] == f"cannot read {what} {UNREADABLE!r}: Input/output error"
    assert error["source"] == UNREADABLE and error["received"] == "Input/output error"
    # where it was named: the flag for a flag's file (a context file, heal rules: as their other errors say), else the file
    assert error["path"] == FLAGS.get(what, UNREADABLE)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.jsonl"]  # nothing written
