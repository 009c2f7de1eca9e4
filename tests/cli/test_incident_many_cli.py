"""`replay incident import DIR --out OUT`: a folder per export, OUT new or empty and appearing whole, a bad export among
good ones, runledger folders, the refusals made once, a killed run resumed from its manifest, the progress bar."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import orjson
from conftest import REPLAY, errors_of, jsonl, run_replay
from incident_support import INCIDENTS, make_exports, refund_export, write_json
from scale_support import KILLED, on_a_terminal, swapped_backend

from replay.pipeline.io.manifest import FRAGMENTS, MANIFEST

FILES = ["evaluation.json", "incident.json", "junit.xml", "redaction.json", "report.html", "trace.jsonl"]
RULES = INCIDENTS / "rules.json"
LOG = INCIDENTS / "raw-logs" / "refund-run.jsonl"


def import_dir(folder: Path, out: Path, *args: str, info: bool = False, **kwargs: Any) -> Any:
    """The command; ``info``: with its info log lines on stderr (scale.done counts what was skipped and computed)."""
    return run_replay(*(["--log-level", "info"] if info else []), "incident", "import", str(folder), "--out", str(out), *args,
                      **kwargs)


def bad_export() -> dict[str, Any]:
    doc = refund_export()
    doc["events"][3]["call_id"] = "call-unknown"  # a result for a call that was never made
    return doc


def ids(out: Path) -> dict[str, str]:
    return {p.name: orjson.loads((p / "incident.json").read_bytes())["incident_id"] for p in sorted(out.iterdir())
            if p.is_dir() and not p.name.startswith(".")}


def test_each_export_gets_its_own_folder_named_after_its_file(tmp_path: Path) -> None:
    exports = make_exports(tmp_path / "exports", count=3)
    out = tmp_path / "imported"
    done = import_dir(exports, out, "--workers", "1")
    assert done.returncode == 0 and errors_of(done.stderr) == [], done.stderr
    lines = jsonl(done.stdout)
    assert [line["source"] for line in lines] == sorted(str(p) for p in exports.rglob("*.json"))
    names = ["generated-0", "generated-1", "minimal", "more%2Fgenerated-2", "refund-export"]
    assert [line["out"] for line in lines] == [str(out / name) for name in names]
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, *names]
    assert all(sorted(p.name for p in (out / name).iterdir()) == FILES == line["files"] for name, line in zip(names, lines, strict=True))
    assert len({line["incident_id"] for line in lines}) == len(lines)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exports", "imported"]  # no staging folder left


def test_the_one_file_form_prints_the_line_it_always_printed(tmp_path: Path) -> None:
    done = run_replay("incident", "import", str(INCIDENTS / "refund-export.json"), "--out", str(tmp_path / "one"), "--workers", "2")
    assert done.returncode == 0
    assert list(jsonl(done.stdout)[0]) == ["incident_id", "out", "summary", "rules", "counts", "files"]


def test_a_bad_export_among_good_ones_is_reported_the_others_imported_and_the_exit_is_2(tmp_path: Path) -> None:
    exports = make_exports(tmp_path / "exports", count=2)
    bad = write_json(exports / "broken.json", bad_export())
    out = tmp_path / "imported"
    done = import_dir(exports, out, "--workers", "2")
    assert done.returncode == 2
    (error,) = errors_of(done.stderr)
    assert error["code"] == "E_INCIDENT_RESULT_UNMATCHED" and error["source"] == str(bad) and error["path"] == "$.events[3].call_id"
    lines = jsonl(done.stdout)
    assert [line["source"] for line in lines] == [str(p) for p in sorted(exports.rglob("*.json")) if p != bad]
    assert sorted(p.name for p in out.iterdir()) == sorted([MANIFEST, "generated-0", "minimal", "more%2Fgenerated-1", "refund-export"])
    assert [e["input"] for e in orjson.loads((out / MANIFEST).read_bytes())["inputs"]] == \
        sorted(str(p.relative_to(exports)) for p in exports.rglob("*.json") if p != bad)
    # fixed, it is imported on its own (OUT is used now: the folder again goes into a fresh one)
    write_json(bad, refund_export())
    assert run_replay("incident", "import", str(bad), "--out", str(tmp_path / "broken")).returncode == 0


def test_an_invalid_export_alone_is_refused_with_nothing_written(tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    exports.mkdir()
    write_json(exports / "broken.json", bad_export())
    done = import_dir(exports, tmp_path / "imported")
    assert done.returncode == 2 and done.stdout == b""
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_INCIDENT_RESULT_UNMATCHED"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exports"]  # no OUT, no staging folder


def test_an_export_that_cannot_be_read_is_an_invalid_export_exit_2(tmp_path: Path) -> None:
    """A dangling link among the exports exited 1 (as `read` reports an input it cannot read), where any other invalid
    export, and the same link imported alone, exits 2: README, "its error is printed in its place, the others are
    imported, and the exit code is 2"; alone, nothing is written."""
    exports = make_exports(tmp_path / "exports", count=1)
    (exports / "dangling.json").symlink_to(tmp_path / "nothing-here.json")
    out = tmp_path / "imported"
    done = import_dir(exports, out, "--workers", "1")
    assert done.returncode == 2, done.stderr
    (error,) = errors_of(done.stderr)
    assert error["code"] == "E_INPUT_UNREADABLE" and error["source"] == str(exports / "dangling.json")
    assert [line["source"] for line in jsonl(done.stdout)] == [str(p) for p in sorted(exports.rglob("*.json"))
                                                              if p.name != "dangling.json"]
    assert "dangling" not in {p.name for p in out.iterdir()}
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "dangling.json").symlink_to(tmp_path / "nothing-here.json")
    done = import_dir(alone, tmp_path / "imported-alone")
    assert done.returncode == 2 and done.stdout == b""
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_INPUT_UNREADABLE"]
    assert not (tmp_path / "imported-alone").exists()


