"""The ``replay`` executable's entry point (``[project.scripts]`` in pyproject.toml).

It first notes the descriptors the process was given (0-2 and those its parent left open, ``3> res.txt``), before
anything of its own opens one (the event loop's socket pair): only those are written through in place when an output
names one (``/dev/fd/3``; ``engine.outputs.descriptor_of``). Then it sets the garbage collector for a command
(``engine.memory.tune_gc``) before the command line's modules load: with the interpreter's default thresholds,
collections keep scanning the objects of the ~300 modules while they load (~2 ms of every command). Then
``cli.app.main`` runs the command. While the command line's modules load (~0.1 s, longer on a loaded machine), a
Ctrl-C ends the process at once with 130, as it would a run, and nothing on stderr: a KeyboardInterrupt raised in
the middle of an import printed a traceback (exit 1), and one inside orjson's module setup crashed the interpreter
(exit 139). The handler it had is back before the command runs (its own interrupt handling takes over); Ctrl-C
ignored when replay started stays ignored.
"""

from __future__ import annotations

import os
import signal

from replay.pipeline.engine.memory import tune_gc


def _interrupted_while_loading(number: int, frame: object) -> None:
    os._exit(128 + number)  # (nothing is written yet: no output to leave whole, no stream to flush)


def _open_descriptors() -> frozenset[int]:
    """The descriptors open now (the listing's own, closed again once listed, is left out)."""
    try:
        listed = [int(name) for name in os.listdir("/dev/fd")]
    except (OSError, ValueError):
        from replay.pipeline.engine.outputs import STANDARD_DESCRIPTORS

        return STANDARD_DESCRIPTORS
    open_now = set()
    for fd in listed:
        try:
            os.fstat(fd)
        except OSError:
            continue
        open_now.add(fd)
    return frozenset(open_now)


def main() -> None:
    before = signal.getsignal(signal.SIGINT)  # (SIG_IGN when started with Ctrl-C ignored, `nohup ... &`: kept so)
    if before is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted_while_loading)
    given = _open_descriptors()
    tune_gc()
    from replay.pipeline.engine.outputs import note_given_descriptors

    note_given_descriptors(given)
    from replay.pipeline.cli.app import main as run_command

    signal.signal(signal.SIGINT, before)
    run_command()
