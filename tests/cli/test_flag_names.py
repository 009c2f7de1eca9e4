"""What a command refuses about an output names the flag the user typed (`--log`, `--out`, `--to`), not the id of the
stage its spec binds the flag to; a `replay run` config, where the user wrote the stage, still names the stage."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay

from replay.pipeline.engine.config import FLAGS_KEY, graph_from_config
from replay.pipeline.engine.spec import Flag, bind, load_spec

TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"


def only_error(*args: str, cwd: Path | None = None, code: str | None = None) -> dict:
    """The one error of a refused run: by default, an output a flag names cannot be written (E_OUTPUT_UNWRITABLE);
    a stage option of a config the user wrote (`replay run`) has a wrong value (E_CONFIG_OPTION_INVALID)."""
    done = run_replay(*args, cwd=cwd)
    assert done.returncode == 2 and done.stdout == b"", done.stderr
    [error] = errors_of(done.stderr)
    assert error["code"] == code or (code is None and error["code"] == (
        "E_CONFIG_OPTION_INVALID" if error["path"].startswith("stages.") else "E_OUTPUT_UNWRITABLE")), error
    return error


@pytest.mark.parametrize(("args", "flag"), [
    (["heal", "--log", "{dir}", str(TWO_RUNS)], "--log"),
    (["write", "--out", "{dir}", str(TWO_RUNS)], "--out"),
    (["export", "--otlp", "--out", "{dir}", str(TWO_RUNS)], "--out"),
    (["script", str(EXAMPLES / "echo-agent" / "scenarios" / "echo" / "session.jsonl"), "--out", "{dir}"], "--out"),
])
def test_an_output_flag_naming_a_folder_is_named_by_the_flag(tmp_path: Path, args: list[str], flag: str):
    error = only_error(*(a.format(dir=tmp_path) for a in args))
    assert (error["path"], error["message"]) == (flag, f"{flag} {str(tmp_path)!r} is a directory"), error
    assert "stage" not in error["message"] and f"`{flag} " in error["howToFix"]


def test_a_stage_output_naming_a_folder_by_its_slash_is_refused_at_its_option(tmp_path: Path):
    config = tmp_path / "log.toml"
    config.write_text('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
                      '[stages.log]\ntype = "write"\npath = "folder/"\ninputs = ["parse"]\n')
    error = only_error("run", str(config), str(TWO_RUNS), cwd=tmp_path)
    assert (error["path"], error["message"]) == (
        "stages.log.path", "stage 'log' has the output 'folder/', which names a directory (it ends in `/`)"), error
    assert not (tmp_path / "folder").exists()


def test_an_output_naming_a_folder_is_not_told_to_be_dash_when_stdout_is_taken(tmp_path: Path):
    """`--log DIR` was told "a file path, or '-' for stdout" (and `--log -` is then refused: the healed stream is on
    stdout), though `--log ''` beside it was not: the folder's refusal offers '-' only where nothing else writes stdout."""
    error = only_error("heal", "--log", str(tmp_path), str(TWO_RUNS))
    assert error["expected"] == "a file path (not '-': the command's own output goes to stdout)", error
    assert error["howToFix"] == "Give --log a file to write (not `-`: the command's own output goes to stdout), e.g. " \
                                "`--log out.jsonl`."
    (tmp_path / "folder").mkdir()
    config = tmp_path / "log.toml"
    config.write_text('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
                      '[stages.log]\ntype = "write"\npath = "folder"\ninputs = ["parse"]\n'
                      '[stages.out]\ntype = "write"\ninputs = ["parse"]\n')
    error = only_error("run", str(config), str(TWO_RUNS), cwd=tmp_path)
    assert (error["expected"], error["howToFix"]) == ("a file path (not '-': stage 'out' writes stdout)",
                                                      "Name a file to write (not `-`: stage 'out' writes stdout), in its `path`.")
    free = only_error("write", "--out", str(tmp_path), str(TWO_RUNS))  # (nothing else writes stdout: '-' is offered)
    assert (free["expected"], free["howToFix"]) == ("a file path, or '-' for stdout",
                                                    "Give --out a file to write (or `-` for stdout), e.g. `--out out.jsonl`.")


