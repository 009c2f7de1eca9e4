"""The flags of a command over many inputs (--workers, --engine, --scheduler, --quiet) and the ``Scale`` they make.

Kept apart from ``cli/scale.py`` (the loop over the inputs and its worker backends) so that declaring the flags
loads click only: a command imports the loop where it runs over many inputs, and one that streams a single input
through one graph (``replay heal FILE``) never loads the parallel machinery.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from replay.pipeline.model.run_cuts import PIECE_BYTES

ENGINES = ("local", "dask")


@dataclass(frozen=True)
class Scale:
    """How a command spreads its inputs: worker count (None: decide), engine, scheduler, progress bar."""

    workers: int | None = None
    engine: str = "local"
    scheduler: str | None = None
    quiet: bool = False

    @property
    def asked(self) -> bool:
        """Did the user ask for parallel runs (rather than take the default)?"""
        return self.workers is not None or self.engine == "dask"


def check_scale(engine: str, scheduler: str | None) -> None:
    """Refuse (exit 2, before the command does anything) a ``--scheduler`` without ``--engine dask`` (it would be
    ignored: the job would run on this machine), and with ``--engine dask`` a scheduler address (``--scheduler``,
    else ``DASK_SCHEDULER_ADDRESS``) that is no address (``io.dask_backend.check_scheduler``)."""
    if scheduler is not None and engine != "dask":
        from replay.pipeline.engine.errors import ReplayError

        raise ReplayError("E_USAGE_INVALID", f"--scheduler is the Dask cluster of --engine dask, not of --engine {engine}",
                          path="--scheduler", received=["--scheduler", scheduler], expected="--engine dask",
                          howToFix="Add --engine dask to run on that cluster, or leave --scheduler out to run on this "
                                   "machine.", example=f"--engine dask --scheduler {scheduler}")
    if engine == "dask":
        from replay.pipeline.io.dask_backend import check_scheduler

        check_scheduler(scheduler)


def scale_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--workers, --engine, --scheduler and --quiet (the command builds ``Scale(workers, engine, scheduler, quiet)``),
    their combination checked before the command runs (``check_scale``)."""

    body = command

    @functools.wraps(body)
    def checked(*args: Any, **kwargs: Any) -> Any:
        check_scale(kwargs["engine"], kwargs["scheduler"])
        return body(*args, **kwargs)

    command = checked
    options = [
        click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
                     help="Process journals in N parallel workers, each running the command's graph; one journal "
                          f"(validate, heal, report) is cut at run boundaries into up to N pieces, one for each "
                          f"{PIECE_BYTES >> 20} MiB, run at once [default: the number of cores; small jobs run in "
                          "this process]."),
        click.option("--engine", type=click.Choice(ENGINES), default="local", show_default=True,
                     help="local: worker processes on this machine; dask: tasks on a Dask cluster (extra `dask`)."),
        click.option("--scheduler", metavar="ADDRESS", default=None,
                     help="Dask scheduler address (tcp://HOST:8786) for --engine dask [default: "
                          "DASK_SCHEDULER_ADDRESS, else a local cluster of --workers processes]."),
        click.option("--quiet", "-q", is_flag=True, help="No progress bar (it is shown only when stderr is a terminal)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command
