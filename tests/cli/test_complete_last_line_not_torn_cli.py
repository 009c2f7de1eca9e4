"""A complete but invalid last line is reported, never dropped as torn: heal, read and validate through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import errors_of, jsonl, run_replay

E = b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r1","payload":{}}'
E2 = b'{"seq":2,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_completed","runId":"r1","payload":{}}'

CASES = {
    "two records on the last line": E + b"\n" + E2 + E2,
    "carriage return line ends": E + b"\r" + E2 + b"\r",
    "a wrong token mid-line": E + b'\n{"seq":2,,"type":"x"}',
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("command", ["heal", "read", "validate"])
def test_a_last_line_wrong_before_its_end_is_invalid_and_exits_1(tmp_path: Path, name: str, command: str) -> None:
    journal = tmp_path / "j.jsonl"
    journal.write_bytes(CASES[name])
    args = [command, str(journal)] + (["--log", str(tmp_path / "log.jsonl")] if command == "heal" else [])
    result = run_replay(*args)
    assert result.returncode == 1, result.stderr
    codes = [e["code"] for e in errors_of(result.stderr)]
    assert "E_JSONL_LINE_INVALID" in codes and "E_JSONL_LINE_TORN" not in codes
    if command == "heal" and (tmp_path / "log.jsonl").exists():  # (none when no run was read: no repair to log)
        log = jsonl((tmp_path / "log.jsonl").read_bytes())
        assert all(r.get("rule") != "drop_torn_line" for r in log)
    if name == "carriage return line ends":
        assert any("carriage return" in e["howToFix"] for e in errors_of(result.stderr))


def test_a_last_line_cut_off_mid_write_is_still_dropped_as_torn(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    journal.write_bytes(E + b"\n" + E2[:50])
    result = run_replay("heal", str(journal), "--log", str(tmp_path / "log.jsonl"))
    assert result.returncode == 0, result.stderr
    assert "drop_torn_line" in [r["rule"] for r in jsonl((tmp_path / "log.jsonl").read_bytes())]
