"""``names_own_descriptor`` (inputs a worker cannot read) and ``engine.outputs.named_descriptor`` (outputs written
in place) are one definition of "this path names one of this process's descriptors": they disagreed on /dev/stdout,
/dev/stderr, /proc/thread-self/fd/N and /proc/<this pid>/fd/N."""

from __future__ import annotations

import os

import pytest

from replay.pipeline.io.journals import names_own_descriptor


@pytest.mark.parametrize("path", ["/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/fd/3", "/proc/self/fd/0",
                                  "/proc/thread-self/fd/1", "/proc/PID/fd/2"])
def test_a_descriptors_name_is_this_processs_own(path: str) -> None:
    path = path.replace("PID", str(os.getpid()))
    assert names_own_descriptor(path)


@pytest.mark.parametrize("path", ["run.jsonl", "/dev/null", "/proc/1/fd/0", "s3://bucket/run.jsonl"])
def test_other_paths_are_not(path: str) -> None:
    assert not names_own_descriptor(path)
