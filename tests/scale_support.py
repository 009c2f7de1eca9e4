"""Helpers for the tests of runs over many inputs: a folder of small generated journals, a folder's bytes, the processes
a run over them starts."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "bench"))

from journal_gen import write_journal

from replay.pipeline.engine.parallel import LocalFiles
from replay.pipeline.io.manifest import MANIFEST


def make_journals(folder: Path, count: int = 12, size: int = 12_000) -> Path:
    """``count`` journals in ``folder`` (some in a sub-folder), every third with a bad line and a torn tail."""
    whole = folder / ".all.tmp"
    write_journal(whole, count * size)  # one generated stream, cut into journals at line ends
    lines = whole.read_bytes().splitlines(keepends=True)
    whole.unlink()
    per = len(lines) // count
    for k in range(count):
        path = folder / ("nested" if k % 4 == 3 else "") / f"j{k:03d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(lines[k * per:(k + 1) * per]))
        if k % 3 == 1:
            with path.open("ab") as handle:
                handle.write(b"this is not json\n")
                handle.write(b'{"seq": 99, "type": "tool_called", "runId": "r", "payload": {"callId": "cut')
    return folder


def tree_bytes(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` but the manifest, by relative path (hidden and temp files too)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != MANIFEST}


def upload(folder: Path, url: str) -> str:
    """Every file under ``folder`` copied to the folder URL ``url`` (through fsspec); returns ``url``."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(url)
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            fs.pipe_file(f"{root.rstrip('/')}/{path.relative_to(folder).as_posix()}", path.read_bytes())
    return url


def url_tree(url: str) -> dict[str, bytes]:
    """``tree_bytes`` of a folder URL: every file under it but the manifest (hidden and temp files too)."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(url)
    fs.invalidate_cache()
    root = root.rstrip("/")
    return {name[len(root) + 1:]: fs.cat_file(name) for name in fs.find(root) if not name.endswith("/" + MANIFEST)}


def named(data: bytes, **places: str | Path) -> bytes:
    """``data`` with each place (a folder path or URL) written as its label: outputs compared across places."""
    for label, place in sorted(places.items(), key=lambda kv: -len(str(kv[1]))):
        data = data.replace(str(place).encode(), label.encode())
    return data


def named_tree(tree: dict[str, bytes], **places: str | Path) -> dict[str, bytes]:
    return {name: named(data, **places) for name, data in tree.items()}


def on_a_terminal(command: list[str]) -> tuple[int, bytes]:
    """Run ``command`` with stderr on a pseudo-terminal; returns (exit code, what the terminal showed)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=follower, stdin=subprocess.DEVNULL)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    return proc.wait(), shown


class MachineGone(BaseException):
    """The machine went away mid-run (a power cut, SIGKILL): nothing of replay's handles it. (Not KeyboardInterrupt:
    an interrupted run cleans up after itself, the partial folder it made goes; a killed one leaves it to resume.)"""


KILLED = 128 + 9  # the exit code a shell reports for a process SIGKILL ended


class Backends:
    """Local backends for the resume tests, put in place of the real one by ``swapped_backend``: ``crash()`` makes
    the next command finish its first task and then die as a machine would (``MachineGone``: exit ``KILLED``, what
    it printed till then kept); ``count()`` makes it compute every task and add its inputs to ``computed``."""

    def __init__(self, scale: Any) -> None:
        from replay.pipeline.engine import parallel

        self.scale, self.real, self.computed = scale, parallel.run_inputs, list[str]()

    def crash(self) -> None:
        def crash_after_first_task(work: Any, chunks: Any, workers: int) -> Iterator[Any]:
            index, paths = chunks[0]
            yield index, self.real(work, paths)
            raise MachineGone

        self.scale._backend = lambda _scale: crash_after_first_task

    def count(self) -> None:
        def counting(work: Any, chunks: Any, workers: int) -> Iterator[Any]:
            for index, paths in chunks:
                self.computed.extend(paths)
                yield index, self.real(work, paths)

        self.scale._backend = lambda _scale: counting


@contextmanager
def swapped_backend() -> Iterator[Backends]:
    import replay.pipeline.cli.app as app
    import replay.pipeline.cli.scale as scale

    original, run_cli = scale._backend, app.run_cli

    def run_cli_until_the_machine_goes(argv: list[str] | None = None) -> int:
        try:
            return run_cli(argv)
        except MachineGone:
            return KILLED

    app.run_cli = run_cli_until_the_machine_goes  # (the in-process runner's entry: it then collects what was printed)
    try:
        yield Backends(scale)
    finally:
        scale._backend, app.run_cli = original, run_cli


@dataclass(frozen=True)
class DyingFiles(LocalFiles):
    """Local files whose worker process is killed (SIGKILL, as the OOM killer does) as a task starts: the first ``times``
    tasks to start (counted in ``tally``, a file), or every one (``times`` < 0)."""

    tally: str
    times: int = 1

    def start_task(self, paths: list[str]) -> None:
        import signal

        with open(self.tally, "a+") as handle:
            handle.seek(0)
            started = len(handle.read())
            handle.write("x")
        if self.times < 0 or started < self.times:
            os.kill(os.getpid(), signal.SIGKILL)


def two_run_copies(folder: Path, count: int) -> None:
    """``count`` copies of examples/journals/two-runs.jsonl in three subfolders of ``folder`` (``g0``..``g2``): a run
    over many small inputs, long enough for a pool's workers to be caught at work."""
    import shutil

    source = Path(__file__).resolve().parent.parent / "examples" / "journals" / "two-runs.jsonl"
    for k in range(count):
        (folder / f"g{k % 3}").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, folder / f"g{k % 3}" / f"j{k}.jsonl")


TOO_LATE = -1  # (``heal_in_dir_killing``'s ``victim``: the moment to kill has passed)


def heal_in_dir_killing(cwd: Path, out: str, victim: Any, command: str) -> tuple[bool, subprocess.Popen[bytes], bytes, bytes]:
    """``command`` (a `replay` path) `heal --in in --out OUT --workers 2` in ``cwd``, and a process of it killed
    (SIGKILL) once ``victim(pid)`` names one (its pid; None: not yet; ``TOO_LATE``: no longer): whether one was killed,
    the process, its stdout and stderr."""
    import signal
    import time

    proc = subprocess.Popen([command, "heal", "--in", "in", "--out", out, "--workers", "2"], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killed = False
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline and not killed:
            pid = victim(proc.pid)
            if pid == TOO_LATE:
                break
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
                killed = True
            time.sleep(0.002)
        out_bytes, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return killed, proc, out_bytes, err
