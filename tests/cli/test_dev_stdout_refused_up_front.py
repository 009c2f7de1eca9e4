"""``--out /dev/stdout`` (descriptor 1) with a closed (``>&-``) or read-only (``1</dev/null``) stdout is refused
before anything runs, exit 2, as ``--out -`` is: it ran, then failed EBADF, exit 1."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import EXAMPLES, REPLAY

JOURNAL = EXAMPLES / "journals" / "two-runs.jsonl"


@pytest.mark.parametrize("redirect", [">&-", "1</dev/null"])
@pytest.mark.parametrize("out", ["-", "/dev/stdout", "/dev/fd/1"])
def test_an_unwritable_stdout_named_as_out_is_refused(tmp_path: Path, out: str, redirect: str) -> None:
    done = subprocess.run(["sh", "-c", f'"$R" write "$J" --out {out} {redirect}'], cwd=tmp_path, capture_output=True,
                          timeout=120, env={"R": REPLAY, "J": str(JOURNAL), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2
    assert json.loads(done.stderr.decode().strip().splitlines()[-1])["error"]["code"] == "E_OUTPUT_UNWRITABLE"


@pytest.mark.parametrize(("out", "redirect"), [("/dev/stdin", "</dev/null"), ("/dev/fd/3", "3</dev/null"),
                                               ("/dev/fd/0", "<&-")])
def test_another_descriptor_open_for_reading_only_is_refused_before_the_input_is_read(
        tmp_path: Path, out: str, redirect: str) -> None:
    """``--out /dev/stdin < /dev/null`` (cron, CI): the input was read, then the write failed EBADF, exit 1. A standard
    descriptor closed at start (``<&-``) was taken by replay's own interrupt pipe, and the output went into it: the
    watchdog read the JSON's first byte as signal 123 and ended the run (E_STAGE_NOT_STOPPED, exit 251)."""
    done = subprocess.run(["sh", "-c", f'"$R" write "$J" --out {out} {redirect}'], cwd=tmp_path, capture_output=True,
                          timeout=120, env={"R": REPLAY, "J": str(JOURNAL), "PATH": "/usr/bin:/bin"})
    error = json.loads(done.stderr.decode().strip().splitlines()[-1])["error"]
    assert (done.returncode, error["code"], error["path"]) == (2, "E_OUTPUT_WRITE_FAILED", out), done.stderr
    assert done.stdout == b""


def test_an_output_naming_a_stderr_closed_at_start_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(["sh", "-c", '"$R" write "$J" --out /dev/stderr 2>&-'], cwd=tmp_path, capture_output=True,
                          timeout=120, env={"R": REPLAY, "J": str(JOURNAL), "PATH": "/usr/bin:/bin"})
    assert (done.returncode, done.stdout) == (2, b"")  # (the refusal has nowhere to be said)


def test_a_config_s_write_to_a_read_only_descriptor_is_refused_before_the_input_is_read(tmp_path: Path) -> None:
    config = tmp_path / "out.toml"
    config.write_text('chain = [{type = "write", path = "/dev/stdin"}]\n')
    done = subprocess.run(["sh", "-c", f'"$R" run "{config}" "$J" < /dev/null'], cwd=tmp_path, capture_output=True,
                          timeout=120, env={"R": REPLAY, "J": str(JOURNAL), "PATH": "/usr/bin:/bin"})
    error = json.loads(done.stderr.decode().strip().splitlines()[-1])["error"]
    assert (done.returncode, error["code"]) == (2, "E_OUTPUT_WRITE_FAILED"), done.stderr


def test_a_descriptor_open_for_writing_is_written(tmp_path: Path) -> None:
    done = subprocess.run(["sh", "-c", '"$R" write "$J" --out /dev/fd/3 3> got.jsonl'], cwd=tmp_path,
                          capture_output=True, timeout=120, env={"R": REPLAY, "J": str(JOURNAL), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "got.jsonl").read_bytes() == JOURNAL.read_bytes()
