"""Command routing: a typo of a command is refused, a prompt goes to capture."""

from __future__ import annotations

from pathlib import Path

from conftest import EXAMPLES, errors_of, run_replay


def test_a_mistyped_command_is_refused_with_the_command_it_resembles(tmp_path: Path) -> None:
    proc = run_replay("valdate", "--in", "x", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == b""
    (error,) = errors_of(proc.stderr)
    assert error["code"] == "E_COMMAND_UNKNOWN" and "'validate'" in error["message"]
    assert "replay capture valdate" in error["howToFix"]
    assert not (tmp_path / ".replay").exists()  # no runner was started


def test_a_word_that_is_no_command_is_a_prompt(tmp_path: Path) -> None:
    proc = run_replay("holdings", cwd=tmp_path, env={"REPLAY_RUNNER": str(EXAMPLES / "runners" / "echo_runner.py")})
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / ".replay" / "journal").is_dir()


def test_a_closed_stdin_is_refused_before_any_output() -> None:
    import subprocess

    from conftest import REPLAY

    for command in (["read"], ["heal"], ["report"], ["validate"], ["run", str(EXAMPLES / "pipelines" / "tools-only.toml")]):
        proc = subprocess.run([REPLAY, *command], stdin=subprocess.DEVNULL, capture_output=True,
                              preexec_fn=lambda: __import__("os").close(0))
        assert proc.returncode == 2 and proc.stdout == b"", (command, proc.stderr)
        assert errors_of(proc.stderr)[0]["code"] == "E_INPUT_UNREADABLE", command
