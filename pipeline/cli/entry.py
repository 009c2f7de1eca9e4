"""The ``replay`` executable's entry point (``[project.scripts]`` in pyproject.toml).

It first notes the descriptors the process was given (0-2 and those its parent left open, ``3> res.txt``), before
anything of its own opens one (the event loop's socket pair): only those are written through in place when an output
names one (``/dev/fd/3``; ``engine.outputs.descriptor_of``). Then it sets the garbage collector for a command
(``engine.memory.tune_gc``) before the command line's modules load: with the interpreter's default thresholds,
collections keep scanning the objects of the ~300 modules while they load (~2 ms of every command). Then
``cli.app.main`` runs the command.
"""

from __future__ import annotations

import os

from replay.pipeline.engine.memory import tune_gc


def _open_descriptors() -> frozenset[int]:
    """The descriptors open now (the listing's own, closed again once listed, is left out)."""
    try:
        listed = [int(name) for name in os.listdir("/dev/fd")]
    except (OSError, ValueError):
        return frozenset((0, 1, 2))
    open_now = set()
    for fd in listed:
        try:
            os.fstat(fd)
        except OSError:
            continue
        open_now.add(fd)
    return frozenset(open_now)


def main() -> None:
    given = _open_descriptors()
    tune_gc()
    from replay.pipeline.engine.outputs import note_given_descriptors

    note_given_descriptors(given)
    from replay.pipeline.cli.app import main as run_command

    run_command()
