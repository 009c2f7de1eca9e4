"""A full disk: /dev/full as stdout and as an --out/--log target, and a tiny tmpfs with no room left.

Every case ends in E_OUTPUT_WRITE_FAILED (exit 1) naming the output and the system's reason
(ENOSPC), never in E_UNHANDLED / E_STAGE_FAILED or a traceback; nothing partial is left at the output
path, an existing file there is kept as it was, no temp file or staged folder is left behind, and a
device named as the output is written in place, never replaced by a file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import EXAMPLES, FIXTURES, REPLAY, errors_of

from replay.pipeline.io.journals import is_temp_name

TWO_RUNS = str(EXAMPLES / "journals" / "two-runs.jsonl")
BROKEN = str(EXAMPLES / "journals" / "broken.jsonl")
SESSION = str(EXAMPLES / "echo-agent" / "scenarios" / "echo" / "session.jsonl")
ECHO_RUNNER = str(EXAMPLES / "runners" / "echo_runner.py")
PREVIOUS = b"previous output\n"


def replay(argv: list[str], cwd: Path, stdout: int | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([REPLAY, *argv], cwd=cwd, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL if stdout is None else stdout, stderr=subprocess.PIPE,
                          timeout=120, check=False, env={**os.environ, "REPLAY_RUNNER": ""})


def write_failed(proc: subprocess.CompletedProcess[bytes], path: str) -> dict:
    """The run failed with exit 1 and one E_OUTPUT_WRITE_FAILED for ``path``, and no exception text."""
    assert proc.returncode == 1, proc.stderr
    assert b"Traceback" not in proc.stderr
    errors = errors_of(proc.stderr)
    assert not [e for e in errors if e["code"] in ("E_UNHANDLED", "E_STAGE_FAILED")], errors
    failed = [e for e in errors if e["code"] == "E_OUTPUT_WRITE_FAILED"]
    assert len(failed) == 1, errors
    assert failed[0]["path"] == path and failed[0]["received"].startswith("ENOSPC"), failed[0]
    return failed[0]


# /dev/full as stdout ----------------------------------------------------------------------------------
STDOUT_COMMANDS = {
    "read": ["read", TWO_RUNS],
    "heal": ["heal", TWO_RUNS],
    "validate": ["validate", TWO_RUNS],
    "report": ["report", TWO_RUNS],
    "walk": ["walk", TWO_RUNS],
    "script": ["script", SESSION],
    "export": ["export", "--otlp", TWO_RUNS],
    "schema": ["schema", "event"],
    "golden check": ["golden", "check", SESSION, SESSION],
    "capture": ["--runner", ECHO_RUNNER, "p"],
    "heal --in --out": ["heal", "--in", TWO_RUNS, "--out", "healed"],
}


@pytest.mark.parametrize("name", list(STDOUT_COMMANDS))
def test_dev_full_as_stdout(name: str, tmp_path: Path) -> None:
    fd = os.open("/dev/full", os.O_WRONLY)
    try:
        proc = replay(STDOUT_COMMANDS[name], tmp_path, stdout=fd)
    finally:
        os.close(fd)
    write_failed(proc, "<stdout>")


# /dev/full as an output file ---------------------------------------------------------------------------
@pytest.fixture
def full_device(tmp_path: Path) -> Iterator[Path]:
    """A /dev/full device node (1, 7) in the test's folder, so a regression that renames over the
    device replaces this node, not the system's /dev/full. Without the right to make device nodes,
    /dev/full itself (then nobody can rename over it either)."""
    node = tmp_path / "dev" / "full"
    node.parent.mkdir()
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 7))
        yield node
    except PermissionError:
        if os.geteuid() == 0:
            pytest.skip("cannot make a device node here")
        yield Path("/dev/full")


FILE_TARGETS = {
    "report --out": lambda t: ["report", TWO_RUNS, "--out", t],
    "heal --log": lambda t: ["heal", BROKEN, "--log", t],
    "script --out": lambda t: ["script", SESSION, "--out", t],
    "export --out": lambda t: ["export", "--otlp", TWO_RUNS, "--out", t],
}


@pytest.mark.parametrize("name", list(FILE_TARGETS))
def test_dev_full_as_an_output_file(name: str, full_device: Path, tmp_path: Path) -> None:
    proc = replay(FILE_TARGETS[name](str(full_device)), tmp_path)
    write_failed(proc, str(full_device))
    assert stat.S_ISCHR(os.stat(full_device).st_mode)  # still the device: written in place, never renamed over
    assert os.listdir(full_device.parent) == ["full"]  # no temp beside it


def test_dev_null_as_an_output_file_stays_a_device(tmp_path: Path) -> None:
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("cannot make a device node here")
    proc = replay(["report", TWO_RUNS, "--out", str(node)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(os.stat(node).st_mode)


# a tiny tmpfs with no room left ------------------------------------------------------------------------
@pytest.fixture
def full_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs, filled up after a previous output was put in it: the next write gets ENOSPC."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        (mount / "previous.out").write_bytes(PREVIOUS)
        with contextlib.suppress(OSError), (mount / "filler").open("wb") as filler:
            while True:
                filler.write(b"\0" * 4096)
                filler.flush()
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


TMPFS_CASES = {
    "report --out": (lambda m: ["report", TWO_RUNS, "--out", str(m / "previous.out")], "previous.out"),
    "heal --log": (lambda m: ["heal", BROKEN, "--log", str(m / "previous.out")], "previous.out"),
    "script --out": (lambda m: ["script", SESSION, "--out", str(m / "previous.out")], "previous.out"),
    "write --path": (lambda m: ["run", str(write_config(m)), TWO_RUNS], "previous.out"),
    "heal --in --out": (lambda m: ["heal", "--in", str(FIXTURES / "artifacts"), "--out", str(m / "healed")], "healed"),
    "capture --out": (lambda m: ["--runner", ECHO_RUNNER, "--out", str(m / "captures"), "p"], None),
    "incident import --out": (lambda m: ["incident", "import", str(EXAMPLES / "incidents" / "refund-export.json"),
                                         "--out", str(m / "imported")], "imported"),
    "incident import DIR --out": (lambda m: ["incident", "import", str(two_exports(m)), "--out", str(m / "imported")],
                                  "imported"),
}


def two_exports(mount: Path) -> Path:
    folder = mount.parent / "exports"
    folder.mkdir()
    for name in ("a.json", "b.json"):
        (folder / name).write_bytes((EXAMPLES / "incidents" / "refund-export.json").read_bytes())
    return folder


def write_config(mount: Path) -> Path:
    config = mount.parent / "write.toml"
    config.write_text(f'[stages.read]\ntype = "read"\n[stages.out]\ntype = "write"\npath = "{mount / "previous.out"}"\n'
                      'inputs = ["read"]\n')
    return config


@pytest.mark.parametrize("name", list(TMPFS_CASES))
def test_a_full_file_system(name: str, full_tmpfs: Path, tmp_path: Path) -> None:
    argv, target = TMPFS_CASES[name]
    before = sorted(os.listdir(full_tmpfs))
    proc = replay(argv(full_tmpfs), tmp_path)
    error = write_failed(proc, error_path(proc))
    assert error["path"].startswith(str(full_tmpfs)) and (target is None or target in error["path"])
    assert not [part for part in Path(error["path"]).parts if is_temp_name(part)], error  # the user's path, not a staging one
    assert sorted(os.listdir(full_tmpfs)) == before or sorted(os.listdir(full_tmpfs)) == sorted([*before, "captures"])
    assert (full_tmpfs / "previous.out").read_bytes() == PREVIOUS  # the existing output is kept as it was
    if (full_tmpfs / "captures").exists():  # capture's folder may be made; none of its files is partial
        assert os.listdir(full_tmpfs / "captures") == []


def error_path(proc: subprocess.CompletedProcess[bytes]) -> str:
    return next(e["path"] for e in errors_of(proc.stderr) if e["code"] == "E_OUTPUT_WRITE_FAILED")
