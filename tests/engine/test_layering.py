"""The engine layer imports nothing above it: no model, report, cli, io or stages (deferred imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "pipeline" / "engine"
ABOVE = ("replay.pipeline.model", "replay.pipeline.report", "replay.pipeline.cli", "replay.pipeline.io", "replay.stages")


def test_engine_modules_import_nothing_from_the_layers_above() -> None:
    found = []
    for path in sorted(ENGINE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.name}: {name}" for name in names if name.startswith(ABOVE)]
    assert found == []
