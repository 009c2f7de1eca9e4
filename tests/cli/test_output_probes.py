"""An output that cannot be written is refused before any input is read: the engine's preflight tries every output
file and folder a stage declares (a temp file made and removed where it will be written), with the error the write
would fail with later (E_OUTPUT_WRITE_FAILED, the system's reason) but exit 2, a refusal: nothing ran (a write that
fails once the run is going exits 1); it leaves nothing behind."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import EXAMPLES, REPLAY, errors_of, run_replay

TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"
# Nothing can be made in /proc, as root too: a file there, or a folder on the way to one.
UNWRITABLE = ["/proc/no-such-output.jsonl", "/proc/no-such-folder/out.jsonl"]


def refused_with_stdin_open(*args: str) -> tuple[int, bytes, bytes]:
    """Run `replay ARGS` with a journal's first line on stdin and stdin left open: a command that reads its input
    before it tries its outputs waits for the rest (and is killed: a failure)."""
    process = subprocess.Popen([REPLAY, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdin is not None
    try:
        process.stdin.write(TWO_RUNS.read_bytes().splitlines(keepends=True)[0])
        process.stdin.flush()
        code = process.wait(timeout=20)  # (not communicate: it would close stdin)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(f"`replay {' '.join(args)}` read its input before it found its output cannot be written")
    finally:
        process.stdin.close()
    assert process.stdout is not None and process.stderr is not None
    out, err = process.stdout.read(), process.stderr.read()
    process.stdout.close()
    process.stderr.close()
    return code, out, err


@pytest.mark.parametrize("path", UNWRITABLE)
@pytest.mark.parametrize("command", [("report", "--out"), ("heal", "--log"), ("write", "--out"), ("export", "--otlp", "--out")],
                         ids=lambda c: " ".join(c))
def test_an_output_that_cannot_be_written_fails_before_the_input_is_read(command: tuple[str, ...], path: str):
    code, out, err = refused_with_stdin_open(*command, path)
    assert (code, out) == (2, b"")  # a refusal: nothing ran
    [error] = errors_of(err)
    assert (error["code"], error["path"], error["received"]) == ("E_OUTPUT_WRITE_FAILED", path,
                                                                 "ENOENT: No such file or directory"), error
    assert error["howToFix"]


def test_no_output_of_a_graph_is_written_when_one_of_them_cannot_be(tmp_path: Path):
    """`replay run` with a journal written to a file and a report to a place that cannot be written: the report's
    output is tried before anything runs, so the journal is not written either (nor a temp file left)."""
    config = tmp_path / "two.toml"
    config.write_text(
        '[stages.read]\ntype = "read"\n\n'
        '[stages.parse]\ntype = "parse"\ninputs = ["read"]\n\n'
        '[stages.copy]\ntype = "write"\ninputs = ["parse"]\npath = "copy.jsonl"\n\n'
        '[stages.summarize]\ntype = "summarize"\ninputs = ["parse"]\n\n'
        '[stages.report]\ntype = "report"\ninputs = ["summarize"]\npath = "/proc/no-such-report.txt"\n')
    done = run_replay("run", str(config), str(TWO_RUNS), cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, b""), done.stderr
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_OUTPUT_WRITE_FAILED"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["two.toml"]


def test_a_capture_whose_folder_cannot_be_written_does_not_start_the_runner(tmp_path: Path):
    """emit's folders are tried as files are: the runner (which would run the whole task first) never starts."""
    runner = tmp_path / "runner.py"
    runner.write_text("import json, pathlib, sys\npathlib.Path(sys.argv[0]).with_name('ran').touch()\nsys.stdin.read()\n"
                      "print(json.dumps({'status': 'ok', 'response': 'hi', 'events': []}))\n")
    done = run_replay("capture", "--runner", str(runner), "--out", "/proc/no-such-folder", "the prompt", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, b""), done.stderr
    [error] = errors_of(done.stderr)
    assert (error["code"], error["path"]) == ("E_OUTPUT_WRITE_FAILED", "/proc/no-such-folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runner.py"]  # not run; no journal, no artifact folder
    made = run_replay("capture", "--runner", str(runner), "--out", str(tmp_path / "new" / "runs"), "the prompt",
                      cwd=tmp_path)
    assert made.returncode == 0, made.stderr  # (a folder that is missing is made, as before)
    assert (tmp_path / "ran").exists() and len(list((tmp_path / "new" / "runs").iterdir())) >= 2


@pytest.mark.parametrize("out", ["/sys/no-such-folder", *UNWRITABLE[1:]])
@pytest.mark.parametrize("command", [("heal", "--in", str(EXAMPLES / "journals")),
                                     ("incident", "import", str(EXAMPLES / "incidents"))], ids=lambda c: c[0])
def test_a_folder_of_many_outputs_that_cannot_be_written_is_refused_before_anything_runs(command: tuple[str, ...],
                                                                                       out: str):
    """heal --in/--out and incident import DIR --out try their folder as every other output is tried: one that cannot
    be written is refused (exit 2), not found out when the folder is made (exit 1)."""
    done = run_replay(*command, "--out", out)
    assert (done.returncode, done.stdout) == (2, b""), done.stderr
    [error] = errors_of(done.stderr)
    assert (error["code"], error["path"]) == ("E_OUTPUT_WRITE_FAILED", out)
