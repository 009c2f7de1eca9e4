"""`replay ARGS` run in this interpreter: the CLI entry function with fds 0-2 on temporary files (the tests and the fuzz harness)."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path


def run_cli_in_process(args: list[str], input: bytes = b"", cwd: str | Path | None = None,
                       env: dict[str, str] | None = None) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) of ``replay ARGS`` with ``input`` on stdin. The code reads and writes real file
    descriptors, as the installed command does; fds, ``sys`` streams, the environment and the working folder are
    put back afterwards."""
    from replay.pipeline.cli.app import run_cli

    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr:
        fin.write(input)
        fin.seek(0)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        saved_fds = {fd: os.dup(fd) for fd in (0, 1, 2)}
        saved_sys = (sys.stdin, sys.stdout, sys.stderr)
        saved_env, saved_cwd = dict(os.environ), os.getcwd()
        try:
            for fd, target in ((0, fin), (1, fout), (2, ferr)):
                os.dup2(target.fileno(), fd)
            sys.stdin = open(0, closefd=False)  # noqa: SIM115 - closed below, after the run
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
            os.environ.update(env or {})
            if cwd is not None:
                os.chdir(cwd)
            code = run_cli(args)
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            for stream in (sys.stdin, sys.stdout, sys.stderr):
                stream.close()
            sys.stdin, sys.stdout, sys.stderr = saved_sys
            for fd, dup in saved_fds.items():
                os.dup2(dup, fd)
                os.close(dup)
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
        fout.seek(0)
        ferr.seek(0)
        return code, fout.read(), ferr.read()
