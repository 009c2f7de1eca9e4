"""A failing run never commits partial outputs: consumers are cancelled before channels close."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from conftest import errors_of, run_replay

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import StrictAbort
from replay.pipeline.engine.executor import StageFailed, run_graph
from replay.pipeline.engine.graph import Graph
from replay.pipeline.engine.stage import Source, Transform
from replay.stages.write import WriteJsonl


class Numbers(Source):
    name = "numbers"

    async def produce(self, out):
        for k in range(5):
            await out.send(Batch.of([{"n": k * 10 + i} for i in range(10)]))


class Explode(Transform):
    name = "explode"

    def __call__(self, batch):
        if batch.events[0]["n"] >= 30:
            raise ValueError("boom")
        return batch


class ComplainOnce(Transform):
    name = "complain"

    def __call__(self, batch):
        if batch.events[0]["n"] == 20:
            self.error("E_EVENT_INVALID", "not allowed", batch, 0)
        return batch


@pytest.mark.anyio
async def test_stage_failure_leaves_no_output_file(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    graph = Graph.chain(Numbers(), Explode(), WriteJsonl(path=str(target)))
    with pytest.raises(StageFailed) as info:
        await run_graph(graph)
    assert info.value.stage_id == "explode"
    assert os.listdir(tmp_path) == []


class GivesBackLazily(Transform):
    """Returns its batches lazily (as walk gives back held records from a spool); taking the second one fails."""
    name = "lazy"

    def __call__(self, batch):
        def parts():
            yield batch
            raise ValueError("the spool could not be read back")
        return [parts()]


class PassOn(Transform):
    name = "pass_on"

    def __call__(self, batch):
        return batch


@pytest.mark.anyio
async def test_a_failure_taking_a_batch_given_back_lazily_names_the_stage_that_gave_it(tmp_path: Path) -> None:
    """(It named the stage after it in the segment: the last one a batch went through.)"""
    graph = Graph.chain(Numbers(), GivesBackLazily(), PassOn(), WriteJsonl(path=str(tmp_path / "out.jsonl")))
    with pytest.raises(StageFailed) as info:
        await run_graph(graph)
    assert info.value.stage_id == "lazy" and "spool" in str(info.value)


@pytest.mark.anyio
async def test_strict_abort_leaves_no_output_file(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    graph = Graph.chain(Numbers(), ComplainOnce(), WriteJsonl(path=str(target)))
    seen: list[bytes] = []
    from replay.pipeline.engine.executor import ErrorPort

    with pytest.raises(StrictAbort):
        await run_graph(graph, error_port=ErrorPort(strict=True, write=seen.append))
    assert os.listdir(tmp_path) == [] and len(seen) == 1


@pytest.mark.anyio
async def test_without_strict_the_error_is_counted_and_the_file_is_whole(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    graph = Graph.chain(Numbers(), ComplainOnce(), WriteJsonl(path=str(target)))
    from replay.pipeline.engine.executor import ErrorPort

    result = await run_graph(graph, error_port=ErrorPort(write=lambda _: None))
    assert result.errors == 1 and len(target.read_bytes().splitlines()) == 50


def test_strict_run_through_the_cli_commits_nothing(tmp_path: Path) -> None:
    out = tmp_path / "result" / "out.jsonl"
    config = tmp_path / "p.toml"
    config.write_text(f'[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
                      f'[stages.out]\ntype = "write"\npath = "{out}"\ninputs = ["parse"]\n')
    proc = run_replay("run", "--strict", str(config), input=b'{"a":1}\nbad\n{"b":2}\n')
    assert proc.returncode == 1 and errors_of(proc.stderr)[0]["code"] == "E_JSONL_LINE_INVALID"
    # (no temp file left, and no folder made for a file that was never begun)
    assert not out.exists() and (not out.parent.exists() or [p.name for p in out.parent.iterdir()] == [])


def test_output_files_get_the_usual_permissions(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    config = tmp_path / "p.toml"
    config.write_text(f'chain = ["parse", {{type = "write", path = "{out}"}}]\n')
    old = os.umask(0o022)
    try:
        proc = run_replay("run", str(config), input=b'{"a":1}\n')
    finally:
        os.umask(old)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
