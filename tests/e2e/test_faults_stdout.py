"""A closed stdout (`replay read x >&-`): every command refuses with E_OUTPUT_UNWRITABLE (exit 2) before
anything runs: no runner started, no file written, no Python exception text."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import EXAMPLES, REPLAY, errors_of

TWO_RUNS = str(EXAMPLES / "journals" / "two-runs.jsonl")
SESSION = str(EXAMPLES / "echo-agent" / "scenarios" / "echo" / "session.jsonl")
MARKER_RUNNER = """\
import json, pathlib, sys
json.load(sys.stdin)
pathlib.Path(__file__).with_name("ran").write_text("ran")
print(json.dumps({"status": "ok", "response": "ok", "events": []}))
"""

# One command per way of writing stdout: the write stage (read, heal, walk, script, export, run), capture's
# emit, heal --in's write_healed, the report stage, and the commands that are no graph.
COMMANDS = {
    "read": ["read", TWO_RUNS],
    "heal --log": ["heal", TWO_RUNS, "--log", "repairs.jsonl"],
    "heal --in --out": ["heal", "--in", TWO_RUNS, "--out", "healed"],
    "validate": ["validate", TWO_RUNS],
    "report": ["report", TWO_RUNS],
    "diff": ["diff", TWO_RUNS, TWO_RUNS],
    "schema": ["schema", "event"],
    "golden check": ["golden", "check", SESSION, SESSION],
    "capture": ["capture", "--runner", "runner.py", "p"],
    "prompt": ["--runner", "runner.py", "p"],
}


def run_with_stdout_closed(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([REPLAY, *argv], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1), timeout=120, check=False,
                          env={**os.environ, "REPLAY_RUNNER": ""})


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_closed_stdout_is_refused_before_anything_runs(name: str, tmp_path: Path) -> None:
    (tmp_path / "runner.py").write_text(MARKER_RUNNER)
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = run_with_stdout_closed(COMMANDS[name], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert b"Traceback" not in proc.stderr
    (error,) = errors_of(proc.stderr)
    assert error["code"] == "E_OUTPUT_UNWRITABLE" and error["path"] == "<stdout>"
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no runner ran, no file or folder written


def test_a_closed_stderr_never_fails_a_run(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with out.open("wb") as stdout:
        proc = subprocess.run([REPLAY, "--log-level", "debug", "read", TWO_RUNS], stdout=stdout, stderr=subprocess.DEVNULL,
                              preexec_fn=lambda: os.close(2), timeout=120, check=False)
    assert proc.returncode == 0
    assert out.read_bytes() == Path(TWO_RUNS).read_bytes()


NOTICED = b'{"seq":1,"timestamp":"2026-03-01T12:00:00Z","type":"run_started","runId":"r","payload":{}}\n' \
    b'{"seq":2,"timestamp":"2026-03-01T12:00:01Z","type":"tool_end","runId":"r","payload":{"a":1,"a":2}}\n' \
    b'{"seq":3,"timestamp":"2026-03-01T12:00:02Z","type":"run_completed","runId":"r","payload":{}}\n' \
    b'{"seq": not json\n'


@pytest.mark.parametrize("stderr", ["closed", "full"])
@pytest.mark.parametrize("args", [["validate", "a.jsonl", "b.jsonl"], ["report", "a.jsonl", "b.jsonl"],
                                  ["heal", "--in", "in", "--out", "healed"]], ids=" ".join)
def test_a_closed_or_full_stderr_loses_no_output_over_many_inputs(tmp_path: Path, args: list[str], stderr: str) -> None:
    """Over several inputs (each run on its own, its stderr printed after it) an input with something for stderr (an alias
    with a key written twice, a line no JSON) stopped the command there, exit 1: its stdout line and every later one lost, a healed
    folder never published. Its diagnostics now go nowhere, as one run's do, and the rest is as with stderr open."""
    (tmp_path / "in").mkdir()
    for name in ("a.jsonl", "b.jsonl", "in/a.jsonl", "in/b.jsonl"):
        (tmp_path / name).write_bytes(NOTICED)
    seen = subprocess.run([REPLAY, *args], cwd=tmp_path, capture_output=True, timeout=120, check=False)
    assert seen.stderr  # (there is something for stderr: the warnings)
    if args[0] == "heal":
        healed = {p.name: p.read_bytes() for p in (tmp_path / "healed").iterdir()}
        shutil.rmtree(tmp_path / "healed")
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([REPLAY, *args], cwd=tmp_path, stdout=subprocess.PIPE, check=False, timeout=120,
                              stderr=full if stderr == "full" else subprocess.DEVNULL,
                              preexec_fn=(lambda: os.close(2)) if stderr == "closed" else None)
    assert (proc.returncode, proc.stdout) == (seen.returncode, seen.stdout)
    if args[0] == "heal":
        assert {p.name: p.read_bytes() for p in (tmp_path / "healed").iterdir()} == healed


