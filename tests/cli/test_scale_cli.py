"""Commands over many inputs: --workers N gives the bytes of --workers 1 and of one graph run over every input;
resumable, idempotent heal --in; the progress bar only on a terminal."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import EXAMPLES, REPLAY, errors_of, jsonl, run_replay, timeless
from scale_support import KILLED, make_journals, on_a_terminal, swapped_backend, tree_bytes

from replay.pipeline.io.manifest import FRAGMENTS, MANIFEST


@pytest.fixture(scope="module")
def journals(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_journals(tmp_path_factory.mktemp("scale-in"), count=10)


def _spec(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_bytes(run_replay("stages", "--graph", name).stdout)
    return path


def test_heal_with_two_worker_processes_writes_what_one_worker_writes(journals: Path, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    a = run_replay("heal", "--in", str(journals), "--out", str(one), "--workers", "1")
    b = run_replay("heal", "--in", str(journals), "--out", str(two), "--workers", "2")
    assert a.returncode == b.returncode == 1  # the bad lines are reported, the rest healed
    assert a.stdout.replace(str(one).encode(), b"OUT") == b.stdout.replace(str(two).encode(), b"OUT")
    assert a.stderr == b.stderr and tree_bytes(one) == tree_bytes(two)
    assert [r["source"] for r in jsonl(b.stdout)] == sorted(str(p) for p in journals.rglob("*.jsonl"))  # input order
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one", "two"]  # no staging folder left


def test_validate_and_report_in_parallel_equal_one_graph_over_every_input(journals: Path, tmp_path: Path) -> None:
    files = [str(p) for p in sorted(journals.rglob("*.jsonl"))]
    validate_one_graph = run_replay("run", str(_spec(tmp_path, "validate")), *files)
    for workers in ("1", "2"):
        proc = run_replay("validate", "--in", str(journals), "--workers", workers)
        assert (proc.returncode, proc.stdout, timeless(proc.stderr)) == (1, validate_one_graph.stdout, timeless(validate_one_graph.stderr))
    report_one_graph = run_replay("run", str(_spec(tmp_path, "report")), *files)
    two = run_replay("report", *files, "--workers", "2", "--format", "text")
    assert (two.returncode, two.stdout, two.stderr) == (1, report_one_graph.stdout, report_one_graph.stderr)
    as_json = run_replay("report", "--in", str(journals), "--workers", "2", "--format", "json")
    assert orjson.loads(as_json.stdout)["aggregate"]["runs"]["total"] == len(orjson.loads(as_json.stdout)["runs"]) > 10


def test_a_report_in_parallel_reads_its_summaries_whatever_the_line_limit(tmp_path: Path) -> None:
    """--max-line-bytes limits the input's lines, not the summaries the reduce reads back (a run's lists every call)."""
    for name in ("a", "b"):
        (tmp_path / f"{name}.jsonl").write_bytes((EXAMPLES / "journals" / "two-runs.jsonl").read_bytes().replace(b"run_", name.encode()))
    one = run_replay("report", "--max-line-bytes", "400", "--workers", "1", "--in", str(tmp_path))
    two = run_replay("report", "--max-line-bytes", "400", "--workers", "2", "--in", str(tmp_path))
    assert (two.returncode, two.stdout, two.stderr) == (one.returncode, one.stdout, one.stderr)
    assert one.stdout.startswith(b"replay report: 4 runs")


def test_run_with_workers_equals_one_run_over_the_folder(journals: Path, tmp_path: Path) -> None:
    config = str(_spec(tmp_path, "heal"))
    whole = run_replay("run", config, str(journals))
    parallel = run_replay("run", config, str(journals), "--workers", "2")
    assert (parallel.returncode, parallel.stdout, timeless(parallel.stderr)) == (whole.returncode, whole.stdout, timeless(whole.stderr))
    assert b'"$record":"source"' in parallel.stdout  # each input still marked as one run over all would


def test_run_with_workers_refuses_a_graph_that_writes_a_file(journals: Path, tmp_path: Path) -> None:
    config = tmp_path / "to-file.toml"
    config.write_text(f'chain = [{{ type = "write", path = "{tmp_path / "all.jsonl"}" }}]\n')
    proc = run_replay("run", str(config), str(journals), "--workers", "2")
    assert proc.returncode == 2 and errors_of(proc.stderr)[0]["code"] == "E_USAGE_INVALID"
    assert not (tmp_path / "all.jsonl").exists()


def test_a_run_again_computes_only_what_the_manifest_does_not_record(journals: Path, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    for p in sorted(journals.glob("*.jsonl"))[:5]:
        (src / p.name).write_bytes(p.read_bytes())
    out = tmp_path / "out"
    first = run_replay("heal", "--in", str(src), "--out", str(out), "--workers", "2")
    manifest = orjson.loads((out / MANIFEST).read_bytes())
    assert [e["input"] for e in manifest["inputs"]] == sorted(p.name for p in src.iterdir())
    assert all(len(e["outputs"]) == 2 and len(e["sha256"]) == 64 for e in manifest["inputs"])
    assert sum(e["diagnostics"]["total"] for e in manifest["inputs"]) == manifest["totals"]["diagnostics"] > 0
    inodes = {p.name: p.stat().st_ino for p in out.iterdir()}
    again = run_replay("--log-level", "info", "heal", "--in", str(src), "--out", str(out), "--workers", "2")
    assert (again.returncode, again.stdout) == (first.returncode, first.stdout)  # the recorded output, printed again
    assert {p.name: p.stat().st_ino for p in out.iterdir() if p.name != MANIFEST} == \
        {k: v for k, v in inodes.items() if k != MANIFEST}  # nothing rewritten
    assert b'"skipped":5,"computed":0' in again.stderr
    # a new input, a changed one and a lost output: those three are computed, the rest kept
    (src / "zz.jsonl").write_bytes((journals / "j000.jsonl").read_bytes())
    changed = sorted(src.glob("j*.jsonl"))[0]
    changed.write_bytes(changed.read_bytes() + b'{"seq":1,"type":"run_started","runId":"late","payload":{}}\n')
    lost = sorted(out.glob("*.healed.jsonl"))[-1]
    lost.unlink()
    third = run_replay("--log-level", "info", "heal", "--in", str(src), "--out", str(out), "--workers", "1")
    assert b'"skipped":3,"computed":3' in third.stderr and lost.is_file()
    clean = run_replay("heal", "--in", str(src), "--out", str(tmp_path / "clean"), "--workers", "1")
    assert third.stdout.replace(str(out).encode(), b"OUT") == clean.stdout.replace(str(tmp_path / "clean").encode(), b"OUT")
    assert tree_bytes(out) == tree_bytes(tmp_path / "clean")


def test_a_crashed_run_resumes_from_its_fragments(journals: Path, tmp_path: Path) -> None:
    """The command dies after its first task: the next run computes only the inputs no fragment records."""
    from replay.pipeline.cli.commands import heal as heal_command

    out = tmp_path / "out"
    with swapped_backend() as backends:
        backends.crash()
        crashed = run_replay("heal", "--in", str(journals), "--out", str(out), "--workers", "4")
        assert crashed.returncode == KILLED
        staging = tmp_path / ".out.partial.replay.tmp"
        assert not out.exists() and list((staging / FRAGMENTS).iterdir())
        backends.count()
        resumed = run_replay("heal", "--in", str(journals), "--out", str(out), "--workers", "4")
    computed = backends.computed
    clean = run_replay("heal", "--in", str(journals), "--out", str(tmp_path / "clean"), "--workers", "1")
    files = sorted(str(p) for p in journals.rglob("*.jsonl"))
    assert 0 < len(computed) < len(files) and set(computed) <= set(files)
    assert resumed.stdout.replace(str(out).encode(), b"OUT") == clean.stdout.replace(str(tmp_path / "clean").encode(), b"OUT")
    assert tree_bytes(out) == tree_bytes(tmp_path / "clean") and not (tmp_path / ".out.partial.replay.tmp").exists()
    assert not (out / FRAGMENTS).exists() and heal_command is not None


def test_the_progress_bar_shows_on_a_terminal_only(journals: Path, tmp_path: Path) -> None:
    code, shown = on_a_terminal([REPLAY, "validate", "--in", str(journals), "--workers", "2"])
    assert code == 1 and b"validate" in shown and b"10/10" in shown and b"events/s" in shown and b"errors" in shown
    code, shown = on_a_terminal([REPLAY, "validate", "--in", str(journals), "--workers", "2", "--quiet"])
    assert code == 1 and b"10/10" not in shown and b"events/s" not in shown
    piped = run_replay("validate", "--in", str(journals), "--workers", "2", process=True)
    assert b"events/s" not in piped.stderr


def test_a_missing_extra_is_named_with_how_to_install_it(journals: Path, tmp_path: Path) -> None:
    """Without Dask or nats-py (here: modules that fail to import, first on PYTHONPATH), the commands refuse."""
    (tmp_path / "distributed.py").write_text("raise ImportError('not installed here')\n")
    (tmp_path / "nats").mkdir()
    (tmp_path / "nats" / "__init__.py").write_text("raise ImportError('not installed here')\n")
    env = {"PYTHONPATH": str(tmp_path)}
    dask = run_replay("validate", "--in", str(journals), "--engine", "dask", env=env, process=True)
    nats = run_replay("read", "nats://127.0.0.1:4222/agents.raw", env=env, process=True)
    # (what to install is said as the packages themselves: `agent-replay[dask]` is found on no index replay is
    # installed from when it came from a clone)
    for proc, install in ((dask, "pip install 'dask[distributed]' fsspec"), (nats, "pip install nats-py")):
        [error] = errors_of(proc.stderr)
        assert proc.returncode == 2 and proc.stdout == b""
        assert error["code"] == "E_EXTRA_NOT_INSTALLED" and install in error["howToFix"]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_unreadable_input_is_its_own_error_and_the_others_are_healed(tmp_path: Path, workers: str) -> None:
    """A broken link among the inputs is reported as read reports one (exit 1 at the end), not the end of the command:
    the other inputs are healed and their files are where stdout says; a run again retries only it."""
    folder = tmp_path / "in"
    folder.mkdir()
    make_journals(folder, count=4)
    (folder / "b-gone.jsonl").symlink_to(folder / "missing.jsonl")
    out = tmp_path / "out"
    done = run_replay("heal", "--in", str(folder), "--out", str(out), "--workers", workers)
    assert done.returncode == 1
    assert [(e["code"], e["source"]) for e in errors_of(done.stderr) if e["code"] == "E_INPUT_UNREADABLE"] == \
        [("E_INPUT_UNREADABLE", str(folder / "b-gone.jsonl"))]
    written = jsonl(done.stdout)
    assert len(written) == 4 and all(Path(w["healed"]).is_file() and Path(w["log"]).is_file() for w in written)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out"]  # the folder is in place, no staging folder left
    again = run_replay("heal", "--in", str(folder), "--out", str(out), "--workers", workers)
    assert again.returncode == 1 and again.stdout == done.stdout


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_strict_run_that_fails_leaves_no_folder_and_no_staging_folder(tmp_path: Path, workers: str) -> None:
    """--strict ends the command at its first error, and a new --out folder goes with it, staging folder and all: the
    worker processes still healing other inputs are stopped first (they wrote into the staging folder after it was
    removed, and it stayed)."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a-bad.jsonl").write_bytes(b"not json\n")
    make_journals(folder, count=12)
    done = run_replay("heal", "--in", str(folder), "--out", str(tmp_path / "out"), "--workers", workers, "--strict",
                      process=True)
    assert done.returncode == 1
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_JSONL_LINE_INVALID"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]
    assert done.stdout == b""  # no line names a file of the folder that never appeared