def test_an_output_flag_naming_an_input_is_named_by_the_flag(tmp_path: Path):
    journal = tmp_path / "run.jsonl"
    journal.write_bytes(TWO_RUNS.read_bytes())
    for args, flag in ((["heal", "--log", str(journal)], "--log"), (["report", "--out", str(journal)], "--out"),
                       (["write", "--out", str(journal)], "--out")):
        error = only_error(*args, str(journal))
        assert error["path"] == flag and error["message"] == f"{flag} {str(journal)!r} would write over the input " \
                                                             f"{str(journal)!r}", error
    assert journal.read_bytes() == TWO_RUNS.read_bytes()


def test_a_log_on_stdout_names_the_flag_and_the_commands_own_output():
    error = only_error("heal", "--log", "-", str(TWO_RUNS))
    assert error["path"] == "--log"
    assert error["message"] == "the command's own output and --log would both write to stdout, mixing their lines"
    assert error["howToFix"] == "Give --log the path of a file to write, not `-`.", error


def test_output_flags_are_refused_as_outputs_with_a_fix_for_the_flag(tmp_path: Path):
    """A CLI user is told about the flag with an output's code (E_OUTPUT_UNWRITABLE), not a stage option's
    (E_CONFIG_OPTION_INVALID, "stage option has the wrong type"), nor a fix naming heal's --log for promote's --to."""
    bundle = tmp_path / "imported"
    done = run_replay("incident", "import", str(EXAMPLES / "incidents" / "refund-export.json"), "--out", str(bundle))
    assert done.returncode == 0, done.stderr
    error = only_error("incident", "promote", str(bundle / "incident.json"), "--to", "-")
    assert (error["code"], error["path"]) == ("E_OUTPUT_UNWRITABLE", "--to"), error
    assert error["howToFix"] == "Give --to the path of a file to write, not `-`." and "heal" not in str(error), error
    journal = tmp_path / "run.jsonl"
    journal.write_bytes(TWO_RUNS.read_bytes())
    error = only_error("heal", "--log", str(journal), str(journal))
    assert error["code"] == "E_OUTPUT_UNWRITABLE" and error["howToFix"].startswith("Give --log another file"), error
    error = only_error("export", "--otlp", str(journal), "--out", str(tmp_path))
    assert (error["code"], error["path"]) == ("E_OUTPUT_UNWRITABLE", "--out"), error


def test_a_stage_the_user_wrote_in_a_config_is_named_by_its_id(tmp_path: Path):
    (tmp_path / "folder").mkdir()
    config = tmp_path / "log.toml"
    config.write_text('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
                      '[stages.log]\ntype = "write"\npath = "folder"\ninputs = ["parse"]\n')
    error = only_error("run", str(config), str(TWO_RUNS), cwd=tmp_path)
    assert (error["path"], error["message"]) == ("stages.log.path", "stage 'log' has the output 'folder', which is a directory")
    assert "`path`" in error["howToFix"]


def test_an_output_is_named_by_the_option_that_gave_it_not_by_another_of_the_same_value(tmp_path: Path):
    """The option a refused output was named by was found by its value: a report's `format` came first, and
    `--format json --out json` (a file called json) was named `stages.report.format`, `format = "html"` with
    `path = "html"` (a folder) `stages.rep.format`."""
    (tmp_path / "json").write_bytes(TWO_RUNS.read_bytes())
    error = only_error("report", "--format", "json", "--out", "json", "json", cwd=tmp_path)
    assert (error["path"], error["message"]) == ("--out", "--out 'json' would write over the input 'json'"), error
    (tmp_path / "html").mkdir()
    config = tmp_path / "report.toml"
    config.write_text('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
                      '[stages.sum]\ntype = "summarize"\ninputs = ["parse"]\n'
                      '[stages.rep]\ntype = "report"\nformat = "html"\npath = "html"\ninputs = ["sum"]\n')
    error = only_error("run", str(config), str(TWO_RUNS), cwd=tmp_path)
    assert (error["path"], error["message"]) == ("stages.rep.path", "stage 'rep' has the output 'html', which is a directory")
    assert "`path`" in error["howToFix"]


