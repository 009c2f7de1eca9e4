"""How the garbage collector is set for a process that runs graphs: the CLI, a worker process, a Dask worker."""

from __future__ import annotations

import gc

_tuned = False


def tune_gc() -> None:
    """Once per process. Parsed events are acyclic and die young; the default gen-0 threshold (700 allocations)
    makes the collector scan every batch several times over. Collect rarely, and never scan the objects of the
    interpreter's start-up again."""
    global _tuned
    if _tuned:
        return
    _tuned = True
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)


def spare_teardown() -> None:
    """When the command is done and its process is about to exit: freeze every object, so that the interpreter's
    teardown does not scan them all (twice) for reference cycles to free. The process's end frees them anyway; the
    scans cost every command several milliseconds (~300 modules' objects)."""
    gc.freeze()
