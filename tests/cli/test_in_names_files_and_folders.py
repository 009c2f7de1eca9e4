"""`--in` means the same in every command that has it (seed: E_INPUT_NOT_FILE_OR_DIR, --in target not file/dir): a
device or a pipe given to --in is refused, exit 2, nothing on stdout; as a PATH, a pipe is still read as a stream."""

from __future__ import annotations

import subprocess

import pytest
from conftest import EXAMPLES, REPLAY, errors_of, jsonl

TWO_RUNS = str(EXAMPLES / "journals" / "two-runs.jsonl")
COMMANDS = {"validate": "validate --in {}", "report": "report --in {}", "heal": "heal --in {} --out healed"}


def _run(tmp_path, script: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["bash", "-c", f'cd "$2" && exec "$0" {script}', REPLAY, TWO_RUNS, str(tmp_path)],
                          capture_output=True, timeout=60, check=False, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(("target", "received"), [("/dev/null", "character device"), ('<(cat "$1")', "named pipe")])
def test_in_that_is_a_device_or_a_pipe_is_refused_by_every_command(tmp_path, command, target, received):
    """validate read `--in /dev/null` as an empty valid stream and `--in <(...)` as a stream (exit 0), where report
    and heal refused both: now all three refuse, through one check, and say what the target is."""
    done = _run(tmp_path, COMMANDS[command].format(target))
    assert (done.returncode, done.stdout) == (2, b""), done.stderr
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["received"]) == ("E_INPUT_NOT_FILE_OR_DIR", received)
    assert error["path"].startswith("/dev/") and "--in" in error["howToFix"]
    assert not (tmp_path / "healed").exists()


def test_a_pipe_named_as_a_path_is_still_a_stream(tmp_path):
    done = _run(tmp_path, 'validate <(cat "$1")')
    assert done.returncode == 0, done.stderr
    assert [(s["kind"], s["valid"], s["runs"]) for s in jsonl(done.stdout)] == [("stream", True, 2)]
