"""A Ctrl-C during a Dask run quiets distributed's and tornado's loggers before the KeyboardInterrupt is raised: a
callback distributed leaves on its loop then logs no traceback on stderr, which keeps to JSON lines."""

from __future__ import annotations

import logging
import os
import signal

import pytest

from replay.pipeline.io.dask_backend import _distributed_loggers, _quiet_once_interrupted


def test_the_loggers_are_quiet_by_the_time_the_interrupt_is_raised():
    tornado = logging.getLogger("tornado.application")
    levels = {log: log.level for log in _distributed_loggers()}
    seen: list[int] = []
    try:
        with pytest.raises(KeyboardInterrupt), _quiet_once_interrupted():
            try:
                os.kill(os.getpid(), signal.SIGINT)  # (its handler runs at the next instruction, in this thread)
            except KeyboardInterrupt:
                seen.append(tornado.getEffectiveLevel())
                raise
        assert seen == [logging.CRITICAL + 1]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # (the handler before it, again)
    finally:
        for log, level in levels.items():
            log.setLevel(level)


def test_without_an_interrupt_the_loggers_are_left_as_they_were():
    with _quiet_once_interrupted():
        pass
    assert logging.getLogger("tornado.application").getEffectiveLevel() <= logging.ERROR
