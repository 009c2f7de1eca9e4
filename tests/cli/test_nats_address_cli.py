"""A nats:// address given to a command that reads files: refused with advice, its credentials shown to no one."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import errors_of, run_replay


@pytest.mark.parametrize("command", [("heal",), ("validate",), ("report",), ("export", "--otlp"), ("write",)])
@pytest.mark.parametrize("user", ["alice:s3cret", "s3cret"])
def test_credentials_in_a_subject_given_to_a_command_that_reads_files_are_not_shown(
        command: tuple[str, ...], user: str) -> None:
    """`replay heal nats://alice:s3cret@HOST:PORT/SUBJECT` printed the password (or the token) in its error's path,
    where the README says no error shows them; the address is shown with them as ***."""
    done = run_replay(*command, f"nats://{user}@127.0.0.1:4222/agents.raw")
    assert done.returncode == 2 and done.stdout == b""
    assert b"s3cret" not in done.stderr
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_FILESYSTEM_NOT_INSTALLED"
    assert error["path"] == "nats://***@127.0.0.1:4222/agents.raw"


def test_credentials_in_a_subject_given_to_walk_are_not_shown() -> None:
    """walk takes it for a path that is not there: E_RUN_NOT_FOUND, its message and path the address with ***."""
    done = run_replay("walk", "nats://alice:s3cret@127.0.0.1:4222/agents.raw")
    assert done.returncode == 2 and done.stdout == b""
    assert b"s3cret" not in done.stderr
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_RUN_NOT_FOUND" and error["path"] == "nats://***@127.0.0.1:4222/agents.raw"


def test_credentials_in_a_subject_given_to_golden_check_are_not_shown(tmp_path: Path) -> None:
    """golden check takes it for a file that is not there: E_INPUT_PATH_NOT_FOUND, shown with ***."""
    other = tmp_path / "new.jsonl"
    other.write_bytes(b"")
    done = run_replay("golden", "check", "nats://alice:s3cret@127.0.0.1:4222/agents.raw", str(other))
    assert done.returncode == 2
    assert b"s3cret" not in done.stderr + done.stdout
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_INPUT_PATH_NOT_FOUND" and error["path"] == "nats://***@127.0.0.1:4222/agents.raw"


@pytest.mark.parametrize("command", [("incident", "import"), ("incident", "inspect")])
def test_credentials_in_a_subject_given_to_an_incident_command_are_not_shown(tmp_path: Path, command: tuple[str, ...]) -> None:
    """incident import and inspect take it for an export or a bundle that is not there: E_INPUT_PATH_NOT_FOUND, shown
    with *** (every error line is written so, wherever it names the address)."""
    done = run_replay(*command, "nats://alice:s3cret@127.0.0.1:4222/agents.raw", "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and b"s3cret" not in done.stderr + done.stdout
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_INPUT_PATH_NOT_FOUND" and error["path"] == "nats://***@127.0.0.1:4222/agents.raw"
