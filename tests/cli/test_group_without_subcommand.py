"""A command group given no subcommand (`replay`, `replay incident`, `replay golden`, `replay --log-level info`) shows
its help on stdout and exits 0, as its --help does (as docker and kubectl do): every group the same, not one the help and
the others their whole help as one JSON error (E_USAGE_INVALID, exit 2). Real processes, a real terminal on stdin
(`replay` alone reads a piped prompt)."""

from __future__ import annotations

import os
import subprocess

import pytest
from conftest import REPLAY


def _on_a_terminal(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    main, terminal = os.openpty()
    try:
        return subprocess.run([REPLAY, *args], stdin=terminal, capture_output=True, timeout=60, check=False)
    finally:
        os.close(terminal)
        os.close(main)


@pytest.mark.parametrize(("args", "group"), [([], []), (["incident"], ["incident"]), (["golden"], ["golden"]),
                                             (["--log-level", "info"], []), (["--max-errors", "3"], [])], ids=str)
def test_a_group_given_no_subcommand_shows_its_help(args: list[str], group: list[str]) -> None:
    done = _on_a_terminal(args)
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout == _on_a_terminal([*group, "--help"]).stdout
    assert done.stdout.startswith(f"Usage: {' '.join(['replay', *group])} [OPTIONS] COMMAND".encode())
