"""Inputs and outputs at memory:// URLs (a real fsspec filesystem other than the local one) on a Dask cluster
of threads (one process: the workers share that memory) and with the local engine: the same output as a
local run, the manifest at the URL, resume; refusals for what cannot work."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import orjson
import pytest
from conftest import ROOT, errors_of, run_replay, timeless
from scale_support import make_journals, named, named_tree, tree_bytes, upload, url_tree

from replay.pipeline.io.manifest import FRAGMENTS, MANIFEST

fsspec = pytest.importorskip("fsspec")
pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def journals(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_journals(tmp_path_factory.mktemp("mem-in"), count=16)


@pytest.fixture
def bucket():
    """A fresh memory:// folder for one test, removed after it."""
    root = f"memory://t{uuid.uuid4().hex[:10]}"
    yield root
    fs = fsspec.filesystem("memory")
    if fs.exists(root.removeprefix("memory://")):
        fs.rm(root.removeprefix("memory://"), recursive=True)


@pytest.fixture(scope="module")
def clean(journals: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, bytes, dict[str, bytes]]:
    """A local heal of the journals: (its out folder, stdout, stderr, files)."""
    out = tmp_path_factory.mktemp("mem-clean") / "out"
    proc = run_replay("heal", "--in", str(journals), "--out", str(out), "--workers", "1")
    assert proc.returncode == 1  # bad lines on purpose, healed around and reported
    return out, proc.stdout, proc.stderr, tree_bytes(out)


def _local(journals: Path, clean_out: Path) -> dict[str, Path]:
    return {"IN": journals, "OUT": clean_out}


@pytest.mark.parametrize("engine", ["dask", "local"])
def test_heal_between_memory_urls_writes_what_a_local_run_writes(journals, clean, bucket, thread_cluster, engine) -> None:
    src, out = upload(journals, f"{bucket}/in"), f"{bucket}/out"
    how = ["--engine", "dask", "--scheduler", thread_cluster] if engine == "dask" else ["--workers", "1"]
    proc = run_replay("heal", "--in", src, "--out", out, *how)
    clean_out, stdout, stderr, files = clean
    local = _local(journals, clean_out)
    assert proc.returncode == 1
    assert named(proc.stdout, IN=src, OUT=out) == named(stdout, **local)
    assert named(proc.stderr, IN=src) == named(stderr, **local)
    assert named_tree(url_tree(out), IN=src) == named_tree(files, **local)  # healed copies byte for byte; logs name their source
    manifest = orjson.loads(fsspec.open(f"{out}/{MANIFEST}").open().read())
    assert manifest["root"] == src and manifest["totals"]["inputs"] == 16
    assert [e["input"] for e in manifest["inputs"]] == sorted(str(p.relative_to(journals)) for p in journals.rglob("*.jsonl"))
    assert not any(name.startswith(FRAGMENTS) or name.endswith(".replay.tmp") for name in url_tree(out))


def test_a_run_again_at_a_url_computes_only_what_changed(journals, bucket, thread_cluster, tmp_path: Path) -> None:
    fs = fsspec.filesystem("memory")
    src, out = upload(journals, f"{bucket}/in"), f"{bucket}/out"
    dask = ["--engine", "dask", "--scheduler", thread_cluster]
    first = run_replay("heal", "--in", src, "--out", out, *dask)
    again = run_replay("--log-level", "info", "heal", "--in", src, "--out", out, *dask)
    assert b'"skipped":16,"computed":0' in again.stderr and again.stdout == first.stdout
    # a new input, a changed one and a lost output: those three are computed, the rest kept
    fs.pipe_file(f"{src}/zz.jsonl".removeprefix("memory://"), (journals / "j000.jsonl").read_bytes())
    changed = f"{src}/j001.jsonl".removeprefix("memory://")
    fs.pipe_file(changed, fs.cat_file(changed) + b'{"seq":1,"type":"run_started","runId":"late","payload":{}}\n')
    fs.rm_file(f"{out}/j002.healed.jsonl".removeprefix("memory://"))
    third = run_replay("--log-level", "info", "heal", "--in", src, "--out", out, *dask)
    assert b'"skipped":14,"computed":3' in third.stderr
    local_in = tmp_path / "in"
    for name, data in url_tree(src).items():
        (local_in / name).parent.mkdir(parents=True, exist_ok=True)
        (local_in / name).write_bytes(data)
    clean = run_replay("heal", "--in", str(local_in), "--out", str(tmp_path / "clean"), "--workers", "1")
    assert named(third.stdout, IN=src, OUT=out) == named(clean.stdout, IN=local_in, OUT=tmp_path / "clean")
    assert named_tree(url_tree(out), IN=src) == named_tree(tree_bytes(tmp_path / "clean"), IN=local_in)


