"""SIGKILL of `replay` in the middle of writing each kind of output: every output appears whole or not at all.

`kill_at.py` runs the real `replay` with an audit hook that sends it SIGKILL right before its N-th write
step under the output folder (creating the temp file, renaming it into place, staging a folder, ...).
A reference run first lists the steps and gives the complete outputs; then one run is killed at each
step that decides something (the first, the first and the last rename, link or staged folder). After each kill, every file at an output path is the previous one or the complete new one, a
folder output is absent or complete, and the only other thing a kill may leave is a temp named
``.<name>.<random>.replay.tmp``, which readers skip. A streaming write (`write --path`, input still
arriving) is also killed from outside while its temp file grows.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import EXAMPLES, FIXTURES, REPLAY

from replay.pipeline.io.journals import expand_paths, is_temp_name

KILL_AT = Path(__file__).with_name("kill_at.py")
TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"
BROKEN = EXAMPLES / "journals" / "broken.jsonl"
SESSION = EXAMPLES / "echo-agent" / "scenarios" / "echo" / "session.jsonl"
INCIDENT = EXAMPLES / "incidents" / "refund-export.json"
ECHO_RUNNER = EXAMPLES / "runners" / "echo_runner.py"
PREVIOUS = b"previous output\n"
DECIDING = {"os.rename", "os.link", "tempfile.mkdtemp"}


@dataclass
class Kind:
    """One kind of output: the command that writes it and what it writes under OUT."""

    argv: Callable[[Path], list[str]]  # given OUT (the run's cwd is OUT's parent)
    files: list[str] = field(default_factory=list)  # output files, there before the run with PREVIOUS
    folders: list[str] = field(default_factory=list)  # output folders, absent before the run
    deterministic: bool = True  # a rerun writes the same bytes (else outputs are checked for wholeness)


def write_config(out: Path) -> Path:
    config = out.parent / "write.toml"
    config.write_text(f'[stages.read]\ntype = "read"\n[stages.out]\ntype = "write"\npath = "{out / "result.jsonl"}"\n'
                      'inputs = ["read"]\n')
    return config


KINDS = {
    "write --path": Kind(lambda out: ["run", str(write_config(out)), str(TWO_RUNS)], files=["result.jsonl"]),
    "report --out": Kind(lambda out: ["report", str(TWO_RUNS), "--out", str(out / "report.html")], files=["report.html"]),
    "heal --log": Kind(lambda out: ["heal", str(BROKEN), "--log", str(out / "repairs.jsonl")], files=["repairs.jsonl"]),
    "heal --in --out": Kind(lambda out: ["heal", "--in", str(FIXTURES / "artifacts"), "--out", str(out / "healed")],
                            folders=["healed"]),
    "script --out": Kind(lambda out: ["script", str(SESSION), "--out", str(out / "script.json")], files=["script.json"]),
    "export --out": Kind(lambda out: ["export", "--otlp", str(TWO_RUNS), "--out", str(out / "otlp.jsonl")],
                         files=["otlp.jsonl"], deterministic=False),
    "capture files": Kind(lambda out: ["capture", "--runner", str(ECHO_RUNNER), "--out", str(out / "captures"), "p"],
                          deterministic=False),
    "incident bundle": Kind(lambda out: ["incident", "import", str(INCIDENT), "--out", str(out / "imported")],
                            folders=["imported"], deterministic=False),
}


def run_killed(workdir: Path, kind: Kind, nth: int) -> tuple[subprocess.CompletedProcess[bytes], list[str]]:
    """Run the kind's command in a fresh copy of the starting state, killed at write step ``nth`` (0: never)."""
    if workdir.exists():
        shutil.rmtree(workdir)
    out = workdir / "out"
    out.mkdir(parents=True)
    for name in kind.files:
        (out / name).write_bytes(PREVIOUS)
    log = workdir / "steps.log"
    env = {**os.environ, "REPLAY_RUNNER": "", "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, str(KILL_AT), str(out), str(nth), str(log), *kind.argv(out)],
                          cwd=out, env=env, capture_output=True, timeout=120, check=False)
    steps = log.read_text().splitlines() if log.exists() else []
    return proc, steps


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path -> bytes), temp names included."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def in_temp(relative: str) -> bool:
    return any(is_temp_name(part) for part in Path(relative).parts)


def whole(name: str, data: bytes) -> bool:
    """A file written completely: JSON parses, every JSONL line parses, HTML and XML are closed."""
    if name.endswith(".json"):
        json.loads(data)
        return True
    if name.endswith(".jsonl"):
        return data.endswith(b"\n") and all(json.loads(line) is not None for line in data.splitlines())
    if name.endswith(".html"):
        return data.rstrip().endswith(b"</html>")
    if name.endswith(".xml"):
        return data.rstrip().endswith(b">")
    return bool(data)