def test_the_lines_naming_a_new_folders_files_wait_for_the_folder(tmp_path: Path) -> None:
    """Each stdout line names files under --out: for a new folder they are printed once it is in place, so a run that
    fails at a later input (--strict) printed none for the inputs before it."""
    folder = tmp_path / "in"
    folder.mkdir()
    make_journals(folder, count=3)
    (folder / "z-bad.jsonl").write_bytes(b"not json\n")
    done = run_replay("heal", "--in", str(folder), "--out", str(tmp_path / "out"), "--workers", "1", "--strict")
    assert done.returncode == 1 and done.stdout == b"" and not (tmp_path / "out").exists()
    whole = run_replay("heal", "--in", str(folder), "--out", str(tmp_path / "out"), "--workers", "1")
    assert [Path(w["healed"]).is_file() for w in jsonl(whole.stdout)] == [True] * 4


def test_an_empty_journal_heals_into_an_empty_one_as_in_filter_mode(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "blank.jsonl").write_bytes(b"\n\n")
    done = run_replay("heal", "--in", str(folder), "--out", str(tmp_path / "out"))
    assert done.returncode == run_replay("heal", str(folder / "empty.jsonl")).returncode == 0, done.stderr
    assert [(w["source"], w["repairs"]) for w in jsonl(done.stdout)] == [(str(folder / "blank.jsonl"), 0),
                                                                           (str(folder / "empty.jsonl"), 0)]
    assert (tmp_path / "out" / "empty.healed.jsonl").read_bytes() == b""


