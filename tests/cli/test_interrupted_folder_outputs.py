"""An interrupted command over many inputs (Ctrl-C, SIGTERM, SIGHUP) leaves no staging folder: a new --out is filled as
``.OUT.partial.replay.tmp`` beside it, and that folder goes when the run is interrupted (it stayed, a hidden temp name
beside the place the user asked for). What a killed run left (SIGKILL: nothing of replay's ran) stays, and the next
run resumes there, interrupted or not; an --out that was already there stays a whole folder.

Real processes and real signals; each waits for what it can see on disk (the partial folder filling), never on a
sleep alone, with generous limits (the machine is shared)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPLAY, group_gone
from incident_support import make_exports
from scale_support import make_journals, tree_bytes

from replay.pipeline.io.manifest import FRAGMENTS

LIMIT_S = 120.0  # how long a step may take on a loaded machine before the test gives up


def start(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([REPLAY, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def wait_for(proc: subprocess.Popen[bytes], ready: Callable[[], bool], what: str) -> None:
    """Poll until ``ready()``; fails when the command ended first (it could not be interrupted mid-run)."""
    deadline = time.monotonic() + LIMIT_S
    while not ready():
        assert proc.poll() is None, f"the command ended before {what}: {proc.communicate()[1][-2000:]!r}"
        assert time.monotonic() < deadline, f"no {what} after {LIMIT_S:g} s"
        time.sleep(0.02)


def finish(proc: subprocess.Popen[bytes]) -> tuple[int, bytes, bytes]:
    try:
        out, err = proc.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError("replay did not end after the signal") from None
    assert group_gone(proc.pid, limit=30)
    return proc.returncode, out, err


def healed_in(folder: Path) -> int:
    return len(list(folder.rglob("*.healed.jsonl"))) if folder.is_dir() else 0


def temp_names(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.name.endswith(".replay.tmp"))


@pytest.fixture(scope="module")
def journals(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_journals(tmp_path_factory.mktemp("interrupted-in"), count=40, size=300_000)


@pytest.mark.parametrize(("number", "workers"), [(signal.SIGINT, "1"), (signal.SIGTERM, "2"), (signal.SIGHUP, "1")],
                         ids=["ctrl-c-in-process", "sigterm-worker-processes", "sighup-in-process"])
def test_an_interrupted_heal_into_a_new_folder_leaves_no_folder_and_no_staging_folder(
        journals: Path, tmp_path: Path, number: int, workers: str) -> None:
    out = tmp_path / "healed"
    partial = tmp_path / ".healed.partial.replay.tmp"
    proc = start("heal", "--in", str(journals), "--out", str(out), "--workers", workers)
    wait_for(proc, lambda: healed_in(partial) > 0, "a healed file in the partial folder")
    os.kill(proc.pid, number)  # (replay alone: `kill`, `timeout`; its worker processes are its to stop)
    code, out_bytes, err = finish(proc)
    assert code == 128 + number, err
    assert all(line.startswith(b"{") for line in err.splitlines()), err  # JSON lines only, no traceback
    assert out_bytes == b""  # (the lines naming a new folder's files wait for it: it never came)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # neither the folder nor its partial sibling


def test_an_interrupted_import_of_a_folder_of_exports_leaves_no_folder_and_no_staging_folder(tmp_path: Path) -> None:
    exports = make_exports(tmp_path / "exports", count=300)
    out = tmp_path / "imported"
    partial = tmp_path / ".imported.partial.replay.tmp"
    proc = start("incident", "import", str(exports), "--out", str(out), "--workers", "1")
    wait_for(proc, lambda: partial.is_dir() and any(p.is_dir() and not p.name.startswith(".") for p in partial.iterdir()),
             "an imported export in the partial folder")
    os.kill(proc.pid, signal.SIGINT)
    code, _, err = finish(proc)
    assert code == 130, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exports"]


def test_a_killed_runs_partial_folder_stays_when_the_run_resuming_it_is_interrupted(journals: Path, tmp_path: Path) -> None:
    """Not made by the interrupted run, it is not its to remove: the next run resumes there, and the folder it makes
    is the folder a clean run makes."""
    out = tmp_path / "healed"
    partial = tmp_path / ".healed.partial.replay.tmp"
    killed = start("heal", "--in", str(journals), "--out", str(out), "--workers", "1")
    wait_for(killed, lambda: partial.is_dir() and any((partial / FRAGMENTS).glob("*")), "a manifest fragment")
    os.kill(killed.pid, signal.SIGKILL)  # (the machine went away: nothing of replay's runs)
    assert finish(killed)[0] == -signal.SIGKILL
    before = healed_in(partial)
    resuming = start("heal", "--in", str(journals), "--out", str(out), "--workers", "1")
    wait_for(resuming, lambda: healed_in(partial) > before, "a file the resumed run healed")
    os.kill(resuming.pid, signal.SIGINT)
    code, _, err = finish(resuming)
    assert code == 130, err
    assert not out.exists() and healed_in(partial) > before and temp_names(partial) == []
    done = subprocess.run([REPLAY, "heal", "--in", str(journals), "--out", str(out)], capture_output=True, timeout=300, check=False)
    clean = subprocess.run([REPLAY, "heal", "--in", str(journals), "--out", str(tmp_path / "clean")], capture_output=True,
                           timeout=300, check=False)
    assert (done.returncode, clean.returncode) == (1, 1)  # (every third journal has a bad line: exit 1 both times)
    assert tree_bytes(out) == tree_bytes(tmp_path / "clean")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clean", "healed"]


def test_an_interrupted_heal_into_a_folder_already_there_leaves_it_whole(journals: Path, tmp_path: Path) -> None:
    """An --out already there is written in place, each file whole: interrupted, it holds every file it held (the
    inputs not healed again are not touched), and no temp name."""
    some = tmp_path / "some"
    for path in sorted(journals.rglob("*.jsonl"))[:5]:
        (some / path.relative_to(journals)).parent.mkdir(parents=True, exist_ok=True)
        (some / path.relative_to(journals)).write_bytes(path.read_bytes())
    out = tmp_path / "healed"
    first = subprocess.run([REPLAY, "heal", "--in", str(some), "--out", str(out)], capture_output=True, timeout=300, check=False)
    assert first.returncode in (0, 1), first.stderr
    earlier = tree_bytes(out)
    for path in sorted(journals.rglob("*.jsonl"))[5:]:  # more journals to heal: the run again has work to interrupt
        (some / path.relative_to(journals)).parent.mkdir(parents=True, exist_ok=True)
        (some / path.relative_to(journals)).write_bytes(path.read_bytes())
    proc = start("heal", "--in", str(some), "--out", str(out), "--workers", "1")
    wait_for(proc, lambda: healed_in(out) > 5, "a file healed into the folder")  # (5 of the 40 were there)
    os.kill(proc.pid, signal.SIGINT)
    code, _, err = finish(proc)
    assert code == 130, err
    now = tree_bytes(out)
    assert {name: now.get(name) for name in earlier} == earlier and temp_names(out) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["healed", "some"]