def test_out_must_be_new_or_empty(tmp_path: Path) -> None:
    """The incident specification: "Every output folder must be new or empty"; a folder this same import wrote
    is no exception (it resumed there, printing the recorded lines, exit 0)."""
    exports = make_exports(tmp_path / "exports", count=1)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert import_dir(exports, empty).returncode == 0 and (empty / "minimal" / "incident.json").is_file()
    used = tmp_path / "used"
    used.mkdir()
    (used / "notes.txt").write_text("mine")
    (tmp_path / "file").write_text("x")
    imported = ids(empty)
    same_again = import_dir(exports, empty)
    other_flags = import_dir(exports, empty, "--redact", "/input/order_id")
    for done in (import_dir(exports, used), import_dir(exports, tmp_path / "file"), same_again, other_flags):
        assert done.returncode == 2 and done.stdout == b"", done.stderr
        assert [e["code"] for e in errors_of(done.stderr)] == ["E_INCIDENT_OUTPUT_NOT_EMPTY"]
    assert [p.name for p in used.iterdir()] == ["notes.txt"] and (tmp_path / "file").read_text() == "x"
    assert ids(empty) == imported
    inside = import_dir(exports, exports / "imported")
    assert inside.returncode == 2 and errors_of(inside.stderr)[0]["code"] == "E_OUTPUT_UNWRITABLE"
    assert not (exports / "imported").exists()


def test_a_killed_run_leaves_no_out_and_the_next_run_resumes_it(tmp_path: Path) -> None:
    """The command dies after its first task: OUT is not there (its partial sibling is), and the next run imports
    only the exports no fragment records, keeping the folders already imported."""
    exports = make_exports(tmp_path / "exports", count=6)
    out = tmp_path / "imported"
    with swapped_backend() as backends:
        backends.crash()
        crashed = import_dir(exports, out, "--workers", "4")
        assert crashed.returncode == KILLED
        staging = tmp_path / ".imported.partial.replay.tmp"
        assert not out.exists() and list((staging / FRAGMENTS).iterdir())
        first = ids(staging)
        backends.count()
        resumed = import_dir(exports, out, "--workers", "4")
    computed = backends.computed
    assert resumed.returncode == 0, resumed.stderr
    files = sorted(str(p) for p in exports.rglob("*.json"))
    assert crashed.stdout == b""  # (its lines wait for OUT, which a killed run never made)
    assert 0 < len(computed) < len(files) and len(computed) + len(first) == len(files)
    assert [line["source"] for line in jsonl(resumed.stdout)] == files
    assert {k: v for k, v in ids(out).items() if k in first} == first  # what the killed run imported is kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exports", "imported"] and not (out / FRAGMENTS).exists()


