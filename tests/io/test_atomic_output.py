"""Atomic outputs: whole or absent, recognisable temp names that readers skip, devices and FIFOs written in
place (never renamed over), symbolic links followed, and system errors as E_OUTPUT_WRITE_FAILED."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import threading
from pathlib import Path

import pytest
from conftest import EXAMPLES

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.outputs import TEMP_SUFFIX
from replay.pipeline.io.journals import expand_paths, is_temp_name
from replay.pipeline.io.staging import atomic_output, staged_folder, write_atomic

EXPORT = EXAMPLES / "incidents" / "refund-export.json"


def test_a_file_appears_whole_and_replaces_the_old_one(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_bytes(b"old\n")
    seen: list[list[str]] = []
    with atomic_output(target) as handle:
        handle.write(b"new\n")
        seen.append(sorted(os.listdir(tmp_path)))
        assert target.read_bytes() == b"old\n"  # the old file stays until the new one is complete
    assert target.read_bytes() == b"new\n" and os.listdir(tmp_path) == ["out.jsonl"]
    [temp] = [name for name in seen[0] if name != "out.jsonl"]
    assert is_temp_name(temp) and temp.startswith(".out.jsonl.") and temp.endswith(TEMP_SUFFIX)


def test_a_failure_while_writing_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_bytes(b"old\n")
    with pytest.raises(RuntimeError), atomic_output(target) as handle:
        handle.write(b"part")
        raise RuntimeError("the producer failed")
    assert os.listdir(tmp_path) == ["out.jsonl"] and target.read_bytes() == b"old\n"


def test_a_fifo_named_as_output_is_written_in_place(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_atomic(fifo, b"through the pipe\n")
    reader.join(timeout=30)
    assert got == [b"through the pipe\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and os.listdir(tmp_path) == ["pipe"]


def test_a_device_named_as_output_is_written_in_place_and_its_errors_reported(tmp_path: Path) -> None:
    full = tmp_path / "full"
    try:
        os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))  # /dev/full, made here so a regression replaces this
    except PermissionError:
        pytest.skip("cannot make a device node here")
    with pytest.raises(ReplayError) as failed:
        write_atomic(full, b"x" * 10)
    body = failed.value.body
    assert body["code"] == "E_OUTPUT_WRITE_FAILED" and body["path"] == str(full)
    assert body["received"] == "ENOSPC: No space left on device" and failed.value.exit_code == 1
    assert stat.S_ISCHR(os.stat(full).st_mode) and os.listdir(tmp_path) == ["full"]


def test_a_symbolic_link_is_followed_and_kept(tmp_path: Path) -> None:
    (tmp_path / "real.html").write_bytes(b"old")
    (tmp_path / "link.html").symlink_to("real.html")
    write_atomic(tmp_path / "link.html", b"new")
    assert (tmp_path / "link.html").is_symlink() and (tmp_path / "real.html").read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path)) == ["link.html", "real.html"]


def test_a_folder_that_cannot_be_made_is_an_output_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(ReplayError) as failed:
        write_atomic(tmp_path / "file" / "out.json", b"{}")
    assert failed.value.code == "E_OUTPUT_WRITE_FAILED" and failed.value.body["received"].startswith(("EEXIST", "ENOTDIR"))


def test_a_write_that_fails_in_a_staged_folder_names_the_file_at_its_final_place(tmp_path: Path) -> None:
    """Nobody sees a staging folder: the error names the path the file has once the folder is in place."""
    for target, staging in ((tmp_path / "my.healed", None), (tmp_path / "out", tmp_path / f".out.partial{TEMP_SUFFIX}")):
        with contextlib.ExitStack() as stack:
            base = staging or stack.enter_context(staged_folder(target))
            (base / "sub").mkdir(parents=True)
            (base / "sub" / "in.the.way").write_bytes(b"")  # a file where a folder must be: the write fails
            with pytest.raises(ReplayError) as failed:
                write_atomic(base / "sub" / "in.the.way" / "a.healed.json", b"{}")
            assert failed.value.body["path"] == str(target / "sub" / "in.the.way" / "a.healed.json"), failed.value.body


def test_readers_skip_temp_files_and_half_staged_folders(tmp_path: Path) -> None:
    (tmp_path / "run.jsonl").write_bytes(b"{}\n")
    (tmp_path / f".run.jsonl.abc123{TEMP_SUFFIX}").write_bytes(b"{}\n")
    staged = tmp_path / f".healed.xyz{TEMP_SUFFIX}"
    staged.mkdir()
    (staged / "a.healed.jsonl").write_bytes(b"{}\n")
    (tmp_path / ".hidden.jsonl").write_bytes(b"{}\n")  # hidden, but no temp: still read
    assert expand_paths([str(tmp_path)]) == [str(tmp_path / ".hidden.jsonl"), str(tmp_path / "run.jsonl")]


def test_a_staged_folder_appears_whole_with_the_usual_permissions_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "healed"
    with staged_folder(target) as base:
        (base / "a.json").write_bytes(b"{}")
        assert not target.exists() and is_temp_name(base.name)
    assert os.listdir(target) == ["a.json"] and os.listdir(tmp_path) == ["healed"]
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o777 & ~mask
    with pytest.raises(RuntimeError), staged_folder(tmp_path / "other") as base:
        (base / "a.json").write_bytes(b"{}")
        raise RuntimeError("failed halfway")
    assert os.listdir(tmp_path) == ["healed"]


def test_without_overwrite_a_taken_name_is_left_alone_and_no_temp_file_stays(tmp_path: Path):
    target = tmp_path / "fixture.json"
    with atomic_output(target, overwrite=False) as handle:
        handle.write(b"first")
    assert target.read_bytes() == b"first"
    with pytest.raises(FileExistsError), atomic_output(target, overwrite=False) as handle:
        handle.write(b"second")
    assert target.read_bytes() == b"first"
    assert [p.name for p in tmp_path.iterdir()] == ["fixture.json"]


def test_a_file_where_a_folder_must_be_is_not_a_directory(tmp_path: Path) -> None:
    """Past the commands' preflight (a file put there meanwhile): ENOTDIR, not the EEXIST mkdir says."""
    (tmp_path / "afile").write_bytes(b"a file\n")
    for target in (tmp_path / "afile" / "x.html", tmp_path / "afile" / "sub" / "x.html"):
        with pytest.raises(ReplayError) as failed:
            write_atomic(target, b"x")
        assert failed.value.body["code"] == "E_OUTPUT_WRITE_FAILED" and failed.value.body["received"] == "ENOTDIR: Not a directory"
    assert os.listdir(tmp_path) == ["afile"]


