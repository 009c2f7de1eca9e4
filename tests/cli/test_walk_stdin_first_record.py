"""A walk config over stdin whose first record cannot be read is refused as the same journal in a file is: exit 2,
`REFUSED [journal_read_failed]`, nothing on stdout (ERROR_CODES.md: E_JOURNAL_READ_FAILED exits 2 when the first
record is unreadable), with an `at` step too (it was E_STEP_NOT_FOUND there, the step asked for in none of the rest)."""

from __future__ import annotations

from pathlib import Path

import pytest

CONFIG = ('[stages.read]\ntype = "read"\n[stages.walk]\ntype = "walk"\ninputs = ["read", "read.errors"]\n'
          'format = "json"\n{at}[stages.out]\ntype = "write"\ninputs = ["walk"]\n')
BAD = b'relayflowd: journal v1 begins\n{"kind":"step.completed","run_id":"bad-0","step_id":"step-1"}\n'


@pytest.mark.parametrize("at", ["", 'at = "step-1"\n', 'at = "nope"\n'], ids=["all", "at-a-step-there", "at-none"])
@pytest.mark.parametrize("journal", [BAD, b'{"kind":"run.spawned"'], ids=["not-json", "torn"])
def test_stdin_refuses_an_unreadable_first_record_as_a_file_does(tmp_path: Path, cli, at: str, journal: bytes) -> None:
    config = tmp_path / "walk.toml"
    config.write_text(CONFIG.format(at=at))
    (tmp_path / "bad.jsonl").write_bytes(journal)
    outcomes = []
    for args, stdin in (([str(tmp_path / "bad.jsonl")], b""), (["-"], journal)):
        code, out, errors = cli("run", str(config), *args, input=stdin)
        assert (code, out, [e["code"] for e in errors]) == (2, b"", ["E_JOURNAL_READ_FAILED"])
        assert errors[0]["message"].startswith("REFUSED [journal_read_failed] the journal could not be read at byte 0")
        outcomes.append({k: errors[0].get(k) for k in ("line", "offset", "refusal", "message")})
    assert outcomes[0] == outcomes[1]


def test_stdin_unreadable_after_output_began_exits_1(tmp_path: Path, cli) -> None:
    config = tmp_path / "walk.toml"
    config.write_text(CONFIG.format(at=""))
    code, out, errors = cli("run", str(config), "-", input=b'{"kind":"run.spawned"}\n' + BAD)
    assert (code, len(out.splitlines()), [e["code"] for e in errors]) == (1, 1, ["E_JOURNAL_READ_FAILED"])
    assert not errors[0]["message"].startswith("REFUSED")
