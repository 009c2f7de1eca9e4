"""An --out that cannot be an output folder (under a file, a file itself, a used folder, inside an input folder) is
refused naming the flag, `"path": "--out"`, as every flag refusal does: by `incident import` (one export or a folder of
them), `incident inspect` and `replay`, and `capture`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay

EXPORT = EXAMPLES / "incidents" / "refund-export.json"


@pytest.mark.parametrize(("out", "code"), [("afile/x", "E_OUTPUT_UNWRITABLE"), ("afile", "E_INCIDENT_OUTPUT_NOT_EMPTY"),
                                           ("used", "E_INCIDENT_OUTPUT_NOT_EMPTY")])
@pytest.mark.parametrize("many", [False, True])
def test_incident_import_names_the_out_flag(tmp_path: Path, out: str, code: str, many: bool) -> None:
    (tmp_path / "afile").write_bytes(b"")
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "z").write_bytes(b"")
    (tmp_path / "exports").mkdir()
    shutil.copy(EXPORT, tmp_path / "exports")
    done = run_replay("incident", "import", "exports" if many else str(EXPORT), "--out", out, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, b""), done.stderr
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"]) == (code, "--out"), error
    assert repr(out) in error["message"]  # (the folder it is, in the message)


def test_capture_names_the_out_flag_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "afile").write_bytes(b"")
    done = run_replay("capture", "--runner", str(EXAMPLES / "runners" / "broken_trace_runner.py"), "--out", "afile/x",
                      "hello", cwd=tmp_path)
    assert done.returncode == 2
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"]) == ("E_OUTPUT_UNWRITABLE", "--out"), error


@pytest.mark.parametrize("out", ["bundle/x", "bundle/sub/x", "bundle"])
@pytest.mark.parametrize("command", ["inspect", "replay"])
def test_incident_inspect_and_replay_refuse_an_out_inside_the_bundle_folder(tmp_path: Path, out: str, command: str) -> None:
    """An output folder inside the input bundle's folder (or that folder itself) is E_OUTPUT_UNWRITABLE, as `incident
    import DIR --out DIR/x` is, before anything is written: it was accepted, and the folder written into the input."""
    assert run_replay("incident", "import", str(EXPORT), "--out", "bundle", cwd=tmp_path).returncode == 0
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    agent = ["--agent-command", '["true"]'] if command == "replay" else []
    done = run_replay("incident", command, "bundle", *agent, "--out", out, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, b""), done.stderr
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"], error["received"]) == ("E_OUTPUT_UNWRITABLE", "--out", out), error
    assert "'bundle'" in error["message"]
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing written
    beside = run_replay("incident", command, "bundle", *agent, "--out", "beside", cwd=tmp_path)
    assert beside.returncode in (0, 1) and (tmp_path / "beside" / "incident.json").is_file(), beside.stderr


def test_a_config_s_incident_folder_inside_its_bundle_is_refused_at_its_option(tmp_path: Path) -> None:
    """In a `replay run` config the folder is a stage's option, not a flag: E_CONFIG_OPTION_INVALID at it, with advice
    in the config's words, as every other output a config names is refused."""
    assert run_replay("incident", "import", str(EXPORT), "--out", "bundle", cwd=tmp_path).returncode == 0
    graph = run_replay("stages", "--graph", "incident-inspect").stdout.decode()
    config = tmp_path / "inspect.toml"
    config.write_text(graph.replace('out = "reviewed"', 'out = "bundle/x"').replace(
        'type = "load_incident"', 'type = "load_incident"\npath = "bundle"', 1))
    done = run_replay("run", str(config), cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, b""), done.stderr
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"]) == ("E_CONFIG_OPTION_INVALID", "stages.folder.out"), error
    assert 'out = "reviewed"' in error["howToFix"]
    assert not (tmp_path / "bundle" / "x").exists()
