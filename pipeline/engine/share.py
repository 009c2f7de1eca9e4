"""A graph run that is one share of a bigger command: where its stdout goes, how many inputs the command has.

A command over many inputs (``heal --in DIR`` with ``--workers``, a Dask task) runs its graph once
per input. Each such run keeps what its sinks print on stdout in a buffer, so the command prints
every input's output in input order, and knows how many inputs the whole command reads, so ``read``
marks each input's records with a source record exactly as one run over all of them would. Both are
context variables: per thread and per task, so runs side by side in threads keep apart.
The sinks' writers (``io.fdio.stdout_writer``, ``io.fdio.write_stdout``) look the buffer up.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_CAPTURED: ContextVar[bytearray | None] = ContextVar("replay_stdout_capture", default=None)
_INPUTS: ContextVar[int] = ContextVar("replay_command_inputs", default=0)


@contextmanager
def one_share(command_inputs: int) -> Iterator[bytearray]:
    """Meanwhile, what sinks print on stdout goes into the buffer yielded, and the run knows it is one
    input of ``command_inputs``."""
    buffer = bytearray()
    captured, inputs = _CAPTURED.set(buffer), _INPUTS.set(command_inputs)
    try:
        yield buffer
    finally:
        _CAPTURED.reset(captured)
        _INPUTS.reset(inputs)


def stdout_capture() -> bytearray | None:
    """The buffer this run's stdout goes to, or None for the process's stdout."""
    return _CAPTURED.get()


def command_inputs() -> int:
    """How many inputs the command this run is a share of reads (0: this run is the whole command)."""
    return _INPUTS.get()
