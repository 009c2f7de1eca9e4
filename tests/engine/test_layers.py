"""The layers of `replay.pipeline` import only downwards: the engine knows nothing of journals, reports or commands.

engine  <  io  <  model  <  report  <  testing, stages  <  cli. A module may import its own layer and
the layers below it, never one above (function-level imports count too). Checked on the source, so a
lazy import inside a function cannot slip past.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import ROOT

ORDER = ["engine", "io", "model", "report", "testing", "stages", "cli"]
ALLOWED = {
    "engine": {"engine"},
    "io": {"engine", "io"},
    "model": {"engine", "io", "model"},
    "report": {"engine", "io", "model", "report"},
    "testing": {"engine", "io", "model", "report", "testing"},
    "stages": {"engine", "io", "model", "report", "stages"},
    "cli": set(ORDER) | {"specs"},
}


def layer_of_module(name: str) -> str | None:
    """The layer of an imported ``replay.*`` module, None for anything outside the package."""
    parts = name.split(".")
    if parts[:1] != ["replay"] or len(parts) < 2:
        return None
    if parts[1] == "stages":
        return "stages"
    if parts[1] == "pipeline" and len(parts) > 2:
        return parts[2]
    return parts[1]


def sources() -> list[tuple[str, Path]]:
    found = [("stages", p) for p in sorted((ROOT / "stages").glob("*.py"))]
    for layer in ORDER:
        folder = ROOT / "pipeline" / layer
        if folder.is_dir():
            found += [(layer, p) for p in sorted(folder.rglob("*.py"))]
    return found


def imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append((node.lineno, node.module))
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}:{node.lineno}: relative import; import replay.pipeline.<layer>... by name")
    return names


@pytest.mark.parametrize(("layer", "path"), sources(), ids=lambda v: v if isinstance(v, str) else v.name)
def test_a_module_imports_only_its_layer_and_those_below(layer: str, path: Path) -> None:
    for line, name in imports(path):
        used = layer_of_module(name)
        if used is not None:
            assert used in ALLOWED[layer], f"{path.relative_to(ROOT)}:{line} ({layer}) imports {name} ({used})"


def test_the_engine_needs_nothing_but_the_standard_library_anyio_and_orjson() -> None:
    third_party = {"anyio", "orjson", "structlog"}
    for layer, path in sources():
        if layer != "engine":
            continue
        for line, name in imports(path):
            top = name.split(".")[0]
            assert top in third_party or top == "replay" or top in __import__("sys").stdlib_module_names, \
                f"{path.relative_to(ROOT)}:{line} imports {name}"


def test_the_layer_check_catches_an_import_upwards(tmp_path: Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text("def f():\n    from replay.pipeline.model.events import RUN_STARTED\n")
    [(_line, name)] = imports(module)
    assert layer_of_module(name) == "model" and "model" not in ALLOWED["engine"]