def test_the_outputs_of_a_deleted_input_go_at_a_url_too(journals, bucket) -> None:
    fs = fsspec.filesystem("memory")
    src, out = upload(journals, f"{bucket}/in"), f"{bucket}/out"
    run_replay("heal", "--in", src, "--out", out, "--workers", "1")
    fs.rm_file(f"{src}/j000.jsonl".removeprefix("memory://"))
    again = run_replay("--log-level", "info", "heal", "--in", src, "--out", out, "--workers", "1")
    assert b'"event":"scale.stale_removed"' in again.stderr
    assert not any(name.startswith("j000.") for name in url_tree(out)) and "j001.healed.jsonl" in url_tree(out)
    manifest = orjson.loads(fsspec.open(f"{out}/{MANIFEST}").open().read())
    assert "j000.jsonl" not in [e["input"] for e in manifest["inputs"]] and manifest["totals"]["inputs"] == 15


def test_validate_report_and_run_over_a_memory_url_equal_a_local_run(journals, bucket, thread_cluster, tmp_path: Path) -> None:
    src = upload(journals, f"{bucket}/in")
    dask = ["--engine", "dask", "--scheduler", thread_cluster]
    for how in (dask, ["--workers", "1"]):
        remote, local = run_replay("validate", "--in", src, *how), run_replay("validate", "--in", str(journals), "--workers", "1")
        assert (remote.returncode, named(remote.stdout, IN=src), timeless(named(remote.stderr, IN=src))) == \
            (local.returncode, named(local.stdout, IN=journals), timeless(named(local.stderr, IN=journals)))
        remote = run_replay("report", "--in", src, "--format", "json", *how)
        local = run_replay("report", "--in", str(journals), "--format", "json", "--workers", "1")
        assert remote.returncode == local.returncode == 1
        assert named(remote.stdout, IN=src) == named(local.stdout, IN=journals)
    spec = tmp_path / "heal.toml"
    spec.write_bytes(run_replay("stages", "--graph", "heal").stdout)
    remote = run_replay("run", str(spec), src, *dask)
    local = run_replay("run", str(spec), str(journals), "--workers", "1")
    assert (remote.returncode, named(remote.stdout, IN=src)) == (local.returncode, named(local.stdout, IN=journals))
    assert b'"$record":"source","source":"' + src.encode() in remote.stdout


def test_a_report_written_to_a_url_appears_whole(journals, bucket, thread_cluster, tmp_path: Path) -> None:
    src = upload(journals, f"{bucket}/in")
    target = f"{bucket}/reports/runs.html"
    proc = run_replay("report", "--in", src, "--out", target, "--engine", "dask", "--scheduler", thread_cluster)
    local = run_replay("report", "--in", str(journals), "--out", str(tmp_path / "runs.html"), "--workers", "1")
    assert proc.returncode == local.returncode == 1 and proc.stdout == b""
    assert url_tree(f"{bucket}/reports") == {"runs.html": (tmp_path / "runs.html").read_bytes().replace(
        str(journals).encode(), src.encode())}  # one file, no temp name beside it


def test_memory_urls_are_refused_where_workers_are_other_processes(journals, bucket) -> None:
    src = upload(journals, f"{bucket}/in")
    for how in (["--workers", "2"], ["--engine", "dask"]):
        proc = run_replay("heal", "--in", src, "--out", f"{bucket}/out", *how)
        [error] = errors_of(proc.stderr)
        assert (proc.returncode, proc.stdout, error["code"]) == (2, b"", "E_USAGE_INVALID") and "memory://" in error["message"]
    assert not fsspec.filesystem("memory").exists(f"{bucket}/out".removeprefix("memory://"))


def test_an_out_url_that_is_a_file_is_refused_as_a_local_one_is(journals, bucket, tmp_path: Path) -> None:
    fs = fsspec.filesystem("memory")
    fs.pipe(f"{bucket}/out".removeprefix("memory://"), b"a file\n")
    (tmp_path / "out").write_bytes(b"a file\n")
    remote = run_replay("heal", "--in", str(journals), "--out", f"{bucket}/out", "--workers", "1")
    local = run_replay("heal", "--in", str(journals), "--out", str(tmp_path / "out"), "--workers", "1")
    assert remote.returncode == local.returncode == 2 and remote.stdout == local.stdout == b""
    [at_url], [here] = errors_of(remote.stderr), errors_of(local.stderr)
    assert at_url == {**here, "message": here["message"].replace(str(tmp_path), bucket), "path": f"{bucket}/out"}
    assert fs.cat(f"{bucket}/out".removeprefix("memory://")) == b"a file\n"


