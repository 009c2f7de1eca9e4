"""heal --in ftp://… --out ftp://… against a real FTP server (pyftpdlib, started on loopback for the session)
with worker processes: the bytes of a local run, the manifest at the URL, and a run that lost a worker and
then died resumed from what it recorded there, leaving no partial or temp object."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import run_replay
from scale_support import make_journals, named, named_tree, tree_bytes

from replay.pipeline.io.journals import is_temp_name
from replay.pipeline.io.manifest import FRAGMENTS, MANIFEST

pytest.importorskip("pyftpdlib")
pytest.importorskip("fsspec")
distributed = pytest.importorskip("distributed")

SERVER = Path(__file__).with_name("ftp_server.py")


@pytest.fixture(scope="session")
def ftp(tmp_path_factory: pytest.TempPathFactory):
    """(the folder the server serves, its URL): a real FTP server in its own process, anonymous, loopback only."""
    served = tmp_path_factory.mktemp("ftp-root")
    proc = subprocess.Popen([sys.executable, str(SERVER), str(served)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield served, f"ftp://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def journals(ftp) -> Path:
    served, _ = ftp
    (served / "in").mkdir()
    return make_journals(served / "in", count=24)


@pytest.fixture(scope="module")
def clean(journals: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, dict[str, bytes]]:
    out = tmp_path_factory.mktemp("ftp-clean") / "out"
    proc = run_replay("heal", "--in", str(journals), "--out", str(out), "--workers", "1")
    assert proc.returncode == 1  # bad lines on purpose, healed around and reported
    return out, proc.stdout, tree_bytes(out)


def _no_temp_names(folder: Path) -> bool:
    return not any(is_temp_name(p.name) for p in folder.rglob("*"))


def test_worker_processes_heal_between_ftp_urls_into_the_bytes_of_a_local_run(ftp, journals, clean, process_cluster) -> None:
    served, url = ftp
    src, out = f"{url}/in", f"{url}/out"
    proc = run_replay("heal", "--in", src, "--out", out, "--engine", "dask", "--scheduler", process_cluster.scheduler_address)
    clean_out, stdout, files = clean
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert named(proc.stdout, IN=src, OUT=out) == named(stdout, IN=journals, OUT=clean_out)
    assert named_tree(tree_bytes(served / "out"), IN=src) == named_tree(files, IN=journals)
    manifest = orjson.loads((served / "out" / MANIFEST).read_bytes())  # at the URL, written last
    assert manifest["root"] == src and manifest["totals"]["inputs"] == 24
    assert all(len(e["outputs"]) == 2 and len(e["sha256"]) == 64 for e in manifest["inputs"])
    assert _no_temp_names(served / "out") and not (served / "out" / FRAGMENTS).exists()


def test_local_worker_processes_read_and_write_ftp_too(ftp, journals, clean) -> None:
    served, url = ftp
    src, out = f"{url}/in", f"{url}/out-local"
    proc = run_replay("heal", "--in", src, "--out", out, "--workers", "2")
    clean_out, stdout, files = clean
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert named(proc.stdout, IN=src, OUT=out) == named(stdout, IN=journals, OUT=clean_out)
    assert named_tree(tree_bytes(served / "out-local"), IN=src) == named_tree(files, IN=journals)


def test_a_killed_worker_then_a_dead_command_resume_at_the_url_with_no_partial_object(ftp, journals, clean, process_cluster,
                                                                                    monkeypatch) -> None:
    """A worker is killed after the first task (Dask runs its tasks again); the command itself dies after the
    third. The next run computes only what the fragments at the URL do not record; every object in the
    folder is then that of a clean run, and no temp object is left (one planted as a writer killed
    mid-upload would leave it is swept)."""
    import replay.pipeline.cli.scale as scale
    from replay.pipeline.io.dask_backend import dask_tasks

    served, url = ftp
    src, out = f"{url}/in", f"{url}/out-resumed"
    address = process_cluster.scheduler_address
    (served / "out-resumed").mkdir()
    (served / "out-resumed" / ".j000.healed.jsonl.deadbeef.replay.tmp").write_bytes(b"half an upload")
    client = distributed.Client(process_cluster)
    pids = client.run(os.getpid)
    killed: list[int] = []

    def lose_a_worker_then_die(work, chunks, workers):
        for done, (index, outcomes) in enumerate(dask_tasks(work, chunks, scheduler=address, workers=workers), 1):
            if not killed:
                killed.append(sorted(pids.values())[-1])
                os.kill(killed[0], signal.SIGKILL)
            yield index, outcomes
            if done == 3:
                raise KeyboardInterrupt  # the command dies: the machine running it went away

    with monkeypatch.context() as patched:
        patched.setattr(scale, "_backend", lambda _scale: lose_a_worker_then_die)
        crashed = run_replay("heal", "--in", src, "--out", out, "--engine", "dask", "--scheduler", address)
    client.close()
    assert crashed.returncode == 130 and killed
    assert list((served / "out-resumed" / FRAGMENTS).iterdir()) and not (served / "out-resumed" / MANIFEST).exists()

    resumed = run_replay("--log-level", "info", "heal", "--in", src, "--out", out, "--engine", "dask", "--scheduler", address)
    [done] = [orjson.loads(line) for line in resumed.stderr.splitlines() if b'"scale.done"' in line]
    assert done["skipped"] == 24 - done["computed"] >= 6  # three tasks of two inputs were recorded before the end
    clean_out, stdout, files = clean
    assert named(resumed.stdout, IN=src, OUT=out) == named(stdout, IN=journals, OUT=clean_out)
    assert named_tree(tree_bytes(served / "out-resumed"), IN=src) == named_tree(files, IN=journals)
    assert _no_temp_names(served / "out-resumed") and not (served / "out-resumed" / FRAGMENTS).exists()
    assert orjson.loads((served / "out-resumed" / MANIFEST).read_bytes())["totals"]["inputs"] == 24
