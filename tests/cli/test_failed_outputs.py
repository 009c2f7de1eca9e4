"""An output appears whole or not at all: a command that fails before anything was written (an error, exit 1, and no
record reached any of its outputs) leaves no empty file at its --out / --log path, and a file there before stays as it
was; an empty input still gives an empty file, and a run that wrote something still writes its other outputs whole,
empty ones too (heal's log of no repairs beside the journal it wrote)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay

TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"  # replay's own journal: no $origin, nothing to write back


def test_write_dialect_out_with_nothing_to_write_back_leaves_no_file(tmp_path: Path):
    """`replay write --dialect X --out F` of a stream read from no dialect (E_DIALECT_NO_ORIGIN) left an empty F."""
    out = tmp_path / "back.traj.json"
    done = run_replay("write", "--dialect", "mini-swe-agent", "--out", str(out), str(TWO_RUNS), process=True)
    assert done.returncode == 1 and [e["code"] for e in errors_of(done.stderr)] == ["E_DIALECT_NO_ORIGIN"]
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no temp file either
    out.write_bytes(b"what was there before\n")
    again = run_replay("write", "--dialect", "claude-code", "--out", str(out), str(TWO_RUNS), str(TWO_RUNS))
    assert again.returncode == 1
    assert out.read_bytes() == b"what was there before\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["back.traj.json"]
    empty = tmp_path / "empty.jsonl"  # an empty input is no failure: its copy is an empty file
    empty.write_bytes(b"")
    copy = tmp_path / "copy.jsonl"
    done = run_replay("write", "--out", str(copy), str(empty))
    assert (done.returncode, done.stderr, copy.read_bytes()) == (0, b"", b"")


def test_heal_dialect_out_log_is_not_left_empty_when_nothing_was_written(tmp_path: Path):
    log = tmp_path / "repairs.jsonl"
    done = run_replay("heal", "--dialect-out", "codex", str(TWO_RUNS), "--log", str(log))
    assert done.returncode == 1 and done.stdout == b""
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_DIALECT_NO_ORIGIN"]
    assert not log.exists()
    # heal that fails (a line that is no JSON) after writing the journal writes its log of no repairs whole: empty
    journal = tmp_path / "j.jsonl"
    journal.write_bytes(TWO_RUNS.read_bytes() + b"not json\n")
    done = run_replay("heal", "--no-summary", str(journal), "--log", str(log))
    assert done.returncode == 1 and done.stdout
    assert log.read_bytes() == b""


def test_export_out_of_an_input_with_no_record_leaves_no_file(tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"not json\n")
    out = tmp_path / "traces.jsonl"
    done = run_replay("export", "--otlp", "--out", str(out), str(bad))
    assert done.returncode == 1 and [e["code"] for e in errors_of(done.stderr)] == ["E_JSONL_LINE_INVALID"]
    assert not out.exists()
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    done = run_replay("export", "--otlp", "--out", str(out), str(empty))
    assert done.returncode == 0 and out.read_bytes() == b""


def test_a_log_that_cannot_be_created_is_refused_before_anything_is_written(tmp_path: Path):
    """The file opens with its first bytes; whether it can be made at all is tried before the run (a temp file made
    and removed), so the healed stream is not written out for a heal whose log then fails."""
    result = run_replay("heal", str(TWO_RUNS), "--log", "/proc/no-such-log.jsonl")  # (no file can be made in /proc)
    assert result.returncode == 2 and result.stdout == b""  # (a refusal, exit 2: nothing ran)
    assert [e["code"] for e in errors_of(result.stderr)] == ["E_OUTPUT_WRITE_FAILED"]
    log = tmp_path / "new" / "folders" / "log.jsonl"  # (folders on the way are made, as before)
    made = run_replay("heal", str(TWO_RUNS), "--log", str(log))
    assert made.returncode == 0 and log.is_file() and sorted(p.name for p in log.parent.iterdir()) == ["log.jsonl"]


def test_a_warning_on_stderr_is_not_an_output_written(tmp_path: Path):
    """A failed run that logged a warning (a key written twice) but wrote nothing leaves no empty --log."""
    document = tmp_path / "run.json"
    document.write_text('[{"seq":1,"runId":"r","type":"run_started","timestamp":"2026-01-01T00:00:00Z","payload":{},'
                        '"a":1,"a":2},{"seq":2,"runId":"r","type":"run_completed","timestamp":"2026-01-01T00:00:01Z",'
                        '"payload":{}}]')
    log = tmp_path / "log.jsonl"
    result = run_replay("heal", "--dialect-out", "claude-code", "--log", str(log), str(document))
    assert result.returncode == 1 and b"E_JSON_DUPLICATE_KEY" in result.stderr and b"E_DIALECT_NO_ORIGIN" in result.stderr
    assert not log.exists()


RULES = EXAMPLES / "incidents" / "rules.json"


@pytest.mark.parametrize("case", ["heal-refused", "heal-strict", "import-refused"])
def test_a_new_output_folder_that_does_not_appear_leaves_no_folder_on_its_way(tmp_path: Path, case: str):
    """Found by fuzzing the CLI (tests/fuzz/cli_contract.py): `heal --in DIR --out new/a/b` refused (exit 2: a rules
    file that is not JSON), or stopped by --strict (exit 1), and `incident import DIR --out new/a/b` with every export
    refused (exit 2), removed their partial folder but left `new/a`, made on the way to it: a refused run wrote a
    folder."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "run.jsonl").write_bytes(TWO_RUNS.read_bytes())
    (tmp_path / "bad.rules.json").write_bytes(b"{")
    args = {"heal-refused": ["heal", "--in", "in", "--out", "new/a/b", "--rules", "bad.rules.json"],
            "heal-strict": ["heal", "--in", "in", "--out", "new/a/b", "--strict", "--max-line-bytes", "1"],
            "import-refused": ["incident", "import", "in", "--format", "replay", "--rules", str(RULES),
                               "--out", "new/a/b"]}[case]
    done = run_replay(*args, cwd=tmp_path, process=True)
    assert done.returncode == (1 if case == "heal-strict" else 2), done.stderr
    assert errors_of(done.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.rules.json", "in"]
    made = run_replay("heal", "--in", "in", "--out", "new/a/b", cwd=tmp_path, process=True)  # (the folders it needs)
    assert made.returncode == 0 and (tmp_path / "new" / "a" / "b" / "run.healed.jsonl").is_file()
