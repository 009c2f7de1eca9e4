"""Refusals (exit 2, nothing written): heal's directory mode with an --out that is a file, validate's PATHs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, jsonl, run_replay, timeless

BROKEN = EXAMPLES / "journals" / "broken.jsonl"


@pytest.mark.parametrize("out", ["same-as-in", "another-file"])
def test_heal_in_out_with_a_file_as_out_is_refused(tmp_path: Path, out: str) -> None:
    source = tmp_path / "run.jsonl"
    source.write_bytes(BROKEN.read_bytes())
    target = source if out == "same-as-in" else tmp_path / "healed.jsonl"
    if out == "another-file":
        target.write_bytes(b"keep me\n")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    proc = run_replay("heal", "--in", str(source), "--out", str(target), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == b""
    (error,) = errors_of(proc.stderr)
    assert (error["code"], error["path"]) == ("E_OUTPUT_UNWRITABLE", "--out"), error  # (an output flag naming a file)
    assert out == "same-as-in" or error["received"] == "a file"  # (the input itself: it names an input)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # nothing written, nothing replaced


def test_heal_in_out_into_a_new_folder_still_works(tmp_path: Path) -> None:
    source = tmp_path / "run.jsonl"
    source.write_bytes(BROKEN.read_bytes())
    proc = run_replay("heal", "--in", str(source), "--out", str(tmp_path / "healed"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "healed" / "run.healed.jsonl").is_file()


def test_heal_paths_with_out_and_no_in_says_where_the_healed_stream_goes(tmp_path: Path) -> None:
    """`replay heal run.jsonl --out healed.jsonl`: --out is directory mode's folder; the refusal says to redirect stdout."""
    source = tmp_path / "run.jsonl"
    source.write_bytes(BROKEN.read_bytes())
    proc = run_replay("heal", "run.jsonl", "--out", "healed.jsonl", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == b"", proc.stderr
    (error,) = errors_of(proc.stderr)
    assert error["code"] == "E_USAGE_INVALID" and error["received"] == ["--out", "healed.jsonl", "run.jsonl"]
    assert "needs --in PATH" in error["message"] and "stdout" in error["message"]
    assert error["example"] == "replay heal run.jsonl > healed.jsonl"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl"]  # nothing written


# validate takes PATHs like read, heal and report ---------------------------------------------------
def test_validate_takes_positional_paths_with_the_meaning_of_in(tmp_path: Path) -> None:
    positional = run_replay("validate", str(BROKEN), cwd=tmp_path)
    with_in = run_replay("validate", "--in", str(BROKEN), cwd=tmp_path)
    assert positional.returncode == with_in.returncode == 1
    assert positional.stdout == with_in.stdout and timeless(positional.stderr) == timeless(with_in.stderr)
    [summary] = jsonl(positional.stdout)
    assert summary["source"] == str(BROKEN) and summary["valid"] is False


def test_validate_paths_come_before_in_paths_in_the_output(tmp_path: Path) -> None:
    good = EXAMPLES / "journals" / "two-runs.jsonl"
    proc = run_replay("validate", str(good), "--in", str(BROKEN), cwd=tmp_path)
    assert [s["source"] for s in jsonl(proc.stdout)] == [str(good), str(BROKEN)]


def test_validate_refuses_a_missing_positional_path(tmp_path: Path) -> None:
    proc = run_replay("validate", "nope.jsonl", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == b""
    (error,) = errors_of(proc.stderr)
    assert error["code"] == "E_INPUT_PATH_NOT_FOUND" and error["path"] == "nope.jsonl"


def test_capture_out_that_is_a_file_is_refused_before_the_runner_starts(tmp_path: Path) -> None:
    runner = tmp_path / "runner.py"
    runner.write_text("import json, pathlib, sys\njson.load(sys.stdin)\npathlib.Path(__file__).with_name('ran').write_text('x')\n"
                      "print(json.dumps({'status': 'ok', 'response': 'ok', 'events': []}))\n")
    (tmp_path / "captures").write_bytes(b"a file\n")
    proc = run_replay("capture", "--runner", str(runner), "--out", "captures", "p", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == b""
    (error,) = errors_of(proc.stderr)
    assert error["code"] == "E_OUTPUT_UNWRITABLE" and error["path"] == "--out"
    assert not (tmp_path / "ran").exists() and not (tmp_path / ".replay").exists()


def test_capture_and_heal_refuse_a_file_as_their_output_folder_in_the_same_words(tmp_path: Path) -> None:
    (tmp_path / "taken").write_bytes(b"a file\n")
    source = tmp_path / "run.jsonl"
    source.write_bytes(BROKEN.read_bytes())
    (tmp_path / "runner.py").write_text("print('{}')\n")
    captured = run_replay("capture", "--runner", str(tmp_path / "runner.py"), "--out", "taken", "p", cwd=tmp_path)
    healed = run_replay("heal", "--in", str(source), "--out", "taken", cwd=tmp_path)
    for proc in (captured, healed):
        (error,) = errors_of(proc.stderr)
        assert (proc.returncode, proc.stdout) == (2, b"")
        assert {k: error[k] for k in ("code", "message", "path", "expected", "received")} == {
            "code": "E_OUTPUT_UNWRITABLE", "message": "the output folder 'taken' exists and is not a folder", "path": "--out",
            "expected": "a folder (new or existing)", "received": "a file"}
        assert error["howToFix"].startswith("Give --out a folder") and error["example"].startswith("replay ")
    assert (tmp_path / "taken").read_bytes() == b"a file\n"


def test_a_pipe_as_the_output_folder_is_named_as_a_pipe(tmp_path: Path) -> None:
    """`describe_kind`'s words, as for a file (`received` was "not a folder")."""
    os.mkfifo(tmp_path / "taken")
    proc = run_replay("heal", "--in", str(BROKEN), "--out", "taken", cwd=tmp_path)
    (error,) = errors_of(proc.stderr)
    assert (proc.returncode, error["code"], error["path"]) == (2, "E_OUTPUT_UNWRITABLE", "--out"), proc.stderr
    assert error["received"] == "a pipe, a device or a socket", error


# an output under a file ---------------------------------------------------------------------------
UNDER_A_FILE = {
    "report --out": ["report", str(BROKEN), "--out", "afile/x.html"],
    "report --out, two levels": ["report", str(BROKEN), "--out", "afile/sub/x.html"],
    "heal --log": ["heal", str(BROKEN), "--log", "afile/log.jsonl"],
    "heal --in --out": ["heal", "--in", str(BROKEN), "--out", "afile/healed"],
    "write --out": ["write", str(BROKEN), "--out", "afile/w.jsonl"],
    "export --out": ["export", "--otlp", str(BROKEN), "--out", "afile/o.json"],
    "script --out": ["script", str(BROKEN), "--out", "afile/s.json"],
    "capture --out": ["capture", "--runner", "runner.py", "--out", "afile/captures", "p"],
    "incident import --out": ["incident", "import", str(EXAMPLES / "incidents" / "refund-export.json"), "--out", "afile/inc"],
    "incident import DIR --out": ["incident", "import", str(EXAMPLES / "incidents"), "--out", "afile/inc"],
    "heal --in --out --workers 2": ["heal", "--in", str(BROKEN.parent), "--out", "afile/healed", "--workers", "2"],
    "run, a write stage's path": ["run", "pipeline.toml", str(BROKEN)],
}


@pytest.mark.parametrize("args", UNDER_A_FILE.values(), ids=UNDER_A_FILE.keys())
def test_an_output_under_a_file_is_refused_before_anything_runs_as_not_a_directory(tmp_path: Path, args: list[str]) -> None:
    """`--out afile/x.html` with `afile` a file: no write could make it (ENOTDIR); it is refused before the input is
    read or the runner starts, naming the file in the way (it was E_OUTPUT_WRITE_FAILED `EEXIST: File exists`)."""
    (tmp_path / "afile").write_bytes(b"a file\n")
    (tmp_path / "runner.py").write_text("import pathlib\npathlib.Path(__file__).with_name('ran').write_text('x')\nprint('{}')\n")
    (tmp_path / "pipeline.toml").write_text('chain = [{ type = "write", path = "afile/out.jsonl" }]\n')
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = run_replay(*args, cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, b""), proc.stderr
    (error,) = errors_of(proc.stderr)
    target = next(a for a in args if a.startswith("afile/")) if args[0] != "run" else "afile/out.jsonl"
    # the flag the user typed, where a graph's stage or a folder of many outputs is refused (incident import too)
    by_flag = args[0] in ("report", "heal", "write", "export", "script", "capture", "incident")
    assert error["code"] == "E_OUTPUT_UNWRITABLE" and error["path"] == (args[args.index(target) - 1] if by_flag else target)
    assert error["received"] == "ENOTDIR: 'afile' is not a directory" and "'afile' is a file" in error["message"]
    assert sorted(p.name for p in tmp_path.iterdir()) == before and (tmp_path / "afile").read_bytes() == b"a file\n"


@pytest.mark.parametrize("args", [
    ["report", str(BROKEN), "--out", "new/"], ["report", str(BROKEN), "--format", "html", "--out", "new/"],
    ["heal", str(BROKEN), "--log", "new/"], ["write", str(BROKEN), "--out", "new/"],
    ["export", "--otlp", str(BROKEN), "--out", "new/"], ["write", str(BROKEN), "--out", "new/."],
    ["heal", str(BROKEN), "--log", "new/.."],
], ids=["report --out", "report --format html --out", "heal --log", "write --out", "export --out", "write --out new/.",
        "heal --log new/.."])
def test_an_output_file_named_with_a_trailing_slash_is_refused_not_written_as_a_file(tmp_path: Path,
                                                                                    args: list[str]) -> None:
    """`--out new/` (no such folder yet) names a folder, not a file: it was written as a file `new` (``Path`` drops
    the slash), exit 0; then it failed at the end (E_OUTPUT_WRITE_FAILED naming the path). An output flag that names a
    folder, there or not (a path ending in `/`, `.` or `..`), is refused before anything runs, naming the flag, as one
    there is (README: Unix filter), and nothing is written."""
    proc = run_replay(*args, cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, b""), proc.stderr
    (error,) = errors_of(proc.stderr)
    flag, target = args[-2], args[-1]
    end = "/" if target.endswith("/") else target.rsplit("/", 1)[1]
    assert (error["code"], error["path"], error["received"]) == ("E_OUTPUT_UNWRITABLE", flag, target), error
    assert error["message"] == f"{flag} {target!r} names a directory (it ends in `{end}`)", error
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [
    ("read", ""), ("report", ""), ("report", "--in", ""), ("validate", ""), ("export", "--otlp", ""), ("write", ""),
    ("heal", ""), ("heal", "--in", "", "--out", "healed"), ("script", ""), ("incident", "import", "", "--out", "imported"),
])
def test_an_empty_input_path_is_refused_not_read_as_the_current_folder(tmp_path: Path, args: tuple[str, ...]) -> None:
    # Path("") is ".": `replay read "$UNSET"` read every journal under the current folder (heal --in "" healed them all)
    (tmp_path / "run.jsonl").write_bytes(BROKEN.read_bytes())
    proc = run_replay(*args, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == b"", proc.stderr
    assert errors_of(proc.stderr)[0]["code"] == "E_INPUT_PATH_NOT_FOUND" and errors_of(proc.stderr)[0]["path"] == ""
    assert [p.name for p in tmp_path.iterdir()] == ["run.jsonl"]


def test_a_rules_file_that_is_not_there_is_named_as_the_flag_that_gave_it(tmp_path: Path) -> None:
    """`heal --rules nope.json`: the error's path is the flag the user typed (`--rules`, the file as `received`), as
    `--context-file nope.json`'s is; it was the file's name, as for a config's option."""
    for args in (["heal", str(BROKEN), "--rules", "nope.json"],
                 ["heal", "--in", str(BROKEN), "--out", "healed", "--rules", "nope.json"]):
        proc = run_replay(*args, cwd=tmp_path)
        assert (proc.returncode, proc.stdout) == (2, b""), proc.stderr
        (error,) = errors_of(proc.stderr)
        assert (error["code"], error["path"], error["received"]) == ("E_INPUT_PATH_NOT_FOUND", "--rules", "nope.json")
        assert error["message"] == "heal rules file 'nope.json' does not exist"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("args", "near"), [
    (["validate", "--in", "x", "--out", "y"], []),  # (it was offered --quiet: the two share their dashes and a 'ut')
    (["heal", "--lgo", "x"], ["--log"]),  # (not --out too)
    (["report", "--fromat", "x"], ["--format"]),
])
def test_an_unknown_flag_is_offered_only_flags_near_it_by_name(args: list[str], near: list[str]) -> None:
    proc = run_replay(*args)
    assert (proc.returncode, proc.stdout) == (2, b""), proc.stderr
    (error,) = errors_of(proc.stderr)
    assert error["code"] == "E_UNKNOWN_FLAG"
    flag = next(a for a in args if a.startswith("--") and a not in ("--in",))
    if near:
        assert error["message"] == f"No such option {flag!r}. Did you mean {near[0]!r}?" and error["expected"] == near[0]
    else:
        assert error["message"] == f"No such option {flag!r}." and "--quiet, " in error["expected"], error