def test_a_run_again_after_an_input_is_deleted_removes_its_outputs(journals: Path, tmp_path: Path) -> None:
    """OUT follows the input folder as it is now: the outputs of a deleted input go (those in a sub-folder with the
    folder they leave empty); one changed since it was written is kept and named in a JSON warning on stderr."""
    src, out, clean = tmp_path / "in", tmp_path / "out", tmp_path / "clean"
    src.mkdir()
    for p in [*sorted(journals.glob("*.jsonl"))[:3], journals / "nested" / "j003.jsonl"]:
        (src / p.relative_to(journals)).parent.mkdir(exist_ok=True)
        (src / p.relative_to(journals)).write_bytes(p.read_bytes())
    run_replay("heal", "--in", str(src), "--out", str(out))
    (src / "j000.jsonl").unlink()
    (src / "j001.jsonl").unlink()
    (src / "nested" / "j003.jsonl").unlink()
    (out / "j001.heal-log.json").write_bytes(b"my notes\n")
    again = run_replay("heal", "--in", str(src), "--out", str(out), "--workers", "2")
    fresh = run_replay("heal", "--in", str(src), "--out", str(clean))
    assert again.stdout.replace(str(out).encode(), b"OUT") == fresh.stdout.replace(str(clean).encode(), b"OUT")
    assert [e["input"] for e in orjson.loads((out / MANIFEST).read_bytes())["inputs"]] == ["j002.jsonl"]
    assert {**tree_bytes(clean), "j001.heal-log.json": b"my notes\n"} == tree_bytes(out)
    assert not (out / "nested").exists()
    [warning] = [line for line in jsonl(again.stderr) if line.get("event") == "scale.stale_kept"]
    assert warning["paths"] == [str(out / "j001.heal-log.json")] and warning["level"] == "warning"


