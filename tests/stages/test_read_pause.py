"""read marks a batch ``pause`` only where a live input (a pipe, a socket, a terminal) may have nothing more for now;
a file's short read is its end. The screen lets a paused run go the slow way, so a wrong mark costs the fast lane."""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
from engine_stages import Probe

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.executor import ErrorPort, run_graph
from replay.pipeline.engine.graph import Graph
from replay.pipeline.engine.stage import Sink
from replay.pipeline.io.journals import expand_paths
from replay.stages.read import ReadJournal

LINE = b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r0","payload":{}}\n'


class Marks(Probe, Sink):
    """A probe (the test reads what it saw, so it runs as itself): each batch's length and pause mark."""

    name = "marks"
    accepts_raw = True  # it looks at the batches as read sends them

    def __init__(self, seen_one: threading.Event | None = None) -> None:
        super().__init__()
        self.seen: list[tuple[int, bool]] = []
        self.seen_one = seen_one  # set once a batch came (another thread may wait for it)

    async def consume(self, batches: AsyncIterator[Batch]) -> None:
        async for batch in batches:
            self.seen.append((len(batch), batch.pause))
            if self.seen_one is not None:
                self.seen_one.set()


def marks_of(path: str, seen_one: threading.Event | None = None) -> list[tuple[int, bool]]:
    sink = Marks(seen_one)
    anyio.run(lambda: run_graph(Graph.chain(ReadJournal(paths=[path]), sink), error_port=ErrorPort(write=print)))
    return sink.seen


def test_a_small_file_is_read_whole_and_never_paused(tmp_path: Path):
    path = tmp_path / "small.jsonl"
    path.write_bytes(LINE * 3)
    assert marks_of(str(path)) == [(3, False)]  # (it was marked paused: a read shorter than a chunk)


def test_a_pipe_that_waits_is_paused_where_it_waits(tmp_path: Path):
    fifo = tmp_path / "live"
    os.mkfifo(fifo)

    seen_one = threading.Event()

    def writer() -> None:
        with open(fifo, "wb", buffering=0) as handle:
            handle.write(LINE * 2)
            seen_one.wait(timeout=60)  # the writer has nothing more until read sent what it had (a hang: 60 s at most)
            handle.write(LINE)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        seen = marks_of(str(fifo), seen_one)
    finally:
        thread.join()
    assert seen[0] == (2, True) and sum(n for n, _ in seen) == 3


def test_a_folder_is_listed_once_per_run_and_read_as_listed(tmp_path: Path, monkeypatch):
    """The preflight asks read which files it reads; the read reads that list (the folder is not walked twice)."""
    from replay.stages import read

    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_bytes(LINE)
    walks = []
    monkeypatch.setattr(read, "expand_paths", lambda paths, **how: walks.append(paths) or expand_paths(paths, **how))
    assert marks_of(str(tmp_path)) == [(1, False), (1, False), (1, False), (1, False)]  # a source record, a line, twice
    assert walks == [[str(tmp_path)]]

