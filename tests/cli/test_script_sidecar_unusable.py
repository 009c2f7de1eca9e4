"""The default override sidecar beside a session that is there but no file (a folder, a link to nothing) is refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.session import OVERRIDE_FILE, load_session_groups

ECHO = EXAMPLES / "echo-agent" / "scenarios" / "echo" / "session.jsonl"


def _session_beside(tmp_path: Path, make: str) -> Path:
    folder = tmp_path / make
    folder.mkdir()
    shutil.copy(ECHO, folder / "session.jsonl")
    sidecar = folder / OVERRIDE_FILE
    if make == "folder":
        sidecar.mkdir()
    elif make == "dangling":
        sidecar.symlink_to(tmp_path / "nothing-here")
    return folder / "session.jsonl"


@pytest.mark.parametrize(("make", "code"), [("folder", "E_INPUT_UNREADABLE"), ("dangling", "E_INPUT_PATH_NOT_FOUND")])
def test_a_sidecar_that_is_no_file_is_refused_as_the_explicit_override_is(tmp_path: Path, make: str, code: str):
    """`replay script s/session.jsonl` with a folder (or a link to nothing) named replay.override.json beside it made
    the script without the override and without a word (exit 0): it is refused now, with the code `--override` of the
    same path gets, by the command, by `replay run` of its printed graph and by the Python API alike."""
    session = _session_beside(tmp_path, make)
    sidecar = str(session.parent / OVERRIDE_FILE)
    explicit = run_replay("script", str(session), "--override", sidecar)
    assert (explicit.returncode, explicit.stdout) == (2, b"")
    [given] = errors_of(explicit.stderr)
    spec = tmp_path / "script.toml"
    spec.write_bytes(run_replay("stages", "--graph", "script").stdout)
    said = []
    for args in (["script", str(session)], ["run", str(spec), str(session)]):
        done = run_replay(*args)
        assert (done.returncode, done.stdout) == (2, b""), (args, done.stderr)
        [error] = errors_of(done.stderr)
        said.append(error)
    assert said[0] == said[1]
    error = said[0]
    assert error["code"] == given["code"] == code and error["message"] == given["message"]
    assert error["source" if make == "folder" else "path"] == sidecar and "--no-override" in error["howToFix"]
    with pytest.raises(ReplayError) as raised:
        load_session_groups(session)
    assert raised.value.code == code and "use_sidecar=False" in raised.value.body["howToFix"]
    # Without the sidecar, asked for, the session is scripted as ever.
    assert run_replay("script", str(session), "--no-override").returncode == 0
    assert load_session_groups(session, use_sidecar=False)


def test_no_sidecar_at_all_is_still_no_news(tmp_path: Path):
    session = _session_beside(tmp_path, "none")
    done = run_replay("script", str(session))
    assert (done.returncode, done.stderr) == (0, b"")
