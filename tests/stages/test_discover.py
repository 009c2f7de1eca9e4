"""Runner discovery: the search order (each step wins over every later one) and the refusals."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from replay.pipeline.engine.errors import ReplayError
from replay.stages.discover import DiscoverRunner, discover_runner

ADVICE_FIELDS = {"path", "expected", "received", "howToFix"}
PY_RUNNER = "import json, sys\njson.load(sys.stdin)\nprint('{}')\n"


def write(path: Path, text: str = PY_RUNNER, executable: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if executable:
        path.chmod(0o755)
    return path


def _link(path: Path, to: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(to)


def _fifo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


# Every step of the search order, with what makes it present in a project and what it reports.
def _explicit(root: Path) -> dict:
    write(root / "mine" / "explicit.py")
    return {"explicit": "mine/explicit.py"}


def _env(root: Path) -> dict:
    write(root / "mine" / "from_env.py")
    return {"env": {"REPLAY_RUNNER": "mine/from_env.py"}}


def _file(name: str, executable: bool = False):
    def make(root: Path) -> dict:
        write(root / name, "#!/bin/sh\necho '{}'\n" if executable else PY_RUNNER, executable)
        return {}
    return make


def _package_json(root: Path) -> dict:
    (root / "package.json").write_text('{"name": "demo", "scripts": {"replay:runner": "node runner.mjs"}}')
    return {}


def _pyproject(root: Path) -> dict:
    write(root / "tools" / "agent_runner.py")
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.replay]\nrunner = "tools/agent_runner.py"\n')
    return {}


STEPS = [
    ("--runner", _explicit, "mine/explicit.py"),
    ("REPLAY_RUNNER", _env, "mine/from_env.py"),
    (".replay/runner.mjs", _file(".replay/runner.mjs"), ".replay/runner.mjs"),
    (".replay/runner.js", _file(".replay/runner.js"), ".replay/runner.js"),
    (".replay/runner.cjs", _file(".replay/runner.cjs"), ".replay/runner.cjs"),
    (".replay/runner.py", _file(".replay/runner.py"), ".replay/runner.py"),
    (".replay/runner", _file(".replay/runner", executable=True), ".replay/runner"),
    ("package.json scripts.replay:runner", _package_json, "package.json"),
    ("pyproject.toml [tool.replay] runner", _pyproject, "tools/agent_runner.py"),
]


@pytest.mark.skipif(shutil.which("node") is None, reason="the .mjs/.js/.cjs steps need node")
@pytest.mark.parametrize("step", range(len(STEPS)), ids=[s[0] for s in STEPS])
def test_each_step_wins_over_every_later_one(tmp_path, step):
    explicit, env = None, {}
    for _, make, _ in STEPS[step:]:  # this step and everything after it are present
        found = make(tmp_path)
        explicit = found.get("explicit", explicit)
        env.update(found.get("env", {}))
    spec = discover_runner(explicit, env=env, cwd=tmp_path)
    assert (spec.found_by, spec.path) == STEPS[step][0::2]


def test_nothing_found(tmp_path):
    with pytest.raises(ReplayError) as info:
        discover_runner(None, env={}, cwd=tmp_path)
    assert info.value.code == "E_RUNNER_NOT_FOUND" and info.value.exit_code == 2
    assert info.value.body.keys() >= ADVICE_FIELDS
    assert ".replay/runner.py" in info.value.body["expected"] and "pyproject.toml" in info.value.body["expected"]


def test_how_each_kind_runs(tmp_path):
    py = discover_runner(str(write(tmp_path / "r.py")), env={}, cwd=tmp_path)
    assert py.kind == "python" and py.command == (sys.executable, str((tmp_path / "r.py").resolve()))
    exe = discover_runner(str(write(tmp_path / "r.sh", "#!/bin/sh\n", executable=True)), env={}, cwd=tmp_path)
    assert exe.kind == "executable" and exe.command == (str((tmp_path / "r.sh").resolve()),)
    _package_json(tmp_path)
    script = discover_runner(None, env={}, cwd=tmp_path)
    assert script.kind == "script" and script.command == ("sh", "-c", "node runner.mjs")
    assert dict(script.env)["PATH"].startswith(str((tmp_path / "node_modules" / ".bin").resolve()))


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
@pytest.mark.parametrize("suffix", [".mjs", ".js", ".cjs"])
def test_node_runners_run_with_node(tmp_path, suffix):
    spec = discover_runner(str(write(tmp_path / f"r{suffix}", "")), env={}, cwd=tmp_path)
    assert spec.kind == "node" and Path(spec.command[0]).name == "node"


@pytest.mark.parametrize("where", ["--runner", "REPLAY_RUNNER", "pyproject.toml [tool.replay] runner"])
def test_named_runner_that_does_not_exist(tmp_path, where):
    explicit, env = None, {}
    if where == "--runner":
        explicit = "missing.py"
    elif where == "REPLAY_RUNNER":
        env = {"REPLAY_RUNNER": "missing.py"}
    else:
        (tmp_path / "pyproject.toml").write_text('[tool.replay]\nrunner = "missing.py"\n')
    with pytest.raises(ReplayError) as info:
        discover_runner(explicit, env=env, cwd=tmp_path)
    assert info.value.code == "E_RUNNER_PATH_NOT_FOUND"
    assert info.value.body["path"] == where and info.value.body["received"] == "missing.py"
    assert info.value.body.keys() >= ADVICE_FIELDS


def test_directory_is_not_a_runner(tmp_path):
    (tmp_path / "dir.py").mkdir()
    with pytest.raises(ReplayError) as info:
        discover_runner("dir.py", env={}, cwd=tmp_path)
    assert info.value.code == "E_RUNNER_PATH_NOT_FOUND" and "directory" in info.value.body["message"]


@pytest.mark.parametrize(("runner", "kind"), [("/dev/null", "character device"), ("fifo.py", "named pipe")])
def test_a_device_or_a_pipe_is_there_but_no_runner(tmp_path, runner, kind):
    """`--runner /dev/null` said the runner 'does not exist' (E_RUNNER_PATH_NOT_FOUND): it is there, and no file to run."""
    os.mkfifo(tmp_path / "fifo.py")
    with pytest.raises(ReplayError) as info:
        discover_runner(runner, env={}, cwd=tmp_path)
    assert (info.value.code, info.value.body["received"]) == ("E_RUNNER_NOT_EXECUTABLE", kind)
    assert f"is a {kind}" in info.value.body["message"] and info.value.body.keys() >= ADVICE_FIELDS


@pytest.mark.parametrize("name", ["runner.ts", "runner.mts", ".replay/runner.TS"])
def test_typescript_is_refused(tmp_path, name):
    write(tmp_path / name, "export {}\n")
    with pytest.raises(ReplayError) as info:
        discover_runner(name, env={}, cwd=tmp_path)
    assert info.value.code == "E_RUNNER_UNSUPPORTED_EXTENSION"
    assert info.value.body.keys() >= ADVICE_FIELDS


def test_extensionless_runner_must_be_executable(tmp_path):
    write(tmp_path / ".replay" / "runner", "#!/bin/sh\necho '{}'\n", executable=False)
    with pytest.raises(ReplayError) as info:
        discover_runner(None, env={}, cwd=tmp_path)
    assert info.value.code == "E_RUNNER_NOT_EXECUTABLE"
    assert info.value.body["path"] == ".replay/runner" and info.value.body["received"] == "mode 0o644"
    assert info.value.body.keys() >= ADVICE_FIELDS


def test_node_runner_without_node_on_path(tmp_path, monkeypatch):
    write(tmp_path / ".replay" / "runner.mjs", "")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(ReplayError) as info:
        discover_runner(None, env={}, cwd=tmp_path)
    assert info.value.code == "E_RUNNER_START_FAILED" and info.value.exit_code == 2
    assert info.value.body.keys() >= ADVICE_FIELDS


def test_unreadable_manifests_do_not_stop_the_search(tmp_path):
    (tmp_path / "package.json").write_text("{not json")
    (tmp_path / "pyproject.toml").write_text("[tool.replay\n")
    with pytest.raises(ReplayError) as info:
        discover_runner(None, env={}, cwd=tmp_path)
    assert info.value.code == "E_RUNNER_NOT_FOUND"


@pytest.mark.parametrize(("make", "said"), [
    (lambda root: (root / ".replay" / "runner").mkdir(parents=True), ".replay/runner is a directory"),
    (lambda root: (root / ".replay" / "runner.mjs").mkdir(parents=True), ".replay/runner.mjs is a directory"),
    (lambda root: (root / "package.json").write_text("{not json"), "package.json is not valid JSON ("),
    (lambda root: (root / "package.json").write_text('{"scripts": {"replay:runner": ["node", "r.mjs"]}}'),
     "package.json scripts.replay:runner is an array, not a command"),
    (lambda root: (root / "package.json").write_text('{"scripts": {"replay:runner": " "}}'),
     "package.json scripts.replay:runner is a blank string, not a command"),
    (lambda root: (root / "pyproject.toml").write_text("[tool.replay\n"), "pyproject.toml is not valid TOML ("),
    (lambda root: (root / "pyproject.toml").write_text("[tool.replay]\nrunner = 3\n"),
     "pyproject.toml [tool.replay] runner is an integer, not a path"),
    (lambda root: _link(root / ".replay" / "runner.py", "/nonexistent"),
     ".replay/runner.py is a symbolic link to '/nonexistent', which does not exist"),
    (lambda root: _link(root / ".replay" / "runner.js", "runner.js"), ".replay/runner.js cannot be looked at ("),
    (lambda root: _fifo(root / ".replay" / "runner"), ".replay/runner is a named pipe"),
    (lambda root: _link(root / "package.json", "gone.json"),
     "package.json is a symbolic link to 'gone.json', which does not exist"),
    (lambda root: (root / "pyproject.toml").mkdir(), "pyproject.toml is a directory"),
], ids=["runner-folder", "runner-mjs-folder", "package-json", "script-array", "script-blank", "pyproject",
        "pyproject-runner-integer", "runner-dangling-link", "runner-link-loop", "runner-fifo", "package-json-dangling",
        "pyproject-folder"])
def test_what_was_passed_over_is_named_when_no_runner_is_found(tmp_path, make, said):
    """A runner the project meant to name but that cannot be one (a folder, a manifest that does not parse, a script or
    path of the wrong type) is passed over, and the search goes on; E_RUNNER_NOT_FOUND said "none of them" as if there
    were nothing there. It names what it passed over, and why."""
    make(tmp_path)
    with pytest.raises(ReplayError) as info:
        discover_runner(None, env={}, cwd=tmp_path)
    assert info.value.code == "E_RUNNER_NOT_FOUND"
    assert said in info.value.body["received"] and "1 passed over" in info.value.body["message"], info.value.body
    assert info.value.body["howToFix"].startswith("Fix what `received` names")


def test_a_package_json_without_the_script_is_not_named(tmp_path):
    (tmp_path / "package.json").write_text('{"scripts": {"test": "node --test"}}')
    (tmp_path / "pyproject.toml").write_text('[tool.ruff]\nline-length = 120\n')
    with pytest.raises(ReplayError) as info:
        discover_runner(None, env={}, cwd=tmp_path)
    assert info.value.body["received"] == f"none of them in {tmp_path.resolve()}"


def test_discover_stage_sends_one_invocation(tmp_path):
    write(tmp_path / ".replay" / "runner.py")
    stage = DiscoverRunner(prompt="hi", context={"k": 1}, cwd=str(tmp_path), run_id="run_fixed")
    record = stage.invocation()
    assert record["$record"] == "invocation" and record["runId"] == "run_fixed"
    assert record["input"] == {"prompt": "hi", "query": "hi", "runId": "run_fixed",
                               "timestamp": record["input"]["timestamp"], "context": {"k": 1}}
    assert record["runner"]["foundBy"] == ".replay/runner.py" and record["runner"]["kind"] == "python"
    assert os.path.isabs(record["runner"]["command"][1])
