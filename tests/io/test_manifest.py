"""The manifest of a run over many inputs: what it reuses, what it recomputes, what it sweeps away."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from replay.pipeline.engine.outputs import TEMP_SUFFIX
from replay.pipeline.engine.parallel import Outcome, file_digest, input_digest
from replay.pipeline.engine.spec import bind, load_spec
from replay.pipeline.io.manifest import FRAGMENTS, MANIFEST, Manifest, work_key
from replay.pipeline.io.staging import sweep_leftovers


def _outcome(src: Path, out: Path, name: str, text: bytes) -> Outcome:
    path = src / name
    path.write_bytes(text)
    written = out / (name + ".out")
    written.write_bytes(text.upper())
    size, mtime, digest = input_digest(str(path))
    return Outcome(str(path), stdout=b'{"line":1}\n', stderr=b"", errors=1, codes={"E_X": 1}, records=3, size=size,
                   mtime_ns=mtime, sha256=digest, outputs=[(str(written), *file_digest(str(written)))])


def test_entries_come_back_for_unchanged_inputs_with_their_outputs(tmp_path: Path) -> None:
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    out.mkdir()
    a, b = _outcome(src, out, "a.jsonl", b"aaa\n"), _outcome(src, out, "b.jsonl", b"bbb\n")
    manifest = Manifest(out, "k1", src, "heal")
    manifest.record([a])
    assert list((out / FRAGMENTS).iterdir())  # a task's fragment, before the manifest
    manifest.record([b])
    manifest.finish([a.path, b.path])
    assert not (out / FRAGMENTS).exists()
    doc = orjson.loads((out / MANIFEST).read_bytes())
    assert doc["totals"] == {"inputs": 2, "bytes": 8, "records": 6, "diagnostics": 2, "outputs": 2}
    assert doc["inputs"][0]["outputs"][0]["path"] == "a.jsonl.out"

    again = Manifest(out, "k1", src, "heal")
    again.load()
    reused = again.reusable([a.path, b.path])
    assert set(reused) == {a.path, b.path} and reused[a.path].stdout == a.stdout and reused[a.path].skipped
    assert Manifest(out, "other work", src, "heal").reusable([a.path]) == {}  # another key: nothing reused

    os.utime(a.path, ns=(1, 1))  # touched, same bytes: the hash decides, still reused
    (src / "b.jsonl").write_bytes(b"BBB\n")  # same size, other bytes
    (out / "a.jsonl.out").unlink()
    touched = Manifest(out, "k1", src, "heal")
    touched.load()
    assert touched.reusable([a.path, b.path]) == {}  # a lost its output, b changed
    (out / "a.jsonl.out").write_bytes(b"AAA\n")
    touched = Manifest(out, "k1", src, "heal")
    touched.load()
    assert set(touched.reusable([a.path, b.path])) == {a.path}


def test_outputs_of_gone_inputs_in_a_staged_folder_are_named_where_the_folder_goes(tmp_path: Path) -> None:
    """A run resumed in OUT's partial folder: what it removes, or keeps because it was edited, is named under OUT."""
    src, out = tmp_path / "in", tmp_path / "out"
    staging = tmp_path / f".out.partial{TEMP_SUFFIX}"
    src.mkdir()
    staging.mkdir()
    a, b = _outcome(src, staging, "a.jsonl", b"aaa\n"), _outcome(src, staging, "b.jsonl", b"bbb\n")
    killed = Manifest(staging, "k1", src, "heal")
    killed.record([a, b])
    os.unlink(a.path)
    os.unlink(b.path)
    (staging / "b.jsonl.out").write_bytes(b"edited\n")
    resumed = Manifest(staging, "k1", src, "heal")
    resumed.load()
    resumed.finish([])
    assert resumed.stale.removed == [str(out / "a.jsonl.out")] and resumed.stale.edited == [str(out / "b.jsonl.out")]


def test_failed_inputs_are_not_recorded_and_temp_files_of_dead_writers_are_swept(tmp_path: Path) -> None:
    from replay.pipeline.engine.parallel import Failure

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".x.healed.jsonl.abc123.replay.tmp").write_bytes(b"half")
    (tmp_path / "keep.tmp").write_bytes(b"{}")
    assert [Path(p).name for p in sweep_leftovers(tmp_path)] == [".x.healed.jsonl.abc123.replay.tmp"]
    assert (tmp_path / "keep.tmp").exists()
    failed = Outcome("x.jsonl", failure=Failure("error", {"code": "E_INPUT_UNREADABLE", "message": "gone"}))
    assert Manifest(tmp_path, "k", tmp_path, "heal").entry(failed) is None


def test_a_sweep_takes_a_dead_writer_s_staged_folder_too_but_not_a_partial_folder_to_resume(tmp_path: Path) -> None:
    """The temp folders a killed incident import left inside its folder of many went by a sweep of that command's own
    (``sweep_staged_folders``); the manifest's took temp files only. One sweep now: a staged folder goes whole, and a
    partial sibling (another run's, to resume) stays, its temp files swept."""
    staged = tmp_path / "sub" / f".a.1x2y3z{TEMP_SUFFIX}"
    (staged / "deep").mkdir(parents=True)
    (staged / "deep" / "incident.json").write_bytes(b"{}")
    partial = tmp_path / f".other.partial{TEMP_SUFFIX}"
    partial.mkdir()
    (partial / "b.healed.jsonl").write_bytes(b"kept")
    (partial / f".b.healed.jsonl.abc{TEMP_SUFFIX}").write_bytes(b"half")
    assert sorted(Path(p).name for p in sweep_leftovers(tmp_path)) == [f".a.1x2y3z{TEMP_SUFFIX}", f".b.healed.jsonl.abc{TEMP_SUFFIX}"]
    assert not staged.exists() and os.listdir(partial) == ["b.healed.jsonl"]


def healing(**heal: Any) -> dict[str, Any]:
    """heal's graph spec, its heal stage's options bound to ``heal``."""
    return bind(load_spec("heal"), set={f"heal.{option}": value for option, value in heal.items()})


def test_the_work_key_follows_the_bound_spec_and_the_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # (no default rules file here)
    doc = healing(summary=True)
    reordered = {**doc, "stages": dict(reversed(doc["stages"].items()))}
    assert work_key(doc, "1") == work_key(reordered, "1")
    assert work_key(doc, "1") != work_key(doc, "2")
    assert work_key(doc, "1") != work_key(healing(summary=False), "1")


def test_the_work_key_follows_the_content_of_a_rules_file_the_work_reads(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A rules file edited in place (same path), or the default one appearing or going, is other work: a resumed
    `heal --in --out` must not reuse the copies healed with the old rules."""
    monkeypatch.chdir(tmp_path)
    rules = tmp_path / "rules.json"
    rules.write_text('{"version": "v1", "eventAliases": {"my_msg": "user_message"}}')
    named = healing(rules_file=str(rules))
    first = work_key(named, "1")
    assert work_key(named, "1") == first  # (the same content: the same work)
    rules.write_text('{"version": "v1", "eventAliases": {"my_msg": "assistant_message"}}')
    assert work_key(named, "1") != first

    default = healing()
    without = work_key(default, "1")
    (tmp_path / ".replay").mkdir()
    (tmp_path / ".replay" / "heal.rules.json").write_bytes(rules.read_bytes())
    with_default = work_key(default, "1")
    assert with_default != without
    (tmp_path / ".replay" / "heal.rules.json").write_text('{"version": "v1"}')
    assert work_key(default, "1") not in (without, with_default)
    (tmp_path / ".replay" / "heal.rules.json").unlink()
    assert work_key(default, "1") == without
