"""`replay heal --log` of a journal with records pretty-printed in many runs: the same log by file, by pipe and in
pieces (--workers 2, small REPLAY_PIECE_BYTES), run by run (found by a tester: the joins of a read came before the
repairs of every run in it, so the order followed where the reads and the pieces' cuts fell)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from conftest import run_replay

RUNS = 900  # (~700 kB: several of read's 256 KiB blocks, and pieces)


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six events a run; every 25th run has a record pretty-printed, every 7th a `user` type (an alias heal logs)."""
    lines = []
    for r in range(RUNS):
        for seq, kind in enumerate(["run_started", "user_message", "tool_called", "tool_completed", "assistant_message",
                                    "run_completed"], 1):
            payload = {"callId": "c1", "output": "x" * 100} if kind.startswith("tool_") else {}
            event = {"seq": seq, "timestamp": "2026-03-01T12:00:00Z", "runId": f"run_{r:05}",
                     "type": "user" if r % 7 == 0 and kind == "user_message" else kind, "payload": payload}
            lines.append(json.dumps(event, indent=2) if r % 25 == 0 and seq == 4 else json.dumps(event, separators=(",", ":")))
    path = tmp_path_factory.mktemp("joins") / "j.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def healed(journal: Path, log: Path, *args: str, env: dict[str, str] | None = None, piped: bool = False) -> tuple[bytes, bytes]:
    """heal's stdout and its log (--log), run as a real process; ``piped``: the journal on stdin, a pipe."""
    given = () if piped else (str(journal),)
    run = run_replay("--log-level", "info", "heal", *given, "--log", str(log), *args, env=env, process=True,
                     input=journal.read_bytes() if piped else None)
    assert run.returncode == 0, run.stderr
    return run.stdout, log.read_bytes()


@pytest.fixture(scope="module")
def by_file(journal: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes]:
    return healed(journal, tmp_path_factory.mktemp("one") / "one.log", "--workers", "1")


def test_the_log_goes_run_by_run_with_each_run_s_join_first(by_file: tuple[bytes, bytes]):
    log = [orjson.loads(line) for line in by_file[1].splitlines()]
    ids = [entry["runId"] for entry in log]
    assert ids == sorted(ids)  # each run's lines together, the runs in the order they come
    assert [(e["rule"], e["runId"]) for e in log[:3]] == [
        ("join_split_records", "run_00000"), ("alias", "run_00000"), ("alias", "run_00007")]
    assert sum(e["rule"] == "join_split_records" for e in log) == len(range(0, RUNS, 25))


def test_a_pipe_logs_what_the_file_logs(journal: Path, tmp_path: Path, by_file: tuple[bytes, bytes]):
    out, log = healed(journal, tmp_path / "pipe.log", piped=True)
    assert out == by_file[0]
    assert log == by_file[1].replace(b'"source":"%s"' % str(journal).encode(), b'"source":"<stdin>"')  # (the pipe's name)


@pytest.mark.parametrize("piece_bytes", [150_000, 300_000])
def test_pieces_log_what_one_run_logs(journal: Path, tmp_path: Path, by_file: tuple[bytes, bytes], piece_bytes: int):
    run = run_replay("--log-level", "info", "heal", str(journal), "--log", str(tmp_path / "pieces.log"), "--workers", "2",
                     env={"REPLAY_PIECE_BYTES": str(piece_bytes)}, process=True)
    assert b'"event":"pieces.done"' in run.stderr  # (the pieces' results were used)
    assert (run.stdout, (tmp_path / "pieces.log").read_bytes()) == by_file
