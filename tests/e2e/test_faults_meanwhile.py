"""The output folder of `heal --in --out` (and `incident import DIR --out`) made by someone else while the command ran (before its staged folder is
renamed into place): E_OUTPUT_WRITE_FAILED naming OUT (exit 1), never E_UNHANDLED or the staging folder; their
folder is left as it was, the staged one goes, and stdout names no file (none was written)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, FIXTURES, errors_of

from replay.pipeline.io.journals import is_temp_name

APPEAR_AT = Path(__file__).with_name("appear_at.py")


@pytest.mark.parametrize("command", ["heal", "incident import"])
def test_an_out_folder_that_appears_while_the_command_runs_is_an_output_error_naming_it(tmp_path: Path, command: str):
    """`incident import DIR --out OUT` was E_UNHANDLED (its partial folder's rename was not the output error heal's
    was: both are ``staging.finish_partial`` now)."""
    out = tmp_path / "healed"
    if command == "heal":
        args = ["heal", "--in", str(FIXTURES / "artifacts" / "valid"), "--out", str(out)]
    else:
        (tmp_path / "exports").mkdir()
        shutil.copy(EXAMPLES / "incidents" / "refund-export.json", tmp_path / "exports")
        args = ["incident", "import", str(tmp_path / "exports"), "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, str(APPEAR_AT), str(out), *args, "--workers", "1"], cwd=tmp_path, env=env,
                          capture_output=True, timeout=120, check=False)
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr, proc.stderr
    errors = errors_of(proc.stderr)
    assert [(e["code"], e.get("path"), e.get("received", "").split(":")[0]) for e in errors] == \
        [("E_OUTPUT_WRITE_FAILED", str(out), "ENOTEMPTY")], errors
    if command == "heal":
        assert proc.stdout == b""  # (heal holds its lines until the folder they name is in place)
    assert os.listdir(out) == ["theirs.txt"]
    assert not [name for name in os.listdir(tmp_path) if is_temp_name(name)]
