"""`replay report` over several files spools the files' summaries in the temp folder: a write the system refuses there
(a file-size limit, a full TMPDIR) is E_OUTPUT_WRITE_FAILED (exit 1) as a failed write of the report is, not E_UNHANDLED."""

from __future__ import annotations

import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from conftest import CORPUS, REPLAY, errors_of, no_temp_folder

LIMIT = 2048  # bytes: more than the report's own file, less than six runs' summaries
# (PYTHONDONTWRITEBYTECODE: under the limit, Python would leave a .pyc it compiles cut short, which every later import fails on)


def _small_files_only() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) rather than kills
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def test_a_refused_write_of_the_spooled_summaries_is_output_write_failed(tmp_path: Path) -> None:
    runs, spool = tmp_path / "runs", tmp_path / "tmp"
    runs.mkdir()
    spool.mkdir()
    for number in range(6):
        shutil.copy(CORPUS / "openhands" / "basic.json", runs / f"run{number}.json")
    (tmp_path / "r.json").write_bytes(b"before")
    done = subprocess.run([REPLAY, "report", "runs", "--format", "json", "--out", "r.json"], cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "TMPDIR": str(spool), "PYTHONDONTWRITEBYTECODE": "1"},
                          capture_output=True, timeout=120,
                          check=False, preexec_fn=_small_files_only)
    assert done.returncode == 1, done.stderr
    error, = errors_of(done.stderr)
    assert error["code"] == "E_OUTPUT_WRITE_FAILED", error
    assert error["received"] == "EFBIG: File too large"
    assert error["path"].startswith(str(spool)) and error["path"].endswith("summaries.jsonl")
    assert (tmp_path / "r.json").read_bytes() == b"before"  # --out left as it was
    assert list(spool.iterdir()) == []  # the spool is gone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "runs", "tmp"]  # no temp file beside --out


def test_no_temp_folder_to_spool_in_is_a_refusal_not_a_crash(tmp_path: Path) -> None:
    """It was E_UNHANDLED (FileNotFoundError: No usable temporary directory found): gettempdir() raised before the
    write the refusals cover. Now E_OUTPUT_WRITE_FAILED at TMPDIR, exit 2, before any file is read."""
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path / "gone"), "PYTHONDONTWRITEBYTECODE": "1"}
    probe = subprocess.run([sys.executable, "-c", "import tempfile; tempfile.gettempdir()"], cwd=tmp_path, env=env,
                           capture_output=True, timeout=60, check=False, preexec_fn=no_temp_folder)
    assert b"No usable temporary directory" in probe.stderr  # (the situation is real: no temp folder at all)
    runs = tmp_path / "runs"
    runs.mkdir()
    for number in range(2):
        shutil.copy(CORPUS / "openhands" / "basic.json", runs / f"run{number}.json")
    done = subprocess.run([REPLAY, "report", "runs"], cwd=tmp_path, env=env, capture_output=True, timeout=120,
                          check=False, preexec_fn=no_temp_folder)
    assert done.returncode == 2 and done.stdout == b"", done.stderr
    error, = errors_of(done.stderr)
    assert (error["code"], error["path"]) == ("E_OUTPUT_WRITE_FAILED", "TMPDIR")
    assert "No usable temporary directory" in error["received"] and "TMPDIR" in error["howToFix"]
