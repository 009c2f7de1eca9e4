"""`write`'s `hold`: stdout gets what the graph wrote whole, once its input ended, or nothing when an error was reported."""

from __future__ import annotations

from pathlib import Path

from conftest import EXAMPLES, errors_of, run_replay

CONFIG = """[stages.read]
type = "read"
[stages.parse]
type = "parse"
inputs = ["read"]
[stages.out]
type = "write"
inputs = ["parse"]
hold = {hold}
"""


def test_hold_writes_nothing_on_stdout_after_an_error(tmp_path: Path):
    journal = tmp_path / "one-bad-line.jsonl"
    good = (EXAMPLES / "journals" / "two-runs.jsonl").read_bytes()
    journal.write_bytes(good + b"not json\n")
    for hold, printed in (("false", True), ("true", False)):
        (tmp_path / "g.toml").write_text(CONFIG.format(hold=hold))
        done = run_replay("run", str(tmp_path / "g.toml"), str(journal))
        assert done.returncode == 1 and [e["code"] for e in errors_of(done.stderr)] == ["E_JSONL_LINE_INVALID"]
        assert (done.stdout != b"") is printed
    done = run_replay("run", str(tmp_path / "g.toml"), str(EXAMPLES / "journals" / "two-runs.jsonl"))
    assert (done.returncode, done.stdout) == (0, good)
