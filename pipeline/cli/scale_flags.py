"""The flags of a command over many inputs (--workers, --engine, --scheduler, --quiet) and the ``Scale`` they make.

Kept apart from ``cli/scale.py`` (the loop over the inputs and its worker backends) so that declaring the flags
loads click only: a command imports the loop where it runs over many inputs, and one that streams a single input
through one graph (``replay heal FILE``) never loads the parallel machinery.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

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


def scale_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--workers, --engine, --scheduler and --quiet (the command builds ``Scale(workers, engine, scheduler, quiet)``)."""
    options = [
        click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
                     help="Process journals in N parallel workers, each running the command's graph "
                          "[default: the number of cores; small jobs run in this process]."),
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