def test_a_run_with_another_in_folder_removes_what_the_earlier_one_wrote_for_its_inputs(journals: Path,
                                                                                        tmp_path: Path) -> None:
    """OUT follows --in as it is now: after `heal --in A --out O`, `heal --in B --out O` removes A's healed files (they
    stayed, unlisted, and `replay report O` counted their runs); one changed since it was written is kept, and a file
    replay did not write is never touched. --in one file of a folder, then another file of it: the first one's go too."""
    a, b, out, clean = tmp_path / "a", tmp_path / "b", tmp_path / "out", tmp_path / "clean"
    for folder, name in ((a, "j000.jsonl"), (a, "j001.jsonl"), (b, "j002.jsonl")):
        folder.mkdir(exist_ok=True)
        (folder / name).write_bytes((journals / name).read_bytes())
    assert run_replay("heal", "--in", str(a), "--out", str(out)).returncode in (0, 1)
    (out / "j001.heal-log.json").write_bytes(b"my notes\n")
    (out / "mine.txt").write_bytes(b"not replay's\n")
    again = run_replay("--log-level", "info", "heal", "--in", str(b), "--out", str(out))
    assert again.returncode in (0, 1), again.stderr  # (1: the journals hold lines that are not JSON)
    assert run_replay("heal", "--in", str(b), "--out", str(clean)).returncode in (0, 1)
    assert tree_bytes(out) == {**tree_bytes(clean), "j001.heal-log.json": b"my notes\n", "mine.txt": b"not replay's\n"}
    [removed] = [line for line in jsonl(again.stderr) if line.get("event") == "scale.stale_removed"]
    assert sorted(Path(p).name for p in removed["paths"]) == ["j000.heal-log.json", "j000.healed.jsonl",
                                                              "j001.healed.jsonl"]
    [kept] = [line for line in jsonl(again.stderr) if line.get("event") == "scale.stale_kept"]
    assert kept["paths"] == [str(out / "j001.heal-log.json")]

    one = tmp_path / "one"
    assert run_replay("heal", "--in", str(a / "j000.jsonl"), "--out", str(one)).returncode in (0, 1)
    assert run_replay("heal", "--in", str(a / "j001.jsonl"), "--out", str(one)).returncode in (0, 1)
    assert sorted(tree_bytes(one)) == ["j001.heal-log.json", "j001.healed.jsonl"]


