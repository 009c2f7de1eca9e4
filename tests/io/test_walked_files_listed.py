"""A link to nothing a folder's walk met is that walk's input, reported unreadable as it is read (the others read on);
named, it is refused before anything runs. What says which is the call (``expand_paths(..., listed=True)``, the read
stage's ``listed``, bound by the commands that walk a folder and hand its files on), not a list kept by the process."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import errors_of, run_replay

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.io.journals import expand_paths, journals_in

RUN = b'{"type":"run_started","runId":"a","seq":1,"timestamp":"2024-01-01T00:00:00Z","payload":{}}\n'


def test_a_walk_leaves_nothing_behind_for_the_next_call(tmp_path: Path) -> None:
    """Walking a folder that holds a link to nothing does not make the link a listed input of later calls: named
    afterwards, in the same process, it is refused (a process-wide set of walked links let it through)."""
    link = tmp_path / "b.jsonl"
    link.symlink_to("nowhere.jsonl")
    assert journals_in(str(tmp_path)) == [str(link)]
    with pytest.raises(ReplayError) as refused:
        expand_paths([str(link)])
    assert refused.value.code == "E_INPUT_PATH_NOT_FOUND"
    assert expand_paths([str(link)], listed=True) == [str(link)]


@pytest.mark.parametrize("command", [["report"], ["validate"], ["heal", "--in"]], ids=" ".join)
@pytest.mark.parametrize("others", [0, 1], ids=["alone", "beside-a-journal"])
def test_a_link_to_nothing_a_command_walked_is_reported_and_the_others_read(tmp_path: Path, command: list[str],
                                                                             others: int) -> None:
    """report, validate and heal --in walk the folder themselves and hand its files to the graph: the link is
    reported (E_INPUT_UNREADABLE, exit 1), not refused as a named one is, whether it is the folder's only journal
    (one graph over it) or one of several (a run over each)."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "b.jsonl").symlink_to("nowhere.jsonl")
    if others:
        (tmp_path / "in" / "a.jsonl").write_bytes(RUN)
    out = ["--out", "out"] if command[-1] == "--in" else []
    proc = run_replay(*command, "in", *out, cwd=tmp_path, process=True)
    assert proc.returncode == 1, proc.stderr
    assert [e["code"] for e in errors_of(proc.stderr)] == ["E_INPUT_UNREADABLE"]
    named = run_replay(*command, "in/b.jsonl", *(["--out", "out2"] if out else []), cwd=tmp_path)
    assert named.returncode == 2 and [e["code"] for e in errors_of(named.stderr)] == ["E_INPUT_PATH_NOT_FOUND"]