def _syncs_of(tmp_path: Path, *args: str) -> tuple[int, int]:
    """(fsyncs, syncfs calls) of a real `replay ARGS...`, as strace sees them."""
    import subprocess

    from conftest import REPLAY

    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    log = tmp_path / "strace.log"
    done = subprocess.run(["strace", "-f", "-qq", "-e", "trace=fsync,fdatasync,syncfs", "-o", str(log), REPLAY, *args],
                          capture_output=True, timeout=120, check=False)
    if b"ptrace" in done.stderr and done.returncode != 0:
        pytest.skip("strace cannot trace here (ptrace not permitted)")
    assert done.returncode == 0, done.stderr
    calls = log.read_text().splitlines()
    return sum(" fsync(" in c or " fdatasync(" in c for c in calls), sum(" syncfs(" in c for c in calls)


def _syncs_of_heal(tmp_path: Path, out: Path, inputs: int) -> tuple[int, int]:
    """(fsyncs, syncfs calls) of a real `replay heal --in DIR --out OUT` over ``inputs`` journals."""
    folder = tmp_path / "in"
    folder.mkdir(exist_ok=True)
    for k in range(inputs):
        (folder / f"j{k:02d}.jsonl").write_bytes(b'{"runId":"r%d","seq":1,"type":"run.start"}\n' % k)
    syncs = _syncs_of(tmp_path, "heal", "--in", str(folder), "--out", str(out))
    assert len(list(out.rglob("*.healed.jsonl"))) == inputs  # every output there, under its name
    return syncs


def test_a_new_output_folder_is_synced_once_not_per_file(tmp_path: Path) -> None:
    """Files written inside a staged folder are seen only when it is renamed into place: one syncfs before that
    rename makes them durable, not an fsync each (issue 11: two fsyncs per input were most of heal --in's cost)."""
    fsyncs, syncfs = _syncs_of_heal(tmp_path, tmp_path / "new-out", inputs=12)
    assert syncfs >= 1
    assert fsyncs < 12, f"{fsyncs} fsyncs for 12 inputs: the staged files were synced one by one"


def test_an_existing_output_folder_still_syncs_each_file_before_its_rename(tmp_path: Path) -> None:
    """Written in place, each file is seen as soon as it is renamed: its data is on disk first."""
    out = tmp_path / "out"
    out.mkdir()
    fsyncs, _ = _syncs_of_heal(tmp_path, out, inputs=5)
    assert fsyncs >= 2 * 5  # a healed copy and a heal log per input


def test_an_incident_bundle_folder_is_synced_once_not_per_file(tmp_path: Path) -> None:
    """`incident import` stages the bundle's folder and renames it into place: one syncfs, not an fsync per file
    (it wrote its six files with its own open/write/fsync)."""
    fsyncs, syncfs = _syncs_of(tmp_path, "incident", "import", str(EXPORT), "--out", str(tmp_path / "one"))
    files = len(list((tmp_path / "one").iterdir()))
    assert files >= 6 and syncfs == 1 and fsyncs < files, (files, fsyncs, syncfs)


def test_incident_bundle_folders_inside_a_staged_folder_of_many_are_synced_with_it(tmp_path: Path) -> None:
    """An import of many writes each export's folder inside its own staged OUT: that folder's one sync covers them
    all (each folder's files were synced one by one: an fsync per file per export)."""
    folder = tmp_path / "exports"
    folder.mkdir()
    for k in range(4):
        shutil.copy(EXPORT, folder / f"e{k}.json")
    fsyncs, syncfs = _syncs_of(tmp_path, "incident", "import", str(folder), "--out", str(tmp_path / "many"))
    assert len([p for p in (tmp_path / "many").iterdir() if p.is_dir()]) == 4
    assert syncfs == 1 and fsyncs < 4, (fsyncs, syncfs)


def test_publishing_a_folder_without_syncfs_syncs_each_file_in_it(tmp_path: Path) -> None:
    """Where the C library has no syncfs (not Linux), each file and folder in the staged folder is synced on its own."""
    from replay.pipeline.io.staging import publish_folder, sync_each

    staging = tmp_path / f".out.x{TEMP_SUFFIX}"
    write_atomic(staging / "a" / "b.jsonl", b"{}\n")
    write_atomic(staging / "c.json", b"{}\n")
    sync_each(staging)  # (no error on files and folders alike)
    publish_folder(staging, tmp_path / "out")
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*")) == \
        ["a", "a/b.jsonl", "c.json"]
    assert not staging.exists()
