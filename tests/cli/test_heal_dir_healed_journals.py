"""`replay heal --in DIR --out OUT` heals a `<name>.healed.jsonl` journal in DIR as any journal (read and validate of DIR
take it, and `heal --in FILE` heals it): the walk passed over every such file without a word, and a folder holding only
one said E_INPUTS_NOT_FOUND. A file an earlier `heal --in --out` healed and its copy, both under DIR, are still one run:
the file is healed, not its copy again."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import EXAMPLES, run_replay

TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"


def heal(in_dir: Path, out_dir: Path):
    return run_replay("heal", "--in", str(in_dir), "--out", str(out_dir), process=True, timeout=60)


def test_a_healed_journal_in_the_folder_is_healed_as_any_journal(tmp_path: Path):
    runs = tmp_path / "runs"
    runs.mkdir()
    saved = run_replay("heal", str(TWO_RUNS), process=True, timeout=60)  # `replay heal FILE > x.healed.jsonl`
    (runs / "session.healed.jsonl").write_bytes(saved.stdout)
    done = heal(runs, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert [line["source"] for line in map(json.loads, done.stdout.splitlines())] == [str(runs / "session.healed.jsonl")]
    assert (tmp_path / "out" / "session.healed.healed.jsonl").read_bytes() == saved.stdout  # healed: the same again


def test_the_copy_an_earlier_heal_wrote_beside_its_input_is_not_healed_again(tmp_path: Path):
    (tmp_path / "p" / "runs").mkdir(parents=True)
    (tmp_path / "p" / "runs" / "x.jsonl").write_bytes(TWO_RUNS.read_bytes())
    assert heal(tmp_path / "p" / "runs", tmp_path / "p" / "healed").returncode == 0
    done = heal(tmp_path / "p", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*") if p.is_file()) == \
        [".replay-manifest.json", "runs/x.heal-log.json", "runs/x.healed.jsonl"]
    inside = heal(tmp_path / "p", tmp_path / "p" / "healed2")  # (--out inside --in: refused, as ever)
    assert inside.returncode == 2 and b"E_OUTPUT_UNWRITABLE" in inside.stderr, inside.stderr
