"""The ``replay`` executable's entry point (``[project.scripts]`` in pyproject.toml).

It sets the garbage collector for a command (``engine.memory.tune_gc``) before the command line's modules load:
with the interpreter's default thresholds, collections keep scanning the objects of the ~300 modules while they
load (~2 ms of every command). Then ``cli.app.main`` runs the command.
"""

from __future__ import annotations

from replay.pipeline.engine.memory import tune_gc


def main() -> None:
    tune_gc()
    from replay.pipeline.cli.app import main as run_command

    run_command()
