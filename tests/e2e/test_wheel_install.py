"""The wheel `pip install .` builds holds everything replay reads at run time: each command run from the unpacked
wheel (and nothing of the checkout) prints what the editable install prints.

The test suite runs the editable install, which maps `replay.pipeline` onto the checkout's folder: a subpackage
missing from pyproject's package list, or a data file (a spec, a schema) missing from its package data, works there
and fails for everyone who installs the wheel.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT, run_replay

SHIPPED = ("pyproject.toml", "README.md", "LICENSE", "pipeline", "stages", "schemas")  # what the build reads

# Commands that reach every kind of file the package reads: the heal graph's specs and rules, a schema, the report's
# HTML, the stage registry, a config pipeline, another agent's dialect, an incident bundle.
COMMANDS = [
    ["heal", str(EXAMPLES / "journals" / "broken.jsonl")],
    ["validate", str(EXAMPLES / "journals" / "odd.jsonl")],
    ["report", "--format", "html", str(EXAMPLES / "journals" / "two-runs.jsonl")],
    ["report", "--format", "junit", str(EXAMPLES / "journals" / "messy.jsonl")],
    ["schema", "event"],
    ["schema", "heal-rules"],
    ["stages", "--json"],
    ["run", str(EXAMPLES / "pipelines" / "tools-only.toml"), str(EXAMPLES / "journals" / "two-runs.jsonl")],
    ["walk", str(EXAMPLES / "journals" / "two-runs.jsonl")],
    ["export", "--otlp", str(EXAMPLES / "journals" / "two-runs.jsonl")],
]


@pytest.fixture(scope="module")
def unpacked_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the files a build reads (a build writes `build/` where it runs), unpacked."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    for name in SHIPPED:
        origin = ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(origin, source / name)
    # (with the venv's setuptools and wheel, which the test extras install: no build environment fetched from PyPI)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                            "--no-index", "-w", str(work / "dist"), str(source)], capture_output=True, timeout=300,
                           check=False)
    assert built.returncode == 0, built.stderr.decode(errors="replace")
    [wheel] = (work / "dist").glob("agent_replay-*.whl")
    unpacked = work / "unpacked"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
    return unpacked


def run_from_wheel(unpacked: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """`replay ARGS` with the package imported from ``unpacked`` only: no site (`-S`, so not the editable install's
    import hook), the venv's dependencies put on the path by hand."""
    code = ("import sys; sys.path[:0] = sys.argv[1:3]; del sys.argv[1:3]; sys.argv[0] = 'replay'; "
            "import replay.pipeline.cli.entry as entry; assert entry.__file__.startswith(sys.path[0]), entry.__file__; "
            "entry.main()")
    dependencies = sysconfig.get_paths()["purelib"]
    return subprocess.run([sys.executable, "-S", "-c", code, str(unpacked), dependencies, *args], capture_output=True,
                          cwd=cwd, timeout=120, check=False)


@pytest.mark.parametrize("args", COMMANDS, ids=lambda args: " ".join(args[:3]).replace(str(EXAMPLES) + "/", ""))
def test_each_command_runs_from_the_wheel_as_from_the_checkout(unpacked_wheel: Path, args: list[str],
                                                                 tmp_path: Path) -> None:
    from_wheel = run_from_wheel(unpacked_wheel, args, tmp_path)
    checkout = run_replay(*args, cwd=tmp_path)
    assert from_wheel.returncode == checkout.returncode, from_wheel.stderr.decode(errors="replace")
    assert from_wheel.stdout == checkout.stdout
    assert b"Traceback" not in from_wheel.stderr


def test_the_wheel_holds_every_module_and_data_file_of_the_packages(unpacked_wheel: Path) -> None:
    """Every module and data file under pipeline/, stages/ and schemas/ of the checkout is in the wheel."""
    mapping = {"pipeline": "replay/pipeline", "stages": "replay/stages", "schemas": "replay/schemas"}
    missing = []
    for folder, packaged in mapping.items():
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".toml", ".json", ".html",
                                                                                     ".css", ".js"):
                relative = path.relative_to(ROOT / folder)
                if not (unpacked_wheel / packaged / relative).is_file():
                    missing.append(f"{folder}/{relative}")
    assert missing == []