def kill_points(steps: list[str]) -> list[int]:
    """The first step, the first and the last step that puts something in place or stages a folder (every
    step with REPLAY_FAULT_STEPS=all: slower, the same code paths)."""
    if os.environ.get("REPLAY_FAULT_STEPS") == "all":
        return list(range(1, len(steps) + 1))
    deciding = [int(s.split()[0]) for s in steps if s.split()[1] in DECIDING]
    return sorted({1, *deciding[:1], *deciding[-1:]})


RUN_ID = re.compile(r"run_\d{8}T\d{6}_[0-9a-f]{6}")


def same_name(path: str) -> str:
    """A path with capture's run ids (time and random: another in every run) made alike."""
    return RUN_ID.sub("run_ID", path)


@pytest.mark.parametrize("name", list(KINDS))
def test_sigkill_mid_write_leaves_each_output_whole_or_absent(name: str, tmp_path: Path) -> None:
    kind = KINDS[name]
    done, steps = run_killed(tmp_path / "reference", kind, 0)
    assert done.returncode in (0, 1), done.stderr  # broken.jsonl heals with a notice: exit 1 is its result
    assert steps, "the reference run wrote nothing under the output folder"
    reference = snapshot(tmp_path / "reference" / "out")
    assert not [p for p in reference if in_temp(p)], "a finished run left a temp behind"
    for nth in kill_points(steps):
        killed, _ = run_killed(tmp_path / "killed", kind, nth)
        assert killed.returncode == -signal.SIGKILL, (nth, killed.returncode, killed.stderr)
        out = tmp_path / "killed" / "out"
        after = snapshot(out)
        for path, data in after.items():
            if in_temp(path):
                continue  # what a SIGKILL unavoidably leaves; checked below that readers skip it
            if path in kind.files and data == PREVIOUS:
                continue  # the previous output, untouched
            if kind.deterministic:
                assert data == reference.get(path), f"killed at step {nth} ({steps[nth - 1]}): {path} is partial"
            else:
                names = {same_name(p) for p in reference}
                assert same_name(path) in names and whole(path, data), f"killed at step {nth} ({steps[nth - 1]}): {path} is partial"
        for folder in kind.folders:
            present = sorted(p for p in after if p.startswith(folder + "/"))
            expected = sorted(p for p in reference if p.startswith(folder + "/"))
            assert present in ([], expected), f"killed at step {nth} ({steps[nth - 1]}): folder {folder} is partial"
        assert not [f for f in expand_paths([str(out)]) if in_temp(os.path.relpath(f, out))], "a reader took a temp"


def test_sigkill_while_a_streamed_output_grows_leaves_the_previous_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "result.jsonl").write_bytes(PREVIOUS)
    config = write_config(out)
    proc = subprocess.Popen([REPLAY, "run", str(config)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    line = TWO_RUNS.read_bytes().splitlines(keepends=True)[1]
    try:
        temp: list[Path] = []
        for _ in range(2000):  # feed until the temp file has data in it (the write is under way)
            proc.stdin.write(line * 200)
            proc.stdin.flush()
            temp = [p for p in out.iterdir() if is_temp_name(p.name)]
            if temp and temp[0].stat().st_size > 0:
                break
            time.sleep(0.005)
        assert temp and temp[0].stat().st_size > 0, "the output never started"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdin.close()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    assert (out / "result.jsonl").read_bytes() == PREVIOUS  # never a partial file at the path
    leftovers = [p.name for p in out.iterdir() if p.name != "result.jsonl"]
    assert leftovers and all(is_temp_name(name) for name in leftovers)  # the killed write's temp: recognisable
    assert expand_paths([str(out)]) == [str(out / "result.jsonl")]  # and skipped by readers


def test_capture_puts_the_raw_capture_in_place_before_what_healing_made(tmp_path: Path) -> None:
    """The capture specification: the raw artifact is written first, then the healed one. A capture killed after its
    first file has the runner's raw output on disk, whatever healing would have made of it."""
    done, steps = run_killed(tmp_path, KINDS["capture files"], 0)
    assert done.returncode == 0, done.stderr
    placed = [Path(s.split()[-1]).name for s in steps if s.split()[1] == "os.rename"]
    assert [RUN_ID.sub("ID", name) for name in placed] == [
        "ID.raw.json", "ID.artifact.json", "ID.healed.json", "ID.heal-log.json", "ID.jsonl"]