def test_an_output_no_option_names_is_named_by_its_stage(tmp_path: Path):
    """emit's stdout (its summary lines) is named by no option: it was named `stages.em.path`, an option emit has not."""
    config = tmp_path / "emit.toml"
    config.write_text('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
                      '[stages.out]\ntype = "write"\ninputs = ["parse"]\n'
                      '[stages.em]\ntype = "emit"\nout_dir = "arts"\ninputs = ["parse"]\n')
    error = only_error("run", str(config), str(TWO_RUNS), cwd=tmp_path)
    assert (error["path"], error["message"]) == ("stages.em", "stages 'out' and 'em' would both write to stdout, mixing their lines")
    assert list(tmp_path.iterdir()) == [config]


def test_bind_keeps_which_flag_set_which_option_and_the_stages_know_theirs():
    doc = bind(load_spec("heal"), set={"out.path": Flag("--out", "x.jsonl"), "read.max_line_bytes": Flag("--max", None)},
               add={"log": {"type": "write", "path": Flag("--log", "log.jsonl"), "inputs": ["heal.repairs"]}})
    assert doc[FLAGS_KEY] == {"out.path": "--out", "log.path": "--log"}  # (a flag with no value binds nothing)
    assert doc["stages"]["log"]["path"] == "log.jsonl" and "max_line_bytes" not in doc["stages"]["read"]
    graph = graph_from_config(doc)
    assert graph.nodes["log"].stage.named("path") == ("--log", "--log")
    assert graph.nodes["log"].stage.fresh().named("path") == ("--log", "--log")  # (what a run executes)
    assert graph.nodes["read"].stage.named("max_line_bytes") == ("stage 'read'", "stages.read.max_line_bytes")
    assert bind(doc, bypass=["log"])[FLAGS_KEY] == {"out.path": "--out"}  # (a stage taken out takes its flags)
    assert FLAGS_KEY not in bind(load_spec("heal"), set={"out.path": "x.jsonl"})  # (no flag: a config as a user writes)


def test_a_config_file_cannot_say_which_flags_set_its_options(tmp_path: Path):
    config = tmp_path / "flags.toml"
    config.write_text(f'"{FLAGS_KEY}" = {{ "write.path" = "--out" }}\nchain = ["write"]\n')
    done = run_replay("run", str(config), str(TWO_RUNS))
    assert done.returncode == 2 and [(e["code"], e["path"]) for e in errors_of(done.stderr)] == [
        ("E_CONFIG_SHAPE_INVALID", FLAGS_KEY)]


