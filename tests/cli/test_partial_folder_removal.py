"""The partial folder an interrupted run made goes whole, even when Ctrl-C is pressed again while it goes: a real
SIGINT, raised right as its removal starts (an audit hook on ``shutil.rmtree``: no mock), cut the removal short and
left the folder. Now further interrupts pass while it is removed; the run still ends as interrupted."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from replay.pipeline.cli.scale import filling
from replay.pipeline.engine import interrupts

_armed: list[str] = []  # the folder whose removal gets a Ctrl-C (audit hooks stay for the process: armed per test)


def _ctrl_c_as_it_is_removed(event: str, args: tuple) -> None:
    if event == "shutil.rmtree" and _armed and str(args[0]) == _armed[0]:
        _armed.clear()
        signal.raise_signal(signal.SIGINT)  # (its handler runs at once, in this thread)


sys.addaudithook(_ctrl_c_as_it_is_removed)


def test_ctrl_c_pressed_again_while_the_partial_folder_goes_does_not_leave_it(tmp_path: Path) -> None:
    target, work_dir = tmp_path / "out", tmp_path / ".out.partial.replay.tmp"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt), filling(work_dir, target):
        (work_dir / "nested").mkdir()
        (work_dir / "nested" / "a.healed.jsonl").write_bytes(b"{}\n")
        _armed.append(str(work_dir))
        raise KeyboardInterrupt  # the first Ctrl-C
    assert not _armed  # (the second came)
    assert sorted(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_interrupts_let_pass_only_for_the_block_and_an_ignored_one_stays_ignored() -> None:
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with interrupts.let_pass():
            signal.raise_signal(signal.SIGINT)  # nothing happens
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGHUP, previous)