@pytest.mark.parametrize("files", [1, 2])
def test_a_report_written_to_a_file_needs_no_stdout_however_many_inputs(files: int, tmp_path: Path) -> None:
    """Over several inputs each one's summaries are made in a run of its own, which writes its stdout into a
    buffer: a closed stdout is no reason to refuse (it was, for two files: E_OUTPUT_UNWRITABLE)."""
    proc = run_with_stdout_closed(["report", *[TWO_RUNS] * files, "--out", "report.txt"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "report.txt").read_bytes().startswith(f"replay report: {2 * files} runs".encode())


@pytest.mark.parametrize("args", [["read", "run.jsonl"], ["heal", "run.jsonl"], ["read", "-"], ["walk", "run.jsonl"]],
                         ids=" ".join)
def test_stdout_redirected_into_an_input_is_refused_before_anything_runs(tmp_path: Path, args: list[str]) -> None:
    """Found by fuzzing the CLI: `replay read big.jsonl >> big.jsonl` read its own output as it wrote it, and never
    reached the end: a 5.5 MB journal was 1.1 GB 20 s later (a full disk, in the end). Refused now (exit 2), the input
    as it was; stdout into another file still works."""
    run = tmp_path / "run.jsonl"
    run.write_bytes(Path(TWO_RUNS).read_bytes() * 200)
    before = run.read_bytes()
    with open(run, "ab") as out, open(run, "rb") as stdin:  # (no file of more than 16 MiB: a regression fails fast)
        done = subprocess.run([REPLAY, *args], stdin=stdin, stdout=out, stderr=subprocess.PIPE, cwd=tmp_path,
                              timeout=60, check=False, preexec_fn=_at_most_16_mib)
    assert done.returncode == 2, done.stderr
    error, = errors_of(done.stderr)
    assert (error["code"], error["path"]) == ("E_OUTPUT_UNWRITABLE", "<stdout>"), error
    assert run.read_bytes() == before
    with open(tmp_path / "copy.jsonl", "ab") as out, open(run, "rb") as stdin:
        assert subprocess.run([REPLAY, *args], stdin=stdin, stdout=out, cwd=tmp_path, timeout=60).returncode == 0


def _at_most_16_mib() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 24, 1 << 24))


@pytest.mark.parametrize("args", [["golden", "check", "runs/run.jsonl", "runs/run.jsonl"],
                                  ["golden", "check", "runs/run.jsonl", "-"],
                                  ["incident", "import", "runs", "--format", "replay", "--case", "run_a", "--rules",
                                   str(EXAMPLES / "incidents" / "rules.json"), "--out", "imported"]], ids=" ".join)
def test_stdout_into_an_input_is_refused_by_the_commands_that_are_no_one_graph(tmp_path: Path, args: list[str]) -> None:
    """`golden check` (no graph) and `incident import DIR` (a graph per export, its stdout captured) appended their line
    to the input stdout was redirected into, where the graph commands refuse it."""
    run = tmp_path / "runs" / "run.jsonl"
    run.parent.mkdir()
    run.write_bytes(Path(TWO_RUNS).read_bytes())
    with open(run, "ab") as out, open(run, "rb") as stdin:
        done = subprocess.run([REPLAY, *args], stdin=stdin, stdout=out, stderr=subprocess.PIPE, cwd=tmp_path,
                              timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_OUTPUT_UNWRITABLE"]
    assert run.read_bytes() == Path(TWO_RUNS).read_bytes()
    assert not (tmp_path / "imported").exists()
    with open(tmp_path / "copy.jsonl", "ab") as out, open(run, "rb") as stdin:
        assert subprocess.run([REPLAY, *args], stdin=stdin, stdout=out, cwd=tmp_path, timeout=60).returncode == 0
