"""The parts of a run over many inputs that need no workers: partitions, input order, outcomes as values."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest
from conftest import errors_of, timeless
from hypothesis import given
from hypothesis import strategies as st

from replay.pipeline.engine.parallel import Work, in_order, partition, run_inputs
from replay.pipeline.engine.spec import bind, load_spec


@given(st.integers(0, 300), st.integers(1, 16), st.integers(1, 64))
def test_partition_is_contiguous_bounded_and_depends_only_on_its_arguments(n: int, workers: int, most: int) -> None:
    paths = [f"p{k}" for k in range(n)]
    chunks = partition(paths, workers, most)
    assert [p for _, ps in chunks for p in ps] == paths
    assert [i for i, _ in chunks] == list(range(len(chunks)))
    assert all(0 < len(ps) <= most for _, ps in chunks)
    assert partition(paths, workers, most) == chunks


@given(st.integers(1, 60), st.integers(1, 7), st.randoms())
def test_outcomes_come_out_in_input_order_whatever_order_tasks_finish_in(n: int, size: int, rnd: random.Random) -> None:
    from replay.pipeline.engine.parallel import Outcome

    paths = [f"p{k}" for k in range(n)]
    chunks = partition(paths, 1, size)
    finished = list(chunks)
    rnd.shuffle(finished)
    seen = []
    out = in_order(chunks, ((i, [Outcome(p) for p in ps]) for i, ps in finished), lambda i, o: seen.append(i))
    assert [o.path for o in out] == paths and sorted(seen) == [i for i, _ in chunks]


def test_a_task_keeps_each_inputs_stdout_and_diagnostics_and_turns_failures_into_values(tmp_path: Path) -> None:
    good, bad = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    good.write_bytes(b'{"seq":1,"timestamp":"2026-03-01T12:00:00Z","type":"run_started","runId":"a","payload":{}}\n')
    bad.write_bytes(b"not json\n")
    work = Work(bind(load_spec("validate"), set={}), inputs=3)
    outcomes = run_inputs(work, [str(good), str(bad), str(tmp_path / "gone.jsonl")])
    assert [o.errors for o in outcomes[:2]] == [0, 1] and outcomes[1].codes == {"E_JSONL_LINE_INVALID": 1}
    assert b'"valid":true' in outcomes[0].stdout and b'"valid":false' in outcomes[1].stdout
    assert b"E_JSONL_LINE_INVALID" in outcomes[1].stderr and errors_of(outcomes[0].stderr) == []  # (a warning: no end)
    assert outcomes[0].records == 2  # the source record (one input of three) and the event
    # an input gone since the command listed it is unreadable, that input's error (see the test below)
    assert outcomes[2].failure is None and outcomes[2].codes == {"E_INPUT_UNREADABLE": 1}


@pytest.mark.parametrize("spec", ["validate", "report"])
@pytest.mark.parametrize("url", [False, True], ids=["path", "file-url"])
def test_an_input_removed_after_the_command_listed_it_is_unreadable_and_the_others_go_on(tmp_path: Path, spec: str,
                                                                                          url: bool) -> None:
    """validate and report ran each input's graph with the input checked again as a command-line argument: one removed
    meanwhile was refused (E_INPUT_PATH_NOT_FOUND, exit 2), which ended the command there, every input after it left
    unread (heal --in, and one run over them all, said E_INPUT_UNREADABLE for it, exit 1, and went on)."""
    paths = _journals(tmp_path, 3)
    if url:
        paths = [f"file://{p}" for p in paths]
    Path(paths[1].removeprefix("file://")).unlink()
    outcomes = run_inputs(Work(bind(load_spec(spec), set={}), inputs=3), paths)
    assert [o.failure for o in outcomes] == [None, None, None]
    [error] = [orjson.loads(line)["error"] for line in outcomes[1].stderr.splitlines()]
    assert (error["code"], error["source"], error["received"]) == ("E_INPUT_UNREADABLE", paths[1], "No such file or directory")
    assert error["message"] == f"cannot read {paths[1]!r}: No such file or directory"
    assert "removed meanwhile" in error["howToFix"]
    assert outcomes[2].codes == {"E_JSONL_LINE_INVALID": 1}  # the input after it was read


def test_a_task_builds_its_graph_once_and_runs_it_for_each_input_as_if_alone(tmp_path: Path, monkeypatch) -> None:
    from replay.pipeline.engine import config

    paths = []
    for k, body in enumerate([b'{"type":"tool_start","runId":"a","payload":{}}\n', b"not json\n",
                              b'{"seq":9,"timestamp":"2026-03-01T12:00:00Z","type":"run_started","runId":"c","payload":{}}\n']):
        path = tmp_path / f"j{k}.jsonl"
        path.write_bytes(body)
        paths.append(str(path))
    work = Work(bind(load_spec("heal"), set={}), inputs=3)
    alone = [run_inputs(work, [path])[0] for path in paths]
    builds = []
    real = config.graph_from_config
    monkeypatch.setattr(config, "graph_from_config", lambda *a, **k: builds.append(k["paths"]) or real(*a, **k))
    together = run_inputs(work, paths)
    assert builds == [[paths[0]]]
    assert [(o.path, o.stdout, o.stderr, o.errors, o.codes, o.records) for o in together] == \
        [(o.path, o.stdout, o.stderr, o.errors, o.codes, o.records) for o in alone]
    assert b'"runId":"c"' in together[2].stdout and b'"runId":"a"' in together[0].stdout


def _journals(tmp_path: Path, count: int) -> list[str]:
    paths = []
    for k in range(count):
        path = tmp_path / f"j{k}.jsonl"
        path.write_bytes(b'{"seq":1,"timestamp":"2026-03-01T12:00:00Z","type":"run_started","runId":"r%d","payload":{}}\n'
                         b"not json\n" % k)
        paths.append(str(path))
    return paths


def test_tasks_a_killed_worker_process_was_running_run_again_in_a_new_pool(tmp_path: Path) -> None:
    """A worker process killed mid-run (the OOM killer) broke the pool, and the command with it (E_UNHANDLED,
    BrokenProcessPool): the tasks not done run again in a new pool, as Dask runs again a dead worker's task."""
    from scale_support import DyingFiles

    from replay.pipeline.engine.parallel import local_tasks

    paths = _journals(tmp_path, 6)
    chunks = partition(paths, 2, 1)
    work = Work(bind(load_spec("validate"), set={}), inputs=len(paths))
    dying = Work(work.doc, inputs=len(paths), files=DyingFiles(str(tmp_path / "tally")))
    alone = [o for _, task in chunks for o in run_inputs(work, task)]
    again = list(in_order(chunks, local_tasks(dying, chunks, 2)))
    assert [(o.path, o.stdout, timeless(o.stderr), o.codes) for o in again] == \
        [(o.path, o.stdout, timeless(o.stderr), o.codes) for o in alone]
    assert (tmp_path / "tally").read_text().startswith("x")  # (a worker was killed)


def test_worker_processes_that_keep_dying_fail_the_command_with_e_worker_lost(tmp_path: Path, monkeypatch) -> None:
    from scale_support import DyingFiles

    from replay.pipeline.engine import parallel
    from replay.pipeline.engine.errors import ReplayError
    from replay.pipeline.engine.parallel import local_tasks

    monkeypatch.setattr(parallel, "WORKER_DEATHS", 1)  # (each death costs a new pool's start)

    paths = _journals(tmp_path, 4)
    work = Work(bind(load_spec("validate"), set={}), inputs=len(paths), files=DyingFiles(str(tmp_path / "tally"), -1))
    with pytest.raises(ReplayError) as failed:
        list(local_tasks(work, partition(paths, 2, 1), 2))
    assert failed.value.code == "E_WORKER_LOST" and failed.value.exit_code == 1
    assert "died 2 times" in str(failed.value) and repr(paths[0]) in str(failed.value)
