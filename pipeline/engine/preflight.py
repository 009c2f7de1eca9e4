"""Before a graph runs: every stage may refuse (exit 2, nothing written), and no stage may write over an input.

Stages say which files they read and write (``input_files`` / ``output_files``); the engine knows no
stage by name. Inputs are never modified: an output that is the same file as an input (same device
and inode, whatever the path says) is refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.stage import Stage

STDIO = "-"


def preflight(stages: Iterable[Stage]) -> None:
    """Run before any task of a graph starts, on the stages that are about to run."""
    stages = list(stages)
    inputs = [source for stage in stages for source in stage.input_files()]
    for stage in stages:
        stage.preflight(inputs)
    identities: dict[tuple[int, int], str] = {}
    for source in inputs:
        try:
            st = os.fstat(0) if source == STDIO else os.stat(source)
        except (OSError, ValueError):
            continue
        identities[(st.st_dev, st.st_ino)] = "<stdin>" if source == STDIO else source
    for stage in stages:
        for target in stage.output_files():
            if target == STDIO or not os.path.isfile(target):
                continue
            st = os.stat(target)
            written_over = identities.get((st.st_dev, st.st_ino))
            if written_over is not None:
                raise ReplayError(
                    "E_CONFIG_OPTION_INVALID",
                    f"stage {stage.id!r} would write its output {target!r} over its own input {written_over!r}",
                    path=f"stages.{stage.id}.path", received=target, expected="a path that is not one of the inputs",
                    howToFix="Write to another file; inputs are never modified.",
                )
