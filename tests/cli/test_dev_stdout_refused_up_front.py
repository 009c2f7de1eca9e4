"""``--out /dev/stdout`` (descriptor 1) with a closed (``>&-``) or read-only (``1</dev/null``) stdout is refused
before anything runs, exit 2, as ``--out -`` is: it ran, then failed EBADF, exit 1."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import EXAMPLES, REPLAY

JOURNAL = EXAMPLES / "journals" / "two-runs.jsonl"


@pytest.mark.parametrize("redirect", [">&-", "1</dev/null"])
@pytest.mark.parametrize("out", ["-", "/dev/stdout", "/dev/fd/1"])
def test_an_unwritable_stdout_named_as_out_is_refused(tmp_path: Path, out: str, redirect: str) -> None:
    done = subprocess.run(["sh", "-c", f'"$R" write "$J" --out {out} {redirect}'], cwd=tmp_path, capture_output=True,
                          timeout=120, env={"R": REPLAY, "J": str(JOURNAL), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2
    assert json.loads(done.stderr.decode().strip().splitlines()[-1])["error"]["code"] == "E_OUTPUT_UNWRITABLE"
