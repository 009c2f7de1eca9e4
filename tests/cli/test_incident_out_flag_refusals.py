"""An --out that cannot be an output folder (under a file, a file itself, a used folder) is refused naming the flag,
`"path": "--out"`, as every flag refusal does: by `incident import` (one export or a folder of them), and `capture`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay

EXPORT = EXAMPLES / "incidents" / "refund-export.json"


@pytest.mark.parametrize(("out", "code"), [("afile/x", "E_OUTPUT_UNWRITABLE"), ("afile", "E_INCIDENT_OUTPUT_NOT_EMPTY"),
                                           ("used", "E_INCIDENT_OUTPUT_NOT_EMPTY")])
@pytest.mark.parametrize("many", [False, True])
def test_incident_import_names_the_out_flag(tmp_path: Path, out: str, code: str, many: bool) -> None:
    (tmp_path / "afile").write_bytes(b"")
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "z").write_bytes(b"")
    (tmp_path / "exports").mkdir()
    shutil.copy(EXPORT, tmp_path / "exports")
    done = run_replay("incident", "import", "exports" if many else str(EXPORT), "--out", out, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, b""), done.stderr
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"]) == (code, "--out"), error
    assert repr(out) in error["message"]  # (the folder it is, in the message)


def test_capture_names_the_out_flag_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "afile").write_bytes(b"")
    done = run_replay("capture", "--runner", str(EXAMPLES / "runners" / "broken_trace_runner.py"), "--out", "afile/x",
                      "hello", cwd=tmp_path)
    assert done.returncode == 2
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["path"]) == ("E_OUTPUT_UNWRITABLE", "--out"), error