def test_an_empty_output_folder_flag_is_named_as_the_flag(tmp_path: Path):
    """`heal --in DIR --out ""` said "stage type 'write_healed' needs option 'out_dir'" at `stages.write.out_dir`."""
    done = run_replay("heal", "--in", str(EXAMPLES / "journals"), "--out", "", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == b"", done.stderr
    [error] = errors_of(done.stderr)
    assert (error["code"], error["path"], error["message"]) == ("E_USAGE_INVALID", "--out", "--out is empty: it names nothing")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("args", "flag", "nothing"), [
    (["heal", "--in", str(EXAMPLES / "journals"), "--out", ""], "--out", "nothing"),  # a required option (build_stage)
    (["heal", "--log", "", str(TWO_RUNS)], "--log", "no file"),  # an output file (preflight)
    (["heal", "--rules", "", str(TWO_RUNS)], "--rules", "no file"),  # (it healed with the default rules, exit 0)
    (["export", "--otlp", "--out", "", str(TWO_RUNS)], "--out", "no file"),
    (["incident", "import", str(EXAMPLES / "incidents" / "refund-export.json"), "--out", ""], "--out", "no folder"),
    # (a folder of exports: each was refused as a config's stage, `stages.folder.out`; beside them, '.' overlapped)
    (["incident", "import", str(EXAMPLES / "incidents"), "--out", ""], "--out", "no folder"),
    (["report", "--out", "", str(TWO_RUNS)], "--out", "no file"),  # (it wrote the report to stdout, exit 0)
    # (it wrote the run's files to .replay/artifacts/DATE, exit 0)
    (["capture", "--runner", str(EXAMPLES / "runners" / "echo_runner.py"), "--out", "", "hi"], "--out", "no folder"),
])
def test_an_empty_flag_is_refused_alike_wherever_it_is_found_out(tmp_path: Path, args: list[str], flag: str, nothing: str):
    """One refusal (errors.empty_value), each with advice of one shape, named as the flag: a usage error
    (E_USAGE_INVALID), as the user typed it; they were E_CONFIG_OPTION_INVALID, a config file's error (an option left
    empty in a `replay run` config still is)."""
    error = only_error(*args, cwd=tmp_path, code="E_USAGE_INVALID")  # (a flag's value refused, not an output)
    assert (error["code"], error["path"], error["received"]) == ("E_USAGE_INVALID", flag, "")
    assert error["message"] == f"{flag} is empty: it names {nothing}"
    assert error["howToFix"].startswith(f"Give {flag} ") and error["example"].startswith(f"{flag} "), error
    assert list(tmp_path.iterdir()) == []


def test_a_config_that_leaves_a_required_option_out_is_still_named_by_its_stage(tmp_path: Path):
    config = tmp_path / "healed.toml"
    config.write_text('[stages.read]\ntype = "read"\n\n[stages.write]\ntype = "write_healed"\ninputs = ["read"]\n')
    done = run_replay("run", str(config), str(TWO_RUNS), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    [error] = errors_of(done.stderr)
    assert (error["code"], error["path"]) == ("E_CONFIG_OPTION_INVALID", "stages.write.out_dir"), error


@pytest.mark.parametrize(("args", "flag"), [
    (["write", "--out", "file:///{dir}/out.jsonl", str(TWO_RUNS)], "--out"),
    (["heal", "--log", "s3://bucket/log.json", str(TWO_RUNS)], "--log"),
    (["capture", "--runner", str(EXAMPLES / "runners" / "broken_trace_runner.py"), "--out", "s3://bucket/caps", "p"], "--out"),
    (["incident", "import", str(EXAMPLES / "incidents" / "refund-export.json"), "--out", "s3://bucket/inc"], "--out"),
])
def test_an_output_flag_that_writes_local_paths_refuses_a_url(tmp_path: Path, args: list[str], flag: str):
    """`write --out s3://b/x` wrote a local folder `s3:` (the URL taken for a path), exit 0: an upload that never
    happened. Only `report --out` and heal's folder are written through fsspec; any other output that is a URL is
    refused before anything runs."""
    args = [a.format(dir=tmp_path) for a in args]
    error = only_error(*args, cwd=tmp_path)
    target = args[args.index(flag) + 1]
    assert (error["path"], error["received"]) == (flag, target), error
    assert error["message"] == f"{flag} {target!r} is a URL, and {flag} writes local paths only", error
    assert list(tmp_path.iterdir()) == []


def test_a_write_stage_of_a_config_refuses_a_url_at_its_option(tmp_path: Path):
    config = tmp_path / "w.toml"
    config.write_text('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
                      '[stages.w]\ntype = "write"\npath = "s3://bucket/x.jsonl"\ninputs = ["parse"]\n')
    error = only_error("run", str(config), str(TWO_RUNS), cwd=tmp_path)
    assert (error["path"], error["code"]) == ("stages.w.path", "E_CONFIG_OPTION_INVALID"), error
    assert [p.name for p in tmp_path.iterdir()] == ["w.toml"]
