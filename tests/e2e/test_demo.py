"""`make demo` runs examples/demo.sh: it must keep working end to end, as a new user first sees it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import EXAMPLES


def test_demo_script_captures_heals_validates_and_reports(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(tmp_path)}
    proc = subprocess.run(["sh", str(EXAMPLES / "demo.sh")], capture_output=True, env=env, timeout=300)
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert out.count('"status":"ok"') >= 2 and '"error":"E_RUNNER_EXIT_NON_ZERO"' in out
    assert "9 repairs:" in out  # the broken runner's trace, healed: one per line of its heal log
    assert "replay report: 3 runs (2 ok, 1 error)" in out
    assert '"$record":"heal","runId":"run_42","repairs":12' in out
    assert list(tmp_path.iterdir()) == []  # the scratch folder is removed
