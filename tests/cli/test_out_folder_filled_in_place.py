"""An existing empty output folder (`incident import/inspect/replay --out DIR`, `incident import DIR --out OUT`) is
filled in place, not replaced by a new one: it keeps its inode, mode and owner (a `chmod 700` folder stays private), the
current folder works however it is named (`.`, `./`, its absolute path; a shell in it sees the files), and what a run
that fails or is killed leaves in it is nothing a reader sees. The outputs are staged inside it under a temp name and
moved in at the end, all of them or none (`pipeline/io/staging.py`)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from conftest import errors_of, jsonl, run_replay
from incident_support import REFUND_AGENT, REFUND_EXPORT, agent_command, make_exports, write_json
from scale_support import KILLED, swapped_backend

from replay.pipeline.engine.outputs import is_temp_name
from replay.pipeline.io.manifest import MANIFEST
from replay.pipeline.io.staging import publish_folder, temp_folder

BUNDLE = ["evaluation.json", "incident.json", "junit.xml", "redaction.json", "report.html", "trace.jsonl"]


def private_folder(path: Path) -> tuple[int, int]:
    """``path`` made, empty, mode 700; its (inode, mode)."""
    path.mkdir()
    path.chmod(0o700)
    st = path.stat()
    return st.st_ino, st.st_mode


def seen(folder: Path) -> list[str]:
    """What a reader of ``folder`` finds (temp names skipped), and that no temp name is left either."""
    names = sorted(os.listdir(folder))
    assert not [name for name in names if is_temp_name(name)], names
    return names


def imported(tmp_path: Path) -> Path:
    out = tmp_path / "imported"
    assert run_replay("incident", "import", str(REFUND_EXPORT), "--out", str(out)).returncode == 0
    return out / "incident.json"


def test_an_existing_empty_folder_keeps_its_inode_and_mode(tmp_path: Path) -> None:
    """06.sh: a `chmod 700` --out folder became a new 755 one with the incident inside, readable by every user."""
    bundle = imported(tmp_path)
    commands = {"import": ["import", str(REFUND_EXPORT)], "inspect": ["inspect", str(bundle)],
                "replay": ["replay", str(bundle), "--agent-command", agent_command(REFUND_AGENT)]}
    for name, args in commands.items():
        out = tmp_path / f"private-{name}"
        before = private_folder(out)
        done = run_replay("incident", *args, "--out", str(out))
        assert done.returncode == 0, done.stderr
        assert (out.stat().st_ino, out.stat().st_mode) == before
        assert seen(out) == sorted([*BUNDLE, *(["replay.json"] if name == "replay" else [])])


@pytest.mark.parametrize("spelling", [".", "./", "$PWD"])
def test_the_current_folder_however_named_is_filled(tmp_path: Path, spelling: str) -> None:
    """07.sh: `--out .` ran the whole command (the agent too), then failed to rename onto the current folder (EBUSY,
    exit 1); `--out "$PWD"` replaced it, leaving the calling shell in a deleted folder that showed no files."""
    bundle = imported(tmp_path)
    here = tmp_path / "here"
    before = private_folder(here)
    out = str(here) if spelling == "$PWD" else spelling
    done = run_replay("incident", "replay", str(bundle), "--agent-command", agent_command(REFUND_AGENT), "--out", out,
                      cwd=here, process=True)
    assert done.returncode == 0, done.stderr
    assert jsonl(done.stdout)[0]["out"] == out
    assert (here.stat().st_ino, here.stat().st_mode) == before
    assert seen(here) == sorted([*BUNDLE, "replay.json"])


def test_a_link_to_the_current_folder_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """A symbolic link is no folder to write into (as ever): refused with exit 2, nothing written through it."""
    here = tmp_path / "here"
    here.mkdir()
    (tmp_path / "link").symlink_to(here)
    done = run_replay("incident", "import", str(REFUND_EXPORT), "--out", str(tmp_path / "link"), cwd=here)
    assert done.returncode == 2 and done.stdout == b""
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_INCIDENT_OUTPUT_NOT_EMPTY"]
    assert os.listdir(here) == []


def test_an_import_of_many_fills_an_existing_empty_folder_in_place(tmp_path: Path) -> None:
    """`incident import DIR --out OUT` renamed its partial sibling onto an empty OUT: the same loss of mode, and the
    same EBUSY after every export was imported when OUT was the current folder."""
    exports = make_exports(tmp_path / "exports", count=2)
    out = tmp_path / "out"
    before = private_folder(out)
    done = run_replay("incident", "import", str(exports), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert (out.stat().st_ino, out.stat().st_mode) == before
    names = seen(out)
    assert MANIFEST in names and [line["out"] for line in jsonl(done.stdout)][:1] == [f"{out}/generated-0"]
    here = tmp_path / "here"
    here.mkdir()
    dot = run_replay("incident", "import", str(exports), "--out", ".", cwd=here, process=True)
    assert dot.returncode == 0, dot.stderr
    assert seen(here) == names


def test_a_killed_import_of_many_leaves_an_empty_folder_empty_and_is_resumed(tmp_path: Path) -> None:
    """Killed after its first export, the import left its partial folder inside OUT under a temp name (OUT is still
    empty to every reader, so still a folder to import into), and the next run resumes from it."""
    exports = make_exports(tmp_path / "exports", count=4)
    out = tmp_path / "out"
    before = private_folder(out)
    with swapped_backend() as backends:
        backends.crash()
        crashed = run_replay("incident", "import", str(exports), "--out", str(out), "--workers", "2")
        assert crashed.returncode == KILLED and crashed.stdout == b""
        assert [name for name in os.listdir(out) if not is_temp_name(name)] == []
        backends.count()
        resumed = run_replay("incident", "import", str(exports), "--out", str(out), "--workers", "2")
    assert resumed.returncode == 0, resumed.stderr
    assert 0 < len(backends.computed) < len(list(exports.rglob("*.json")))
    assert (out.stat().st_ino, out.stat().st_mode) == before and MANIFEST in seen(out)


def test_an_import_that_writes_nothing_leaves_the_folder_empty(tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    exports.mkdir()
    write_json(exports / "bad.json", {"schema_version": 1})
    out = tmp_path / "out"
    before = private_folder(out)
    done = run_replay("incident", "import", str(exports), "--out", str(out))
    assert done.returncode == 2 and done.stdout == b""
    assert (out.stat().st_ino, out.stat().st_mode) == before and seen(out) == []


def test_files_moved_in_go_back_when_one_cannot_be(tmp_path: Path) -> None:
    """A folder staged inside its target is moved in whole or not at all: a file put there meanwhile (ENOTEMPTY) stops
    it before any move, and a name found taken as the moves go (EEXIST; here another writer's temp name, which alone
    does not make the folder used) sends the files moved already back, the target as it was."""
    target = tmp_path / "out"
    target.mkdir()
    taken = ".x.1234.replay.tmp"
    with temp_folder(target, inside=True) as staging:
        for name in ("a", "b", taken):
            (staging / name).write_text(name)
        (target / "b").write_text("theirs")
        with pytest.raises(OSError) as caught:
            publish_folder(staging, target)
        assert caught.value.errno == errno.ENOTEMPTY
        (target / "b").unlink()
        (target / taken).write_text("another writer's")
        with pytest.raises(FileExistsError):
            publish_folder(staging, target, last=taken)  # (a and b are moved first)
        assert sorted(os.listdir(target)) == sorted([taken, staging.name])
        assert sorted(os.listdir(staging)) == sorted(["a", "b", taken])
        (target / taken).unlink()
        publish_folder(staging, target)
        assert not staging.exists()
    assert sorted(os.listdir(target)) == sorted(["a", "b", taken])