def test_a_killed_runs_fragment_of_other_work_naming_an_input_since_deleted_has_its_outputs_removed(
        journals: Path, tmp_path: Path) -> None:
    """What an earlier run recorded is read once, before the run (to reuse what it can): a fragment left by a killed
    run of other work (another key: nothing in it is reused) still has the outputs of an input gone since removed."""
    src, out, clean = tmp_path / "in", tmp_path / "out", tmp_path / "clean"
    src.mkdir()
    for name in ("j000.jsonl", "j001.jsonl"):
        (src / name).write_bytes((journals / name).read_bytes())
    run_replay("heal", "--in", str(src), "--out", str(out))
    manifest = orjson.loads((out / MANIFEST).read_bytes())
    (out / MANIFEST).unlink()
    (out / FRAGMENTS).mkdir()
    (out / FRAGMENTS / f"killed{MANIFEST}").write_bytes(orjson.dumps({**manifest, "key": "other work"}))
    (src / "j000.jsonl").unlink()
    again = run_replay("heal", "--in", str(src), "--out", str(out))
    fresh = run_replay("heal", "--in", str(src), "--out", str(clean))
    assert again.returncode == fresh.returncode and b"E_UNHANDLED" not in again.stderr, again.stderr
    assert tree_bytes(out) == tree_bytes(clean)
    [gone] = [entry for entry in manifest["inputs"] if entry["input"] == "j000.jsonl"]
    assert gone["outputs"] and not any((out / output["path"]).exists() for output in gone["outputs"])


@pytest.mark.parametrize("manifest", [b"[]", b'"a manifest"', b"3"])
def test_a_manifest_that_is_no_json_object_is_passed_over_as_an_unreadable_one(journals: Path, tmp_path: Path,
                                                                               manifest: bytes) -> None:
    """A manifest that is JSON but no object (`[]`) failed the run again (E_UNHANDLED, AttributeError); it is passed
    over as one that cannot be read is: every input is healed again and the manifest written anew."""
    src, out, clean = tmp_path / "in", tmp_path / "out", tmp_path / "clean"
    src.mkdir()
    (src / "j000.jsonl").write_bytes((journals / "j000.jsonl").read_bytes())
    run_replay("heal", "--in", str(src), "--out", str(out))
    (out / MANIFEST).write_bytes(manifest)
    again = run_replay("heal", "--in", str(src), "--out", str(out))
    fresh = run_replay("heal", "--in", str(src), "--out", str(clean))
    assert again.returncode == 0, again.stderr
    assert again.stdout.replace(str(out).encode(), b"OUT") == fresh.stdout.replace(str(clean).encode(), b"OUT")
    assert [e["input"] for e in orjson.loads((out / MANIFEST).read_bytes())["inputs"]] == ["j000.jsonl"]


def test_a_manifest_entry_with_outputs_that_are_no_outputs_is_passed_over(journals: Path, tmp_path: Path) -> None:
    """A recorded output that is not {path, size, sha256} (an edited manifest) failed the run again (E_UNHANDLED,
    TypeError), for an input still there and for one gone: such an entry is passed over (its input healed again)."""
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    for name in ("j000.jsonl", "j001.jsonl"):
        (src / name).write_bytes((journals / name).read_bytes())
    first = run_replay("heal", "--in", str(src), "--out", str(out))
    before = tree_bytes(out)
    manifest = orjson.loads((out / MANIFEST).read_bytes())
    manifest["inputs"][0]["outputs"] = [3]
    manifest["inputs"].append({**manifest["inputs"][1], "input": "gone.jsonl", "outputs": [{"path": 4}]})
    (out / MANIFEST).write_bytes(orjson.dumps(manifest))
    again = run_replay("heal", "--in", str(src), "--out", str(out))
    assert (again.returncode, again.stdout) == (first.returncode, first.stdout) and b"E_UNHANDLED" not in again.stderr
    assert tree_bytes(out) == before