def test_a_folder_of_runledger_logs_is_one_incident_per_log_with_the_same_case_and_rules(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("a.jsonl", "b.ndjson"):
        (logs / name).write_bytes(LOG.read_bytes())
    (logs / "notes.json").write_text("{}")  # not a log: --format runledger reads *.jsonl / *.ndjson
    out = tmp_path / "imported"
    done = import_dir(logs, out, "--format", "runledger", "--case", "refund-case", "--rules", str(RULES))
    assert done.returncode == 0, done.stderr
    assert [(line["out"], line["rules"]) for line in jsonl(done.stdout)] == [(str(out / "a"), "inconclusive"), (str(out / "b"), "inconclusive")]
    # without --case each log holding two cases is refused on its own: nothing imported, nothing written
    no_case = import_dir(logs, tmp_path / "no-case", "--format", "runledger", "--rules", str(RULES))
    assert no_case.returncode == 2 and [e["code"] for e in errors_of(no_case.stderr)] == ["E_INCIDENT_CASE_REQUIRED"] * 2
    assert not (tmp_path / "no-case").exists()
    (logs / "a.ndjson").write_bytes(LOG.read_bytes())  # a.jsonl and a.ndjson would share a folder
    clash = import_dir(logs, tmp_path / "clash", "--format", "runledger", "--case", "refund-case", "--rules", str(RULES))
    assert clash.returncode == 2 and [e["code"] for e in errors_of(clash.stderr)] == ["E_USAGE_INVALID"]


def test_what_every_export_would_refuse_is_refused_once_before_anything(tmp_path: Path) -> None:
    exports = make_exports(tmp_path / "exports", count=2)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").write_bytes(LOG.read_bytes())
    bad_rules = write_json(tmp_path / "rules.json", [])
    for done, code in ((import_dir(exports, tmp_path / "o1", "--redact", "input"), "E_INCIDENT_REDACT_POINTER_INVALID"),
                       (import_dir(logs, tmp_path / "o2", "--format", "runledger"), "E_INCIDENT_RULES_MISSING"),
                       (import_dir(logs, tmp_path / "o3", "--format", "runledger", "--rules", str(bad_rules)), "E_INCIDENT_RULES_MISSING")):
        assert done.returncode == 2 and [e["code"] for e in errors_of(done.stderr)] == [code]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exports", "logs", "rules.json"]


def test_a_folder_without_exports_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    """An import that found nothing to import exited 0 with a warning: invalid input exits 2 (the incident spec)."""
    (tmp_path / "empty").mkdir()
    done = import_dir(tmp_path / "empty", tmp_path / "imported")
    assert done.returncode == 2 and done.stdout == b""
    (error,) = errors_of(done.stderr)
    assert error["code"] == "E_INCIDENT_EXPORTS_NOT_FOUND" and error["path"] == str(tmp_path / "empty")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl").write_bytes(b"{}\n")
    done = import_dir(tmp_path / "logs", tmp_path / "imported")
    assert done.returncode == 2
    (error,) = errors_of(done.stderr)
    assert error["code"] == "E_INCIDENT_EXPORTS_NOT_FOUND" and "--format runledger or --format replay" in error["howToFix"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "logs"]


def test_the_progress_bar_counts_exports_on_a_terminal(tmp_path: Path) -> None:
    exports = make_exports(tmp_path / "exports", count=2)
    code, shown = on_a_terminal([REPLAY, "incident", "import", str(exports), "--out", str(tmp_path / "imported"),
                                 "--workers", "2"])
    assert code == 0 and b"incident import" in shown and b"4/4" in shown and b"events/s" in shown


def test_a_limit_beyond_64_bits_is_taken_by_a_folder_import(tmp_path: Path) -> None:
    """Found by fuzzing the CLI: `incident import DIR --max-events 99999999999999999999` (any limit past 64 bits) was
    E_UNHANDLED (TypeError: Integer exceeds 64-bit range), exit 1: the key of the work in the folder's manifest was
    written with orjson, which writes no such integer."""
    exports = make_exports(tmp_path / "exports", count=1)
    for limit in ("--max-events", "--max-bytes", "--max-depth", "--max-assertions"):
        out = tmp_path / f"imported{limit}"
        done = import_dir(exports, out, "--workers", "1", limit, "99999999999999999999")
        assert done.returncode == 0, done.stderr
        assert errors_of(done.stderr) == [] and len(jsonl(done.stdout)) == 3


def test_the_summary_lines_wait_for_the_folder_they_name(tmp_path: Path) -> None:
    """Each export's line ("out": "OUT/<name>") came out while OUT was still its partial sibling: a reader acting on
    the first line found no such folder. As heal --in/--out does, the lines are printed once OUT is in place."""
    exports = make_exports(tmp_path / "exports", count=12)
    out = tmp_path / "imported"
    with subprocess.Popen([REPLAY, "incident", "import", str(exports), "--out", str(out), "--workers", "1"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
        assert proc.stdout is not None
        first = orjson.loads(proc.stdout.readline())
        assert (tmp_path / first["out"]).is_dir() and not list(tmp_path.glob(".*partial*"))
        rest = proc.stdout.read()
    assert proc.returncode == 0 and len(jsonl(rest)) == 13


def test_an_import_that_fails_unexpectedly_leaves_no_partial_folder(tmp_path: Path) -> None:
    """A scheduler address dask cannot use failed the import (exit 1) after the partial folder was made, and left
    `.OUT.partial.replay.tmp` behind: a failure of any kind removes the folder the run made."""
    exports = make_exports(tmp_path / "exports", count=1)
    done = import_dir(exports, tmp_path / "imported", "--engine", "dask", "--scheduler", "bogus://x", process=True)
    assert done.returncode != 0 and done.stdout == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exports"]