def test_missing_urls_and_filesystems_are_refused_before_any_output(journals, bucket, tmp_path: Path) -> None:
    missing = run_replay("heal", "--in", f"{bucket}/nothing", "--out", f"{bucket}/out")
    assert missing.returncode == 2 and errors_of(missing.stderr)[0]["code"] == "E_INPUT_PATH_NOT_FOUND"
    unknown = run_replay("validate", "--in", "nosuchfs://bucket/runs")
    [error] = errors_of(unknown.stderr)
    assert (unknown.returncode, error["code"]) == (2, "E_FILESYSTEM_NOT_INSTALLED") and "nosuchfs" in error["message"]
    # a protocol fsspec knows whose package is not installed (here: s3fs, shadowed by a module that fails to import)
    (tmp_path / "s3fs.py").write_text("raise ImportError('not installed here')\n")
    for args in (["heal", "--in", "s3://bucket/runs", "--out", str(tmp_path / "out")],
                 ["heal", "--in", str(journals), "--out", "s3://bucket/healed"],
                 ["report", "--in", "s3://bucket/runs"]):
        proc = run_replay(*args, env={"PYTHONPATH": str(tmp_path)}, process=True)
        [error] = errors_of(proc.stderr)
        assert (proc.returncode, proc.stdout, error["code"]) == (2, b"", "E_FILESYSTEM_NOT_INSTALLED")
        assert "pip install s3fs" in error["howToFix"]
    assert not (tmp_path / "out").exists()
    # a server that does not answer (nothing listens on port 1)
    proc = run_replay("heal", "--in", "ftp://127.0.0.1:1/in", "--out", str(tmp_path / "out"))
    [error] = errors_of(proc.stderr)
    assert (proc.returncode, error["code"]) == (2, "E_INPUT_UNREADABLE") and "127.0.0.1:1" in error["message"]
    # without fsspec at all, a URL names the extra that brings it
    (tmp_path / "fsspec").mkdir()
    (tmp_path / "fsspec" / "__init__.py").write_text("raise ImportError('not installed here')\n")
    proc = run_replay("validate", "--in", "memory://x", env={"PYTHONPATH": str(tmp_path)}, process=True)
    [error] = errors_of(proc.stderr)
    assert (proc.returncode, error["code"]) == (2, "E_EXTRA_NOT_INSTALLED") and "pip install fsspec" in error["howToFix"]


def test_local_paths_never_import_fsspec(journals: Path, tmp_path: Path) -> None:
    """Start-up time: a command over local paths takes today's code path, without fsspec."""
    script = ("import sys\nfrom replay.pipeline.cli.app import run_cli\n"
              f"code = run_cli(['heal', '--in', {str(journals)!r}, '--out', {str(tmp_path / 'out')!r}, '--workers', '1'])\n"
              f"run_cli(['validate', {str(journals)!r}, '--workers', '1']); run_cli(['report', {str(journals)!r}])\n"
              "print(code, 'fsspec' in sys.modules, file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, cwd=ROOT, check=False, timeout=120)
    assert proc.stderr.splitlines()[-1] == b"1 False", proc.stderr[-500:]
    assert (tmp_path / "out" / MANIFEST).is_file()


def test_a_url_on_one_side_and_a_local_folder_on_the_other(journals, clean, bucket, tmp_path: Path) -> None:
    clean_out, stdout, _stderr, files = clean
    local = _local(journals, clean_out)
    src = upload(journals, f"{bucket}/in")
    into_local = run_replay("heal", "--in", src, "--out", str(tmp_path / "out"), "--workers", "1")
    assert named(into_local.stdout, IN=src, OUT=tmp_path / "out") == named(stdout, **local)
    assert named_tree(tree_bytes(tmp_path / "out"), IN=src) == named_tree(files, **local)
    into_url = run_replay("heal", "--in", str(journals), "--out", f"{bucket}/out", "--workers", "1")
    assert named(into_url.stdout, OUT=f"{bucket}/out") == named(stdout, OUT=clean_out)
    assert url_tree(f"{bucket}/out") == files
    again = run_replay("--log-level", "info", "heal", "--in", str(journals), "--out", f"{bucket}/out", "--workers", "1")
    assert b'"skipped":16,"computed":0' in again.stderr
