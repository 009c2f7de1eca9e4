"""``replay read -`` on a terminal with nothing typed ends at one Ctrl-D: the 2-byte gzip sniff got the end, and the
input was read again (a second Ctrl-D was needed). A real pty, a real process."""

from __future__ import annotations

import os
import subprocess

from conftest import REPLAY


def test_one_ctrl_d_ends_an_empty_terminal_input() -> None:
    main, terminal = os.openpty()
    try:
        proc = subprocess.Popen([REPLAY, "read", "-"], stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            os.write(main, b"\x04")  # one end of input, on an empty line (the pty is in canonical mode)
            out, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    finally:
        os.close(terminal)
        os.close(main)
    assert proc.returncode == 0, err
    assert out == b""
