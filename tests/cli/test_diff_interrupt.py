"""Ctrl-C stops `replay diff` while it compares: the diff stage lets the interrupt in (a real process, a real signal).

The diff is computed in one go once both runs are read, in the event loop's thread, where cancellation cannot reach
it: it must check in, or the interrupt waits for the whole comparison (E_STAGE_NOT_STOPPED after the grace, the
process ended hard). The test's timeout bounds a hang; nothing here asserts how fast replay is.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

from conftest import REPLAY, errors_of, stopped

HANG_S = 30


def write_run(path: Path, side: str, records: int = 2000, fields: int = 300, last_twice: bool = False) -> None:
    """A run whose every record differs from the other side's in each of ``fields`` fields (a long comparison)."""
    lines = [json.dumps({"$record": "run", "runId": "r", "prompt": "p", "status": "ok"})]
    lines += [json.dumps({"seq": k + 1, "type": "step", "runId": "r",
                          "payload": {f"k{x}": f"{side}{k}" for x in range(fields)}}) for k in range(records)]
    if last_twice:  # (a key written twice: the warning on stderr says diff has taken the last record)
        lines[-1] = lines[-1][:-1] + ', "type": "step"}'
    path.write_text("\n".join(lines) + "\n")


def test_ctrl_c_while_diff_compares_ends_it_with_130_and_no_stage_left_running(tmp_path: Path):
    write_run(tmp_path / "a.jsonl", "a")
    write_run(tmp_path / "b.jsonl", "b", last_twice=True)
    proc = subprocess.Popen([REPLAY, "diff", "a.jsonl", "b.jsonl", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp_path)
    assert proc.stderr is not None
    line = proc.stderr.readline()  # (a readiness wait: every record is read, the comparison begins)
    assert b"E_JSON_DUPLICATE_KEY" in line, line
    returncode, out, err = stopped(proc, signal.SIGINT, hang_s=HANG_S)
    assert returncode == 130, err
    assert out == b""  # (interrupted: no diff, not part of one)
    assert "E_STAGE_NOT_STOPPED" not in [e["code"] for e in errors_of(err)]
    assert b"Traceback" not in err