def test_a_manifest_naming_an_output_outside_out_removes_nothing_there(journals: Path, tmp_path: Path) -> None:
    """The removal of a gone input's outputs keeps to OUT: a manifest that names a file outside it (`../x`, an
    absolute path; edited, or copied from elsewhere) had that file removed when it held what was recorded."""
    import hashlib

    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    (src / "j000.jsonl").write_bytes((journals / "j000.jsonl").read_bytes())
    run_replay("heal", "--in", str(src), "--out", str(out))
    victims = [tmp_path / "precious.txt", tmp_path / "elsewhere" / "absolute.txt"]
    for victim in victims:
        victim.parent.mkdir(exist_ok=True)
        victim.write_bytes(b"keep me\n")
    manifest = orjson.loads((out / MANIFEST).read_bytes())
    gone = {**manifest["inputs"][0], "input": "gone.jsonl", "outputs": [
        {"path": path, "size": 8, "sha256": hashlib.sha256(b"keep me\n").hexdigest()}
        for path in ("../precious.txt", str(victims[1]))]}
    manifest["inputs"].append(gone)
    (out / MANIFEST).write_bytes(orjson.dumps(manifest))
    done = run_replay("heal", "--in", str(src), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert all(victim.read_bytes() == b"keep me\n" for victim in victims)


def _as_a_user(tmp_path: Path) -> list[str]:
    """A command prefix under which file permissions apply (root reads any folder: drop its capabilities to)."""
    import os
    import shutil
    import subprocess

    if os.geteuid() != 0:
        return []
    locked = tmp_path / "probe"
    locked.mkdir(mode=0)
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]
    try:
        if shutil.which("setpriv") and subprocess.run([*prefix, "ls", str(locked)], capture_output=True).returncode:
            return prefix
    finally:
        locked.rmdir()
    pytest.skip("permissions do not apply to root here (no setpriv)")


def test_a_folder_that_cannot_be_listed_is_refused_not_taken_for_gone(tmp_path: Path) -> None:
    """A folder under --in that cannot be listed is an unreadable input, refused before anything runs (exit 2): it was
    skipped in silence (exit 0), so its journals counted as deleted, and heal --in/--out removed what it had healed of
    them as stale."""
    import subprocess

    folder = tmp_path / "in"
    for name in ("a", "locked"):
        (folder / name).mkdir(parents=True)
        make_journals(folder / name, count=2)
    out = tmp_path / "out"
    assert run_replay("heal", "--in", str(folder), "--out", str(out), "--workers", "1").returncode == 1
    healed = tree_bytes(out / "locked")
    assert healed
    prefix = _as_a_user(tmp_path)
    (folder / "locked").chmod(0)
    try:
        url = f"file://{folder}"  # (fsspec's walk of a file:// folder left it out in silence too)
        for args, locked in ((["heal", "--in", str(folder), "--out", str(out)], str(folder / "locked")),
                             (["validate", str(folder)], str(folder / "locked")),
                             (["report", str(folder / "locked")], str(folder / "locked")),
                             (["read", str(folder)], str(folder / "locked")),
                             (["heal", "--in", url, "--out", str(out)], f"{url}/locked"),
                             (["validate", url], f"{url}/locked"), (["report", f"{url}/locked"], f"{url}/locked")):
            proc = subprocess.run([*prefix, REPLAY, *args], capture_output=True, check=False)
            assert (proc.returncode, proc.stdout) == (2, b""), (args, proc.stderr)
            [error] = errors_of(proc.stderr)
            assert (error["code"], error["path"]) == ("E_INPUT_UNREADABLE", locked), args
            assert error["message"] == f"cannot read folder {locked!r}: Permission denied"
    finally:
        (folder / "locked").chmod(0o755)
    assert tree_bytes(out / "locked") == healed  # what was healed of it is still there


WORKER_TEXT = {  # what a worker process meets that Python would print as text: the code, the record's fields
    "warning": ("import warnings\nwarnings.warn('coroutine x was never awaited', RuntimeWarning)\n",
                {"event": "python.warning", "category": "RuntimeWarning", "message": "coroutine x was never awaited"}),
    "unraisable": ("class Gone:\n    def __del__(self):\n        raise ValueError('half made')\nGone()\n",
                   {"event": "python.unraisable", "code": "E_PYTHON_UNRAISABLE", "error": "ValueError: half made"}),
}


@pytest.mark.parametrize("what", list(WORKER_TEXT))
def test_a_worker_process_writes_what_python_would_print_as_log_records(what: str) -> None:
    """A second Ctrl-C left a coroutine unawaited in a worker process, whose RuntimeWarning came out as Python's text on
    the command's stderr (JSON lines only), and an event loop it cut off halfway printed "Exception ignored" (an
    exception in a ``__del__``): a worker routes both as the command does, as JSON log records."""
    import subprocess
    import sys

    code, expected = WORKER_TEXT[what]
    done = subprocess.run([sys.executable, "-c", "from replay.pipeline.engine.parallel import _worker_started\n"
                           "_worker_started()\n" + code], capture_output=True, timeout=60)
    assert done.returncode == 0
    [line] = done.stderr.splitlines()
    record = orjson.loads(line)
    assert {key: record.get(key) for key in expected} == expected
